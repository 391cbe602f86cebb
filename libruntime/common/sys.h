/* sys.h - whole reads and writes, waits for a process, for the library and
   the guest agent alike.  */
#ifndef RT_SYS_H
#define RT_SYS_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* Writes all of buf, retrying EINTR and waiting out EAGAIN.  Return: 0, or
   a negative errno.  */
int rt_write_all (int fd, const void *buf, size_t len);
/* Reads @fd to its end into a new NUL-terminated *out (*len without the
   NUL; len may be NULL).  Return: 0, or a negative errno: -EFBIG past @max
   bytes, -ENOMEM.  */
int rt_read_all (int fd, size_t max, char **out, size_t *len);
/* False when process @pid still runs after @timeout_ms (a pidfd polled);
   true when it exited, or is no more.  */
bool rt_pid_exited_within (int pid, int timeout_ms);

/* After a sendmsg of @msg's two iovecs (a frame's header and payload)
   took @n bytes: both moved past them, and @msg on what is left.  */
void rt_iov2_advance (struct msghdr *msg, struct iovec iov[2], size_t n);

#endif
