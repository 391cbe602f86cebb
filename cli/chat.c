/* chat.c - `runtime chat deepseek "PROMPT"`: the model asked until it
   answers, each run_python call it makes run in a fresh sandbox (rt_chat),
   then what it cost.  */
#include <inttypes.h>
#include <json-c/json.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
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

/* Tokens and money so far, on stderr; @spent: after a failure.  */
static void
print_cost (json_object *t, bool spent)
{
  json_object *u, *c, *mm;
  char model[32] = "unknown price", boxes[32];

  if (!json_object_object_get_ex (t, "usage", &u) || !json_object_object_get_ex (t, "cost", &c))
    return;
  /* Nothing was spent when the first request failed.  */
  if (spent && json_object_get_int64 (json_object_object_get (u, "prompt_tokens")) == 0
      && json_object_get_int64 (json_object_object_get (u, "completion_tokens")) == 0
      && json_object_get_int64 (json_object_object_get (c, "sandbox_micros")) == 0)
    return;
  mm = json_object_object_get (c, "model_micros");
  if (mm)
    money (model, sizeof model, json_object_get_int64 (mm));
  money (boxes, sizeof boxes, json_object_get_int64 (json_object_object_get (c, "sandbox_micros")));
  fprintf (stderr, "runtime: %s%" PRId64 " input and %" PRId64 " output tokens: %s for %s; sandboxes %s\n",
           spent ? "spent before stopping: " : "", json_object_get_int64 (json_object_object_get (u, "prompt_tokens")),
           json_object_get_int64 (json_object_object_get (u, "completion_tokens")), model,
           json_object_get_string (json_object_object_get (t, "model")), boxes);
}

/* Limits and the clock for tests (docs/chat.md): RUNTIME_CHAT_SCRIPT_TIMEOUT,
   _INSTALL_TIMEOUT, _CONNECT_TIMEOUT, _READ_TIMEOUT, _RETRY_AFTER_MAX
   (seconds) and RUNTIME_CHAT_NOW (RFC 3339 UTC).  */
static int
test_env (rt_chat_opts *o)
{
  static const struct
  {
    const char *name;
    size_t off;
  } limits[] = {
    { "RUNTIME_CHAT_SCRIPT_TIMEOUT", offsetof (rt_chat_opts, run_timeout_s) },
    { "RUNTIME_CHAT_INSTALL_TIMEOUT", offsetof (rt_chat_opts, install_timeout_s) },
    { "RUNTIME_CHAT_CONNECT_TIMEOUT", offsetof (rt_chat_opts, connect_timeout_s) },
    { "RUNTIME_CHAT_READ_TIMEOUT", offsetof (rt_chat_opts, read_timeout_s) },
    { "RUNTIME_CHAT_RETRY_AFTER_MAX", offsetof (rt_chat_opts, retry_after_max_s) },
  };
  const char *v;

  for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++)
    {
      char *end;
      unsigned long n;
      v = getenv (limits[i].name);
      if (v == NULL || *v == '\0')
        continue;
      n = strtoul (v, &end, 10);
      if (*end || n < 1 || n > 3600)
        {
          cli_usage_error (NULL, "%s must be a number of seconds from 1 to 3600", limits[i].name);
          return -1;
        }
      *(unsigned *) ((char *) o + limits[i].off) = n;
    }
  v = getenv ("RUNTIME_CHAT_NOW");
  if (v && *v)
    {
      struct tm tm = { 0 };
      const char *end = strptime (v, "%Y-%m-%dT%H:%M:%SZ", &tm);
      if (end == NULL || *end)
        {
          cli_usage_error ("for example: RUNTIME_CHAT_NOW=2025-01-06T02:30:00Z",
                           "RUNTIME_CHAT_NOW must be an RFC 3339 UTC time");
          return -1;
        }
      o->now = timegm (&tm);
    }
  return 0;
}

static int
chat_deepseek (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  rt_error *err = NULL;
  cleanup_free char *transcript = NULL;
  cleanup_json json_object *t = NULL;
  json_object *v;
  unsigned long turns = 0;
  rt_chat_opts o = { .on_event = print_event, .cancel_fd = -1 };
  sigset_t mask;
  int code = 1, ret;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  if (cli_opt_uint (cmd, &a, "max-turns", 1, 64, &turns) < 0 || test_env (&o) < 0)
    return 1;
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
    return 1;
  /* Ctrl-C, SIGTERM and SIGHUP stop the chat through the library, which
     then removes the sandbox of the tool call under way.  */
  sigemptyset (&mask);
  sigaddset (&mask, SIGINT);
  sigaddset (&mask, SIGTERM);
  sigaddset (&mask, SIGHUP);
  sigprocmask (SIG_BLOCK, &mask, NULL);
  o.cancel_fd = signalfd (-1, &mask, SFD_CLOEXEC);
  /* Without the fd, blocked signals would make Ctrl-C do nothing.  */
  if (o.cancel_fd < 0)
    sigprocmask (SIG_UNBLOCK, &mask, NULL);
  ret = rt_chat (ctx, &o, &transcript, &err);
  t = transcript ? json_tokener_parse (transcript) : NULL;
  if (ret < 0)
    {
      if (o.on_text)
        fputc ('\n', stdout);
      if (strcmp (err->code, "interrupted") == 0)
        {
          /* With --json stderr holds only the error object.  */
          if (a.json)
            cli_error (err);
          else
            fprintf (stderr, "runtime: interrupted; the tool call's sandbox, if any, was removed\n");
          rt_error_free (err);
          code = 130;
        }
      else
        code = cli_lib_fail (err);
      if (t && !a.json)
        print_cost (t, true);
      goto out;
    }
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
  print_cost (t, false);
  code = 0;
out:
  if (o.cancel_fd >= 0)
    close (o.cancel_fd);
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
cli_cmd_chat (int argc, char **argv)
{
  return cli_group_dispatch ("chat", chat_cmds, argc, argv);
}
