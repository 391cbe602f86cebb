/* channel.c - the monitor's end of the agent channel (see channel.h).  */
#include <event2/buffer.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "monitor/channel.h"
#include "monitor/frames.h"
#include "monitor/proc-stdin.h"
#include "monitor/session.h"
#include "vmm/channel.h"
#include "vmm/guest-ops.h"

/* A guest that does not answer QUIESCE within this keeps running and the
   capture fails.  */
#define QUIESCE_TIMEOUT_MS 5000

void
mon_chan_take (struct mon *m, struct rt_channel *ch)
{
  m->chan.fd = steal_fd (&ch->fd);
  m->chan.reader = steal_pointer (&ch->reader);
  rt_channel_close (ch);
  fcntl (m->chan.fd, F_SETFL, O_NONBLOCK);
}

int
mon_chan_watch (struct mon *m, rt_error **err)
{
  struct mon_chan *c = &m->chan;

  c->out = evbuffer_new ();
  c->ev_read = event_new (m->base, c->fd, EV_READ | EV_PERSIST, mon_on_chan_read, m);
  c->ev_write = event_new (m->base, c->fd, EV_WRITE, mon_on_chan_write, m);
  if (c->out == NULL || c->ev_read == NULL || c->ev_write == NULL)
    return rt_error_set (err, ENOMEM, "startup_failed", "cannot set up the event loop");
  return 0;
}

void
mon_chan_read_start (struct mon *m)
{
  event_add (m->chan.ev_read, NULL);
}

void
mon_chan_close (struct mon *m)
{
  if (m->chan.ev_read)
    event_del (m->chan.ev_read);
  if (m->chan.ev_write)
    event_del (m->chan.ev_write);
  if (m->chan.fd >= 0)
    close (m->chan.fd);
  m->chan.fd = -1;
}

void
mon_chan_borrow (struct mon *m, struct rt_channel *ch)
{
  ch->fd = m->chan.fd;
  ch->vm_pidfd = m->vm.pidfd;
  ch->reader = m->chan.reader;
}

void
mon_chan_queue (struct mon *m, uint8_t type, uint32_t stream, const void *payload, size_t len)
{
  uint8_t hdr[RT_FRAME_HEADER];

  if (m->chan.fd < 0)
    return;
  rt_frame_encode_header (hdr, type, stream, len);
  evbuffer_add (m->chan.out, hdr, sizeof (hdr));
  if (len)
    evbuffer_add (m->chan.out, payload, len);
  event_add (m->chan.ev_write, NULL);
}

void
mon_chan_queue_json (struct mon *m, uint8_t type, uint32_t stream, json_object *obj)
{
  size_t len;
  const char *s = json_object_to_json_string_length (obj, JSON_C_TO_STRING_PLAIN, &len);
  mon_chan_queue (m, type, stream, s, len);
}

void
mon_chan_signal (struct mon *m, uint32_t stream, int sig)
{
  json_object *o = json_object_new_object ();
  json_object_object_add (o, "signal", json_object_new_int (sig));
  mon_chan_queue_json (m, RT_FRAME_SIGNAL, stream, o);
  json_object_put (o);
}

size_t
mon_chan_waiting (struct mon *m)
{
  return evbuffer_get_length (m->chan.out);
}

bool
mon_chan_full (struct mon *m)
{
  return mon_chan_waiting (m) > CHAN_OUT_MAX;
}

bool
mon_chan_sending (struct mon *m)
{
  return m->chan.fd >= 0 && !m->chan.quiesced;
}

/* Queues @e's owed credit as one WINDOW frame, if the guest is reading its
   channel (little waits in chan.out).  Credit counts as given only once
   queued: a guest that reads nothing gets no more than it saw, so its
   window runs out instead of the monitor's memory.  */
static void
flush_credit (struct mon *m, struct mon_exec *e)
{
  uint8_t ack[4];

  if (e->credit == 0 || m->chan.quiesced || mon_chan_waiting (m) >= CHAN_CREDIT_LOW)
    return;
  rt_put_u32 (ack, e->credit);
  e->outstanding -= e->credit;
  e->credit = 0;
  mon_chan_queue (m, RT_FRAME_WINDOW, e->stream, ack, sizeof (ack));
}

void
mon_chan_credit (struct mon *m, struct mon_exec *e, uint32_t bytes)
{
  e->credit += bytes;
  flush_credit (m, e);
}

void
mon_on_chan_write (evutil_socket_t fd, short what, void *arg)
{
  struct mon *m = arg;
  (void) what;
  if (evbuffer_write (m->chan.out, fd) < 0 && errno != EAGAIN && errno != EINTR)
    return;
  for (struct mon_exec *e = m->execs; e; e = e->next)
    flush_credit (m, e);
  /* Processes' stdin waits for room in the channel too, as do sessions'
     frames.  */
  mon_procs_stdin_pump (m);
  mon_session_chan_room (m);
  if (mon_chan_waiting (m) > 0)
    event_add (m->chan.ev_write, NULL);
}

/* Reads what the channel holds into the frame reader.  Return: read's.  */
static ssize_t
fill (struct mon_chan *c)
{
  size_t avail;
  uint8_t *space = rt_frame_reader_space (c->reader, &avail);
  ssize_t n = read (c->fd, space, avail);

  if (n > 0)
    rt_frame_reader_filled (c->reader, n);
  return n;
}

void
mon_on_chan_read (evutil_socket_t fd, short what, void *arg)
{
  struct mon *m = arg;
  struct rt_frame_header h;
  const uint8_t *payload;
  ssize_t n;
  int ret = 0;

  (void) fd, (void) what;
  n = fill (&m->chan);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return;
  if (n <= 0)
    {
      /* QEMU closed the channel: it is exiting; the pidfd says why.  */
      event_del (m->chan.ev_read);
      return;
    }
  while (!mon_stopping (m) && (ret = rt_frame_reader_next (m->chan.reader, &h, &payload)) > 0)
    mon_frame_dispatch (m, &h, payload);
  if (ret < 0)
    /* The byte stream from the guest is garbage: it cannot be trusted
       again.  */
    mon_stop (m, "guest_protocol_error");
}

void
mon_chan_quiet_end (struct mon *m)
{
  m->chan.quiesced = false;
  for (struct mon_exec *e = m->execs; e; e = e->next)
    flush_credit (m, e);
  mon_procs_stdin_pump (m);
}

void
mon_chan_wake (struct mon *m)
{
  cleanup_json json_object *req = rt_guest_restore_request (m->cfg->id, RT_RESTORE_WAKE, NULL, 0);

  if (req)
    mon_chan_queue_json (m, RT_FRAME_RESTORE, 0, req);
  mon_chan_quiet_end (m);
}

bool
mon_chan_quiesced (struct mon *m)
{
  return m->chan.quiesced;
}

/* Writes chan.out out, blocking until @deadline (ms): the QUIESCE must
   follow everything queued before it.  */
static int
flush_out (struct mon_chan *c, uint64_t deadline, rt_error **err)
{
  while (evbuffer_get_length (c->out) > 0)
    {
      struct pollfd p = { .fd = c->fd, .events = POLLOUT };
      int64_t left = (int64_t) deadline - (int64_t) rt_now_ms ();
      if (left <= 0)
        return rt_error_set (err, ETIMEDOUT, "sandbox_not_ready", "the guest does not read its channel");
      if (poll (&p, 1, (int) left) > 0 && evbuffer_write (c->out, c->fd) < 0 && errno != EAGAIN && errno != EINTR)
        return rt_error_set (err, errno, "sandbox_not_ready", "the guest's channel closed");
    }
  return 0;
}

/* True for the agent's DONE {"op": @op, "ok": true}.  */
static bool
done_ok (const uint8_t *payload, uint32_t len, const char *op)
{
  cleanup_json json_object *o = rt_channel_parse_json (payload, len);

  return o && rt_guest_done_check (o, op, NULL) == 0;
}

/* The frames read so far, handled until the agent's DONE.  Return: 1 for
   the DONE, 0 when more must be read, <0 when the guest broke the
   protocol.  */
static int
take_until_done (struct mon *m)
{
  struct rt_frame_header h;
  const uint8_t *payload;
  int r;

  while ((r = rt_frame_reader_next (m->chan.reader, &h, &payload)) > 0)
    {
      if (h.stream == 0 && h.type == RT_FRAME_DONE && done_ok (payload, h.len, "quiesce"))
        return 1;
      mon_frame_dispatch (m, &h, payload);
    }
  return r;
}

int
mon_chan_quiesce (struct mon *m, rt_error **err)
{
  uint64_t deadline = rt_now_ms () + QUIESCE_TIMEOUT_MS;
  int ret;

  if (m->chan.fd < 0 || mon_stopping (m))
    return rt_error_set (err, EAGAIN, "sandbox_not_ready", "sandbox %s is not running", m->cfg->id);
  mon_chan_queue (m, RT_FRAME_QUIESCE, 0, NULL, 0);
  ret = flush_out (&m->chan, deadline, err);
  m->chan.quiesced = true;
  while (ret == 0)
    {
      struct pollfd p = { .fd = m->chan.fd, .events = POLLIN };
      int64_t left;
      ssize_t n;
      int r = take_until_done (m);

      if (r > 0)
        return 0;
      if (r < 0)
        {
          mon_chan_quiet_end (m);
          mon_stop (m, "guest_protocol_error");
          return rt_error_set (err, EPROTO, "sandbox_not_ready", "the guest broke the channel's protocol");
        }
      left = (int64_t) deadline - (int64_t) rt_now_ms ();
      if (left <= 0)
        {
          /* Its DONE may still come: a RESTORE makes sure it sends again.  */
          mon_chan_wake (m);
          return rt_error_set (err, ETIMEDOUT, "sandbox_not_ready",
                               "the guest did not pause its channel within %d s", QUIESCE_TIMEOUT_MS / 1000);
        }
      if (poll (&p, 1, (int) left) <= 0)
        continue;
      n = fill (&m->chan);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
        {
          mon_chan_quiet_end (m);
          return rt_error_set (err, EPIPE, "sandbox_not_ready", "the guest's channel closed");
        }
    }
  return ret;
}
