/* sys.c - whole reads and writes and the monotonic clock.  */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/pidfd.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/sys.h"

int
rt_write_all (int fd, const void *buf, size_t len)
{
  const char *p = buf;

  while (len > 0)
    {
      ssize_t n = write (fd, p, len);
      if (n < 0)
        {
          if (errno == EINTR)
            continue;
          if (errno == EAGAIN)
            {
              struct pollfd pfd = { .fd = fd, .events = POLLOUT };
              poll (&pfd, 1, -1);
              continue;
            }
          return -errno;
        }
      p += n;
      len -= n;
    }
  return 0;
}

int
rt_read_all (int fd, size_t max, char **out, size_t *len)
{
  cleanup_free char *buf = NULL;
  size_t size = 0, alloc = 0;

  for (;;)
    {
      ssize_t n;
      if (alloc - size < 4096)
        {
          char *nb;
          alloc = alloc ? alloc * 2 : 8192;
          nb = realloc (buf, alloc);
          if (nb == NULL)
            return -ENOMEM;
          buf = nb;
        }
      n = read (fd, buf + size, alloc - size - 1);
      if (n < 0)
        {
          if (errno == EINTR)
            continue;
          return -errno;
        }
      if (n == 0)
        break;
      size += n;
      if (size > max)
        return -EFBIG;
    }
  buf[size] = '\0';
  if (len)
    *len = size;
  *out = steal_pointer (&buf);
  return 0;
}


bool
rt_pid_exited_within (int pid, int timeout_ms)
{
  int pfd = pidfd_open (pid, 0);
  struct pollfd p = { .fd = pfd, .events = POLLIN };
  int r;

  if (pfd < 0)
    return true;
  while ((r = poll (&p, 1, timeout_ms)) < 0 && errno == EINTR)
    ;
  close (pfd);
  return r > 0;
}

void
rt_iov2_advance (struct msghdr *msg, struct iovec iov[2], size_t n)
{
  for (int i = 0; i < 2; i++)
    {
      size_t take = n < iov[i].iov_len ? n : iov[i].iov_len;
      iov[i].iov_base = (uint8_t *) iov[i].iov_base + take;
      iov[i].iov_len -= take;
      n -= take;
    }
  msg->msg_iov = iov[0].iov_len ? iov : iov + 1;
  msg->msg_iovlen = iov[0].iov_len ? 2 : 1;
}
