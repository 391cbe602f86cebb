/* python.c - run_python, the LLM tool the chat loop offers: a program run in a fresh
   sandbox, its packages installed while only PyPI is reachable, then
   with the internet off.  */
#include <regex.h>
#include <string.h>

#include "public/driver.h"
#include "llm/chat.h"
#include "llm/python.h"
#include "sandbox/handle.h"
#include "remote/http.h"

#define INSTALL_TIMEOUT_S 180
#define RUN_TIMEOUT_S 60
#define OUTPUT_CAP (64 * 1024)
#define PACKAGE_RE "^[A-Za-z0-9][A-Za-z0-9._-]*(==[A-Za-z0-9.]+)?$"

static json_object *
tail_string (const char *s, size_t len)
{
  if (s == NULL)
    return json_object_new_string ("");
  /* The end of the output is where the error is.  */
  if (len > OUTPUT_CAP)
    return json_object_new_string_len (s + len - OUTPUT_CAP, OUTPUT_CAP);
  return json_object_new_string_len (s, len);
}

static bool
package_ok (const char *p)
{
  regex_t re;
  bool ok;

  if (regcomp (&re, PACKAGE_RE, REG_EXTENDED | REG_NOSUB) != 0)
    return false;
  ok = strlen (p) <= 200 && regexec (&re, p, 0, NULL, 0) == 0;
  regfree (&re);
  return ok;
}

static int
run_in (rt_sandbox *sb, const char *const argv[], const char *input, unsigned timeout_s, int cancel_fd,
        struct rt_captured *c, rt_exec_result *res, rt_error **err)
{
  rt_exec_opts opts = { .cwd = "/workspace", .timeout_ms = timeout_s * 1000ULL, .cancel_fd = cancel_fd,
                        .on_output = rt_capture_output, .data = c };
  int ret;

  if (input)
    {
      opts.stdin_data = input;
      opts.stdin_len = strlen (input);
    }
  memset (res, 0, sizeof *res);
  ret = rt_sandbox_exec (sb, argv, &opts, res, err);
  if (ret == 0 && res->interrupted)
    return rt_chat_interrupted (err);
  return ret;
}

static void
captured_clear (struct rt_captured *c)
{
  free (c->out);
  free (c->err);
  memset (c, 0, sizeof *c);
}

/* A run_python call's sandbox and what its commands said.  */
struct run
{
  const rt_chat_opts *o;
  rt_sandbox *sb;
  struct rt_captured c;
  rt_exec_result res;
  json_object *result; /* the tool's answer */
};

/* pip install @packages (@n of them) while only PyPI is reachable: 1 when
   pip failed (the result says why), 0 when installed.  */
static int
install_packages (struct run *r, const char *const *packages, size_t n, rt_error **err)
{
  unsigned install_s = rt_or_default (r->o->install_timeout_s, INSTALL_TIMEOUT_S);
  const char **argv = calloc (n + 6, sizeof (char *));
  size_t k = 0;
  int ret;

  if (argv == NULL)
    return rt_error_oom (err);
  argv[k++] = "python3";
  argv[k++] = "-m";
  argv[k++] = "pip";
  argv[k++] = "install";
  argv[k++] = "--quiet";
  for (const char *const *p = packages; *p; p++)
    argv[k++] = *p;
  ret = run_in (r->sb, argv, NULL, install_s, r->o->cancel_fd, &r->c, &r->res, err);
  free (argv);
  if (ret < 0)
    return ret;
  if (r->res.exit_code != 0 || r->res.timed_out || r->res.signal)
    {
      json_object_object_add (r->result, "stage", json_object_new_string ("install"));
      if (r->res.timed_out)
        {
          char msg[64];
          snprintf (msg, sizeof msg, "pip install timed out after %u s", install_s);
          json_object_object_add (r->result, "stderr", json_object_new_string (msg));
        }
      else
        json_object_object_add (r->result, "stderr", tail_string (r->c.err, r->c.err_len));
      return 1;
    }
  captured_clear (&r->c);
  return 0;
}

/* With the internet off, main.py written and run; its outcome into the
   result.  */
static int
run_main (struct run *r, const char *code, rt_error **err)
{
  static const char *const write_argv[] = { "sh", "-c", "cat >/workspace/main.py", NULL };
  static const char *const run_argv[] = { "python3", "main.py", NULL };
  unsigned run_s = rt_or_default (r->o->run_timeout_s, RUN_TIMEOUT_S);
  rt_exec_result *res = &r->res;
  int ret;

  /* Then nothing at all.  */
  ret = rt_sandbox_set_network (r->sb, false, NULL, NULL, NULL, err);
  if (ret == 0)
    ret = run_in (r->sb, write_argv, code, run_s, r->o->cancel_fd, &r->c, res, err);
  if (ret == 0 && res->exit_code != 0)
    ret = rt_error_set (err, EIO, "internal", "cannot write main.py in the sandbox: %s", r->c.err ? r->c.err : "");
  if (ret < 0)
    return ret;
  captured_clear (&r->c);
  ret = run_in (r->sb, run_argv, NULL, run_s, r->o->cancel_fd, &r->c, res, err);
  if (ret < 0)
    return ret;
  /* 124 after the timeout, as `runtime sandbox exec` says it.  */
  json_object_object_add (r->result, "exit_code",
                          json_object_new_int (res->timed_out ? 124
                                               : res->signal ? 128 + res->signal
                                                             : res->exit_code));
  json_object_object_add (r->result, "timed_out", json_object_new_boolean (res->timed_out));
  json_object_object_add (r->result, "stdout", tail_string (r->c.out, r->c.out_len));
  json_object_object_add (r->result, "stderr", tail_string (r->c.err, r->c.err_len));
  return 0;
}

/* Always removed; what it cost is read first.  */
static void
remove_sandbox (rt_context *ctx, rt_sandbox *sb, const char *id, int64_t *charged_micros)
{
  cleanup_error rt_error *ignored = NULL;
  cleanup_free char *state = NULL;

  rt_sandbox_destroy (sb, &ignored);
  if (charged_micros && rt_sandbox_get_json (ctx, id, &state, NULL) == 0)
    {
      cleanup_json json_object *st = json_tokener_parse (state);
      json_object *v;
      if (st && json_object_object_get_ex (st, "chargedMicros", &v))
        *charged_micros += json_object_get_int64 (v);
    }
  rt_sandbox_remove (ctx, id, NULL);
}

int
rt_chat_run_python (rt_context *ctx, const rt_chat_opts *o, const char *code, const char *const *packages,
                    char **result_json, int64_t *charged_micros, rt_error **err)
{
  static const char *const allow[] = { "pypi.org", "*.pythonhosted.org", NULL };
  cleanup_json json_object *result = json_object_new_object ();
  cleanup_free char *id = NULL;
  rt_sandbox_config cfg = { .image = o->image, .allow = allow, .ephemeral = true };
  struct run r = { .o = o, .result = result };
  size_t n = 0;
  int ret;

  for (const char *const *p = packages; p && *p; p++, n++)
    if (!package_ok (*p))
      {
        char msg[300];
        snprintf (msg, sizeof msg, "invalid package name '%.200s': names only, optionally ==VERSION", *p);
        json_object_object_add (result, "error", json_object_new_string (msg));
        goto done;
      }
  ret = rt_sandbox_create (ctx, &cfg, &r.sb, err);
  if (ret < 0)
    return ret;
  id = strdup (rt_sandbox_id (r.sb));
  /* The boot is not interruptible; what it made is removed below.  */
  if (rt_chat_cancelled (o))
    ret = rt_chat_interrupted (err);
  else if (n > 0)
    ret = install_packages (&r, packages, n, err);
  if (ret == 0)
    ret = run_main (&r, code, err);
  captured_clear (&r.c);
  remove_sandbox (ctx, r.sb, id, charged_micros);
  if (ret < 0)
    return ret;
done:
  *result_json = strdup (json_object_to_json_string_ext (result, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *result_json ? 0 : rt_error_oom (err);
}

int
rt_run_python (rt_context *ctx, const char *code, const char *const *packages, const char *image, char **result_json,
               int64_t *charged_micros, rt_error **err)
{
  if (rt_local_only (ctx, "run_python", err) < 0)
    return -ENOTSUP;
  rt_chat_opts o = { .image = image, .cancel_fd = -1 };

  return rt_chat_run_python (ctx, &o, code, packages, result_json, charged_micros, err);
}
