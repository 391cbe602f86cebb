/* sys.c - whole writes and the monotonic clock.  */
#include <errno.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

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

uint64_t
rt_now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
