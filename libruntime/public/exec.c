/* exec.c - the public command functions: exec, background processes and
   their stdin, sessions.  Each checks its arguments (core/checks.h), then
   calls its context's driver (public/driver.h).
   (no header of its own: its functions are include/runtime.h's.)  */
#include "core/checks.h"
#include "public/driver.h"
#include "records/handle.h"
#include "remote/http.h"

static const struct rt_driver *
of (rt_sandbox *sb)
{
  return rt_driver_of (sb->ctx);
}

int
rt_sandbox_exec (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, rt_exec_result *res, rt_error **err)
{
  int ret = rt_command_check (argv, opts, RT_COMMAND_EXEC, err);

  if (ret < 0)
    return ret;
  return of (sb)->sandbox_exec (sb, argv, opts, res, err);
}

int
rt_sandbox_spawn (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, uint32_t *process, rt_error **err)
{
  int ret = rt_command_check (argv, opts, RT_COMMAND_SPAWN, err);

  if (ret < 0)
    return ret;
  return of (sb)->sandbox_spawn (sb, argv, opts, process, err);
}

int
rt_sandbox_ps_json (rt_sandbox *sb, char **json, rt_error **err)
{
  return of (sb)->sandbox_ps_json (sb, json, err);
}

int
rt_sandbox_logs (rt_sandbox *sb, uint32_t process, bool follow, const rt_exec_opts *opts, rt_exec_result *res,
                 bool *exited, rt_error **err)
{
  return of (sb)->sandbox_logs (sb, process, follow, opts, res, exited, err);
}

int
rt_sandbox_kill (rt_sandbox *sb, uint32_t process, int signal, rt_error **err)
{
  return of (sb)->sandbox_kill (sb, process, signal, err);
}

int
rt_sandbox_write (rt_sandbox *sb, uint32_t process, const void *data, size_t len, uint64_t offset, bool eof,
                  uint64_t *accepted, rt_error **err)
{
  if (len > RT_MAX_STDIN || (data == NULL && len > 0) || offset > INT64_MAX - RT_MAX_STDIN)
    return rt_error_set (err, EINVAL, "usage", "at most 1 MiB a write, at an offset under 2^63");
  return of (sb)->sandbox_write (sb, process, data, len, offset, eof, accepted, err);
}

int
rt_sandbox_resize (rt_sandbox *sb, uint32_t process, unsigned cols, unsigned rows, rt_error **err)
{
  int ret = rt_pty_size_check (cols, rows, err);

  if (ret < 0)
    return ret;
  return of (sb)->sandbox_resize (sb, process, cols, rows, err);
}

int
rt_sandbox_attach (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, rt_session **out,
                   rt_error **err)
{
  int ret;

  *out = NULL;
  ret = rt_command_check (argv, opts, RT_COMMAND_ATTACH, err);
  if (ret < 0)
    return ret;
  return of (sb)->sandbox_attach (sb, argv, opts, out, err);
}

int
rt_sandbox_connect (rt_sandbox *sb, unsigned port, rt_session **out, rt_error **err)
{
  const struct rt_driver *d = of (sb);

  *out = NULL;
  if (d->sandbox_connect == NULL)
    return rt_remote_unsupported (err, "a connection into a sandbox");
  if (port < 1 || port > 65535)
    return rt_error_set (err, EINVAL, "usage", "port must be 1 to 65535");
  return d->sandbox_connect (sb, port, out, err);
}
