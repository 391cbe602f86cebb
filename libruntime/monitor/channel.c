/* channel.c - the monitor's end of the agent channel (see channel.h).  */
#include <event2/buffer.h>
#include <unistd.h>

#include "monitor/channel.h"
#include "monitor/exec.h"
#include "monitor/proc-stdin.h"
#include "monitor/session.h"

void
mon_chan_queue (struct mon *m, uint8_t type, uint32_t stream, const void *payload, size_t len)
{
  uint8_t hdr[RT_FRAME_HEADER];

  if (m->chan_fd < 0)
    return;
  rt_frame_encode_header (hdr, type, stream, len);
  evbuffer_add (m->chan_out, hdr, sizeof (hdr));
  if (len)
    evbuffer_add (m->chan_out, payload, len);
  event_add (m->ev_write, NULL);
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

bool
mon_chan_full (struct mon *m)
{
  return evbuffer_get_length (m->chan_out) > CHAN_OUT_MAX;
}

/* Queues @e's owed credit as one WINDOW frame, if the guest is reading its
   channel (little waits in chan_out).  Credit counts as given only once
   queued: a guest that reads nothing gets no more than it saw, so its
   window runs out instead of the monitor's memory.  */
static void
flush_credit (struct mon *m, struct mon_exec *e)
{
  uint8_t ack[4];

  if (e->credit == 0 || m->quiesced || evbuffer_get_length (m->chan_out) >= CHAN_CREDIT_LOW)
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
  if (evbuffer_write (m->chan_out, fd) < 0 && errno != EAGAIN && errno != EINTR)
    return;
  for (struct mon_exec *e = m->execs; e; e = e->next)
    flush_credit (m, e);
  /* Processes' stdin waits for room in the channel too, as do sessions'
     frames.  */
  mon_procs_stdin_pump (m);
  mon_session_chan_room (m);
  if (evbuffer_get_length (m->chan_out) > 0)
    event_add (m->ev_write, NULL);
}

void
mon_on_chan_read (evutil_socket_t fd, short what, void *arg)
{
  struct mon *m = arg;
  struct rt_frame_header h;
  const uint8_t *payload;
  size_t avail;
  uint8_t *space;
  ssize_t n;
  int ret = 0;

  (void) what;
  space = rt_frame_reader_space (m->reader, &avail);
  n = read (fd, space, avail);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return;
  if (n <= 0)
    {
      /* QEMU closed the channel: it is exiting; the pidfd says why.  */
      event_del (m->ev_read);
      return;
    }
  rt_frame_reader_filled (m->reader, n);
  while (!mon_stopping (m) && (ret = rt_frame_reader_next (m->reader, &h, &payload)) > 0)
    mon_exec_frame (m, &h, payload);
  if (ret < 0)
    /* The byte stream from the guest is garbage: it cannot be trusted
       again.  */
    mon_stop (m, "guest_protocol_error");
}

void
mon_chan_quiet_end (struct mon *m)
{
  m->quiesced = false;
  for (struct mon_exec *e = m->execs; e; e = e->next)
    flush_credit (m, e);
  mon_procs_stdin_pump (m);
}
