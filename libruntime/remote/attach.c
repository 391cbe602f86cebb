/* attach.c - an interactive command in client mode (see attach.h).
 *
 * Two threads of the session's own do the HTTP: one follows the output
 * (rt_remote_sandbox_logs, resumed by cursor as every exec is) and writes
 * it as records into a socketpair whose other end is rt_session_fd; one
 * sends what rt_session_write queued as :write calls with offsets, so a
 * retry never repeats a byte, says when the queue has room again, and
 * sends the signals rt_session_signal asked for.  The caller's thread only
 * reads records and queues bytes and signals: it never waits for the
 * server, except for a resize.  Every call the session makes ends within
 * RT_REMOTE_CALL_TIMEOUT_MS, and the threads' at once when rt_session_free
 * writes the abort pipe, so a server that stopped answering cannot hold
 * the caller (sandbox-tty.c gives up 5 s after its SIGKILL).
 *
 * A record is a byte of type, a u32 length (little endian) and the
 * payload: output of stream 1 or 2; ROOM (empty); END (an rt_exec_result
 * as four i64s); FAIL (the error's code, a NUL, its message).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/proto.h"
#include "common/sys.h"
#include "remote/attach.h"
#include "remote/exec.h"
#include "remote/http.h"
#include "remote/stdin.h"
#include "sandbox/handle.h"
#include "core/session.h"

#define WRITE_MAX (256u * 1024u) /* queued input, and one :write's bytes */
#define FULL_RETRY_MS 50         /* the server held all it would: again after, */
#define FULL_RETRY_MAX_MS 1000   /* doubling up to this while nothing is taken */

enum
{
  REC_STDOUT = 1,
  REC_STDERR = 2,
  REC_ROOM = 3,
  REC_END = 4,
  REC_FAIL = 5,
};

struct remote_session
{
  struct rt_session base;
  rt_sandbox *sb;
  uint32_t pid;
  int thread_fd; /* the threads' end of the socketpair */
  pthread_mutex_t send_lock; /* one record at a time on it, from either thread */
  int abort_pipe[2];         /* written at free: the threads' requests end */
  struct rt_remote_bound bound; /* of every call: the timeout, the abort pipe */
  pthread_t reader, writer;
  bool reader_started, writer_started;
  /* The input queue and the signals, shared with the writer thread.  */
  pthread_mutex_t lock;
  pthread_cond_t wake;       /* on CLOCK_MONOTONIC */
  uint64_t sigs;             /* asked for, not sent yet: bit N-1 for signal N */
  bool killed;               /* the server took a SIGKILL */
  uint8_t *queue;
  size_t queued;
  uint64_t offset;     /* the stdin offset of queue[0] */
  bool eof_asked, eof_sent, closing, write_failed;
  unsigned retry_ms;   /* the writer's wait before asking again, 0: none */
  /* The caller's side of the records.  */
  uint8_t hdr[5];
  size_t hdr_have;
  uint32_t left;       /* payload bytes of the current record still to read */
  int type;
  bool ended;
  rt_exec_result res;
  rt_error *fail;
};

/* send() in full, without SIGPIPE when the caller's end is gone.  */
static int
send_all (int fd, const void *buf, size_t len)
{
  const uint8_t *p = buf;

  while (len > 0)
    {
      ssize_t n = send (fd, p, len, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return -1;
      p += n;
      len -= n;
    }
  return 0;
}

static int
put_record (struct remote_session *r, int type, const void *data, size_t len)
{
  uint8_t hdr[5] = { (uint8_t) type };
  int ret;

  rt_put_u32 (hdr + 1, (uint32_t) len);
  pthread_mutex_lock (&r->send_lock);
  ret = send_all (r->thread_fd, hdr, sizeof hdr) < 0 || (len && send_all (r->thread_fd, data, len) < 0) ? -1 : 0;
  pthread_mutex_unlock (&r->send_lock);
  return ret;
}

static int
on_output (void *data, int stream, const char *buf, size_t len)
{
  return put_record (data, stream == 2 ? REC_STDERR : REC_STDOUT, buf, len);
}

/* The output thread: follows the process to its end.  */
static void *
read_output (void *arg)
{
  struct remote_session *r = arg;
  rt_exec_opts opts = { .cancel_fd = -1, .on_output = on_output, .data = r };
  rt_exec_result res = { 0 };
  cleanup_error rt_error *err = NULL;
  bool exited = false;

  if (rt_remote_follow (r->sb, r->pid, true, &opts, r->abort_pipe[0], &res, &exited, &err) < 0 || !exited)
    {
      const char *code = err ? err->code : "internal";
      const char *msg = err ? err->msg : "lost the stream of the command before it ended";
      size_t cl = strlen (code), ml = strlen (msg);
      cleanup_free char *buf = malloc (cl + 1 + ml);
      if (buf)
        {
          memcpy (buf, code, cl + 1);
          memcpy (buf + cl + 1, msg, ml);
          put_record (r, REC_FAIL, buf, cl + 1 + ml);
        }
    }
  else
    {
      int64_t v[4] = { res.exit_code, res.signal, res.timed_out, (int64_t) res.duration_ms };
      put_record (r, REC_END, v, sizeof v);
    }
  return NULL;
}

/* One :write of @len bytes at @offset (eof when @eof).  Return: the
   accepted end, or <0 (the input cannot go on).  */
static int64_t
post_write (struct remote_session *r, const uint8_t *data, size_t len, uint64_t offset, bool eof)
{
  cleanup_error rt_error *err = NULL;
  uint64_t end = 0;

  if (rt_remote_sandbox_write (r->sb, r->pid, data, len, offset, eof, &r->bound, &end, &err) < 0)
    return -EIO;
  return (int64_t) end;
}

/* Sends the head of the queue; the lock is held on entry and exit.
   Return: false when the input failed.  */
static bool
write_some (struct remote_session *r)
{
  size_t n = r->queued < WRITE_MAX ? r->queued : WRITE_MAX;
  cleanup_free uint8_t *chunk = malloc (n ? n : 1);
  uint64_t at = r->offset;
  bool eof = r->eof_asked && n == r->queued;
  int64_t end;

  if (chunk == NULL)
    return false;
  memcpy (chunk, r->queue, n);
  pthread_mutex_unlock (&r->lock);
  end = post_write (r, chunk, n, at, eof);
  pthread_mutex_lock (&r->lock);
  if (end < (int64_t) at || end > (int64_t) (at + n))
    return false;
  memmove (r->queue, r->queue + (end - at), r->queued - (end - at));
  r->queued -= end - at;
  r->offset = end;
  if (eof && (uint64_t) end == at + n)
    r->eof_sent = true;
  if ((uint64_t) end < at + n)
    {
      /* The sandbox holds all it will until the process reads: ask again
         later, less often while it takes nothing (each ask is a request
         against the token's rate).  */
      uint64_t until;
      r->retry_ms = (uint64_t) end > at ? FULL_RETRY_MS
                    : r->retry_ms ? (r->retry_ms * 2 < FULL_RETRY_MAX_MS ? r->retry_ms * 2 : FULL_RETRY_MAX_MS)
                                  : FULL_RETRY_MS;
      /* A signal or the end does not wait for it.  */
      until = rt_now_ms () + r->retry_ms;
      while (!r->closing && !r->sigs && rt_now_ms () < until)
        pthread_cond_timedwait (&r->wake, &r->lock,
                                &(struct timespec){ (time_t) (until / 1000), (long) (until % 1000) * 1000000 });
    }
  else
    r->retry_ms = 0;
  return true;
}

/* Sends the signals asked for, in order of number, or SIGKILL alone when
   it is one; the lock is held on entry and exit.  A failure is not
   reported: the output's end, or its loss, says what became of the
   command.  */
static void
send_signals (struct remote_session *r)
{
  uint64_t sigs = r->sigs;
  uint64_t kill_bit = UINT64_C (1) << (SIGKILL - 1);
  bool killed = false;

  r->sigs = 0;
  if (sigs & kill_bit)
    sigs = kill_bit;
  pthread_mutex_unlock (&r->lock);
  for (int sig = 1; sig <= 64; sig++)
    if ((sigs & (UINT64_C (1) << (sig - 1))) && rt_remote_sandbox_kill (r->sb, r->pid, sig, &r->bound, NULL) == 0)
      killed = killed || sig == SIGKILL;
  pthread_mutex_lock (&r->lock);
  r->killed = r->killed || killed;
}

/* The input thread.  */
static void *
write_input (void *arg)
{
  struct remote_session *r = arg;

  pthread_mutex_lock (&r->lock);
  while (!r->closing)
    {
      if (r->sigs)
        {
          send_signals (r);
          continue;
        }
      if (r->write_failed || (r->queued == 0 && !(r->eof_asked && !r->eof_sent)))
        {
          pthread_cond_wait (&r->wake, &r->lock);
          continue;
        }
      /* After a failure the thread stays, for the signals.  */
      if (!write_some (r))
        {
          r->write_failed = true;
          r->queued = 0;
          continue;
        }
      if (r->queued == 0)
        {
          pthread_mutex_unlock (&r->lock);
          put_record (r, REC_ROOM, NULL, 0);
          pthread_mutex_lock (&r->lock);
        }
    }
  pthread_mutex_unlock (&r->lock);
  return NULL;
}

/* The record's payload beyond output: END's numbers, FAIL's error.  */
static void
take_last (struct remote_session *r, const uint8_t *p, size_t len)
{
  if (r->type == REC_END && len == 4 * sizeof (int64_t))
    {
      int64_t v[4];
      memcpy (v, p, sizeof v);
      r->res = (rt_exec_result){ .exit_code = (int) v[0], .signal = (int) v[1], .timed_out = v[2] != 0,
                                 .duration_ms = (uint64_t) v[3] };
    }
  else
    {
      const char *code = len ? (const char *) p : "internal";
      size_t cl = len ? strnlen (code, len) : 0;
      cleanup_free char *msg = cl < len ? strndup ((const char *) p + cl + 1, len - cl - 1) : NULL;
      rt_error_set (&r->fail, EIO, cl && cl < len ? code : "internal", "%s",
                    msg ? msg : "the command's stream ended with an error");
    }
  r->ended = true;
}

static long
s_read (rt_session *s, int *stream, void *buf, size_t size, rt_error **err)
{
  struct remote_session *r = (struct remote_session *) s;
  ssize_t n;

  for (;;)
    {
      if (r->ended)
        return 0;
      if (r->left == 0 && r->hdr_have == sizeof r->hdr)
        r->hdr_have = 0;
      if (r->hdr_have < sizeof r->hdr)
        {
          n = recv (s->fd, r->hdr + r->hdr_have, sizeof r->hdr - r->hdr_have, MSG_DONTWAIT);
          if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return -EAGAIN;
          if (n <= 0)
            return rt_error_set (err, EIO, "internal", "the session's output thread went away");
          r->hdr_have += n;
          if (r->hdr_have < sizeof r->hdr)
            return -EAGAIN;
          r->type = r->hdr[0];
          r->left = rt_get_u32 (r->hdr + 1);
          if (r->type == REC_ROOM)
            return -EAGAIN;
          if (r->type == REC_END || r->type == REC_FAIL)
            {
              /* Small and last: read whole, blocking is brief.  */
              cleanup_free uint8_t *p = malloc (r->left ? r->left : 1);
              if (p == NULL || recv (s->fd, p, r->left, MSG_WAITALL) != (ssize_t) r->left)
                return rt_error_set (err, EIO, "internal", "the session's output thread went away");
              take_last (r, p, r->left);
              r->left = 0;
              return 0;
            }
          continue;
        }
      n = recv (s->fd, buf, size < r->left ? size : r->left, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return -EAGAIN;
      if (n <= 0)
        return rt_error_set (err, EIO, "internal", "the session's output thread went away");
      r->left -= n;
      *stream = r->type == REC_STDERR ? 2 : 1;
      return n;
    }
}

static size_t
s_writable (rt_session *s)
{
  struct remote_session *r = (struct remote_session *) s;
  size_t room;

  pthread_mutex_lock (&r->lock);
  room = r->write_failed || r->eof_asked || r->ended ? 0 : WRITE_MAX - r->queued;
  pthread_mutex_unlock (&r->lock);
  return room;
}

static int
s_write (rt_session *s, const void *buf, size_t len, rt_error **err)
{
  struct remote_session *r = (struct remote_session *) s;

  pthread_mutex_lock (&r->lock);
  if (r->write_failed || r->eof_asked || r->queued + len > WRITE_MAX)
    {
      pthread_mutex_unlock (&r->lock);
      return rt_error_set (err, EPIPE, "stdin_closed", "the command's input is closed");
    }
  memcpy (r->queue + r->queued, buf, len);
  r->queued += len;
  pthread_cond_signal (&r->wake);
  pthread_mutex_unlock (&r->lock);
  return 0;
}

static int
s_close_input (rt_session *s, rt_error **err)
{
  struct remote_session *r = (struct remote_session *) s;
  (void) err;

  pthread_mutex_lock (&r->lock);
  r->eof_asked = true;
  pthread_cond_signal (&r->wake);
  pthread_mutex_unlock (&r->lock);
  return 0;
}

static int
s_resize (rt_session *s, unsigned cols, unsigned rows, rt_error **err)
{
  struct remote_session *r = (struct remote_session *) s;
  return rt_remote_sandbox_resize (r->sb, r->pid, cols, rows, &r->bound, err);
}

/* Handed to the input thread: the caller's loop goes on (sandbox-tty.c
   times its give-up from the SIGKILL it asks for).  */
static int
s_signal (rt_session *s, int sig, rt_error **err)
{
  struct remote_session *r = (struct remote_session *) s;
  (void) err;

  pthread_mutex_lock (&r->lock);
  r->sigs |= UINT64_C (1) << (sig - 1);
  pthread_cond_signal (&r->wake);
  pthread_mutex_unlock (&r->lock);
  return 0;
}

static int
s_result (rt_session *s, rt_exec_result *res, rt_error **err)
{
  struct remote_session *r = (struct remote_session *) s;

  if (!r->ended)
    return rt_error_set (err, EINVAL, "usage", "the session has not ended");
  if (r->fail)
    return rt_error_set (err, EIO, r->fail->code, "%s", r->fail->msg);
  *res = r->res;
  return 0;
}

static void
s_free (rt_session *s)
{
  struct remote_session *r = (struct remote_session *) s;
  bool killed;

  /* The input thread stops after its call, sending no signal more; then
     the threads' requests end (the follow, a call the server holds), so
     that they are joined at once whatever the kill below does.  */
  pthread_mutex_lock (&r->lock);
  r->closing = true;
  killed = r->killed;
  pthread_cond_signal (&r->wake);
  pthread_mutex_unlock (&r->lock);
  if (r->abort_pipe[1] >= 0 && write (r->abort_pipe[1], "x", 1) != 1)
    killed = false; /* cannot be (an empty pipe); the kill is sent anyway */
  /* Nobody will see its output: it must not run on unseen (as a local
     session's command), unless a SIGKILL got through already.  Not cut
     short by the pipe, but bounded.  */
  if (!r->ended && r->pid && !killed)
    rt_remote_sandbox_kill (r->sb, r->pid, SIGKILL, &(struct rt_remote_bound){ RT_REMOTE_CALL_TIMEOUT_MS, -1 },
                            NULL);
  if (s->fd >= 0)
    close (s->fd);
  if (r->writer_started)
    pthread_join (r->writer, NULL);
  if (r->reader_started)
    pthread_join (r->reader, NULL);
  if (r->thread_fd >= 0)
    close (r->thread_fd);
  for (int i = 0; i < 2; i++)
    if (r->abort_pipe[i] >= 0)
      close (r->abort_pipe[i]);
  pthread_mutex_destroy (&r->lock);
  pthread_mutex_destroy (&r->send_lock);
  pthread_cond_destroy (&r->wake);
  rt_error_free (r->fail);
  free (r->queue);
  free (r);
}

static const struct rt_session_ops remote_ops = {
  .read = s_read,
  .writable = s_writable,
  .write = s_write,
  .close_input = s_close_input,
  .resize = s_resize,
  .signal = s_signal,
  .result = s_result,
  .free = s_free,
};

/* A process of the server with its stdin kept open (and the pty).  */
static int
start_process (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, uint32_t *pid, rt_error **err)
{
  rt_exec_opts o = *opts;

  o.stdin_data = NULL;
  o.stdin_len = 0;
  o.keep_stdin = true;
  return rt_remote_sandbox_spawn (sb, argv, &o, pid, err);
}

int
rt_remote_sandbox_attach (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, rt_session **out,
                          rt_error **err)
{
  struct remote_session *r = calloc (1, sizeof *r);
  cleanup_session rt_session *s = r ? &r->base : NULL;
  int sv[2];

  if (r == NULL)
    return rt_error_oom (err);
  r->base.ops = &remote_ops;
  r->base.fd = r->thread_fd = r->abort_pipe[0] = r->abort_pipe[1] = -1;
  r->base.pty = opts->pty_cols > 0;
  r->sb = sb;
  pthread_mutex_init (&r->lock, NULL);
  pthread_mutex_init (&r->send_lock, NULL);
  {
    pthread_condattr_t a;
    pthread_condattr_init (&a);
    pthread_condattr_setclock (&a, CLOCK_MONOTONIC);
    pthread_cond_init (&r->wake, &a);
    pthread_condattr_destroy (&a);
  }
  if ((r->queue = malloc (WRITE_MAX)) == NULL)
    return rt_error_oom (err);
  if (pipe2 (r->abort_pipe, O_CLOEXEC) < 0)
    return rt_error_set (err, errno, "internal", "pipe: %s", strerror (errno));
  r->bound = (struct rt_remote_bound){ RT_REMOTE_CALL_TIMEOUT_MS, r->abort_pipe[0] };
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
    return rt_error_set (err, errno, "internal", "socketpair: %s", strerror (errno));
  r->base.fd = sv[0];
  r->thread_fd = sv[1];
  if (start_process (sb, argv, opts, &r->pid, err) < 0)
    return -EIO;
  if (pthread_create (&r->reader, NULL, read_output, r) != 0)
    return rt_error_set (err, EAGAIN, "internal", "cannot start the session's output thread");
  r->reader_started = true;
  if (pthread_create (&r->writer, NULL, write_input, r) != 0)
    return rt_error_set (err, EAGAIN, "internal", "cannot start the session's input thread");
  r->writer_started = true;
  *out = steal_pointer (&s);
  return 0;
}
