/* session.c - the public rt_session functions: checks, then the
   session's ops (core/session.h): a local session (sandbox/session-local.h)
   or a remote one (remote/attach.h).
   (no header of its own: its functions are include/runtime.h's.)  */
#include "core/checks.h"
#include "core/session.h"
#include "common/util.h"

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
