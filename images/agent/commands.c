/* commands.c - one running command: its pipes, stdin queue, output and
   exit.  */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "channel.h"
#include "commands.h"

struct cmd *
cmd_find (struct agent *ag, uint32_t stream)
{
  if (stream == 0)
    return NULL;
  for (size_t i = 0; i < MAX_CMDS; i++)
    if (ag->cmds[i].used && !ag->cmds[i].orphan && ag->cmds[i].stream == stream)
      return &ag->cmds[i];
  return NULL;
}

void
cmd_free (struct agent *ag, struct cmd *c)
{
  for (int i = 0; i < 3; i++)
    close_fd (&c->fd[i]);
  free (c->inq);
  memset (c, 0, sizeof *c);
  c->fd[0] = c->fd[1] = c->fd[2] = -1;
  ag->ncmds--;
}

static void
cmd_close_stdin (struct cmd *c)
{
  close_fd (&c->fd[0]);
  free (c->inq);
  c->inq = NULL;
  c->inq_off = c->inq_len = c->inq_cap = 0;
}

/* Signals the command's process group.  Right after fork the child may not
   have called setsid yet: then signal it alone.  */
void
cmd_kill (struct cmd *c, int sig)
{
  if (c->exited)
    return;
  if (c->sock)
    {
      /* A connection has no process: any signal closes it.  */
      cmd_sock_end (c, 0);
      return;
    }
  if (kill (-c->pid, sig) < 0 && errno == ESRCH)
    kill (c->pid, sig);
}

void
cmd_sock_end (struct cmd *c, int code)
{
  if (c->exited)
    return;
  close_fd (&c->fd[0]);
  close_fd (&c->fd[1]);
  free (c->inq);
  c->inq = NULL;
  c->inq_off = c->inq_len = c->inq_cap = 0;
  c->exited = true;
  c->connecting = false;
  c->status = (code & 0xff) << 8; /* as waitpid's for exit(code) */
  c->end_ms = now_ms ();
}

/* The stream loses its connection: the process keeps running (and ends on
   its own or at its timeout), its output is read and dropped.  */
void
cmd_orphan (struct cmd *c)
{
  c->orphan = true;
  c->stream = 0;
  cmd_close_stdin (c);
  /* Nobody is left to talk to through a connection.  */
  if (c->sock)
    cmd_sock_end (c, 0);
}

/* Ends a live stream with ERROR, which must be its last frame: the command
   is killed so that no EXIT has to follow.  */
void RT_PRINTF (4, 5)
cmd_fail (struct agent *ag, struct cmd *c, const char *code, const char *fmt, ...)
{
  char msg[512];
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
  cmd_kill (c, SIGKILL);
  send_error (ag, c->stream, code, "%s", msg);
  cmd_orphan (c);
}

/* Feeds queued stdin to the command and tells the host how much it took
   (WINDOW, guest→host): the host keeps at most RT_WINDOW_INITIAL bytes of
   stdin in flight, so a large upload never overflows the queue.  */
void
cmd_write_stdin (struct agent *ag, struct cmd *c)
{
  size_t taken = 0;

  while (c->inq_len > 0 && c->fd[0] >= 0)
    {
      ssize_t n = write (c->fd[0], c->inq + c->inq_off, c->inq_len);
      if (n > 0)
        {
          c->inq_off += n;
          c->inq_len -= n;
          taken += n;
          continue;
        }
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && errno == EAGAIN)
        break;
      /* EPIPE: the command closed its stdin, the rest has nowhere to go:
         it counts as taken, or the host would wait for credit forever.  */
      taken += c->inq_len;
      cmd_close_stdin (c);
      break;
    }
  if (taken > 0 && c->stream != 0)
    {
      uint8_t ack[4];
      rt_put_u32 (ack, (uint32_t) taken);
      send_frame (ag, RT_FRAME_WINDOW, c->stream, ack, sizeof ack);
    }
  if (c->inq_len > 0 || c->fd[0] < 0)
    return;
  c->inq_off = 0;
  if (c->inq_cap > 256 * 1024)
    {
      free (c->inq);
      c->inq = NULL;
      c->inq_cap = 0;
    }
  if (c->stdin_eof)
    {
      /* fd[1] shares the socket: closing fd[0] alone sends no FIN.  */
      if (c->sock)
        shutdown (c->fd[0], SHUT_WR);
      cmd_close_stdin (c);
    }
}

/* One read from stdout (i = 1) or stderr (i = 2) into a STDOUT/STDERR frame
   built in place in the queue.  */
enum read_result
cmd_read (struct agent *ag, struct cmd *c, int i)
{
  size_t want = OUT_CHUNK;
  uint8_t *frame = NULL, *dst = ag->scratch;
  ssize_t n;

  if (c->exited)
    {
      if (c->drain_left[i] == 0)
        goto closed;
      if (want > c->drain_left[i])
        want = c->drain_left[i];
    }
  if (!c->orphan)
    {
      if (ag->state != CONN_UP || ag->quiesced || c->unacked >= RT_WINDOW_INITIAL
          || ag->outq.len + RT_FRAME_HEADER >= OUTQ_DATA_MAX)
        return READ_BLOCKED;
      if (want > RT_WINDOW_INITIAL - c->unacked)
        want = RT_WINDOW_INITIAL - c->unacked;
      if (want > OUTQ_DATA_MAX - ag->outq.len - RT_FRAME_HEADER)
        want = OUTQ_DATA_MAX - ag->outq.len - RT_FRAME_HEADER;
      frame = outq_reserve (&ag->outq, RT_FRAME_HEADER + want);
      if (frame == NULL)
        return READ_BLOCKED;
      dst = frame + RT_FRAME_HEADER;
    }
  do
    n = read (c->fd[i], dst, want);
  while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EAGAIN)
    return READ_AGAIN;
  if (n <= 0 && c->sock)
    {
      /* The guest's side of a connection ended: so does the stream.  */
      cmd_sock_end (c, n < 0 ? 1 : 0);
      return READ_CLOSED;
    }
  if (n <= 0)
    goto closed;
  if (c->exited)
    c->drain_left[i] -= n;
  if (frame)
    {
      rt_frame_encode_header (frame, i == 1 ? RT_FRAME_STDOUT : RT_FRAME_STDERR, c->stream, n);
      ag->outq.len += RT_FRAME_HEADER + n;
      c->unacked += n;
    }
  return READ_DATA;
closed:
  close_fd (&c->fd[i]);
  return READ_CLOSED;
}

/* After the exit: read what the command left in its pipes (until empty,
   EOF or the budget is spent), as far as the window allows.  */
void
cmd_drain (struct agent *ag, struct cmd *c)
{
  for (int i = 1; i <= 2; i++)
    while (c->fd[i] >= 0)
      {
        enum read_result r = cmd_read (ag, c, i);
        if (r == READ_AGAIN)
          close_fd (&c->fd[i]);
        else if (r == READ_BLOCKED)
          return;
      }
}

void
cmd_send_exit (struct agent *ag, struct cmd *c)
{
  cleanup_json json_object *o = json_object_new_object ();
  int code = 0, sig = 0;

  if (WIFEXITED (c->status))
    code = WEXITSTATUS (c->status);
  else if (WIFSIGNALED (c->status))
    {
      sig = WTERMSIG (c->status);
      code = 128 + sig;
    }
  if (c->timed_out)
    code = 124;
  if (o == NULL)
    return;
  json_object_object_add (o, "exitCode", json_object_new_int (code));
  json_object_object_add (o, "signal", json_object_new_int (sig));
  json_object_object_add (o, "timedOut", json_object_new_boolean (c->timed_out));
  json_object_object_add (o, "durationMs", json_object_new_int64 (c->end_ms - c->start_ms));
  send_json (ag, RT_FRAME_EXIT, c->stream, o);
}

void
reap (struct agent *ag)
{
  struct signalfd_siginfo si;

  while (read (ag->sigfd, &si, sizeof si) > 0)
    ;
  for (;;)
    {
      int status;
      pid_t pid = waitpid (-1, &status, WNOHANG);

      if (pid < 0 && errno == EINTR)
        continue;
      if (pid <= 0)
        return;
      for (size_t i = 0; i < MAX_CMDS; i++)
        {
          struct cmd *c = &ag->cmds[i];
          if (!c->used || c->exited || c->pid != pid)
            continue;
          /* Whatever it started ends with it.  */
          kill (-pid, SIGKILL);
          c->exited = true;
          c->status = status;
          c->end_ms = now_ms ();
          c->drain_left[1] = c->drain_left[2] = DRAIN_MAX;
          cmd_close_stdin (c);
          break;
        }
    }
}
