/* console.c - the guest's console as a capped log (console.h).  */
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vmm/console.h"

static int
open_log (const char *path)
{
  return open (path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
}

int
rt_console_open (struct rt_console *c, const char *dir, int *qemu_end, rt_error **err)
{
  int sv[2];

  memset (c, 0, sizeof (*c));
  c->sock = c->log_fd = -1;
  c->path = rt_strdup_printf ("%s/console.log", dir);
  if (c->path == NULL)
    return rt_error_oom (err);
  c->log_fd = open_log (c->path);
  if (c->log_fd < 0)
    return rt_error_set (err, errno, "startup_failed", "cannot create '%s': %s", c->path, strerror (errno));
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
    return rt_error_set (err, errno, "startup_failed", "socketpair: %s", strerror (errno));
  c->sock = sv[0];
  fcntl (c->sock, F_SETFL, O_NONBLOCK);
  /* Nothing is ever typed into the guest; our end is never written (a
     shutdown would read as a disconnect to QEMU, which then drops the
     console).  */
  *qemu_end = sv[1];
  return 0;
}

/* console.log → console.log.1, and a new console.log.  */
static void
rotate (struct rt_console *c)
{
  cleanup_free char *old = rt_strdup_printf ("%s.1", c->path);

  if (old == NULL || rename (c->path, old) < 0)
    {
      /* Cannot keep the older part: start this one over.  */
      if (ftruncate (c->log_fd, 0) == 0)
        lseek (c->log_fd, 0, SEEK_SET);
      c->size = 0;
      return;
    }
  close (c->log_fd);
  c->log_fd = open_log (c->path);
  c->size = 0;
}

static void
append (struct rt_console *c, const char *buf, size_t n)
{
  while (n > 0 && c->log_fd >= 0)
    {
      size_t room, w;
      ssize_t done;

      if (c->size >= RT_CONSOLE_PART)
        rotate (c);
      room = RT_CONSOLE_PART - c->size;
      w = n < room ? n : room;
      done = write (c->log_fd, buf, w);
      if (done < 0 && errno == EINTR)
        continue;
      /* A full disk loses console lines, nothing else.  */
      c->size += w;
      buf += w;
      n -= w;
    }
}

int
rt_console_drain (struct rt_console *c)
{
  char buf[65536];

  while (c->sock >= 0)
    {
      ssize_t n = read (c->sock, buf, sizeof (buf));
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && errno == EAGAIN)
        return 0;
      if (n <= 0)
        {
          close (c->sock);
          c->sock = -1;
          return 1;
        }
      append (c, buf, n);
    }
  return 1;
}

void
rt_console_close (struct rt_console *c)
{
  if (c->sock >= 0)
    close (c->sock);
  if (c->log_fd >= 0)
    close (c->log_fd);
  c->sock = c->log_fd = -1;
  free (c->path);
  c->path = NULL;
}
