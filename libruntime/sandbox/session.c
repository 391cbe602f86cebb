/* session.c - interactive commands and connections into a sandbox
   (rt_session, include/runtime.h).  No header of its own: it only defines
   public functions.  Not built yet: each answers "unsupported".  */
#include <errno.h>

#include "runtime.h"

#include "core/context.h"

#define NOT_YET(err) rt_error_set (err, ENOSYS, "unsupported", "not built yet")

int
rt_sandbox_write (rt_sandbox *sb, uint32_t process, const void *data, size_t len, uint64_t offset, bool eof,
                  uint64_t *accepted, rt_error **err)
{
  (void) sb, (void) process, (void) data, (void) len, (void) offset, (void) eof, (void) accepted;
  return NOT_YET (err);
}

int
rt_sandbox_resize (rt_sandbox *sb, uint32_t process, unsigned cols, unsigned rows, rt_error **err)
{
  (void) sb, (void) process, (void) cols, (void) rows;
  return NOT_YET (err);
}

int
rt_sandbox_attach (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, rt_session **out,
                   rt_error **err)
{
  (void) sb, (void) argv, (void) opts, (void) out;
  return NOT_YET (err);
}

int
rt_sandbox_connect (rt_sandbox *sb, unsigned port, rt_session **out, rt_error **err)
{
  (void) sb, (void) port, (void) out;
  return NOT_YET (err);
}

int
rt_session_fd (rt_session *s)
{
  (void) s;
  return -1;
}

long
rt_session_read (rt_session *s, int *stream, void *buf, size_t size, rt_error **err)
{
  (void) s, (void) stream, (void) buf, (void) size;
  return NOT_YET (err);
}

size_t
rt_session_writable (rt_session *s)
{
  (void) s;
  return 0;
}

int
rt_session_write (rt_session *s, const void *buf, size_t len, rt_error **err)
{
  (void) s, (void) buf, (void) len;
  return NOT_YET (err);
}

int
rt_session_close_input (rt_session *s, rt_error **err)
{
  (void) s;
  return NOT_YET (err);
}

int
rt_session_resize (rt_session *s, unsigned cols, unsigned rows, rt_error **err)
{
  (void) s, (void) cols, (void) rows;
  return NOT_YET (err);
}

int
rt_session_signal (rt_session *s, int signal, rt_error **err)
{
  (void) s, (void) signal;
  return NOT_YET (err);
}

int
rt_session_result (rt_session *s, rt_exec_result *res, rt_error **err)
{
  (void) s, (void) res;
  return NOT_YET (err);
}

void
rt_session_free (rt_session *s)
{
  (void) s;
}
