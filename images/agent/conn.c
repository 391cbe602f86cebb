/* conn.c - the virtio-serial port and the connection's state: up, down,
   or poisoned by a bad frame.  */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "channel.h"
#include "commands.h"
#include "conn.h"
#include "requests.h"

static void
orphan_all (struct agent *ag)
{
  for (size_t i = 0; i < MAX_CMDS; i++)
    if (ag->cmds[i].used)
      cmd_orphan (&ag->cmds[i]);
}

/* The host went away (EOF).  Running commands stay; their streams die with
   the connection.  */
void
conn_drop (struct agent *ag)
{
  ssize_t n;
  size_t avail;

  /* Quiesced, the commands wait for the RESTORE of the next host (a VM
     woken from a pause or started from a snapshot) to say which it keeps;
     the old host sent nothing after QUIESCE, and the RESTORE the next one
     may already have sent must not be thrown away.  */
  if (!ag->quiesced)
    orphan_all (ag);
  outq_reset (ag);
  rt_frame_reader_init (&ag->reader);
  ag->input_pending = false;
  ag->state = CONN_DOWN;
  /* What the old host sent and we did not read would otherwise greet the
     next one.  Bounded: a new host may already be talking.  */
  for (int i = 0; i < 64 && !ag->quiesced; i++)
    {
      n = read (ag->chan, rt_frame_reader_space (&ag->reader, &avail), avail);
      if (n == 0 || (n < 0 && errno != EINTR))
        break;
    }
}

/* The byte stream cannot be resynchronised after a bad header: say so,
   then drop input until the host reconnects.  */
static void
conn_poison (struct agent *ag, int err)
{
  agent_log ("bad frame from the host (%s); waiting for it to reconnect", strerror (-err));
  orphan_all (ag);
  if (!ag->quiesced)
    send_error (ag, 0, "protocol_error", "bad frame header (%s); reconnect", strerror (-err));
  ag->state = CONN_POISONED;
  ag->last_input_ms = now_ms ();
  ag->input_pending = false;
  rt_frame_reader_init (&ag->reader);
}

void
conn_check (struct agent *ag)
{
  struct pollfd pfd = { ag->chan, POLLIN, 0 };
  int r = poll (&pfd, 1, 0);

  /* While the host is away the port reports POLLHUP (and reads EOF).  */
  if (r < 0 || (r == 1 && (pfd.revents & (POLLHUP | POLLERR | POLLNVAL))))
    return;
  ag->state = CONN_UP;
  rt_frame_reader_init (&ag->reader);
  ag->input_pending = false;
  outq_reset (ag);
  /* Quiesced, not even a HELLO: the next frame is the RESTORE's DONE.  */
  if (!ag->quiesced)
    send_hello (ag);
}

/* A host that got protocol_error should reconnect, but a quick reconnect is
   invisible here (the port only reports whether a host is connected now),
   and its new host waits silently for HELLO.  So once the input has been
   quiet for a while (the host writes whole frames, so a pause is a frame
   boundary), start afresh with a HELLO.  */
void
conn_resync (struct agent *ag, int64_t now)
{
  if (ag->state != CONN_POISONED || outq_writable (ag) > 0 || now - ag->last_input_ms < RESYNC_QUIET_MS)
    return;
  ag->state = CONN_DOWN;
  conn_check (ag);
}

void
process_input (struct agent *ag)
{
  while (ag->state == CONN_UP && ag->input_pending && OUTQ_CAP - ag->outq.len >= CTRL_MAX)
    {
      struct rt_frame_header h;
      const uint8_t *p;
      int r = rt_frame_reader_next (&ag->reader, &h, &p);

      if (r == 0)
        ag->input_pending = false;
      else if (r < 0)
        conn_poison (ag, r);
      else
        handle_frame (ag, &h, p);
    }
}

void
chan_read (struct agent *ag)
{
  size_t avail;
  uint8_t *buf = rt_frame_reader_space (&ag->reader, &avail);
  ssize_t n;

  do
    n = read (ag->chan, buf, avail);
  while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EAGAIN)
    return;
  if (n <= 0)
    {
      if (n < 0)
        agent_log ("channel read: %s", strerror (errno));
      conn_drop (ag);
      return;
    }
  if (ag->state != CONN_UP)
    {
      ag->last_input_ms = now_ms (); /* poisoned: dropped */
      return;
    }
  rt_frame_reader_filled (&ag->reader, n);
  ag->input_pending = true;
  process_input (ag);
}

void
chan_flush (struct agent *ag)
{
  while (outq_writable (ag) > 0 && ag->state != CONN_DOWN)
    {
      ssize_t n = write (ag->chan, ag->outq.buf + ag->outq.head, outq_writable (ag));
      if (n > 0)
        {
          ag->outq.head += n;
          ag->outq.len -= n;
          if (ag->quiesced)
            ag->flushable -= n;
          continue;
        }
      if (n < 0 && (errno == EINTR))
        continue;
      if (n < 0 && errno != EAGAIN)
        {
          agent_log ("channel write: %s", strerror (errno));
          conn_drop (ag);
        }
      return;
    }
  if (ag->outq.len == 0)
    ag->outq.head = 0;
}

/* Finds the port named RT_CHANNEL_NAME (no udev: its name is in sysfs) and
   opens it.  */
int
open_channel (void)
{
  int64_t end = now_ms () + WAIT_DEVICE_MS;
  char dev[64] = "";

  while (dev[0] == '\0')
    {
      cleanup_dir DIR *d = opendir ("/sys/class/virtio-ports");
      struct dirent *de;

      while (d && (de = readdir (d)) != NULL)
        {
          char path[PATH_MAX], name[64];
          cleanup_close int fd = -1;
          ssize_t n;

          if (de->d_name[0] == '.')
            continue;
          snprintf (path, sizeof path, "/sys/class/virtio-ports/%s/name", de->d_name);
          fd = open (path, O_RDONLY | O_CLOEXEC);
          if (fd < 0 || (n = read (fd, name, sizeof name - 1)) <= 0)
            continue;
          name[n] = '\0';
          name[strcspn (name, "\n")] = '\0';
          if (strcmp (name, RT_CHANNEL_NAME) == 0)
            {
              snprintf (dev, sizeof dev, "/dev/%.32s", de->d_name);
              break;
            }
        }
      if (dev[0] == '\0')
        {
          if (now_ms () >= end)
            return -1;
          sleep_ms (DEVICE_POLL_MS);
        }
    }
  for (;;)
    {
      int fd = open (dev, O_RDWR | O_NONBLOCK | O_CLOEXEC);
      if (fd >= 0)
        return fd;
      if (errno != ENOENT || now_ms () >= end)
        {
          agent_log ("cannot open %s: %s", dev, strerror (errno));
          return -1;
        }
      sleep_ms (DEVICE_POLL_MS);
    }
}
