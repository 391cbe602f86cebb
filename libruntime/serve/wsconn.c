/* wsconn.c - a WebSocket over one of evhttp's connections: the upgrade's
   headers checked with the token, the 101, and then the connection's
   bufferevent (plain or TLS) taken from evhttp, its bytes moved between it
   and the handler's thread (srv_ws_* in serve/server.h).

   libevent 2.1 has no way to take a connection from evhttp (2.2's
   evhttp_start_ws_ uses http.c's insides), so the connection stays
   evhttp's while its bufferevent's callbacks are ours: evhttp reads and
   writes nothing more on it, and evhttp_connection_free ends it (its
   close callback lets the request go, serve/server.c's on_close).  The
   gate (serve/gate.h) lets every byte through from the upgrade on.

   A client is held to: a message of at most SRV_WS_MAX_MESSAGE (its head
   is enough to refuse it), at most twice that read and not yet taken by
   the handler (reading stops until it has), and an answer to our ping
   within a read timeout: SRV_WS_IDLE_S without a byte, a ping; again,
   the end.
   (no header of its own: serve/server.h and server-internal.h declare
   it.)  */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "serve/gate.h"
#include "serve/server-internal.h"
#include "serve/ws.h"

#define SRV_WS_IDLE_S 30
#define SRV_WS_IN_HIGH (2 * SRV_WS_MAX_MESSAGE)

/* Whether the comma-separated header @value has @token (case aside).  */
static bool
has_token (const char *value, const char *token)
{
  size_t n = strlen (token);

  while (value && *value)
    {
      value += strspn (value, " \t,");
      size_t len = strcspn (value, ",");
      size_t end = len;
      while (end > 0 && (value[end - 1] == ' ' || value[end - 1] == '\t'))
        end--;
      if (end == n && strncasecmp (value, token, n) == 0)
        return true;
      value += len;
    }
  return false;
}

bool
srv_ws_check (struct srv_req *r)
{
  const char *version = srv_header (r, "Sec-WebSocket-Version");

  if (r->method != EVHTTP_REQ_GET || !has_token (srv_header (r, "Upgrade"), "websocket")
      || !has_token (srv_header (r, "Connection"), "upgrade"))
    {
      srv_add_header (r, "Upgrade", "websocket");
      srv_reply_error (r, 426, "upgrade_required", "open it as a WebSocket (RFC 6455): docs/API.md", NULL,
                       "%s is a WebSocket: a GET with Upgrade: websocket and Connection: Upgrade", r->path);
      return false;
    }
  if (version == NULL || strcmp (version, "13") != 0)
    {
      srv_add_header (r, "Sec-WebSocket-Version", "13");
      srv_reply_error (r, 426, "upgrade_required", "send Sec-WebSocket-Version: 13", NULL,
                       "WebSocket version %s is not spoken here, only 13", version ? version : "(none)");
      return false;
    }
  if (!srv_ws_accept_key (srv_header (r, "Sec-WebSocket-Key"), r->ws_accept))
    {
      srv_reply_error (r, 400, "invalid_request", "Sec-WebSocket-Key is base64 of 16 random bytes", NULL,
                       "the WebSocket key is missing or not 16 bytes in base64");
      return false;
    }
  return true;
}

static void
signal_handler (struct srv_req *r)
{
  uint64_t one = 1;

  if (r->ws_efd >= 0 && write (r->ws_efd, &one, sizeof one) < 0 && errno != EAGAIN)
    return;
}

/* The connection ends: evhttp frees it (and its bufferevent), whose close
   callback lets the request go.  */
static void
ws_finish (struct srv_req *r)
{
  struct evhttp_connection *evcon = r->req ? evhttp_request_get_connection (r->req) : NULL;

  pthread_mutex_lock (&r->mu);
  r->gone = true;
  r->refs++;
  pthread_cond_broadcast (&r->cond);
  pthread_mutex_unlock (&r->mu);
  signal_handler (r);
  if (evcon)
    evhttp_connection_free (evcon);
  if (r->loop_ref)
    srv_loop_release (r, 101);
  srv_req_unref (r);
}

static struct bufferevent *
ws_bev (struct srv_req *r)
{
  struct evhttp_connection *evcon = r->req ? evhttp_request_get_connection (r->req) : NULL;

  return evcon ? evhttp_connection_get_bufferevent (evcon) : NULL;
}

static void
on_ws_read (struct bufferevent *bev, void *arg)
{
  struct srv_req *r = arg;
  size_t held;

  r->ws_idle = 0;
  pthread_mutex_lock (&r->mu);
  evbuffer_add_buffer (r->ws_in, bufferevent_get_input (bev));
  held = evbuffer_get_length (r->ws_in);
  if (held > SRV_WS_IN_HIGH)
    r->ws_paused = true;
  pthread_mutex_unlock (&r->mu);
  if (held > SRV_WS_IN_HIGH)
    bufferevent_disable (bev, EV_READ);
  signal_handler (r);
}

static void
on_ws_write (struct bufferevent *bev, void *arg)
{
  struct srv_req *r = arg;
  bool done;

  (void) bev;
  pthread_mutex_lock (&r->mu);
  r->inflight = 0;
  pthread_cond_broadcast (&r->cond);
  done = r->ended && evbuffer_get_length (r->out) == 0;
  pthread_mutex_unlock (&r->mu);
  if (done)
    ws_finish (r);
}

static void
on_ws_event (struct bufferevent *bev, short what, void *arg)
{
  struct srv_req *r = arg;
  uint8_t ping[2] = { 0x89, 0 };

  if ((what & BEV_EVENT_TIMEOUT) && (what & BEV_EVENT_READING) && r->ws_idle++ == 0)
    {
      bufferevent_write (bev, ping, sizeof ping);
      bufferevent_enable (bev, EV_READ);
      return;
    }
  ws_finish (r);
}

/* The connection becomes ours: the 101, then frames.  */
static void
take_over (struct srv_req *r, struct bufferevent *bev)
{
  static const struct timeval idle = { SRV_WS_IDLE_S, 0 };
  struct evhttp_connection *evcon = evhttp_request_get_connection (r->req);

  r->ws_up = r->start_sent = true;
  if (r->peer)
    event_free (r->peer);
  r->peer = NULL;
  srv_gate_open (r->srv, evcon);
  evbuffer_add_printf (bufferevent_get_output (bev),
                       "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                       "Sec-WebSocket-Accept: %s\r\nx-request-id: %s\r\n\r\n",
                       r->ws_accept, r->request_id);
  bufferevent_setcb (bev, on_ws_read, on_ws_write, on_ws_event, r);
  bufferevent_setwatermark (bev, EV_READ | EV_WRITE, 0, 0);
  bufferevent_set_timeouts (bev, &idle, &idle);
  bufferevent_enable (bev, EV_READ | EV_WRITE);
  if (evbuffer_get_length (bufferevent_get_input (bev)) > 0)
    on_ws_read (bev, r);
}

void
srv_ws_flush (struct srv_req *r)
{
  struct bufferevent *bev = ws_bev (r);
  struct evbuffer *out;
  bool done, resume = false;

  if (bev == NULL)
    {
      /* Its client left before the upgrade went.  */
      pthread_mutex_lock (&r->mu);
      r->gone = true;
      pthread_cond_broadcast (&r->cond);
      pthread_mutex_unlock (&r->mu);
      signal_handler (r);
      /* libevent frees a detached request once it is answered.  */
      evhttp_send_reply (r->req, 499, "Client Closed Request", NULL);
      return srv_loop_release (r, 499);
    }
  if (!r->ws_up)
    take_over (r, bev);
  out = bufferevent_get_output (bev);
  pthread_mutex_lock (&r->mu);
  evbuffer_add_buffer (out, r->out);
  r->inflight = evbuffer_get_length (out);
  if (r->ended && !r->ws_closed)
    {
      /* The handler ended without a close frame.  */
      uint8_t close_frame[4] = { 0x88, 2, SRV_WS_INTERNAL >> 8, SRV_WS_INTERNAL & 0xff };
      evbuffer_add (out, close_frame, sizeof close_frame);
      r->ws_closed = true;
    }
  if (r->ws_paused && evbuffer_get_length (r->ws_in) <= SRV_WS_IN_HIGH / 2)
    {
      r->ws_paused = false;
      resume = true;
    }
  done = r->ended && evbuffer_get_length (out) == 0;
  pthread_mutex_unlock (&r->mu);
  if (resume)
    bufferevent_enable (bev, EV_READ);
  if (done)
    ws_finish (r);
}

/* The handler's side.  */

int
srv_ws_accept (struct srv_req *r)
{
  int ret = 0;

  if (r->on_answer || r->wake == NULL || r->ws_accept[0] == '\0')
    {
      srv_reply_error (r, 400, "invalid_request", "open it on a server's own address", NULL,
                       "a WebSocket needs a direct HTTP connection");
      return -1;
    }
  pthread_mutex_lock (&r->mu);
  if (r->gone || r->whole || r->started)
    ret = -1;
  else if ((r->ws_efd = eventfd (0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 || (r->ws_in = evbuffer_new ()) == NULL)
    ret = -1;
  else
    {
      srv_ws_reader_init (&r->ws_rd, SRV_WS_MAX_MESSAGE);
      r->ws = r->started = true;
      r->status = 101;
    }
  pthread_mutex_unlock (&r->mu);
  if (ret < 0 && !r->started)
    {
      srv_reply_error (r, 500, "internal", NULL, NULL, "out of memory or descriptors for a WebSocket");
      return -1;
    }
  srv_req_wake (r);
  return ret;
}

int
srv_ws_fd (struct srv_req *r)
{
  return r->ws_efd;
}

/* A frame queued (pthread mutex held); false when none may go.  */
static bool
queue_frame (struct srv_req *r, int opcode, const void *data, size_t len)
{
  uint8_t head[SRV_WS_HEAD_MAX];
  size_t n = srv_ws_head (head, opcode, len);

  if (r->gone || !r->ws || r->ws_closed)
    return false;
  evbuffer_add (r->out, head, n);
  if (len)
    evbuffer_add (r->out, data, len);
  return true;
}

int
srv_ws_send (struct srv_req *r, int opcode, const void *data, size_t len)
{
  bool sent;

  pthread_mutex_lock (&r->mu);
  while (!r->gone && evbuffer_get_length (r->out) + r->inflight > SRV_STREAM_HIGH)
    pthread_cond_wait (&r->cond, &r->mu);
  sent = queue_frame (r, opcode, data, len);
  pthread_mutex_unlock (&r->mu);
  if (sent)
    srv_req_wake (r);
  return sent ? 0 : -1;
}

void
srv_ws_close (struct srv_req *r, unsigned code, const char *reason)
{
  uint8_t body[2 + 120];
  size_t n = reason ? strnlen (reason, 120) : 0;

  body[0] = (uint8_t) (code >> 8);
  body[1] = (uint8_t) code;
  if (n)
    memcpy (body + 2, reason, n);
  pthread_mutex_lock (&r->mu);
  if (queue_frame (r, SRV_WS_CLOSE, body, 2 + n))
    r->ws_closed = true;
  r->ended = true;
  pthread_mutex_unlock (&r->mu);
  srv_req_wake (r);
}

int
srv_ws_read (struct srv_req *r, struct srv_ws_msg *m)
{
  uint8_t chunk[16384];
  uint64_t count;
  const char *why = NULL;

  if (read (r->ws_efd, &count, sizeof count) < 0 && errno != EAGAIN)
    return -1;
  for (;;)
    {
      bool gone, paused, closed;
      int got, ret;

      ret = srv_ws_reader_next (&r->ws_rd, m, &why);
      if (ret < 0)
        {
          srv_ws_close (r, (unsigned) -ret, why);
          return -1;
        }
      if (ret == 1 && m->opcode == SRV_WS_PING)
        {
          srv_ws_send (r, SRV_WS_PONG, m->data, m->len);
          continue;
        }
      if (ret == 1 && m->opcode == SRV_WS_PONG)
        continue;
      if (ret == 1 && m->opcode == SRV_WS_CLOSE)
        {
          /* Its code echoed (RFC 6455 5.5.1).  */
          srv_ws_close (r, m->code == 1005 ? SRV_WS_NORMAL : m->code, NULL);
          return -1;
        }
      if (ret == 1)
        return 1;
      /* No more than the frame being read can still take: a push then
         never fails, an oversized frame being refused at its head.  */
      size_t room = r->ws_rd.max + 14 - srv_ws_reader_held (&r->ws_rd);
      pthread_mutex_lock (&r->mu);
      got = evbuffer_remove (r->ws_in, chunk, room < sizeof chunk ? room : sizeof chunk);
      gone = r->gone;
      closed = r->ws_closed;
      paused = r->ws_paused;
      pthread_mutex_unlock (&r->mu);
      if (paused)
        srv_req_wake (r);
      if (got > 0 && srv_ws_reader_push (&r->ws_rd, chunk, (size_t) got) < 0)
        {
          srv_ws_close (r, SRV_WS_TOO_BIG, "more sent than a message");
          return -1;
        }
      if (got <= 0)
        return gone || closed ? -1 : 0;
    }
}
