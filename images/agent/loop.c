/* loop.c - the agent's poll() loop.  */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "channel.h"
#include "commands.h"
#include "conn.h"
#include "connect.h"
#include "loop.h"

/* Work that needs no event: frames already buffered, draining exited
   commands, EXIT frames, timeouts, writing the queue.  */
static void
pump (struct agent *ag, int64_t now)
{
  process_input (ag);
  for (size_t i = 0; i < MAX_CMDS; i++)
    {
      struct cmd *c = &ag->cmds[i];

      if (!c->used)
        continue;
      if (!c->exited && c->deadline_ms && now >= c->deadline_ms)
        {
          cmd_kill (c, SIGKILL);
          c->timed_out = true;
          c->deadline_ms = 0;
        }
      /* Quiesced: exits are told after the RESTORE.  */
      if (!c->exited || (ag->quiesced && !c->orphan))
        continue;
      cmd_drain (ag, c);
      if (c->fd[1] >= 0 || c->fd[2] >= 0)
        continue;
      if (!c->orphan)
        {
          if (OUTQ_CAP - ag->outq.len < CTRL_MAX)
            continue; /* no room for EXIT yet */
          cmd_send_exit (ag, c);
        }
      cmd_free (ag, c);
    }
  chan_flush (ag);
}

/* The fds the loop needs before the first poll; powers off without them.  */
static void
serve_setup (struct agent *ag)
{
  sigset_t mask;

  for (size_t i = 0; i < MAX_CMDS; i++)
    ag->cmds[i].fd[0] = ag->cmds[i].fd[1] = ag->cmds[i].fd[2] = -1;
  ag->devnull = open ("/dev/null", O_RDONLY | O_CLOEXEC);
  sigemptyset (&mask);
  sigaddset (&mask, SIGCHLD);
  ag->sigfd = signalfd (-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (ag->sigfd < 0 || ag->devnull < 0)
    {
      agent_log ("FATAL: cannot set up: %s", strerror (errno));
      power_off ();
    }
  ag->chan = open_channel ();
  if (ag->chan < 0)
    {
      agent_log ("FATAL: no virtio-serial port named " RT_CHANNEL_NAME);
      power_off ();
    }
  ag->state = CONN_DOWN;
  rt_frame_reader_init (&ag->reader);
}

static void
poll_add (struct agent *ag, int *n, int fd, short events, struct cmd *c, int i)
{
  ag->pfd[*n] = (struct pollfd){ fd, events, 0 };
  ag->who[*n].c = c;
  ag->who[(*n)++].i = i;
}

/* The fds of the running commands into the poll set; lowers *timeout to
   the nearest deadline.  */
static void
poll_add_cmds (struct agent *ag, int *n, int64_t now, int *timeout)
{
  for (size_t i = 0; i < MAX_CMDS; i++)
    {
      struct cmd *c = &ag->cmds[i];

      if (!c->used || c->exited)
        continue;
      if (c->deadline_ms)
        {
          int64_t left = c->deadline_ms - now;
          if (left < 0)
            left = 0;
          if (*timeout < 0 || left < *timeout)
            *timeout = left > INT_MAX ? INT_MAX : (int) left;
        }
      if (c->connecting)
        {
          poll_add (ag, n, c->fd[1], POLLOUT, c, 1);
          continue;
        }
      /* Out of window (or queue): leave the data in the pipe, so the
         command blocks when it fills.  */
      if (c->orphan
          || (ag->state == CONN_UP && !ag->quiesced && c->unacked < RT_WINDOW_INITIAL
              && ag->outq.len + RT_FRAME_HEADER < OUTQ_DATA_MAX))
        for (int k = 1; k <= 2; k++)
          if (c->fd[k] >= 0)
            poll_add (ag, n, c->fd[k], POLLIN, c, k);
      if (c->fd[0] >= 0 && c->inq_len > 0)
        poll_add (ag, n, c->fd[0], POLLOUT, c, 0);
    }
}

/* Fills ag->pfd: the signalfd first, then the channel, then the commands.
   Return: how many; *timeout is poll()'s.  */
static int
poll_build (struct agent *ag, int64_t now, int *timeout)
{
  int n = 0;

  *timeout = -1;
  poll_add (ag, &n, ag->sigfd, POLLIN, NULL, 0);
  if (ag->state == CONN_DOWN)
    *timeout = RECONNECT_POLL_MS;
  else if (ag->state == CONN_POISONED && outq_writable (ag) == 0)
    {
      int64_t left = ag->last_input_ms + RESYNC_QUIET_MS - now;
      *timeout = left > 0 ? (int) left : 0;
    }
  if (ag->state != CONN_DOWN)
    {
      short ev = 0;
      if (!ag->input_pending)
        ev |= POLLIN;
      if (outq_writable (ag) > 0)
        ev |= POLLOUT;
      poll_add (ag, &n, ag->chan, ev, NULL, 0);
    }
  poll_add_cmds (ag, &n, now, timeout);
  return n;
}

static void
chan_event (struct agent *ag, short re)
{
  if (ag->state == CONN_DOWN)
    return; /* dropped while handling an earlier fd */
  if (re & POLLOUT)
    chan_flush (ag);
  if (ag->state != CONN_DOWN && (re & (POLLIN | POLLHUP | POLLERR)))
    {
      if (!ag->input_pending)
        chan_read (ag);
      else if (re & (POLLHUP | POLLERR))
        conn_drop (ag);
    }
}

static void
poll_dispatch (struct agent *ag, int n)
{
  struct pollfd *pfd = ag->pfd;

  if (pfd[0].revents)
    reap (ag);
  for (int k = 1; k < n; k++)
    {
      struct cmd *c = ag->who[k].c;
      short re = pfd[k].revents;

      if (re == 0)
        continue;
      if (c == NULL)
        {
          chan_event (ag, re);
          continue;
        }
      /* The command may have been orphaned or failed since poll().  */
      if (!c->used || c->fd[ag->who[k].i] != pfd[k].fd)
        continue;
      if (c->connecting)
        connect_finish (ag, c);
      else if (ag->who[k].i == 0)
        cmd_write_stdin (ag, c);
      else
        cmd_read (ag, c, ag->who[k].i);
    }
}

void
serve_step (struct agent *ag, int max_wait_ms)
{
  int64_t now = now_ms ();
  int timeout, n, ready;

  conn_resync (ag, now);
  pump (ag, now);
  n = poll_build (ag, now, &timeout);
  if (max_wait_ms >= 0 && (timeout < 0 || timeout > max_wait_ms))
    timeout = max_wait_ms;
  ready = poll (ag->pfd, n, timeout);
  if (ready < 0)
    {
      if (errno != EINTR)
        {
          agent_log ("poll: %s", strerror (errno));
          sleep_ms (10);
        }
      return;
    }
  if (ready > 0)
    poll_dispatch (ag, n);
}

void __attribute__ ((noreturn))
serve (struct agent *ag)
{
  bool announced = false;

  serve_setup (ag);
  for (;;)
    {
      if (ag->state == CONN_DOWN)
        {
          conn_check (ag);
          if (ag->state == CONN_UP && !announced)
            {
              agent_log ("ready %" PRId64 " ms after boot", now_ms ());
              announced = true;
            }
        }
      serve_step (ag, -1);
    }
}
