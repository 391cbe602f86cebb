/* session.h - rt_session (include/runtime.h) is an interface with two
 * implementations: a local one, frames to the sandbox's monitor
 * (sandbox/session-local.h), and a remote one (remote/attach.h), a
 * process of the API server driven over HTTP.  Each embeds struct
 * rt_session first and fills @ops; public/session.c's functions check
 * their arguments and dispatch.
 */
#ifndef RT_CORE_SESSION_H
#define RT_CORE_SESSION_H

#include "runtime.h"

struct rt_session_ops
{
  long (*read) (rt_session *s, int *stream, void *buf, size_t size, rt_error **err);
  size_t (*writable) (rt_session *s);
  int (*write) (rt_session *s, const void *buf, size_t len, rt_error **err);
  int (*close_input) (rt_session *s, rt_error **err);
  int (*resize) (rt_session *s, unsigned cols, unsigned rows, rt_error **err);
  int (*signal) (rt_session *s, int signal, rt_error **err);
  int (*result) (rt_session *s, rt_exec_result *res, rt_error **err);
  /* Ends what still runs and frees the whole object.  */
  void (*free) (rt_session *s);
};

struct rt_session
{
  const struct rt_session_ops *ops;
  int fd;   /* rt_session_fd: POLLIN when read has something */
  bool pty; /* made with a pty: resize allowed */
};

static inline void
cleanup_sessionp (rt_session **s)
{
  rt_session_free (*s);
}
#define cleanup_session __attribute__ ((cleanup (cleanup_sessionp)))

#endif
