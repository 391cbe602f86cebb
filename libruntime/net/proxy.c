/* proxy.c - the egress proxy and DNS server of one sandbox (see proxy.h).  */
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <event2/dns_struct.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <string.h>
#include <sys/socket.h>

#include "net/intercept.h"
#include "net/proxy.h"
#include "net/rewrite.h"
#include "net/sniff.h"
#include "sandbox/store.h"

#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80 /* linux/netfilter_ipv4.h, which clashes with netinet/in.h */
#endif

#define HEAD_TIMEOUT_S 30
#define SNIFF_TIMEOUT_MS 1000
#define DIAL_TIMEOUT_S 10
#define GUEST_GONE_S 3 /* an intercepted server's silence after the guest's end */
#define RELAY_HIGH (1024 * 1024) /* bytes queued toward one side before reading the other pauses */
#define DNS_TTL 60
#define DNS_CACHE 1024
#define LOG_MAX (16 * 1024 * 1024)
#define MAX_OVERRIDES 64

enum conn_kind
{
  CONN_PROXY,
  CONN_TRANSPARENT,
};

struct resolve_req;

struct conn
{
  struct rt_proxy *px;
  struct conn *prev, *next;
  enum conn_kind kind;
  struct bufferevent *guest, *up;
  struct event *sniff_timer;
  struct resolve_req *resolving;
  char *name;                   /* what the guest asked for, when known */
  struct sockaddr_storage addr; /* what is (to be) dialled */
  bool have_addr;
  int port;
  bool is_connect;
  char *head;                   /* plain HTTP: the head to send upstream */
  size_t head_len;
  bool relaying, guest_eof, up_eof, guest_shut, up_shut;
  uint64_t bytes_out, bytes_in;
  /* TLS interception, for hosts bound to a secret only.  */
  bool tls;                       /* the guest speaks TLS (CONNECT, or a ClientHello seen) */
  bool intercept, guest_tls_up, resetting;
  struct rt_secret_binding *bind; /* what is swapped on this connection */
  size_t n_bind;
  struct rt_rewrite *rw;
  int guest_fd;                   /* under the TLS filter, for SO_LINGER */
};

struct dns_entry
{
  struct in_addr addr;
  char name[256];
};

struct override
{
  char *name;
  struct sockaddr_storage addr;
};

struct rt_proxy
{
  struct event_base *base;
  struct evdns_base *dns;
  struct evconnlistener *proxy_l, *transparent_l;
  struct evdns_server_port *dns_port;
  struct rt_egress_rules rules;
  struct conn *conns;
  struct orphan *orphans; /* sockets still writing out a closed TLS side */
  int log_fd;
  size_t log_bytes;
  struct dns_entry cache[DNS_CACHE];
  size_t cache_next;
  struct override overrides[MAX_OVERRIDES];
  size_t n_overrides;
  struct sockaddr_storage *host_addrs; /* this host's own addresses */
  size_t n_host_addrs;
  struct rt_intercept *ic;             /* NULL: the sandbox has no secrets */
};

/* ---- small helpers ------------------------------------------------------- */

static const char *
addr_text (const struct sockaddr_storage *ss, char *buf, size_t size)
{
  const void *a = ss->ss_family == AF_INET ? (const void *) &((const struct sockaddr_in *) ss)->sin_addr
                                           : (const void *) &((const struct sockaddr_in6 *) ss)->sin6_addr;
  if (inet_ntop (ss->ss_family, a, buf, size) == NULL)
    snprintf (buf, size, "?");
  return buf;
}

static socklen_t
addr_len (const struct sockaddr_storage *ss)
{
  return ss->ss_family == AF_INET ? sizeof (struct sockaddr_in) : sizeof (struct sockaddr_in6);
}

static void
set_port (struct sockaddr_storage *ss, int port)
{
  if (ss->ss_family == AF_INET)
    ((struct sockaddr_in *) ss)->sin_port = htons (port);
  else
    ((struct sockaddr_in6 *) ss)->sin6_port = htons (port);
}

/* An IP literal (v6 without brackets) into @ss; false for a name.  */
static bool
parse_literal (const char *s, struct sockaddr_storage *ss)
{
  struct sockaddr_in *in = (struct sockaddr_in *) ss;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) ss;

  memset (ss, 0, sizeof *ss);
  if (inet_pton (AF_INET, s, &in->sin_addr) == 1)
    {
      in->sin_family = AF_INET;
      return true;
    }
  if (inet_pton (AF_INET6, s, &in6->sin6_addr) == 1)
    {
      in6->sin6_family = AF_INET6;
      return true;
    }
  return false;
}

/* One JSON line per decision; write(2) of a whole line on an O_APPEND fd,
   so a reader never sees half a line.  */
static void
log_line (struct rt_proxy *px, const char *kind, const char *name, const struct sockaddr_storage *addr, int port,
          const char *decision, const char *reason, uint64_t out, uint64_t in, const struct rt_rewrite *rw)
{
  cleanup_json json_object *o = json_object_new_object ();
  char when[32], abuf[INET6_ADDRSTRLEN];
  const char *s;
  size_t len;

  if (px->log_fd < 0 || px->log_bytes >= LOG_MAX)
    return;
  rt_format_time (rt_epoch_ms (), when);
  json_object_object_add (o, "time", json_object_new_string (when));
  json_object_object_add (o, "kind", json_object_new_string (kind));
  json_object_object_add (o, "name", name ? json_object_new_string (name) : NULL);
  json_object_object_add (o, "address", addr ? json_object_new_string (addr_text (addr, abuf, sizeof abuf)) : NULL);
  json_object_object_add (o, "port", json_object_new_int (port));
  json_object_object_add (o, "decision", json_object_new_string (decision));
  json_object_object_add (o, "reason", json_object_new_string (reason));
  json_object_object_add (o, "bytesOut", json_object_new_int64 ((int64_t) out));
  json_object_object_add (o, "bytesIn", json_object_new_int64 ((int64_t) in));
  /* Intercepted for a secret: how many requests had one swapped in.  */
  if (rw)
    json_object_object_add (o, "secretRequests", json_object_new_int64 ((int64_t) rt_rewrite_swapped (rw)));
  s = json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN);
  len = strlen (s);
  {
    cleanup_free char *line = rt_strdup_printf ("%s\n", s);
    if (line && write (px->log_fd, line, len + 1) == (ssize_t) len + 1)
      px->log_bytes += len + 1;
  }
  if (px->log_bytes >= LOG_MAX)
    {
      static const char full[] = "{\"decision\":\"log_full\",\"reason\":\"the egress log reached 16 MiB\"}\n";
      if (write (px->log_fd, full, sizeof full - 1) < 0)
        return;
    }
}

static void
cache_put (struct rt_proxy *px, const struct in_addr *a, const char *name)
{
  struct dns_entry *e = &px->cache[px->cache_next++ % DNS_CACHE];

  e->addr = *a;
  snprintf (e->name, sizeof e->name, "%s", name);
}

/* The name this server last gave out for @ss, if any.  */
static const char *
cache_get (struct rt_proxy *px, const struct sockaddr_storage *ss)
{
  const struct in_addr *a = &((const struct sockaddr_in *) ss)->sin_addr;
  size_t n = px->cache_next < DNS_CACHE ? px->cache_next : DNS_CACHE;

  if (ss->ss_family != AF_INET)
    return NULL;
  for (size_t i = 1; i <= n; i++)
    {
      struct dns_entry *e = &px->cache[(px->cache_next - i) % DNS_CACHE];
      if (e->addr.s_addr == a->s_addr)
        return e->name;
    }
  return NULL;
}

/* ---- deciding ------------------------------------------------------------- */

static bool
same_ip (const struct sockaddr_storage *a, const struct sockaddr *b)
{
  if (a->ss_family != b->sa_family)
    return false;
  if (a->ss_family == AF_INET)
    return ((const struct sockaddr_in *) a)->sin_addr.s_addr == ((const struct sockaddr_in *) b)->sin_addr.s_addr;
  return memcmp (&((const struct sockaddr_in6 *) a)->sin6_addr, &((const struct sockaddr_in6 *) b)->sin6_addr,
                 sizeof (struct in6_addr))
         == 0;
}

/* NULL when the rules allow the destination, else the reason.  Beyond the
   rules: none of this host's own addresses, public ones included, so no
   service of the host is reachable whatever it listens on.  */
static const char *
refusal (struct rt_proxy *px, const char *name, const struct sockaddr *addr, int port)
{
  enum rt_egress_verdict v = rt_egress_decide (&px->rules, name, addr, port);

  if (v != RT_EGRESS_ALLOWED)
    return rt_egress_verdict_str (v);
  for (size_t i = 0; addr && i < px->n_host_addrs; i++)
    if (same_ip (&px->host_addrs[i], addr))
      return "host_address";
  return NULL;
}

static int
load_host_addrs (struct rt_proxy *px, rt_error **err)
{
  struct ifaddrs *list, *ifa;
  size_t n = 0;

  if (getifaddrs (&list) < 0)
    return rt_error_set (err, errno, "startup_failed", "getifaddrs: %s", strerror (errno));
  for (ifa = list; ifa; ifa = ifa->ifa_next)
    n += ifa->ifa_addr && (ifa->ifa_addr->sa_family == AF_INET || ifa->ifa_addr->sa_family == AF_INET6);
  px->host_addrs = calloc (n ? n : 1, sizeof *px->host_addrs);
  if (px->host_addrs == NULL)
    {
      freeifaddrs (list);
      return rt_error_oom (err);
    }
  for (ifa = list; ifa; ifa = ifa->ifa_next)
    if (ifa->ifa_addr && (ifa->ifa_addr->sa_family == AF_INET || ifa->ifa_addr->sa_family == AF_INET6))
      memcpy (&px->host_addrs[px->n_host_addrs++], ifa->ifa_addr,
              ifa->ifa_addr->sa_family == AF_INET ? sizeof (struct sockaddr_in) : sizeof (struct sockaddr_in6));
  freeifaddrs (list);
  return 0;
}

/* ---- resolving ------------------------------------------------------------ */

/* A lookup in flight: its owner may go away first (the callback then only
   frees it).  */
typedef void (*resolve_cb) (void *owner, struct evutil_addrinfo *res);

struct resolve_req
{
  void *owner;
  resolve_cb cb;
  struct evdns_getaddrinfo_request *req;
  struct resolve_req **backref;
};

static struct evutil_addrinfo *
addrinfo_of (const struct sockaddr_storage *ss)
{
  struct evutil_addrinfo *ai = calloc (1, sizeof *ai + sizeof *ss);

  if (ai == NULL)
    return NULL;
  ai->ai_family = ss->ss_family;
  ai->ai_socktype = SOCK_STREAM;
  ai->ai_addr = (struct sockaddr *) (ai + 1);
  ai->ai_addrlen = addr_len (ss);
  memcpy (ai->ai_addr, ss, ai->ai_addrlen);
  return ai;
}

static void
addrinfo_free (struct evutil_addrinfo *ai, bool ours)
{
  if (ai == NULL)
    return;
  if (!ours)
    {
      evutil_freeaddrinfo (ai);
      return;
    }
  while (ai)
    {
      struct evutil_addrinfo *next = ai->ai_next;
      free (ai);
      ai = next;
    }
}

static void
on_resolved (int result, struct evutil_addrinfo *res, void *arg)
{
  struct resolve_req *r = arg;

  if (r->backref)
    *r->backref = NULL;
  if (r->owner)
    r->cb (r->owner, result == 0 ? res : NULL);
  if (res)
    evutil_freeaddrinfo (res);
  free (r);
}

/* Calls @cb (maybe before returning) with the addresses of @name, or NULL.
   The overrides answer first: tests point names at their own servers.  */
static void
resolve (struct rt_proxy *px, const char *name, void *owner, resolve_cb cb, struct resolve_req **backref)
{
  struct evutil_addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
  struct evutil_addrinfo *list = NULL, **tail = &list;
  struct resolve_req *r;
  bool overridden = false;

  for (size_t i = 0; i < px->n_overrides; i++)
    if (strcasecmp (px->overrides[i].name, name) == 0)
      {
        overridden = true;
        if ((*tail = addrinfo_of (&px->overrides[i].addr)))
          tail = &(*tail)->ai_next;
      }
  if (overridden)
    {
      cb (owner, list);
      addrinfo_free (list, true);
      return;
    }
  r = calloc (1, sizeof *r);
  if (r == NULL)
    {
      cb (owner, NULL);
      return;
    }
  r->owner = owner;
  r->cb = cb;
  r->backref = backref;
  *backref = r;
  {
    /* NULL when the callback already ran (and freed r).  */
    struct evdns_getaddrinfo_request *req = evdns_getaddrinfo (px->dns, name, NULL, &hints, on_resolved, r);
    if (req)
      r->req = req;
  }
}

static void
resolve_cancel (struct resolve_req **rp)
{
  struct resolve_req *r = *rp;

  if (r == NULL)
    return;
  *rp = NULL;
  r->owner = NULL;
  r->backref = NULL;
  if (r->req)
    evdns_getaddrinfo_cancel (r->req);
}

/* ---- connections ---------------------------------------------------------- */

struct orphan
{
  struct bufferevent *bev;
  struct orphan **head, *prev, *next;
};

static void
orphan_free (struct orphan *o)
{
  if (o->prev)
    o->prev->next = o->next;
  else
    *o->head = o->next;
  if (o->next)
    o->next->prev = o->prev;
  bufferevent_free (o->bev);
  free (o);
}

static void
orphan_written (struct bufferevent *bev, void *arg)
{
  if (evbuffer_get_length (bufferevent_get_output (bev)) == 0)
    orphan_free (arg);
}

static void
orphan_event (struct bufferevent *bev, short what, void *arg)
{
  (void) bev;
  (void) what;
  orphan_free (arg);
}

/* Frees one side.  A TLS filter may leave records it already encrypted in
   its socket's buffer: with @drain they are still written (the socket
   then closes by itself, tracked in @px until then), else dropped.  */
static void
release (struct rt_proxy *px, struct bufferevent *bev, bool drain)
{
  struct bufferevent *raw = bufferevent_get_underlying (bev);
  SSL *ssl = raw ? bufferevent_openssl_get_ssl (bev) : NULL;
  struct timeval tv = { DIAL_TIMEOUT_S, 0 };
  struct orphan *o;

  bufferevent_free (bev);
  if (raw == NULL)
    return;
  /* close_notify, so that a close-delimited body is not taken for a
     truncation.  */
  if (drain && SSL_is_init_finished (ssl))
    SSL_shutdown (ssl);
  ERR_clear_error ();
  SSL_free (ssl);
  if (!drain || evbuffer_get_length (bufferevent_get_output (raw)) == 0 || (o = calloc (1, sizeof *o)) == NULL)
    {
      bufferevent_free (raw);
      return;
    }
  *o = (struct orphan){ raw, &px->orphans, NULL, px->orphans };
  if (px->orphans)
    px->orphans->prev = o;
  px->orphans = o;
  bufferevent_setcb (raw, NULL, orphan_written, orphan_event, o);
  bufferevent_disable (raw, EV_READ);
  bufferevent_set_timeouts (raw, NULL, &tv);
  bufferevent_enable (raw, EV_WRITE);
}

static void
conn_free (struct conn *c, const char *decision, const char *reason)
{
  struct rt_proxy *px = c->px;

  if (decision)
    log_line (px, c->kind == CONN_PROXY ? (c->is_connect ? "connect" : "http") : "tcp", c->name,
              c->have_addr ? &c->addr : NULL, c->port, decision, reason, c->bytes_out, c->bytes_in, c->rw);
  resolve_cancel (&c->resolving);
  if (c->sniff_timer)
    event_free (c->sniff_timer);
  if (c->guest)
    release (px, c->guest, !c->resetting);
  if (c->up)
    release (px, c->up, !c->resetting);
  if (c->prev)
    c->prev->next = c->next;
  else
    px->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  free (c->name);
  free (c->head);
  rt_rewrite_free (c->rw);
  rt_secret_bindings_free (c->bind, c->n_bind);
  free (c);
}

/* Closes the guest's side with a RST, so its connect() or read() fails at
   once instead of waiting.  */
static void
conn_reset (struct conn *c, const char *decision, const char *reason)
{
  struct linger lg = { 1, 0 };

  if (c->guest)
    setsockopt (c->guest_fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  c->resetting = true;
  conn_free (c, decision, reason);
}

static void
on_drained_close (struct bufferevent *bev, void *arg)
{
  struct conn *c = arg;

  if (evbuffer_get_length (bufferevent_get_output (bev)) == 0)
    conn_free (c, NULL, NULL);
}

static void
on_guest_gone (struct bufferevent *bev, short what, void *arg)
{
  (void) bev;
  (void) what;
  conn_free (arg, NULL, NULL);
}

/* An HTTP answer from the proxy itself, then close.  */
static void
conn_answer (struct conn *c, int status, const char *text, const char *reason)
{
  struct evbuffer *out = bufferevent_get_output (c->guest);
  char target[300];

  snprintf (target, sizeof target, "%s:%d", c->name ? c->name : "?", c->port);
  if (c->name == NULL && c->have_addr)
    {
      char abuf[INET6_ADDRSTRLEN];
      snprintf (target, sizeof target, "%s:%d", addr_text (&c->addr, abuf, sizeof abuf), c->port);
    }
  log_line (c->px, c->is_connect ? "connect" : "http", c->name, c->have_addr ? &c->addr : NULL, c->port, "refused",
            reason, c->bytes_out, c->bytes_in, c->rw);
  /* The callbacks first: writing may call them.  */
  c->relaying = false;
  bufferevent_disable (c->guest, EV_READ);
  bufferevent_setcb (c->guest, NULL, on_drained_close, on_guest_gone, c);
  evbuffer_add_printf (out,
                       "HTTP/1.1 %d %s\r\nX-Runtime-Egress: %s\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                       "Content-Length: %zu\r\n\r\nruntime: egress to %s refused: %s\n",
                       status, text, reason, strlen ("runtime: egress to  refused: \n") + strlen (target) + strlen (reason),
                       target, reason);
  bufferevent_enable (c->guest, EV_WRITE);
}

static void
conn_refuse (struct conn *c, const char *reason)
{
  /* Not reaching an allowed host is the gateway's failure, not a refusal.  */
  bool failed = strcmp (reason, "unresolved") == 0 || strcmp (reason, "connect_failed") == 0
                || strcmp (reason, "untrusted_certificate") == 0 || strcmp (reason, "tls_failed") == 0;

  if (c->kind == CONN_PROXY)
    conn_answer (c, failed ? 502 : 403, failed ? "Bad Gateway" : "Forbidden", reason);
  else
    conn_reset (c, "refused", reason);
}

static struct bufferevent *
other (struct conn *c, struct bufferevent *bev)
{
  return bev == c->guest ? c->up : c->guest;
}

static void
maybe_done (struct conn *c)
{
  if (c->guest_shut && c->up_shut)
    conn_free (c, "allowed", "allowed");
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

/* The guest's requests to a secret's host, through the rewriter.  */
static void
relay_rewrite (struct conn *c)
{
  struct evbuffer *in, *out;
  size_t n;

  if (c->up == NULL)
    return;
  in = bufferevent_get_input (c->guest);
  out = bufferevent_get_output (c->up);

  while ((n = evbuffer_get_length (in)) > 0)
    {
      size_t look = n < RT_REWRITE_MAX_HEAD ? n : RT_REWRITE_MAX_HEAD, take = 0, head_len = 0;
      const char *p = (const char *) evbuffer_pullup (in, look), *why = "bad_request";
      char *head = NULL;
      int r = rt_rewrite_step (c->rw, p, look, &take, &head, &head_len, &why);

      if (r < 0)
        {
          /* Not a request we may pass: nothing more goes to the server.  */
          release (c->px, c->up, false);
          c->up = NULL;
          conn_answer (c, strcmp (why, "host_mismatch") == 0 ? 403 : 400,
                       strcmp (why, "host_mismatch") == 0 ? "Forbidden" : "Bad Request", why);
          return;
        }
      if (r == RT_REWRITE_MORE)
        break;
      c->bytes_out += take;
      if (r == RT_REWRITE_PASS)
        evbuffer_remove_buffer (in, out, take);
      else
        {
          evbuffer_drain (in, take);
          evbuffer_add (out, head, head_len);
          explicit_bzero (head, head_len);
          free (head);
        }
    }
  if (evbuffer_get_length (out) >= RELAY_HIGH)
    bufferevent_disable (c->guest, EV_READ);
}

static void
relay_read (struct bufferevent *from, void *arg)
{
  struct conn *c = arg;
  struct bufferevent *to = other (c, from);

  if (from == c->guest && c->rw)
    {
      relay_rewrite (c);
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
        conn_reset (c, "allowed", "allowed");
      else if (c->intercept && !c->guest_tls_up)
        /* Most likely a client that does not trust the egress CA.  */
        conn_free (c, "refused", "guest_tls_failed");
      else
        conn_free (c, "allowed", "allowed");
    }
}

static void
start_relay (struct conn *c)
{
  c->relaying = true;
  bufferevent_set_timeouts (c->up, NULL, NULL);
  bufferevent_set_timeouts (c->guest, NULL, NULL);
  bufferevent_setcb (c->guest, relay_read, relay_write, relay_event, c);
  bufferevent_setcb (c->up, relay_read, relay_write, relay_event, c);
  bufferevent_enable (c->guest, EV_READ | EV_WRITE);
  bufferevent_enable (c->up, EV_READ | EV_WRITE);
  /* What the guest sent while we decided.  */
  if (evbuffer_get_length (bufferevent_get_input (c->guest)) > 0)
    relay_read (c->guest, c);
}

/* The real server proved to be the host: now be that host to the guest,
   and rewrite what it sends.  */
static int
intercept_guest (struct conn *c)
{
  SSL *ssl = rt_intercept_guest_ssl (c->px->ic, c->name);
  struct bufferevent *raw = c->guest, *tls = NULL;
  bool pending = evbuffer_get_length (bufferevent_get_input (raw)) > 0;

  c->rw = rt_rewrite_new (c->bind, c->n_bind, c->name, c->port);
  if (ssl && c->rw)
    tls = bufferevent_openssl_filter_new (c->px->base, raw, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_DEFER_CALLBACKS);
  if (tls == NULL)
    {
      SSL_free (ssl);
      conn_reset (c, "refused", "tls_failed");
      return -1;
    }
  c->guest = tls;
  bufferevent_openssl_set_allow_dirty_shutdown (c->guest, 1);
  /* The ClientHello the sniffer read is already waiting: no new read
     event will come for it.  */
  if (pending)
    bufferevent_trigger (raw, EV_READ, BEV_TRIG_IGNORE_WATERMARKS);
  return 0;
}

static bool
name_bound (struct rt_proxy *px, const char *name)
{
  cleanup_error rt_error *err = NULL;
  struct rt_secret_binding *b = NULL;
  size_t n = 0;

  if (px->ic == NULL || rt_intercept_bindings (px->ic, name, &b, &n, &err) < 0)
    return false;
  rt_secret_bindings_free (b, n);
  return n > 0;
}

/* Bound to a secret?  Then this TLS connection is intercepted.  */
static void
bind_secrets (struct conn *c)
{
  cleanup_error rt_error *err = NULL;

  if (c->px->ic == NULL || c->name == NULL || !c->tls)
    return;
  /* A store that cannot be read swaps nothing: the placeholder goes out
     as it is, which gives nothing away.  */
  if (rt_intercept_bindings (c->px->ic, c->name, &c->bind, &c->n_bind, &err) < 0)
    return;
  c->intercept = c->n_bind > 0;
  /* The certificates and SNI name the host without its trailing dot.  */
  if (c->intercept && strlen (c->name) > 1 && c->name[strlen (c->name) - 1] == '.')
    c->name[strlen (c->name) - 1] = '\0';
}

static void
on_dialled (struct bufferevent *bev, short what, void *arg)
{
  struct conn *c = arg;

  (void) bev;
  if (!(what & BEV_EVENT_CONNECTED))
    {
      const char *why = "connect_failed";
      if (c->intercept && bufferevent_get_underlying (c->up))
        {
          SSL *ssl = bufferevent_openssl_get_ssl (c->up);
          if (ssl && SSL_get_verify_result (ssl) != X509_V_OK)
            why = "untrusted_certificate";
          else if (bufferevent_get_openssl_error (c->up))
            why = "tls_failed";
        }
      release (c->px, c->up, false);
      c->up = NULL;
      conn_refuse (c, why);
      return;
    }
  if (c->intercept && bufferevent_get_underlying (c->up) == NULL)
    {
      /* Connected: now TLS toward the real server, verified for the name;
         this runs again once that handshake is over.  */
      struct timeval tv = { DIAL_TIMEOUT_S, 0 };
      SSL *ssl = rt_intercept_server_ssl (c->px->ic, c->name);
      /* Deferred callbacks: a filter calls them from inside a write, and
         the relay must not run inside itself.  */
      struct bufferevent *raw = c->up, *tls
          = ssl ? bufferevent_openssl_filter_new (c->px->base, raw, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                  BEV_OPT_DEFER_CALLBACKS)
                : NULL;
      if (tls == NULL)
        {
          SSL_free (ssl);
          conn_refuse (c, "tls_failed");
          return;
        }
      c->up = tls;
      /* Many servers close without close_notify; HTTP frames its own end.  */
      bufferevent_openssl_set_allow_dirty_shutdown (c->up, 1);
      bufferevent_setcb (c->up, NULL, NULL, on_dialled, c);
      /* The handshake is bounded both ways; the socket itself is not.  */
      bufferevent_set_timeouts (raw, NULL, NULL);
      bufferevent_set_timeouts (c->up, &tv, &tv);
      /* Nothing is queued on a fresh connection, so no write event would
         start the handshake: start it.  */
      bufferevent_trigger (raw, EV_WRITE, BEV_TRIG_IGNORE_WATERMARKS);
      return;
    }
  if (c->kind == CONN_PROXY && c->is_connect)
    evbuffer_add_printf (bufferevent_get_output (c->guest), "HTTP/1.1 200 Connection established\r\n\r\n");
  if (c->intercept && intercept_guest (c) < 0)
    return;
  else if (c->head)
    {
      bufferevent_write (c->up, c->head, c->head_len);
      c->bytes_out += c->head_len;
    }
  start_relay (c);
}

static void
dial (struct conn *c)
{
  struct timeval tv = { DIAL_TIMEOUT_S, 0 };
  int fd;

  set_port (&c->addr, c->port);
  /* The monitor lives in the host's namespace: this socket leaves from
     there, never from the sandbox's.  */
  fd = socket (c->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  c->up = fd < 0 ? NULL : bufferevent_socket_new (c->px->base, fd, BEV_OPT_CLOSE_ON_FREE);
  if (c->up == NULL)
    {
      if (fd >= 0)
        close (fd);
      conn_refuse (c, "connect_failed");
      return;
    }
  bufferevent_disable (c->guest, EV_READ);
  bufferevent_setcb (c->up, NULL, NULL, on_dialled, c);
  if (bufferevent_socket_connect (c->up, (struct sockaddr *) &c->addr, addr_len (&c->addr)) < 0)
    {
      bufferevent_free (c->up);
      c->up = NULL;
      conn_refuse (c, "connect_failed");
      return;
    }
  bufferevent_set_timeouts (c->up, NULL, &tv);
}

/* Decides with the address known, then dials or refuses.  */
static void
decide_and_dial (struct conn *c)
{
  const char *why = refusal (c->px, c->name, (struct sockaddr *) &c->addr, c->port);

  if (why)
    conn_refuse (c, why);
  else
    dial (c);
}

static void
on_conn_resolved (void *owner, struct evutil_addrinfo *res)
{
  struct conn *c = owner;
  const char *reason = "unresolved";
  bool keep = false;

  /* The guest's own address for this name wins when the rules allow it:
     the guest asked for that one.  */
  if (c->have_addr)
    for (struct evutil_addrinfo *ai = res; ai && !keep; ai = ai->ai_next)
      keep = ai->ai_family == AF_INET && c->addr.ss_family == AF_INET
             && ((struct sockaddr_in *) ai->ai_addr)->sin_addr.s_addr
                    == ((struct sockaddr_in *) &c->addr)->sin_addr.s_addr;
  if (keep)
    {
      decide_and_dial (c);
      return;
    }
  for (struct evutil_addrinfo *ai = res; ai; ai = ai->ai_next)
    {
      const char *why;
      if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
        continue;
      why = refusal (c->px, c->name, ai->ai_addr, c->port);
      if (why == NULL)
        {
          memset (&c->addr, 0, sizeof c->addr);
          memcpy (&c->addr, ai->ai_addr, ai->ai_addrlen);
          c->have_addr = true;
          dial (c);
          return;
        }
      if (strcmp (reason, "unresolved") == 0)
        {
          reason = why;
          memset (&c->addr, 0, sizeof c->addr);
          memcpy (&c->addr, ai->ai_addr, ai->ai_addrlen);
          c->have_addr = true;
        }
    }
  conn_refuse (c, reason);
}

/* With a name: refuse early on the name alone, else resolve it.  */
static void
decide_name (struct conn *c)
{
  enum rt_egress_verdict v;
  struct sockaddr_storage lit;

  if (c->name && parse_literal (c->name, &lit))
    {
      free (c->name);
      c->name = NULL;
      c->addr = lit;
      c->have_addr = true;
    }
  if (c->name == NULL)
    {
      decide_and_dial (c);
      return;
    }
  v = rt_egress_decide (&c->px->rules, c->name, NULL, c->port);
  if (v != RT_EGRESS_ALLOWED)
    {
      conn_refuse (c, rt_egress_verdict_str (v));
      return;
    }
  bind_secrets (c);
  bufferevent_disable (c->guest, EV_READ);
  resolve (c->px, c->name, c, on_conn_resolved, &c->resolving);
}

/* ---- the HTTP proxy port ---------------------------------------------------- */

static void
on_head (struct bufferevent *bev, void *arg)
{
  struct conn *c = arg;
  struct evbuffer *in = bufferevent_get_input (bev);
  size_t len = evbuffer_get_length (in);
  const char *buf = (const char *) evbuffer_pullup (in, -1);
  struct rt_http_head h = { 0 };
  int r = rt_http_head_parse (buf, len, &h);

  if (r < 0)
    return;
  if (r == 0 || (!(c->is_connect = strcmp (h.method, "CONNECT") == 0) && h.path == NULL))
    {
      rt_http_head_clear (&h);
      evbuffer_add_printf (bufferevent_get_output (bev), "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n"
                                                         "Content-Length: 0\r\n\r\n");
      bufferevent_disable (bev, EV_READ);
      bufferevent_setcb (bev, NULL, on_drained_close, on_guest_gone, c);
      return;
    }
  c->name = steal_pointer (&h.host);
  c->port = h.port;
  c->tls = c->is_connect;
  if (!c->is_connect)
    {
      c->head = rt_http_head_upstream (buf, &h, &c->head_len);
      if (c->head == NULL)
        {
          rt_http_head_clear (&h);
          conn_free (c, NULL, NULL);
          return;
        }
    }
  evbuffer_drain (in, h.head_len);
  rt_http_head_clear (&h);
  bufferevent_set_timeouts (bev, NULL, NULL);
  decide_name (c);
}

static struct conn *
conn_new (struct rt_proxy *px, evutil_socket_t fd, enum conn_kind kind)
{
  struct conn *c = calloc (1, sizeof *c);

  if (c == NULL || (c->guest = bufferevent_socket_new (px->base, fd, BEV_OPT_CLOSE_ON_FREE)) == NULL)
    {
      free (c);
      close (fd);
      return NULL;
    }
  c->px = px;
  c->kind = kind;
  c->guest_fd = fd;
  c->next = px->conns;
  if (px->conns)
    px->conns->prev = c;
  px->conns = c;
  return c;
}

static void
on_proxy_accept (struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen, void *arg)
{
  struct timeval tv = { HEAD_TIMEOUT_S, 0 };
  struct conn *c = conn_new (arg, fd, CONN_PROXY);

  (void) l;
  (void) sa;
  (void) salen;
  if (c == NULL)
    return;
  bufferevent_setcb (c->guest, on_head, NULL, on_guest_gone, c);
  bufferevent_set_timeouts (c->guest, &tv, NULL);
  bufferevent_enable (c->guest, EV_READ | EV_WRITE);
}

/* ---- the transparent port ------------------------------------------------- */

static void
sniff_done (struct conn *c, char *name)
{
  if (c->sniff_timer)
    {
      event_free (c->sniff_timer);
      c->sniff_timer = NULL;
    }
  bufferevent_setcb (c->guest, NULL, NULL, on_guest_gone, c);
  /* The name the client itself sent wins over the one DNS gave.  */
  if (name)
    {
      free (c->name);
      c->name = name;
    }
  decide_name (c);
}

static void
on_sniff (struct bufferevent *bev, void *arg)
{
  struct conn *c = arg;
  struct evbuffer *in = bufferevent_get_input (bev);
  size_t len = evbuffer_get_length (in);
  char *name = NULL;
  const unsigned char *p = evbuffer_pullup (in, -1);
  int r = rt_sniff_name (p, len, &name);

  if (r < 0)
    return;
  c->tls = len > 0 && p[0] == 0x16; /* a TLS handshake record */
  sniff_done (c, r > 0 ? name : NULL);
}

static void
on_sniff_timeout (evutil_socket_t fd, short what, void *arg)
{
  (void) fd;
  (void) what;
  /* The client waits for the server to speak first (SSH, SMTP): decide
     on the address.  */
  sniff_done (arg, NULL);
}

static void
on_transparent_accept (struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen, void *arg)
{
  struct rt_proxy *px = arg;
  struct sockaddr_in dst;
  socklen_t len = sizeof dst;
  struct conn *c;
  const char *known;
  enum rt_egress_verdict v;

  (void) l;
  (void) sa;
  (void) salen;
  if (getsockopt (fd, SOL_IP, SO_ORIGINAL_DST, &dst, &len) < 0)
    {
      close (fd);
      return;
    }
  c = conn_new (px, fd, CONN_TRANSPARENT);
  if (c == NULL)
    return;
  memcpy (&c->addr, &dst, sizeof dst);
  c->have_addr = true;
  c->port = ntohs (dst.sin_port);
  bufferevent_enable (c->guest, EV_WRITE);
  /* What the address alone refuses goes at once.  */
  v = rt_egress_decide (&px->rules, NULL, (struct sockaddr *) &c->addr, c->port);
  if (v == RT_EGRESS_INTERNET_OFF || v == RT_EGRESS_PRIVATE || v == RT_EGRESS_BLOCKED_PORT
      || v == RT_EGRESS_TRIAL_PORT || v == RT_EGRESS_DENIED)
    {
      conn_reset (c, "refused", rt_egress_verdict_str (v));
      return;
    }
  if (v == RT_EGRESS_ALLOWED && (known = refusal (px, NULL, (struct sockaddr *) &c->addr, c->port)))
    {
      conn_reset (c, "refused", known);
      return;
    }
  /* The guest resolved this address through us: that name it meant.  */
  known = cache_get (px, &c->addr);
  if (known)
    {
      c->name = strdup (known);
      /* A name bound to a secret: the first bytes still tell whether it
         is TLS.  Else no waiting: server-first protocols too go at once.  */
      if (!name_bound (px, known))
        {
          decide_and_dial (c);
          return;
        }
    }
  {
    struct timeval tv = { 0, SNIFF_TIMEOUT_MS * 1000 };
    c->sniff_timer = evtimer_new (px->base, on_sniff_timeout, c);
    if (c->sniff_timer == NULL)
      {
        conn_reset (c, NULL, NULL);
        return;
      }
    evtimer_add (c->sniff_timer, &tv);
  }
  bufferevent_setcb (c->guest, on_sniff, NULL, on_guest_gone, c);
  bufferevent_enable (c->guest, EV_READ);
}

/* ---- DNS ------------------------------------------------------------------- */

struct dns_query
{
  struct rt_proxy *px;
  struct evdns_server_request *req;
  char *name;
  struct resolve_req *resolving;
};

static void
dns_refuse (struct dns_query *q, const char *reason)
{
  log_line (q->px, "dns", q->name, NULL, 53, "refused", reason, 0, 0, NULL);
  evdns_server_request_respond (q->req, DNS_ERR_NOTEXIST);
}

static void
on_dns_resolved (void *owner, struct evutil_addrinfo *res)
{
  struct dns_query *q = owner;
  const char *reason = "unresolved";
  int answers = 0;

  for (struct evutil_addrinfo *ai = res; ai; ai = ai->ai_next)
    {
      const char *why;
      if (ai->ai_family != AF_INET)
        continue;
      why = refusal (q->px, q->name, ai->ai_addr, 0);
      if (why)
        {
          reason = why;
          continue;
        }
      cache_put (q->px, &((struct sockaddr_in *) ai->ai_addr)->sin_addr, q->name);
      evdns_server_request_add_a_reply (q->req, q->req->questions[0]->name, 1,
                                        &((struct sockaddr_in *) ai->ai_addr)->sin_addr, DNS_TTL);
      answers++;
    }
  if (answers == 0)
    dns_refuse (q, reason);
  else
    evdns_server_request_respond (q->req, 0);
  free (q->name);
  free (q);
}

static void
on_dns_request (struct evdns_server_request *req, void *arg)
{
  struct rt_proxy *px = arg;
  struct dns_query *q;
  const struct evdns_server_question *question;
  enum rt_egress_verdict v;
  struct sockaddr_storage lit;

  if (req->nquestions != 1)
    {
      evdns_server_request_respond (req, DNS_ERR_FORMAT);
      return;
    }
  question = req->questions[0];
  q = calloc (1, sizeof *q);
  if (q == NULL || (q->name = strdup (question->name)) == NULL)
    {
      free (q);
      evdns_server_request_respond (req, DNS_ERR_SERVERFAILED);
      return;
    }
  q->px = px;
  q->req = req;
  v = rt_egress_decide (&px->rules, q->name, NULL, 0);
  if (v != RT_EGRESS_ALLOWED || parse_literal (q->name, &lit))
    {
      dns_refuse (q, v != RT_EGRESS_ALLOWED ? rt_egress_verdict_str (v) : "unresolved");
      free (q->name);
      free (q);
      return;
    }
  if (question->type != EVDNS_TYPE_A)
    {
      /* The guest has IPv4 only: an allowed name simply has no other
         records (NOERROR, no answer), so resolvers fall back to A.  */
      evdns_server_request_respond (req, 0);
      free (q->name);
      free (q);
      return;
    }
  /* The lookup finishes even if the guest gives up: req lives until we
     respond.  */
  resolve (px, q->name, q, on_dns_resolved, &q->resolving);
}

/* ---- set-up ------------------------------------------------------------------- */

static int
parse_overrides (struct rt_proxy *px, const char *spec, rt_error **err)
{
  cleanup_free char *copy = spec ? strdup (spec) : NULL;
  char *save = NULL;

  if (spec == NULL || *spec == '\0')
    return 0;
  if (copy == NULL)
    return rt_error_oom (err);
  for (char *item = strtok_r (copy, ",", &save); item; item = strtok_r (NULL, ",", &save))
    {
      char *eq = strchr (item, '=');
      struct override *o = &px->overrides[px->n_overrides];
      if (eq == NULL || px->n_overrides >= MAX_OVERRIDES)
        return rt_error_set (err, EINVAL, "invalid_request", "RUNTIME_RESOLVE: bad entry '%s'", item);
      *eq = '\0';
      if (!parse_literal (eq + 1, &o->addr))
        return rt_error_set (err, EINVAL, "invalid_request", "RUNTIME_RESOLVE: '%s' is not an address", eq + 1);
      o->name = strdup (item);
      if (o->name == NULL)
        return rt_error_oom (err);
      px->n_overrides++;
    }
  return 0;
}

struct rt_proxy *
rt_proxy_new (struct event_base *base, struct rt_netns *ns, const struct rt_egress_rules *rules, const char *log_path,
              const char *resolve_spec, struct rt_intercept *ic, rt_error **err)
{
  struct rt_proxy *px = calloc (1, sizeof *px);

  if (px == NULL)
    {
      rt_error_oom (err);
      return NULL;
    }
  px->base = base;
  px->log_fd = -1;
  px->ic = ic;
  if (rt_egress_rules_copy (rules, &px->rules, err) < 0 || parse_overrides (px, resolve_spec, err) < 0
      || load_host_addrs (px, err) < 0)
    goto fail;
  px->log_fd = open (log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (px->log_fd < 0)
    {
      rt_error_set (err, errno, "startup_failed", "cannot open the egress log '%s': %s", log_path, strerror (errno));
      goto fail;
    }
  /* Created here, in the host's namespace: its queries leave from there.  */
  px->dns = evdns_base_new (base, EVDNS_BASE_INITIALIZE_NAMESERVERS | EVDNS_BASE_DISABLE_WHEN_INACTIVE);
  if (px->dns == NULL)
    px->dns = evdns_base_new (base, 0);
  if (px->dns == NULL)
    {
      rt_error_set (err, ENOMEM, "startup_failed", "cannot set up the DNS resolver");
      goto fail;
    }
  evdns_base_set_option (px->dns, "timeout:", "3");
  evdns_base_set_option (px->dns, "attempts:", "2");
  px->proxy_l = evconnlistener_new (base, on_proxy_accept, px, LEV_OPT_CLOSE_ON_FREE, -1, ns->proxy_fd);
  if (px->proxy_l)
    ns->proxy_fd = -1;
  px->transparent_l = evconnlistener_new (base, on_transparent_accept, px, LEV_OPT_CLOSE_ON_FREE, -1,
                                          ns->transparent_fd);
  if (px->transparent_l)
    ns->transparent_fd = -1;
  px->dns_port = evdns_add_server_port_with_base (base, ns->dns_fd, 0, on_dns_request, px);
  if (px->dns_port)
    ns->dns_fd = -1;
  if (px->proxy_l == NULL || px->transparent_l == NULL || px->dns_port == NULL)
    {
      rt_error_set (err, ENOMEM, "startup_failed", "cannot set up the egress proxy");
      goto fail;
    }
  return px;
fail:
  rt_proxy_free (px);
  return NULL;
}

int
rt_proxy_set_rules (struct rt_proxy *px, const struct rt_egress_rules *rules, rt_error **err)
{
  struct rt_egress_rules copy = { 0 };
  struct conn *next;
  int closed = 0;

  if (rt_egress_rules_copy (rules, &copy, err) < 0)
    return -1;
  rt_egress_rules_clear (&px->rules);
  px->rules = copy;
  /* Connections still deciding will decide under the new rules.  */
  for (struct conn *c = px->conns; c; c = next)
    {
      const char *why;
      next = c->next;
      if (c->up == NULL || !c->have_addr)
        continue;
      why = refusal (px, c->name, (struct sockaddr *) &c->addr, c->port);
      if (why)
        {
          conn_reset (c, "cut", why);
          closed++;
        }
    }
  return closed;
}

void
rt_proxy_free (struct rt_proxy *px)
{
  if (px == NULL)
    return;
  while (px->conns)
    conn_free (px->conns, px->conns->relaying ? "allowed" : NULL, "allowed");
  while (px->orphans)
    orphan_free (px->orphans);
  if (px->proxy_l)
    evconnlistener_free (px->proxy_l);
  if (px->transparent_l)
    evconnlistener_free (px->transparent_l);
  /* Failing the lookups in flight answers their DNS queries: the port
     must still be open then.  */
  if (px->dns)
    evdns_base_free (px->dns, 1);
  if (px->dns_port)
    evdns_close_server_port (px->dns_port);
  for (size_t i = 0; i < px->n_overrides; i++)
    free (px->overrides[i].name);
  free (px->host_addrs);
  rt_egress_rules_clear (&px->rules);
  if (px->log_fd >= 0)
    close (px->log_fd);
  free (px);
}
