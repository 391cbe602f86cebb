/* chat.c - `runtime chat deepseek "PROMPT"`: the seed's tool-call loop.  */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static int
print_text (void *data, int stream, const char *buf, size_t len)
{
  (void) data;
  (void) stream;
  fwrite (buf, 1, len, stdout);
  fflush (stdout);
  return 0;
}

static void
print_event (void *data, const char *line)
{
  (void) data;
  fprintf (stderr, "%s\n", line);
}

static void
money (char *out, size_t size, int64_t micros)
{
  snprintf (out, size, "$%" PRId64 ".%06" PRId64, micros / 1000000, micros % 1000000);
}

static int
chat_deepseek (struct cli_command *cmd, int argc, char **argv)
{
  struct cli_args a;
  rt_context *ctx = NULL;
  rt_error *err = NULL;
  char *transcript = NULL;
  json_object *t = NULL, *v, *u, *c;
  unsigned long turns = 0;
  rt_chat_opts o = { .on_event = print_event };
  int code = 1;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  if (cli_opt_uint (cmd, &a, "max-turns", 1, 64, &turns) < 0)
    goto out;
  o.max_turns = turns;
  o.model = cli_opt (cmd, &a, "model");
  o.base_url = cli_opt (cmd, &a, "base-url");
  o.image = cli_opt (cmd, &a, "image");
  o.strict = cli_opt (cmd, &a, "strict") != NULL;
  o.stream = cli_opt (cmd, &a, "stream") != NULL;
  o.prompt = a.pos[0];
  /* Only from the environment: a key on the command line ends up in
     shell histories and ps.  */
  o.api_key = getenv ("DEEPSEEK_API_KEY");
  if (o.stream && !a.json)
    o.on_text = print_text;
  ctx = cli_context ();
  if (ctx == NULL)
    goto out;
  if (rt_chat (ctx, &o, &transcript, &err) < 0)
    {
      if (o.on_text)
        fputc ('\n', stdout);
      code = cli_lib_fail (err);
      goto out;
    }
  t = json_tokener_parse (transcript);
  if (t == NULL)
    {
      code = cli_fail ("internal", NULL, "the library returned unreadable JSON");
      goto out;
    }
  if (a.json)
    printf ("%s\n", transcript);
  else if (o.on_text)
    fputc ('\n', stdout);
  else
    printf ("%s\n", json_object_object_get_ex (t, "answer", &v) && v ? json_object_get_string (v) : "");
  if (json_object_object_get_ex (t, "usage", &u) && json_object_object_get_ex (t, "cost", &c))
    {
      char model[32] = "unknown price", boxes[32];
      json_object *mm = json_object_object_get (c, "model_micros");
      if (mm)
        money (model, sizeof model, json_object_get_int64 (mm));
      money (boxes, sizeof boxes, json_object_get_int64 (json_object_object_get (c, "sandbox_micros")));
      fprintf (stderr, "runtime: %" PRId64 " input and %" PRId64 " output tokens: %s for %s; sandboxes %s\n",
               json_object_get_int64 (json_object_object_get (u, "prompt_tokens")),
               json_object_get_int64 (json_object_object_get (u, "completion_tokens")), model,
               json_object_get_string (json_object_object_get (t, "model")), boxes);
    }
  code = 0;
out:
  json_object_put (t);
  free (transcript);
  rt_context_free (ctx);
  cli_args_free (&a);
  return code;
}

static const struct cli_opt deepseek_opts[] = {
  { "model", "M", "the model (deepseek-flash, deepseek-v4-pro, …)", "deepseek-flash", false },
  { "max-turns", "N", "requests at most before giving up", "8", false },
  { "base-url", "URL", "an OpenAI-compatible API", "https://api.deepseek.com", false },
  { "image", "REF", "the image run_python's sandboxes boot", "runtime", false },
  { "strict", NULL, "the /beta API with strict tool schemas", NULL, false },
  { "stream", NULL, "show the answer as it arrives", NULL, false },
  { NULL, NULL, NULL, NULL, false },
};

static struct cli_command chat_cmds[] = {
  { "deepseek", chat_deepseek,
    "Ask DeepSeek; each run_python call runs in a fresh sandbox (PyPI for the install, then no internet). "
    "The key comes from DEEPSEEK_API_KEY.",
    "[options] PROMPT", "DEEPSEEK_API_KEY=… runtime chat deepseek 'What is the 30th Fibonacci number? Compute it.'",
    deepseek_opts, false, 1, 1, NULL },
  { NULL, NULL, NULL, NULL, NULL, NULL, false, 0, 0, NULL },
};

int
cmd_chat (int argc, char **argv)
{
  return cli_group_dispatch ("chat", chat_cmds, argc, argv);
}
