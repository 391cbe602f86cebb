/* command.c - a command as the library passes it to a monitor.  */
#include <string.h>

#include "common/b64.h"
#include "core/checks.h"
#include "common/proto.h"
#include "core/command.h"

const rt_exec_opts rt_no_exec_opts = { .cancel_fd = -1 };



json_object *
rt_command_request (const char *const argv[], const rt_exec_opts *opts, rt_error **err)
{
  json_object *req, *arr;

  /* Also for the library's own commands (file operations, copies); the
     public functions checked theirs already, against what they are.  */
  if (rt_command_check (argv, opts, RT_COMMAND_SPAWN, err) < 0)
    return NULL;
  req = json_object_new_object ();
  arr = json_object_new_array ();
  for (const char *const *a = argv; *a; a++)
    json_object_array_add (arr, json_object_new_string (*a));
  json_object_object_add (req, "argv", arr);
  arr = json_object_new_array ();
  for (const char *const *e = opts->env; e && *e; e++)
    json_object_array_add (arr, json_object_new_string (*e));
  json_object_object_add (req, "env", arr);
  if (opts->cwd)
    json_object_object_add (req, "cwd", json_object_new_string (opts->cwd));
  if (opts->user)
    json_object_object_add (req, "user", json_object_new_string (opts->user));
  json_object_object_add (req, "timeoutMs", json_object_new_int64 (opts->timeout_ms));
  if (opts->pty_cols)
    {
      json_object *pty = json_object_new_object ();
      json_object_object_add (pty, "cols", json_object_new_int64 (opts->pty_cols));
      json_object_object_add (pty, "rows", json_object_new_int64 (opts->pty_rows));
      json_object_object_add (req, "pty", pty);
    }
  if (opts->keep_stdin)
    json_object_object_add (req, "keepStdin", json_object_new_boolean (true));
  if (opts->stdin_len > 0)
    {
      json_object *b64 = rt_b64_json (opts->stdin_data, opts->stdin_len);
      if (b64 == NULL)
        {
          json_object_put (req);
          rt_error_oom (err);
          return NULL;
        }
      json_object_object_add (req, "stdin", b64);
    }
  return req;
}

static int
append (char **buf, size_t *len, const char *data, size_t n)
{
  char *nb;

  /* Bounded: 16 MiB is far beyond any listing or error text.  */
  if (*len + n > 16 * 1024 * 1024 || (nb = realloc (*buf, *len + n + 1)) == NULL)
    return -1;
  memcpy (nb + *len, data, n);
  *len += n;
  nb[*len] = '\0';
  *buf = nb;
  return 0;
}

int
rt_capture_output (void *data, int stream, const char *buf, size_t len)
{
  struct rt_captured *c = data;

  if (stream == 2)
    return append (&c->err, &c->err_len, buf, len);
  if (c->pass)
    return c->pass->on_output ? c->pass->on_output (c->pass->data, 1, buf, len) : 0;
  return append (&c->out, &c->out_len, buf, len);
}

/* A JSON array of strings as a NULL-terminated vector into it; NULL for
   anything else.  */
static const char **
strings_of (json_object *arr)
{
  size_t n = json_object_is_type (arr, json_type_array) ? json_object_array_length (arr) : 0;
  const char **v;

  if (!json_object_is_type (arr, json_type_array) || (v = calloc (n + 1, sizeof *v)) == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++)
    {
      json_object *s = json_object_array_get_idx (arr, i);
      if (!json_object_is_type (s, json_type_string))
        {
          free (v);
          return NULL;
        }
      v[i] = json_object_get_string (s);
    }
  return v;
}

void
rt_command_clear (struct rt_command *c)
{
  free (c->argv);
  free (c->env);
  free (c->stdin_buf);
  memset (c, 0, sizeof *c);
  c->opts.cancel_fd = -1;
}

/* argv, env, cwd, user and timeoutMs, each of its type.  */
static int
parse_fields (json_object *req, struct rt_command *c, rt_error **err)
{
  json_object *v;

  c->argv = json_object_object_get_ex (req, "argv", &v) ? strings_of (v) : NULL;
  if (c->argv == NULL || c->argv[0] == NULL)
    return rt_error_set (err, EINVAL, "invalid_request", "argv must be a non-empty array of strings");
  if (json_object_object_get_ex (req, "env", &v) && v && (c->env = strings_of (v)) == NULL)
    return rt_error_set (err, EINVAL, "invalid_env", "env must be an array of K=V strings");
  c->opts.env = c->env;
  if (json_object_object_get_ex (req, "cwd", &v) && v)
    {
      if (!json_object_is_type (v, json_type_string))
        return rt_error_set (err, EINVAL, "invalid_request", "the working directory must be an absolute path");
      c->opts.cwd = json_object_get_string (v);
    }
  if (json_object_object_get_ex (req, "user", &v) && v)
    {
      if (!json_object_is_type (v, json_type_string))
        return rt_error_set (err, EINVAL, "invalid_request", "user must be runtime or root");
      c->opts.user = json_object_get_string (v);
    }
  if (json_object_object_get_ex (req, "timeoutMs", &v) && v)
    {
      if (!json_object_is_type (v, json_type_int) || json_object_get_int64 (v) < 0)
        return rt_error_set (err, EINVAL, "invalid_request", "timeoutMs must not be negative");
      c->opts.timeout_ms = (uint64_t) json_object_get_int64 (v);
    }
  return 0;
}

/* keepStdin, pty and stdin (base64), each where @kind allows it.  */
static int
parse_stdin_pty (json_object *req, enum rt_command_kind kind, struct rt_command *c, rt_error **err)
{
  json_object *v;
  const char *s;

  if (json_object_object_get_ex (req, "keepStdin", &v) && v)
    {
      if (kind != RT_COMMAND_SPAWN)
        return rt_error_set (err, EINVAL, "invalid_request", "keepStdin is for :spawn only: %s",
                             kind == RT_COMMAND_ATTACH ? "a session sends its own stdin"
                                                       : "nothing would write to it or end it");
      if (!json_object_is_type (v, json_type_boolean))
        return rt_error_set (err, EINVAL, "invalid_request", "keepStdin must be a boolean");
      c->opts.keep_stdin = json_object_get_boolean (v);
    }
  if (json_object_object_get_ex (req, "pty", &v) && v)
    {
      json_object *cols, *rows;
      if (kind == RT_COMMAND_EXEC)
        return rt_error_set (err, EINVAL, "invalid_request",
                             "pty is for :spawn and sessions only: nothing would type into it or resize it");
      if (!json_object_object_get_ex (v, "cols", &cols) || !json_object_object_get_ex (v, "rows", &rows)
          || !json_object_is_type (cols, json_type_int) || !json_object_is_type (rows, json_type_int)
          || !rt_pty_size_ok ((unsigned) json_object_get_int64 (cols), (unsigned) json_object_get_int64 (rows))
          || json_object_get_int64 (cols) > RT_PTY_MAX_SIDE || json_object_get_int64 (rows) > RT_PTY_MAX_SIDE)
        return rt_error_set (err, EINVAL, "usage", "pty needs cols and rows of 1 to %u", RT_PTY_MAX_SIDE);
      c->opts.pty_cols = (unsigned) json_object_get_int64 (cols);
      c->opts.pty_rows = (unsigned) json_object_get_int64 (rows);
    }
  if (json_object_object_get_ex (req, "stdin", &v) && v && (s = json_object_get_string (v)) && *s)
    {
      size_t size = strlen (s);
      ssize_t n;
      if (RT_B64_DECODED_MAX (size) > RT_MAX_STDIN + 3)
        return rt_error_set (err, E2BIG, "usage", "standard input is over 1 MiB");
      c->stdin_buf = malloc (RT_B64_DECODED_MAX (size) + 1);
      if (c->stdin_buf == NULL)
        return rt_error_oom (err);
      n = rt_b64_decode (s, size, c->stdin_buf);
      if (n < 0)
        return rt_error_set (err, EINVAL, "invalid_request", "stdin must be base64");
      c->opts.stdin_data = c->stdin_buf;
      c->opts.stdin_len = (size_t) n;
    }
  return 0;
}

int
rt_command_parse (json_object *req, enum rt_command_kind kind, struct rt_command *c, rt_error **err)
{
  int ret;

  memset (c, 0, sizeof *c);
  c->opts.cancel_fd = -1;
  if ((ret = parse_fields (req, c, err)) < 0 || (ret = parse_stdin_pty (req, kind, c, err)) < 0
      || (ret = rt_command_check (c->argv, &c->opts, kind, err)) < 0)
    {
      rt_command_clear (c);
      return ret;
    }
  return 0;
}
