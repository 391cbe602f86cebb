/* session.c - the public rt_session functions: checks, then the
   implementation's ops (session.h); the local sessions are
   session-local.c's, the remote ones remote/attach.c's.  No header of its
   own beyond session.h's interface.  */
#include <errno.h>

#include "runtime.h"

#include "common/proto.h"
#include "core/context.h"
#include "remote/attach.h"
#include "remote/http.h"
#include "sandbox/fork.h"
#include "sandbox/handle.h"
#include "sandbox/session-local.h"
#include "sandbox/session.h"

int
rt_sandbox_attach (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, rt_session **out,
                   rt_error **err)
{
  cleanup_json json_object *req = NULL;
  rt_exec_opts o;

  *out = NULL;
  opts = opts ? opts : &rt_no_exec_opts;
  if (sb->ctx->remote)
    return rt_remote_sandbox_attach (sb, argv, opts, out, err);
  o = *opts;
  /* Its stdin is the session's.  */
  o.stdin_data = NULL;
  o.stdin_len = 0;
  o.keep_stdin = false;
  req = rt_command_request (argv, &o, err);
  if (req == NULL)
    return -EINVAL;
  if (rt_sandbox_auto_wake (sb, err) < 0)
    return -EAGAIN;
  return rt_session_local_open (sb, RT_FRAME_EXEC, req, o.pty_cols > 0, out, err);
}

int
rt_sandbox_connect (rt_sandbox *sb, unsigned port, rt_session **out, rt_error **err)
{
  cleanup_json json_object *req = NULL;

  *out = NULL;
  if (sb->ctx->remote)
    return rt_remote_unsupported (err, "a connection into a sandbox");
  if (port < 1 || port > 65535)
    return rt_error_set (err, EINVAL, "usage", "port must be 1 to 65535");
  if (rt_sandbox_auto_wake (sb, err) < 0)
    return -EAGAIN;
  req = json_object_new_object ();
  json_object_object_add (req, "port", json_object_new_int64 (port));
  return rt_session_local_open (sb, RT_FRAME_CONNECT, req, false, out, err);
}

int
rt_session_fd (rt_session *s)
{
  return s->fd;
}

long
rt_session_read (rt_session *s, int *stream, void *buf, size_t size, rt_error **err)
{
  return s->ops->read (s, stream, buf, size, err);
}

size_t
rt_session_writable (rt_session *s)
{
  return s->ops->writable (s);
}

int
rt_session_write (rt_session *s, const void *buf, size_t len, rt_error **err)
{
  if (len > s->ops->writable (s))
    return rt_error_set (err, EINVAL, "usage", "%zu bytes are more than the session takes now", len);
  return len ? s->ops->write (s, buf, len, err) : 0;
}

int
rt_session_close_input (rt_session *s, rt_error **err)
{
  return s->ops->close_input (s, err);
}

int
rt_session_resize (rt_session *s, unsigned cols, unsigned rows, rt_error **err)
{
  if (!s->pty)
    return rt_error_set (err, EINVAL, "usage", "the session has no terminal");
  if (rt_pty_size_check (cols, rows, err) < 0)
    return -EINVAL;
  return s->ops->resize (s, cols, rows, err);
}

int
rt_session_signal (rt_session *s, int signal, rt_error **err)
{
  if (signal < 1 || signal > 64)
    return rt_error_set (err, EINVAL, "usage", "signal must be 1 to 64");
  return s->ops->signal (s, signal, err);
}

int
rt_session_result (rt_session *s, rt_exec_result *res, rt_error **err)
{
  return s->ops->result (s, res, err);
}

void
rt_session_free (rt_session *s)
{
  if (s)
    s->ops->free (s);
}
