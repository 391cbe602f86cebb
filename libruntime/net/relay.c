/* relay.c - dialling and relaying one proxied connection (see relay.h).  */
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/intercept-relay.h"
#include "net/relay.h"
#include "net/rewrite.h"
#include "net/sniff.h"
#include "net/sockaddr.h"

#define GUEST_GONE_S 3 /* an intercepted server's silence after the guest's end */

/* ---- draining a closed TLS side -------------------------------------------- */

/* An orphan is no longer among the proxy's connections, so the guest
   could otherwise pile them up (close a connection whose peer reads a
   byte now and then, open the next): they are counted, their bytes too,
   and each has a deadline that progress does not push back.  */
struct orphan
{
  struct rt_proxy *px;
  struct bufferevent *bev;
  struct event *deadline;
  size_t bytes; /* counted in px->orphan_bytes */
  LIST_ENTRY (orphan) link;
};

/* Closes with a RST: what is still unsent is dropped by the kernel too,
   and the peer learns the stream was cut.  */
static void
reset_free (struct bufferevent *bev)
{
  struct linger lg = { 1, 0 };

  setsockopt (bufferevent_getfd (bev), SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  bufferevent_free (bev);
}

static void
orphan_free (struct orphan *o, bool reset)
{
  LIST_REMOVE (o, link);
  o->px->n_orphans--;
  o->px->orphan_bytes -= o->bytes;
  event_free (o->deadline);
  if (reset)
    reset_free (o->bev);
  else
    bufferevent_free (o->bev);
  free (o);
}

static void
orphan_written (struct bufferevent *bev, void *arg)
{
  if (evbuffer_get_length (bufferevent_get_output (bev)) == 0)
    orphan_free (arg, false);
}

static void
orphan_event (struct bufferevent *bev, short what, void *arg)
{
  (void) bev;
  (void) what;
  orphan_free (arg, true);
}

static void
orphan_expired (evutil_socket_t fd, short what, void *arg)
{
  (void) fd;
  (void) what;
  orphan_free (arg, true);
}

void
rt_relay_orphans_free (struct rt_proxy *px)
{
  while (!LIST_EMPTY (&px->orphans))
    orphan_free (LIST_FIRST (&px->orphans), false);
}

/* Keeps @raw writing out its @left bytes, within the caps of
   proxy-internal.h.  */
static int
orphan_add (struct rt_proxy *px, struct bufferevent *raw, size_t left)
{
  struct timeval idle = { DIAL_TIMEOUT_S, 0 };
  struct timeval life = { px->orphan_deadline_s > 0 ? px->orphan_deadline_s : RT_PROXY_ORPHAN_DEADLINE_S, 0 };
  struct orphan *o;

  if (px->n_orphans >= RT_PROXY_MAX_ORPHANS || left > RT_PROXY_MAX_ORPHAN_BYTES - px->orphan_bytes)
    return -1;
  o = calloc (1, sizeof *o);
  if (o == NULL || (o->deadline = evtimer_new (px->base, orphan_expired, o)) == NULL)
    {
      free (o);
      return -1;
    }
  o->px = px;
  o->bev = raw;
  o->bytes = left;
  LIST_INSERT_HEAD (&px->orphans, o, link);
  px->n_orphans++;
  px->orphan_bytes += left;
  evtimer_add (o->deadline, &life);
  bufferevent_setcb (raw, NULL, orphan_written, orphan_event, o);
  bufferevent_disable (raw, EV_READ);
  bufferevent_set_timeouts (raw, NULL, &idle);
  bufferevent_enable (raw, EV_WRITE);
  return 0;
}

/* A TLS filter may leave records it already encrypted in its socket's
   buffer: with @drain they are still written (the socket then closes by
   itself, tracked in @px until then) unless the orphans' caps are
   reached, else dropped.  */
void
rt_relay_release (struct rt_proxy *px, struct bufferevent *bev, bool drain)
{
  struct bufferevent *raw = bufferevent_get_underlying (bev);
  SSL *ssl = raw ? bufferevent_openssl_get_ssl (bev) : NULL;
  size_t left;

  bufferevent_free (bev);
  if (raw == NULL)
    return;
  /* close_notify, so that a close-delimited body is not taken for a
     truncation.  */
  if (drain && SSL_is_init_finished (ssl))
    SSL_shutdown (ssl);
  ERR_clear_error ();
  SSL_free (ssl);
  left = evbuffer_get_length (bufferevent_get_output (raw));
  if (!drain || left == 0)
    bufferevent_free (raw);
  else if (orphan_add (px, raw, left) < 0)
    reset_free (raw);
}

/* ---- relaying ---------------------------------------------------------------- */

static struct bufferevent *
other (struct conn *c, struct bufferevent *bev)
{
  return bev == c->guest ? c->up : c->guest;
}

static void
maybe_done (struct conn *c)
{
  if (c->guest_shut && c->up_shut)
    rt_conn_free (c, "allowed", "allowed");
}

/* Half-close: @to gets EOF once everything queued for it is written.  */
static void
shut_if_drained (struct conn *c, struct bufferevent *to)
{
  bool *shut = to == c->guest ? &c->guest_shut : &c->up_shut;
  bool from_eof = to == c->guest ? c->up_eof : c->guest_eof;

  if (!from_eof || *shut || evbuffer_get_length (bufferevent_get_output (to)) > 0)
    return;
  /* TLS has no half-close to pass on: the server's end (once its data is
     out) ends it all; after the guest's, what the server still sends has
     GUEST_GONE_S of silence at most to arrive.  */
  if (c->intercept)
    {
      struct timeval tv = { GUEST_GONE_S, 0 };
      if (to == c->guest)
        c->guest_shut = c->up_shut = true;
      else
        bufferevent_set_timeouts (c->up, &tv, NULL);
      return;
    }
  shutdown (bufferevent_getfd (to), SHUT_WR);
  *shut = true;
}

static void
relay_read (struct bufferevent *from, void *arg)
{
  struct conn *c = arg;
  struct bufferevent *to = other (c, from);

  if (from == c->guest && c->rw)
    {
      rt_intercept_relay_rewrite (c);
      return;
    }
  if (from == c->up && c->rw && c->intercept)
    {
      rt_intercept_relay_scrub (c, false);
      return;
    }
  struct evbuffer *in = bufferevent_get_input (from), *out = bufferevent_get_output (to);
  size_t n = evbuffer_get_length (in);

  if (from == c->guest)
    c->bytes_out += n;
  else
    c->bytes_in += n;
  evbuffer_add_buffer (out, in);
  if (evbuffer_get_length (out) >= RELAY_HIGH)
    bufferevent_disable (from, EV_READ);
}

static void
relay_write (struct bufferevent *to, void *arg)
{
  struct conn *c = arg;
  struct bufferevent *from = other (c, to);
  bool from_eof = from == c->guest ? c->guest_eof : c->up_eof;

  if (!c->relaying || from == NULL)
    return;
  if (!from_eof)
    bufferevent_enable (from, EV_READ);
  shut_if_drained (c, to);
  maybe_done (c);
}

static void
relay_event (struct bufferevent *bev, short what, void *arg)
{
  struct conn *c = arg;
  struct bufferevent *to;

  if (what & BEV_EVENT_CONNECTED)
    {
      /* The guest finished its TLS handshake with us.  */
      c->guest_tls_up = true;
      return;
    }
  if (what & BEV_EVENT_EOF)
    {
      bool from_guest = bev == c->guest;
      if (!from_guest && c->rw && c->intercept)
        rt_intercept_relay_scrub (c, true);
      else
        relay_read (bev, c);
      /* The rewriter may have refused what it read: no relay any more.  */
      if (!c->relaying)
        return;
      if (from_guest)
        c->guest_eof = true;
      else
        c->up_eof = true;
      bufferevent_disable (bev, EV_READ);
      to = other (c, bev);
      shut_if_drained (c, to);
      maybe_done (c);
      return;
    }
  if (what & (BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
    {
      /* A reset upstream becomes a reset for the guest.  */
      if (bev == c->up)
        rt_conn_reset (c, "allowed", "allowed");
      else if (c->intercept && !c->guest_tls_up)
        /* Most likely a client that does not trust the egress CA.  */
        rt_conn_free (c, "refused", "guest_tls_failed");
      else
        rt_conn_free (c, "allowed", "allowed");
    }
}

/* ---- the first bytes: their name checked before they go ------------------- */

int
rt_relay_check_requests (struct conn *c, const char *host)
{
  c->rw = rt_rewrite_checker_new (host ? host : "", c->port);
  if (c->rw == NULL)
    {
      rt_conn_reset (c, NULL, NULL);
      return -1;
    }
  return 0;
}

/* The first bytes may go: relay them and all after.  */
static void
check_passed (struct conn *c)
{
  c->check_name = false;
  bufferevent_setcb (c->guest, relay_read, relay_write, relay_event, c);
  bufferevent_enable (c->guest, EV_READ);
  relay_read (c->guest, c);
}

static void
on_check_resolved (void *owner, struct evutil_addrinfo *res)
{
  struct conn *c = owner;

  for (struct evutil_addrinfo *ai = res; ai; ai = ai->ai_next)
    if (rt_addr_same_ip (&c->addr, ai->ai_addr))
      {
        check_passed (c);
        return;
      }
  rt_conn_reset (c, "refused", "name_mismatch");
}

/* Holds what the guest sends until it tells the name it is for (a TLS
   ClientHello's SNI, an HTTP request's Host) or shows it never will (any
   other protocol); the server's bytes meanwhile go through, so that
   protocols where it speaks first wait for nothing.  */
static void
check_read (struct bufferevent *bev, void *arg)
{
  struct conn *c = arg;
  struct evbuffer *in = bufferevent_get_input (bev);
  size_t len = evbuffer_get_length (in), n = len < RT_SNIFF_MAX ? len : RT_SNIFF_MAX;
  char *name = NULL;
  const char *why = NULL;
  const unsigned char *p;
  int r, http;

  /* Its name being resolved: one check at a time.  */
  if (c->resolving)
    return;
  p = evbuffer_pullup (in, (ssize_t) n);
  r = rt_sniff_name (p, n, &name);
  /* A hello we cannot read may hold a name the server reads.  */
  if (r == RT_SNIFF_UNREADABLE)
    {
      rt_conn_reset (c, "refused", "name_mismatch");
      return;
    }
  if (r < 0 || (http = rt_sniff_is_http (p, n)) < 0)
    {
      free (name);
      return;
    }
  /* Plain HTTP: the requests after this one too.  */
  if (http > 0 && rt_relay_check_requests (c, r > 0 ? name : c->name) < 0)
    {
      free (name);
      return;
    }
  switch (rt_conn_name_check (c, &name, &why))
    {
    case 1:
      check_passed (c);
      return;
    case 0:
      /* Nothing more is read until the name's addresses are known.  */
      bufferevent_disable (c->guest, EV_READ);
      rt_dns_resolve (&c->px->dns, c->name, c, on_check_resolved, &c->resolving);
      return;
    default:
      rt_conn_reset (c, "refused", why);
    }
}

static void
check_event (struct bufferevent *bev, short what, void *arg)
{
  struct conn *c = arg;

  /* The guest ended before its first bytes told their name: a request
     or hello cut short is not passed on.  */
  if ((what & BEV_EVENT_EOF) && evbuffer_get_length (bufferevent_get_input (bev)) > 0)
    {
      rt_conn_reset (c, "refused", "name_mismatch");
      return;
    }
  relay_event (bev, what, arg);
}

static void
start_relay (struct conn *c)
{
  bool check = c->check_name && !c->intercept;

  c->relaying = true;
  bufferevent_set_timeouts (c->up, NULL, NULL);
  bufferevent_set_timeouts (c->guest, NULL, NULL);
  if (check)
    bufferevent_setcb (c->guest, check_read, relay_write, check_event, c);
  else
    bufferevent_setcb (c->guest, relay_read, relay_write, relay_event, c);
  bufferevent_setcb (c->up, relay_read, relay_write, relay_event, c);
  bufferevent_enable (c->guest, EV_READ | EV_WRITE);
  bufferevent_enable (c->up, EV_READ | EV_WRITE);
  /* What the guest sent while we decided.  */
  if (evbuffer_get_length (bufferevent_get_input (c->guest)) > 0)
    (check ? check_read : relay_read) (c->guest, c);
}

/* ---- dialling ---------------------------------------------------------------- */

static void
on_dialled (struct bufferevent *bev, short what, void *arg)
{
  struct conn *c = arg;

  (void) bev;
  if (!(what & BEV_EVENT_CONNECTED))
    {
      const char *why = c->intercept && bufferevent_get_underlying (c->up) ? rt_intercept_relay_failure (c)
                                                                           : "connect_failed";
      rt_relay_release (c->px, c->up, false);
      c->up = NULL;
      rt_conn_refuse (c, why);
      return;
    }
  if (c->intercept && bufferevent_get_underlying (c->up) == NULL)
    {
      /* Connected: now TLS toward the real server; this runs again once
         that handshake is over.  */
      rt_intercept_relay_server_tls (c, on_dialled);
      return;
    }
  if (c->kind == CONN_PROXY && c->is_connect)
    evbuffer_add_printf (bufferevent_get_output (c->guest), "HTTP/1.1 200 Connection established\r\n\r\n");
  if (c->intercept && rt_intercept_relay_guest (c) < 0)
    return;
  else if (c->head)
    {
      bufferevent_write (c->up, c->head, c->head_len);
      c->bytes_out += c->head_len;
    }
  start_relay (c);
}

void
rt_relay_dial (struct conn *c)
{
  struct timeval tv = { DIAL_TIMEOUT_S, 0 };
  int fd;

  rt_addr_set_port (&c->addr, c->port);
  /* The monitor lives in the host's namespace: this socket leaves from
     there, never from the sandbox's.  */
  fd = socket (c->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  c->up = fd < 0 ? NULL : bufferevent_socket_new (c->px->base, fd, BEV_OPT_CLOSE_ON_FREE);
  if (c->up == NULL)
    {
      if (fd >= 0)
        close (fd);
      rt_conn_refuse (c, "connect_failed");
      return;
    }
  bufferevent_disable (c->guest, EV_READ);
  bufferevent_setcb (c->up, NULL, NULL, on_dialled, c);
  if (bufferevent_socket_connect (c->up, (struct sockaddr *) &c->addr, rt_addr_len (&c->addr)) < 0)
    {
      bufferevent_free (c->up);
      c->up = NULL;
      rt_conn_refuse (c, "connect_failed");
      return;
    }
  bufferevent_set_timeouts (c->up, NULL, &tv);
}
