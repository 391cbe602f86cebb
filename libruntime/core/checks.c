/* checks.c - argument checks, and an order, that the public functions
   and both drivers share.  */
#include <string.h>

#include "common/proto.h"
#include "core/checks.h"

/* The public limit is the wire's.  */
_Static_assert (RT_MAX_PTY_SIDE == RT_PTY_MAX_SIDE, "RT_MAX_PTY_SIDE (runtime.h) is RT_PTY_MAX_SIDE (proto.h)");

int
rt_pty_size_check (unsigned cols, unsigned rows, rt_error **err)
{
  if (rt_pty_size_ok (cols, rows))
    return 0;
  return rt_error_set (err, EINVAL, "usage", "a terminal's columns and rows must be 1 to %u", RT_PTY_MAX_SIDE);
}

int
rt_check_guest_path (const char *path, rt_error **err)
{
  if (path == NULL || path[0] != '/')
    {
      rt_error_set (err, EINVAL, "usage", "sandbox paths must be absolute, not '%s'", path ? path : "");
      return rt_error_hint (err, "for example /workspace/%s", path ? path : "file");
    }
  return 0;
}

int
rt_entry_by_path (const void *a, const void *b)
{
  json_object *x = *(json_object *const *) a, *y = *(json_object *const *) b;
  return strcmp (rt_json_str (x, "path"), rt_json_str (y, "path"));
}

int
rt_command_check (const char *const argv[], const rt_exec_opts *opts, enum rt_command_kind kind, rt_error **err)
{
  if (argv == NULL || argv[0] == NULL)
    return rt_error_set (err, EINVAL, "usage", "no command given");
  if (opts == NULL)
    return 0;
  /* Nothing would write to a kept stdin or end it, nor resize a pty:
     those are a background process's or a session's.  */
  if (kind == RT_COMMAND_EXEC && (opts->keep_stdin || opts->pty_cols || opts->pty_rows))
    return rt_error_set (err, EINVAL, "usage", "%s",
                         opts->keep_stdin ? "keep_stdin is for rt_sandbox_spawn, not exec"
                                          : "a pty is for rt_sandbox_spawn and rt_sandbox_attach, not exec");
  if (opts->stdin_len > RT_MAX_STDIN)
    return rt_error_set (err, E2BIG, "usage", "standard input is over 1 MiB");
  if ((opts->pty_cols || opts->pty_rows) && rt_pty_size_check (opts->pty_cols, opts->pty_rows, err) < 0)
    return -EINVAL;
  return 0;
}
