/* test-command.c - a command as the monitor reads it from a request
   (rt_command_parse) and as the public functions check it
   (rt_command_check): the one set of rules, whoever sends the command.
   The sender may be anything that reaches api.sock: each field is taken
   only in its type, and every refusal has its code.  */
#include <string.h>

#include "core/command.h"
#include "tap.h"

struct row
{
  const char *json;
  enum rt_command_kind kind;
  const char *code; /* NULL: taken */
};

static const struct row rows[] = {
  { "{\"argv\":[\"true\"]}", RT_COMMAND_EXEC, NULL },
  { "{\"argv\":[\"sh\",\"-c\",\"x\"],\"env\":[\"A=1\"],\"cwd\":\"/tmp\",\"user\":\"root\",\"timeoutMs\":5}",
    RT_COMMAND_EXEC, NULL },
  { "{\"argv\":[\"cat\"],\"stdin\":\"aGk=\"}", RT_COMMAND_EXEC, NULL },
  { "{\"argv\":[\"cat\"],\"keepStdin\":true,\"pty\":{\"cols\":80,\"rows\":24}}", RT_COMMAND_SPAWN, NULL },
  { "{\"argv\":[\"bash\"],\"pty\":{\"cols\":80,\"rows\":24}}", RT_COMMAND_ATTACH, NULL },
  { "{}", RT_COMMAND_EXEC, "invalid_request" },
  { "{\"argv\":[]}", RT_COMMAND_EXEC, "invalid_request" },
  { "{\"argv\":\"true\"}", RT_COMMAND_EXEC, "invalid_request" },
  { "{\"argv\":[\"a\",1]}", RT_COMMAND_EXEC, "invalid_request" },
  { "{\"argv\":[null]}", RT_COMMAND_EXEC, "invalid_request" },
  { "{\"argv\":[\"x\"],\"env\":\"A=1\"}", RT_COMMAND_EXEC, "invalid_env" },
  { "{\"argv\":[\"x\"],\"env\":[\"1A=1\"]}", RT_COMMAND_EXEC, "invalid_env" },
  { "{\"argv\":[\"x\"],\"env\":[\"NOEQ\"]}", RT_COMMAND_EXEC, "invalid_env" },
  { "{\"argv\":[\"x\"],\"env\":[7]}", RT_COMMAND_EXEC, "invalid_env" },
  { "{\"argv\":[\"x\"],\"cwd\":\"tmp\"}", RT_COMMAND_EXEC, "invalid_request" },
  { "{\"argv\":[\"x\"],\"cwd\":5}", RT_COMMAND_EXEC, "invalid_request" },
  { "{\"argv\":[\"x\"],\"user\":\"nobody\"}", RT_COMMAND_EXEC, "invalid_request" },
  { "{\"argv\":[\"x\"],\"timeoutMs\":-1}", RT_COMMAND_EXEC, "invalid_request" },
  { "{\"argv\":[\"x\"],\"timeoutMs\":\"5\"}", RT_COMMAND_EXEC, "invalid_request" },
  { "{\"argv\":[\"x\"],\"keepStdin\":true}", RT_COMMAND_EXEC, "invalid_request" },
  { "{\"argv\":[\"x\"],\"keepStdin\":true}", RT_COMMAND_ATTACH, "invalid_request" },
  { "{\"argv\":[\"x\"],\"keepStdin\":1}", RT_COMMAND_SPAWN, "invalid_request" },
  { "{\"argv\":[\"x\"],\"pty\":{\"cols\":80,\"rows\":24}}", RT_COMMAND_EXEC, "invalid_request" },
  { "{\"argv\":[\"x\"],\"pty\":{\"cols\":0,\"rows\":24}}", RT_COMMAND_SPAWN, "usage" },
  { "{\"argv\":[\"x\"],\"pty\":{\"cols\":1001,\"rows\":24}}", RT_COMMAND_SPAWN, "usage" },
  { "{\"argv\":[\"x\"],\"pty\":{\"cols\":4294967377,\"rows\":24}}", RT_COMMAND_SPAWN, "usage" },
  { "{\"argv\":[\"x\"],\"pty\":{\"cols\":-80,\"rows\":24}}", RT_COMMAND_SPAWN, "usage" },
  { "{\"argv\":[\"x\"],\"pty\":{\"cols\":80}}", RT_COMMAND_SPAWN, "usage" },
  { "{\"argv\":[\"x\"],\"pty\":7}", RT_COMMAND_SPAWN, "usage" },
  { "{\"argv\":[\"x\"],\"stdin\":\"not base64!\"}", RT_COMMAND_EXEC, "invalid_request" },
};

int
main (void)
{
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    {
      json_object *req = json_tokener_parse (rows[i].json);
      struct rt_command c;
      rt_error *err = NULL;
      int ret = rt_command_parse (req, rows[i].kind, &c, &err);

      if (rows[i].code == NULL)
        ok (ret == 0 && err == NULL && c.argv && c.argv[0], "taken (kind %d): %s", rows[i].kind, rows[i].json);
      else
        ok (ret < 0 && err && strcmp (err->code, rows[i].code) == 0 && c.argv == NULL,
            "refused as %s (kind %d): %s (%s)", rows[i].code, rows[i].kind, rows[i].json, err ? err->msg : "taken");
      rt_command_clear (&c);
      rt_error_free (err);
      json_object_put (req);
    }

  /* The decoded stdin, and the JSON it came from, round trip.  */
  {
    static const char *const argv[] = { "cat", NULL };
    static const char *const env[] = { "K=v", NULL };
    rt_exec_opts o = { .cwd = "/w", .env = env, .stdin_data = "hello", .stdin_len = 5, .timeout_ms = 9,
                       .cancel_fd = -1 };
    json_object *req = rt_command_request (argv, &o, NULL);
    struct rt_command c;
    ok (req && rt_command_parse (req, RT_COMMAND_EXEC, &c, NULL) == 0 && c.opts.stdin_len == 5
            && memcmp (c.opts.stdin_data, "hello", 5) == 0 && strcmp (c.opts.cwd, "/w") == 0
            && c.opts.timeout_ms == 9 && c.env && strcmp (c.env[0], "K=v") == 0 && c.env[1] == NULL,
        "rt_command_request's JSON reads back the same");
    rt_command_clear (&c);
    json_object_put (req);
  }

  /* Over 1 MiB of stdin is refused before it is decoded.  */
  {
    size_t n = (RT_MAX_STDIN / 3 + 2) * 4;
    char *b64 = malloc (n + 64);
    json_object *req;
    struct rt_command c;
    rt_error *err = NULL;
    memset (b64, 'A', n);
    b64[n] = '\0';
    req = json_object_new_object ();
    json_object_object_add (req, "argv", json_tokener_parse ("[\"cat\"]"));
    json_object_object_add (req, "stdin", json_object_new_string (b64));
    ok (rt_command_parse (req, RT_COMMAND_EXEC, &c, &err) < 0 && err && strcmp (err->code, "usage") == 0,
        "over 1 MiB of stdin refused");
    rt_command_clear (&c);
    rt_error_free (err);
    json_object_put (req);
    free (b64);
  }
  return tap_done ();
}
