/* session.c - session.sock's clients, each relaying one agent stream (see
   session.h).  */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "common/exec-result.h"
#include "monitor/channel.h"
#include "monitor/exec.h"
#include "monitor/idle.h"
#include "monitor/proc-stdin.h"
#include "monitor/session.h"
#include "vmm/channel.h"

/* A guest's error message is cut to this (it is shown to the user).  */
#define GUEST_MSG_MAX 1024
/* Held output goes to the client in frames of at most this.  */
#define OUT_FRAME (64 * 1024)

/* A run of held output: bytes of one stream.  */
struct run
{
  uint8_t stream;
  uint32_t len;
};

struct mon_session
{
  struct mon *m;
  struct bufferevent *bev;
  struct mon_exec *e;    /* its stream; NULL before the first frame and after the end */
  struct evbuffer *held; /* output not yet in the socket's buffer: payload only */
  struct evbuffer *runs; /* its runs but the last, struct run each */
  struct run run;        /* the last run: a stream's output merged */
  uint32_t owed;         /* held output not yet credited to the guest */
  uint32_t acked;        /* stdin the guest took, not yet told to the client */
  json_object *last;     /* the EXIT or ERROR body, sent after the held output */
  uint8_t last_type;
  bool opened;           /* the first frame came */
  bool input_closed;     /* an empty STDIN came */
  bool closing;          /* the last frame is queued: freed once written */
  bool paused;           /* not read while the agent channel is full */
  struct event *peer;    /* while paused: the client's close (EV_CLOSED) */
  struct mon_session *next;
};

static void
session_free (struct mon_session *s)
{
  struct mon *m = s->m;

  for (struct mon_session **p = &m->sessions; *p; p = &(*p)->next)
    if (*p == s)
      {
        *p = s->next;
        break;
      }
  if (m->resume_next == s)
    m->resume_next = s->next;
  m->n_sessions--;
  if (s->peer)
    event_free (s->peer);
  bufferevent_free (s->bev);
  if (s->held)
    evbuffer_free (s->held);
  if (s->runs)
    evbuffer_free (s->runs);
  json_object_put (s->last);
  free (s);
}

/* The stream is left to exec.c (its later output credited at once, its
   exit freeing it), owed its credit.  */
static void
detach (struct mon_session *s)
{
  if (s->e == NULL)
    return;
  s->e->sess = NULL;
  if (s->owed)
    mon_chan_credit (s->m, s->e, s->owed);
  s->owed = 0;
  s->e = NULL;
}

/* The client left, or broke the protocol: what it ran must not run on
   unseen (a connection closes on any signal).  */
static void
session_gone (struct mon_session *s)
{
  if (s->e)
    mon_chan_signal (s->m, s->e->stream, SIGKILL);
  detach (s);
  session_free (s);
}

static void
send_frame (struct mon_session *s, uint8_t type, const void *data, size_t len)
{
  uint8_t hdr[RT_FRAME_HEADER];
  struct evbuffer *out = bufferevent_get_output (s->bev);

  rt_frame_encode_header (hdr, type, 0, len);
  evbuffer_add (out, hdr, sizeof (hdr));
  if (len)
    evbuffer_add (out, data, len);
}

static void
send_json (struct mon_session *s, uint8_t type, json_object *o)
{
  size_t len;
  const char *str = json_object_to_json_string_length (o, JSON_C_TO_STRING_PLAIN, &len);
  send_frame (s, type, str, len);
}

/* Takes the first held run's bytes off the run records, at most
   OUT_FRAME of them.  Return: their count (the first of s->held).  */
static uint32_t
take_run (struct mon_session *s, uint8_t *stream)
{
  struct run r;
  bool closed = evbuffer_remove (s->runs, &r, sizeof (r)) == sizeof (r);
  uint32_t n;

  if (!closed)
    r = s->run;
  n = r.len < OUT_FRAME ? r.len : OUT_FRAME;
  *stream = r.stream;
  r.len -= n;
  if (!closed)
    s->run = r;
  else if (r.len > 0)
    evbuffer_prepend (s->runs, &r, sizeof (r));
  return n;
}

/* Hands held output to the client's socket buffer while that holds less
   than MON_SESSION_OUT_LOW, crediting the guest for it (its payload only:
   the window is bytes of output, whatever their frames); then the stdin
   the guest took, as one WINDOW; then, all output out, the last frame.
   Return: false when @s is gone.  */
static bool
pump (struct mon_session *s)
{
  struct evbuffer *out = bufferevent_get_output (s->bev);
  uint32_t credit = 0, n;
  uint8_t stream, hdr[RT_FRAME_HEADER], ack[4];

  while (evbuffer_get_length (out) < MON_SESSION_OUT_LOW && (n = take_run (s, &stream)) > 0)
    {
      rt_frame_encode_header (hdr, stream == 1 ? RT_FRAME_STDOUT : RT_FRAME_STDERR, 0, n);
      evbuffer_add (out, hdr, sizeof (hdr));
      evbuffer_remove_buffer (s->held, out, n);
      credit += n;
    }
  credit = credit < s->owed ? credit : s->owed;
  if (credit && s->e)
    {
      s->owed -= credit;
      mon_chan_credit (s->m, s->e, credit);
    }
  if (s->acked && evbuffer_get_length (out) < MON_SESSION_OUT_LOW)
    {
      rt_put_u32 (ack, s->acked);
      s->acked = 0;
      send_frame (s, RT_FRAME_WINDOW, ack, sizeof (ack));
    }
  if (s->last == NULL || evbuffer_get_length (s->held) > 0)
    return true;
  send_json (s, s->last_type, s->last);
  json_object_put (steal_pointer (&s->last));
  s->closing = true;
  /* Freed once all of it is written: the write callback comes at empty.  */
  bufferevent_setwatermark (s->bev, EV_WRITE, 0, 0);
  if (evbuffer_get_length (out) == 0)
    return session_free (s), false;
  return true;
}

/* The last frame: the client gets it after the held output, then the
   socket closes.  */
static void
finish (struct mon_session *s, uint8_t type, json_object *o)
{
  s->last = json_object_get (o);
  s->last_type = type;
  pump (s);
}

static void
finish_error (struct mon_session *s, const char *code, const char *hint, const char *msg)
{
  cleanup_json json_object *o = json_object_new_object ();

  json_object_object_add (o, "code", json_object_new_string (code));
  json_object_object_add (o, "message", json_object_new_string (msg));
  if (hint)
    json_object_object_add (o, "hint", json_object_new_string (hint));
  detach (s);
  finish (s, RT_FRAME_ERROR, o);
}

/* An integer member in [lo, hi], else -1.  */
static int64_t
int_in (json_object *o, const char *key, int64_t lo, int64_t hi)
{
  json_object *v;
  int64_t n;

  if (o == NULL || !json_object_object_get_ex (o, key, &v) || !json_object_is_type (v, json_type_int))
    return -1;
  n = json_object_get_int64 (v);
  return n >= lo && n <= hi ? n : -1;
}

/* The first frame: EXEC or CONNECT.  Return: false when @s is gone.  */
static bool
open_stream (struct mon_session *s, const struct rt_frame_header *h, const uint8_t *payload)
{
  cleanup_json json_object *body = rt_channel_parse_json (payload, h->len);
  struct mon_refusal r;
  uint8_t zero[4];
  int64_t port;

  s->opened = true;
  if (body == NULL || (h->type != RT_FRAME_EXEC && h->type != RT_FRAME_CONNECT))
    return finish_error (s, "invalid_request", NULL, "a session starts with EXEC or CONNECT"), false;
  if (h->type == RT_FRAME_EXEC)
    s->e = mon_exec_open (s->m, body, &r);
  else if ((port = int_in (body, "port", 1, 65535)) < 0)
    return finish_error (s, "usage", NULL, "port must be 1 to 65535"), false;
  else if (!mon_exec_refused (s->m, &r) && (s->e = mon_exec_new (s->m)) == NULL)
    mon_refuse (&r, 500, "internal", NULL, "out of memory");
  else if (s->e)
    {
      cleanup_json json_object *c = json_object_new_object ();
      json_object_object_add (c, "port", json_object_new_int64 (port));
      mon_chan_queue_json (s->m, RT_FRAME_CONNECT, s->e->stream, c);
    }
  if (s->e == NULL)
    return finish_error (s, r.code, r.hint, r.msg), false;
  s->e->sess = s;
  /* Opened: the client waits for this before it returns.  */
  rt_put_u32 (zero, 0);
  send_frame (s, RT_FRAME_WINDOW, zero, sizeof (zero));
  return true;
}

/* A frame from the client.  Return: false when @s is gone.  */
static bool
client_frame (struct mon_session *s, const struct rt_frame_header *h, const uint8_t *payload)
{
  cleanup_json json_object *o = NULL;
  int64_t a;

  mon_idle_touch (s->m);
  if (!s->opened)
    return open_stream (s, h, payload);
  if (s->closing || s->e == NULL)
    return true;
  switch (h->type)
    {
    case RT_FRAME_STDIN:
      /* Past its window, or after its end: a client that ignores the
         protocol is dropped rather than buffered for.  */
      if (s->input_closed || h->len > RT_WINDOW_INITIAL - s->e->stdin_inflight)
        return session_gone (s), false;
      s->input_closed = h->len == 0;
      s->e->stdin_inflight += h->len;
      mon_chan_queue (s->m, RT_FRAME_STDIN, s->e->stream, payload, h->len);
      return true;
    case RT_FRAME_RESIZE:
      o = rt_channel_parse_json (payload, h->len);
      {
        unsigned cols, rows;
        if (!mon_pty_size (o, &cols, &rows))
          return session_gone (s), false;
        json_object_put (steal_pointer (&o));
        o = json_object_new_object ();
        json_object_object_add (o, "cols", json_object_new_int64 (cols));
        json_object_object_add (o, "rows", json_object_new_int64 (rows));
      }
      mon_chan_queue_json (s->m, RT_FRAME_RESIZE, s->e->stream, o);
      return true;
    case RT_FRAME_SIGNAL:
      o = rt_channel_parse_json (payload, h->len);
      if ((a = int_in (o, "signal", 1, 64)) < 0)
        return session_gone (s), false;
      mon_chan_signal (s->m, s->e->stream, (int) a);
      return true;
    case RT_FRAME_WINDOW:
      return true;
    default:
      return session_gone (s), false;
    }
}

/* The client closed while it is not read: no event of its bufferevent
   would say so, and its command and slot would wait on the guest.  */
static void
on_peer_closed (evutil_socket_t fd, short what, void *arg)
{
  (void) fd, (void) what;
  session_gone (arg);
}

/* Reading stops until mon_session_chan_room; the client's close is
   watched meanwhile (best effort: a base without EV_CLOSED does not).  */
static void
pause_client (struct mon_session *s)
{
  struct event_base *base = s->m->base;

  s->paused = true;
  bufferevent_disable (s->bev, EV_READ);
  if (s->peer == NULL && (event_base_get_features (base) & EV_FEATURE_EARLY_CLOSE))
    s->peer = event_new (base, bufferevent_getfd (s->bev), EV_CLOSED, on_peer_closed, s);
  if (s->peer)
    event_add (s->peer, NULL);
}

static void
resume_client (struct mon_session *s)
{
  s->paused = false;
  if (s->peer)
    event_del (s->peer);
  bufferevent_enable (s->bev, EV_READ);
}

static void
on_client_read (struct bufferevent *bev, void *arg)
{
  struct mon_session *s = arg;
  struct evbuffer *in = bufferevent_get_input (bev);
  uint8_t hdr[RT_FRAME_HEADER];
  struct rt_frame_header h;

  while (evbuffer_copyout (in, hdr, sizeof (hdr)) == sizeof (hdr))
    {
      const uint8_t *payload;
      bool alive;

      if (rt_frame_decode_header (hdr, &h) < 0)
        return session_gone (s);
      if (evbuffer_get_length (in) < RT_FRAME_HEADER + (size_t) h.len)
        return;
      /* Frames for the guest wait while its channel is full: the client
         is not read meanwhile (mon_session_chan_room reads it again).  */
      if (s->opened && mon_chan_full (s->m))
        return pause_client (s);
      payload = evbuffer_pullup (in, RT_FRAME_HEADER + h.len);
      if (payload == NULL)
        return session_gone (s);
      alive = client_frame (s, &h, payload + RT_FRAME_HEADER);
      if (!alive)
        return;
      evbuffer_drain (in, RT_FRAME_HEADER + h.len);
    }
}

/* The client's buffer is under MON_SESSION_OUT_LOW (empty once closing).  */
static void
on_client_written (struct bufferevent *bev, void *arg)
{
  struct mon_session *s = arg;

  if (s->closing && evbuffer_get_length (bufferevent_get_output (bev)) == 0)
    session_free (s);
  else if (!s->closing)
    pump (s);
}

static void
on_client_event (struct bufferevent *bev, short what, void *arg)
{
  (void) bev;
  if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
    session_gone (arg);
}

/* Held output past MON_SESSION_HELD_MAX: only a command that switches
   between stdout and stderr (a run record each time) while its client
   does not read gets there.  The session ends rather than grow, the
   command killed, what was held dropped.  */
static void
overflow (struct mon_session *s)
{
  mon_chan_signal (s->m, s->e->stream, SIGKILL);
  evbuffer_drain (s->held, evbuffer_get_length (s->held));
  evbuffer_drain (s->runs, evbuffer_get_length (s->runs));
  s->run.len = 0;
  finish_error (s, "internal", NULL,
                "the client fell too far behind output switching between stdout and stderr: the command "
                "was killed");
}

void
mon_session_output (struct mon_session *s, uint8_t stream, const uint8_t *data, uint32_t len)
{
  /* A stream's output is merged into one run; a run ends only where the
     other stream's output begins.  */
  if (s->run.len > 0 && s->run.stream != stream)
    {
      evbuffer_add (s->runs, &s->run, sizeof (s->run));
      s->run.len = 0;
    }
  s->run.stream = stream;
  s->run.len += len;
  evbuffer_add (s->held, data, len);
  s->owed += len;
  if (evbuffer_get_length (s->held) + evbuffer_get_length (s->runs) > MON_SESSION_HELD_MAX)
    return overflow (s);
  pump (s);
}

/* The guest's last frame, re-made from what is known to be safe to show.  */
static json_object *
last_frame (const struct rt_frame_header *h, const uint8_t *payload)
{
  cleanup_json json_object *in = rt_channel_parse_json (payload, h->len);
  json_object *o = json_object_new_object ();
  const char *code = rt_json_str (in, "code"), *msg = rt_json_str (in, "message");

  if (h->type == RT_FRAME_EXIT)
    {
      rt_exec_result res = { 0 };
      rt_exec_result_from_json (in, &res);
      rt_exec_result_to_json (&res, o);
      return o;
    }
  /* Only codes the product documents reach the user.  */
  if (code == NULL
      || (strcmp (code, "file_not_found") != 0 && strcmp (code, "invalid_env") != 0
          && strcmp (code, "invalid_request") != 0 && strcmp (code, "connection_refused") != 0
          && strcmp (code, "too_many_commands") != 0))
    code = "internal";
  json_object_object_add (o, "code", json_object_new_string (code));
  if (msg == NULL)
    msg = "the agent refused the request";
  json_object_object_add (o, "message", json_object_new_string_len (msg, (int) strnlen (msg, GUEST_MSG_MAX)));
  return o;
}

void
mon_session_on_window (struct mon_exec *e, const struct rt_frame_header *h, const uint8_t *payload)
{
  struct mon_session *s = e->sess;
  uint32_t n;

  if (h->len != 4)
    return;
  n = rt_get_u32 (payload);
  n = n < e->stdin_inflight ? n : e->stdin_inflight;
  e->stdin_inflight -= n;
  /* Told as one number once the client's buffer has room: a client that
     writes but does not read gets no frame each.  */
  s->acked += n;
  pump (s);
}

void
mon_session_on_end (struct mon_exec *e, const struct rt_frame_header *h, const uint8_t *payload)
{
  struct mon_session *s = e->sess;
  cleanup_json json_object *o = last_frame (h, payload);

  s->e = NULL;
  s->owed = 0;
  mon_exec_free (e);
  finish (s, h->type, o);
}

/* Paused sessions are resumed in turn, from the one after the last
   resumed: those late in the list are not starved by those before.  */
void
mon_session_chan_room (struct mon *m)
{
  /* Each visited at most once; resume_next stays valid whatever frees.  */
  for (unsigned n = m->n_sessions; n > 0 && m->sessions && !mon_chan_full (m); n--)
    {
      struct mon_session *s = m->resume_next ? m->resume_next : m->sessions;

      m->resume_next = s->next;
      if (!s->paused)
        continue;
      resume_client (s);
      /* Its next frame may be read already: no read event would come.  */
      on_client_read (s->bev, s);
    }
}

void
mon_session_end_all (struct mon *m, const char *code, const char *msg)
{
  struct mon_session *s = m->sessions, *next;

  for (; s; s = next)
    {
      next = s->next;
      if (!s->closing && s->last == NULL)
        finish_error (s, code, NULL, msg);
    }
}

/* Beyond the cap a client is told so at once, without a buffer of its
   own (best effort: the socket is new and empty).  */
static void
refuse_client (evutil_socket_t fd)
{
  static const char body[] = "{\"code\":\"too_many_sessions\",\"message\":\"the sandbox has as many "
                             "sessions open as it takes\"}";
  uint8_t frame[RT_FRAME_HEADER + sizeof (body) - 1];

  rt_frame_encode_header (frame, RT_FRAME_ERROR, 0, sizeof (body) - 1);
  memcpy (frame + RT_FRAME_HEADER, body, sizeof (body) - 1);
  if (write (fd, frame, sizeof (frame)) < 0)
    {
      /* Nothing to do: it is closed either way.  */
    }
  close (fd);
}

static void
on_accept (struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int socklen, void *arg)
{
  struct mon *m = arg;
  struct mon_session *s;
  (void) l, (void) sa, (void) socklen;

  if (m->n_sessions >= MON_MAX_SESSIONS || (s = calloc (1, sizeof (*s))) == NULL)
    return refuse_client (fd);
  s->m = m;
  s->held = evbuffer_new ();
  s->runs = evbuffer_new ();
  s->bev = s->held && s->runs ? bufferevent_socket_new (m->base, fd, BEV_OPT_CLOSE_ON_FREE) : NULL;
  if (s->bev == NULL)
    {
      if (s->held)
        evbuffer_free (s->held);
      if (s->runs)
        evbuffer_free (s->runs);
      free (s);
      return refuse_client (fd);
    }
  /* At most one frame is read ahead of what is handled; held output moves
     on whenever the client's buffer drains under MON_SESSION_OUT_LOW.  */
  bufferevent_setwatermark (s->bev, EV_READ, 0, RT_FRAME_HEADER + RT_FRAME_MAX_PAYLOAD);
  bufferevent_setwatermark (s->bev, EV_WRITE, MON_SESSION_OUT_LOW, 0);
  bufferevent_setcb (s->bev, on_client_read, on_client_written, on_client_event, s);
  bufferevent_enable (s->bev, EV_READ | EV_WRITE);
  s->next = m->sessions;
  m->sessions = s;
  m->n_sessions++;
}

int
mon_session_listen (struct mon *m, rt_error **err)
{
  cleanup_free char *path = rt_strdup_printf ("%s/session.sock", m->cfg->dir);
  int fd;

  if (path == NULL)
    return rt_error_oom (err);
  fd = rt_listen_unix (path, SOCK_NONBLOCK, err);
  if (fd < 0)
    return fd;
  m->session_listener
      = evconnlistener_new (m->base, on_accept, m, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd);
  if (m->session_listener == NULL)
    {
      close (fd);
      return rt_error_set (err, EIO, "startup_failed", "cannot serve '%s'", path);
    }
  return 0;
}
