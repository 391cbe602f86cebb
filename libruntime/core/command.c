/* command.c - a command as the library passes it to a monitor.  */
#include <string.h>

#include "common/b64.h"
#include "core/checks.h"
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
