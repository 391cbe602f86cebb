/* output.c - errors as text or JSON on stderr, progress, and the output
   of commands that show one JSON value or remove one named thing.  */
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "output.h"

bool cli_json_errors;

int
cli_error (const rt_error *err)
{
  const char *code = err && err->code ? err->code : "internal";
  const char *msg = err && err->msg ? err->msg : "unknown error";
  const char *hint = err ? err->hint : NULL;

  if (cli_json_errors)
    {
      json_object *o = json_object_new_object (), *e = json_object_new_object ();
      json_object_object_add (e, "code", json_object_new_string (code));
      json_object_object_add (e, "message", json_object_new_string (msg));
      json_object_object_add (e, "hint", hint ? json_object_new_string (hint) : NULL);
      json_object_object_add (o, "error", e);
      fprintf (stderr, "%s\n", json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
      json_object_put (o);
    }
  else
    {
      /* A message or hint may quote the guest (its console, a path it
         named): shown as text.  The library folds both to one line
         (libruntime/core/error.c); what is left, escaped, stays on it.  */
      cleanup_free char *safe_msg = rt_text_escape (msg, false);
      cleanup_free char *safe_hint = hint ? rt_text_escape (hint, false) : NULL;
      fprintf (stderr, "Error [%s]: %s\n", code, safe_msg ? safe_msg : msg);
      if (hint)
        fprintf (stderr, "Hint: %s\n", safe_hint ? safe_hint : hint);
    }
  return 1;
}

/* The format attribute: clang's -Wformat-nonliteral (from -Wformat=2)
   accepts vasprintf on @fmt only then.  */
static int vfail (const char *code, const char *hint, const char *fmt, va_list ap)
    __attribute__ ((format (printf, 3, 0)));

static int
vfail (const char *code, const char *hint, const char *fmt, va_list ap)
{
  rt_error e = { EINVAL, (char *) code, NULL, (char *) hint };
  int ret;

  if (vasprintf (&e.msg, fmt, ap) < 0)
    e.msg = NULL;
  ret = cli_error (&e);
  free (e.msg);
  return ret;
}

int
cli_fail (const char *code, const char *hint, const char *fmt, ...)
{
  va_list ap;
  int ret;

  va_start (ap, fmt);
  ret = vfail (code, hint, fmt, ap);
  va_end (ap);
  return ret;
}

int
cli_usage_error (const char *hint, const char *fmt, ...)
{
  va_list ap;
  int ret;

  va_start (ap, fmt);
  ret = vfail ("usage", hint, fmt, ap);
  va_end (ap);
  return ret;
}

int
cli_lib_fail (rt_error *err)
{
  int ret = cli_error (err);
  rt_error_free (err);
  return ret;
}

const char *
cli_jstr (json_object *o, const char *key)
{
  json_object *v;

  if (!json_object_object_get_ex (o, key, &v) || v == NULL)
    return NULL;
  return json_object_get_string (v);
}

bool
cli_state_is (const char *name, enum rt_sandbox_state state)
{
  enum rt_sandbox_state s;

  return rt_sandbox_state_parse (name, &s) == 0 && s == state;
}

void
cli_progress (void *data, const char *line)
{
  (void) data;
  fprintf (stderr, "runtime: %s\n", line);
}

rt_context *
cli_context (void)
{
  rt_context *ctx = NULL;
  rt_error *err = NULL;

  /* Refused once, here, before any command reads state or fetches
     anything for a sandbox it could never make.  */
  if (rt_context_new (&ctx, &err) < 0 || rt_context_can_manage (ctx, &err) < 0)
    {
      cli_error (err);
      rt_error_free (err);
      rt_context_free (ctx);
      return NULL;
    }
  rt_context_set_progress (ctx, cli_progress, NULL);
  return ctx;
}

int
cli_show_json (struct cli_command *cmd, int argc, char **argv,
               int (*fetch) (rt_context *ctx, struct cli_args *a, char **json, rt_error **err),
               void (*table) (json_object *value))
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  rt_error *err = NULL;
  cleanup_free char *json = NULL;
  cleanup_json json_object *value = NULL;
  int code;

  if (!cli_start (cmd, argc, argv, &a, &ctx, &code))
    return code;
  if (fetch (ctx, &a, &json, &err) < 0)
    return cli_lib_fail (err);
  if (a.json)
    printf ("%s\n", json);
  else if ((value = json_tokener_parse (json)))
    table (value);
  else
    return cli_fail ("internal", NULL, "the library returned unreadable JSON");
  return 0;
}

int
cli_remove_named (struct cli_command *cmd, int argc, char **argv,
                  int (*remove) (rt_context *ctx, const char *name, rt_error **err))
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  rt_error *err = NULL;
  int code;

  if (!cli_start (cmd, argc, argv, &a, &ctx, &code))
    return code;
  if (remove (ctx, a.pos[0], &err) < 0)
    return cli_lib_fail (err);
  if (a.json)
    {
      cleanup_json json_object *o = json_object_new_object ();
      json_object_object_add (o, "removed", json_object_new_string (a.pos[0]));
      printf ("%s\n", json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    }
  else
    printf ("%s\n", a.pos[0]);
  return 0;
}
