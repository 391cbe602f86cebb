/* proxy.c - the egress proxy of one sandbox (see proxy.h): its listeners,
   accepting on each door, the decision for each connection, the table of
   connections and their end, and cutting those new rules refuse.  Names
   are dns.c's, the bytes relay.c's, the TLS path to a secret's host
   intercept-relay.c's.  */
#include <event2/buffer.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "net/dns.h"
#include "net/intercept-relay.h"
#include "net/proxy-internal.h"
#include "net/proxy.h"
#include "net/relay.h"
#include "net/rewrite.h"
#include "net/sniff.h"
#include "net/sockaddr.h"

#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80 /* linux/netfilter_ipv4.h, which clashes with netinet/in.h */
#endif

#define HEAD_TIMEOUT_S 30
#define SNIFF_TIMEOUT_MS 1000
#define LOG_MAX (16 * 1024 * 1024)
#define NAMES_MAX 64 /* of one address, looked at */

/* ---- the log and the decision ----------------------------------------------- */

/* One JSON line per decision; write(2) of a whole line on an O_APPEND fd,
   so a reader never sees half a line.  */
void
rt_proxy_log (struct rt_proxy *px, const char *kind, const char *name, const struct sockaddr_storage *addr, int port,
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
  json_object_object_add (o, "address", addr ? json_object_new_string (rt_addr_text (addr, abuf, sizeof abuf)) : NULL);
  json_object_object_add (o, "port", json_object_new_int (port));
  json_object_object_add (o, "decision", json_object_new_string (decision));
  json_object_object_add (o, "reason", json_object_new_string (reason));
  json_object_object_add (o, "bytesOut", json_object_new_int64 ((int64_t) out));
  json_object_object_add (o, "bytesIn", json_object_new_int64 ((int64_t) in));
  /* Intercepted for a secret: how many requests had one swapped in.  */
  if (rw)
    {
      json_object_object_add (o, "secretRequests", json_object_new_int64 ((int64_t) rt_rewrite_swapped (rw)));
      json_object_object_add (o, "scrubbed", json_object_new_int64 ((int64_t) rt_rewrite_scrubbed (rw)));
    }
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

/* NULL when the rules allow the destination, else the reason.  Beyond the
   rules: none of this host's own addresses, public ones included, so no
   service of the host is reachable whatever it listens on.  */
const char *
rt_proxy_refusal (struct rt_proxy *px, const char *name, const struct sockaddr *addr, int port)
{
  enum rt_egress_verdict v = rt_egress_decide (&px->rules, name, addr, port);

  if (v != RT_EGRESS_ALLOWED)
    return rt_egress_verdict_str (v);
  for (size_t i = 0; addr && i < px->n_host_addrs; i++)
    if (rt_addr_same_ip (&px->host_addrs[i], addr))
      return "host_address";
  return NULL;
}

int
rt_conn_name_check (struct conn *c, char **sent, const char **why)
{
  const char *known[NAMES_MAX + 2];
  struct sockaddr_storage lit;
  enum rt_egress_verdict v;
  size_t n = 0;

  if (*sent == NULL)
    return 1;
  if (c->name)
    known[n++] = c->name;
  n += rt_dns_names_of (&c->px->dns, &c->addr, known + n, NAMES_MAX);
  known[n] = NULL;
  v = rt_egress_name_agrees (&c->px->rules, *sent, known, (struct sockaddr *) &c->addr, c->port);
  /* The address itself, named: the name the address was dialled for
     stays.  */
  if (v == RT_EGRESS_ALLOWED && rt_addr_parse_literal (*sent, &lit))
    {
      free (steal_pointer (sent));
      return 1;
    }
  free (c->name);
  c->name = steal_pointer (sent);
  if (v == RT_EGRESS_ALLOWED)
    return 1;
  /* An allowed name the guest resolved elsewhere (its own hosts file, a
     pinned address): it may still be this address's.  */
  if (v == RT_EGRESS_NAME_MISMATCH && !rt_addr_parse_literal (c->name, &lit)
      && rt_proxy_refusal (c->px, c->name, (struct sockaddr *) &c->addr, c->port) == NULL)
    return 0;
  *why = rt_egress_verdict_str (v);
  return -1;
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

/* ---- connections ---------------------------------------------------------- */

void
rt_conn_free (struct conn *c, const char *decision, const char *reason)
{
  struct rt_proxy *px = c->px;

  if (decision)
    rt_proxy_log (px, c->kind == CONN_PROXY ? (c->is_connect ? "connect" : "http") : "tcp", c->name,
                  c->have_addr ? &c->addr : NULL, c->port, decision, reason, c->bytes_out, c->bytes_in,
                  c->intercept ? c->rw : NULL);
  rt_dns_resolve_cancel (&c->resolving);
  if (c->sniff_timer)
    event_free (c->sniff_timer);
  if (c->guest)
    rt_relay_release (px, c->guest, !c->resetting);
  if (c->up)
    rt_relay_release (px, c->up, !c->resetting);
  LIST_REMOVE (c, link);
  px->n_conns--;
  free (c->name);
  free (c->head);
  rt_rewrite_free (c->rw);
  rt_secret_bindings_free (c->bind, c->n_bind);
  free (c);
}

/* Closes the guest's side with a RST, so its connect() or read() fails at
   once instead of waiting.  */
void
rt_conn_reset (struct conn *c, const char *decision, const char *reason)
{
  struct linger lg = { 1, 0 };

  if (c->guest)
    setsockopt (c->guest_fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  c->resetting = true;
  rt_conn_free (c, decision, reason);
}

static void
on_drained_close (struct bufferevent *bev, void *arg)
{
  struct conn *c = arg;

  if (evbuffer_get_length (bufferevent_get_output (bev)) == 0)
    rt_conn_free (c, NULL, NULL);
}

static void
on_guest_gone (struct bufferevent *bev, short what, void *arg)
{
  (void) bev;
  (void) what;
  rt_conn_free (arg, NULL, NULL);
}

/* An HTTP answer from the proxy itself, then close.  */
void
rt_conn_answer (struct conn *c, int status, const char *text, const char *reason)
{
  struct evbuffer *out = bufferevent_get_output (c->guest);
  char target[300];

  snprintf (target, sizeof target, "%s:%d", c->name ? c->name : "?", c->port);
  if (c->name == NULL && c->have_addr)
    {
      char abuf[INET6_ADDRSTRLEN];
      snprintf (target, sizeof target, "%s:%d", rt_addr_text (&c->addr, abuf, sizeof abuf), c->port);
    }
  rt_proxy_log (c->px, c->kind == CONN_PROXY ? (c->is_connect ? "connect" : "http") : "tcp", c->name,
                c->have_addr ? &c->addr : NULL, c->port, "refused", reason, c->bytes_out, c->bytes_in,
                c->intercept ? c->rw : NULL);
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

void
rt_conn_refuse (struct conn *c, const char *reason)
{
  /* Not reaching an allowed host is the gateway's failure, not a refusal.  */
  bool failed = strcmp (reason, "unresolved") == 0 || strcmp (reason, "connect_failed") == 0
                || strcmp (reason, "untrusted_certificate") == 0 || strcmp (reason, "tls_failed") == 0;

  if (c->kind == CONN_PROXY)
    rt_conn_answer (c, failed ? 502 : 403, failed ? "Bad Gateway" : "Forbidden", reason);
  else
    rt_conn_reset (c, "refused", reason);
}

/* ---- deciding ------------------------------------------------------------- */

/* Decides with the address known, then dials or refuses.  */
static void
decide_and_dial (struct conn *c)
{
  const char *why = rt_proxy_refusal (c->px, c->name, (struct sockaddr *) &c->addr, c->port);

  if (why)
    rt_conn_refuse (c, why);
  else
    rt_relay_dial (c);
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
  /* An address from the sandbox's DNS, named for a site that is not
     there: refused, not dialled elsewhere.  */
  if (c->dns_known)
    {
      rt_conn_refuse (c, "name_mismatch");
      return;
    }
  for (struct evutil_addrinfo *ai = res; ai; ai = ai->ai_next)
    {
      const char *why;
      if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
        continue;
      why = rt_proxy_refusal (c->px, c->name, ai->ai_addr, c->port);
      if (why == NULL)
        {
          memset (&c->addr, 0, sizeof c->addr);
          memcpy (&c->addr, ai->ai_addr, ai->ai_addrlen);
          c->have_addr = true;
          rt_relay_dial (c);
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
  rt_conn_refuse (c, reason);
}

/* With a name: refuse early on the name alone, else resolve it.  */
static void
decide_name (struct conn *c)
{
  enum rt_egress_verdict v;
  struct sockaddr_storage lit;

  if (c->name && rt_addr_parse_literal (c->name, &lit))
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
      rt_conn_refuse (c, rt_egress_verdict_str (v));
      return;
    }
  rt_intercept_relay_bind (c);
  bufferevent_disable (c->guest, EV_READ);
  rt_dns_resolve (&c->px->dns, c->name, c, on_conn_resolved, &c->resolving);
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
  /* A tunnel's first bytes may name another host than the CONNECT did.  */
  c->check_name = c->is_connect;
  if (!c->is_connect)
    {
      c->head = rt_http_head_upstream (buf, &h, &c->head_len);
      if (c->head == NULL)
        {
          rt_http_head_clear (&h);
          rt_conn_free (c, NULL, NULL);
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
  LIST_INSERT_HEAD (&px->conns, c, link);
  px->n_conns++;
  return c;
}

/* Past RT_PROXY_MAX_CONNS a new connection is reset and logged: a guest
   opening sockets without end gets refusals, and the monitor's memory
   and fds stay bounded.  */
static bool
over_cap (struct rt_proxy *px, evutil_socket_t fd, const char *kind, const struct sockaddr_storage *addr, int port)
{
  struct linger lg = { 1, 0 };

  if (px->n_conns < RT_PROXY_MAX_CONNS)
    return false;
  setsockopt (fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  close (fd);
  rt_proxy_log (px, kind, NULL, addr, port, "refused", "too_many_connections", 0, 0, NULL);
  return true;
}

static void
on_proxy_accept (struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen, void *arg)
{
  struct timeval tv = { HEAD_TIMEOUT_S, 0 };
  struct conn *c;

  (void) l;
  (void) sa;
  (void) salen;
  if (over_cap (arg, fd, "http", NULL, 0))
    return;
  c = conn_new (arg, fd, CONN_PROXY);
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
  /* An address from the sandbox's DNS goes to the names it was given out
     for: behind it the name the client sends picks the site.  An allowed
     name it was not given out for is resolved below: the guest's address
     is dialled only if it is one of that name's.  */
  if (name && c->dns_known)
    {
      const char *why = NULL;
      if (rt_conn_name_check (c, &name, &why) < 0)
        {
          rt_conn_reset (c, "refused", why);
          return;
        }
    }
  /* The name the client itself sent wins over the one DNS gave.  */
  else if (name)
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
  int r = rt_sniff_name (p, len, &name), http = r < 0 ? -1 : rt_sniff_is_http (p, len);

  /* A hello we cannot read may hold a name the server reads.  */
  if (r == RT_SNIFF_UNREADABLE)
    {
      rt_conn_reset (c, "refused", "name_mismatch");
      return;
    }
  if (r < 0 || http < 0)
    {
      free (name);
      return;
    }
  c->tls = len > 0 && p[0] == 0x16; /* a TLS handshake record */
  /* Plain HTTP: the requests after this one too.  */
  if (http > 0 && rt_relay_check_requests (c, r > 0 ? name : c->name) < 0)
    {
      free (name);
      return;
    }
  sniff_done (c, r > 0 ? name : NULL);
}

static void
on_sniff_timeout (evutil_socket_t fd, short what, void *arg)
{
  struct conn *c = arg;

  (void) fd;
  (void) what;
  /* The client waits for the server to speak first (SSH, SMTP): decide
     on the address.  Whatever the guest sends later (or the rest of what
     it began) still waits for its name to be checked.  */
  c->check_name = true;
  sniff_done (c, NULL);
}

/* Of the names the sandbox's DNS gave @c's address out for, the newest
   the rules allow now, else the newest; NULL when none.  */
static const char *
dns_name (struct rt_proxy *px, struct conn *c)
{
  const char *names[NAMES_MAX];
  size_t n = rt_dns_names_of (&px->dns, &c->addr, names, NAMES_MAX);

  for (size_t i = 0; i < n; i++)
    if (rt_proxy_refusal (px, names[i], (struct sockaddr *) &c->addr, c->port) == NULL)
      return names[i];
  return n > 0 ? names[0] : NULL;
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
  {
    struct sockaddr_storage ss = { 0 };
    memcpy (&ss, &dst, sizeof dst);
    if (over_cap (px, fd, "tcp", &ss, ntohs (dst.sin_port)))
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
      rt_conn_reset (c, "refused", rt_egress_verdict_str (v));
      return;
    }
  if (v == RT_EGRESS_ALLOWED && (known = rt_proxy_refusal (px, NULL, (struct sockaddr *) &c->addr, c->port)))
    {
      rt_conn_reset (c, "refused", known);
      return;
    }
  /* The guest resolved this address through us: that name it meant.  */
  known = dns_name (px, c);
  if (known)
    {
      c->name = strdup (known);
      c->dns_known = true;
      /* A name bound to a secret: the first bytes still tell whether it
         is TLS; a name the rules no longer allow: whether they name one
         they do.  Else no waiting: server-first protocols too go at once,
         and the first bytes the guest sends wait in the relay for their
         name to be checked.  */
      if (!rt_intercept_relay_name_bound (px, known)
          && rt_proxy_refusal (px, known, (struct sockaddr *) &c->addr, c->port) == NULL)
        {
          c->check_name = true;
          decide_and_dial (c);
          return;
        }
    }
  {
    struct timeval tv = { 0, SNIFF_TIMEOUT_MS * 1000 };
    c->sniff_timer = evtimer_new (px->base, on_sniff_timeout, c);
    if (c->sniff_timer == NULL)
      {
        rt_conn_reset (c, NULL, NULL);
        return;
      }
    evtimer_add (c->sniff_timer, &tv);
  }
  bufferevent_setcb (c->guest, on_sniff, NULL, on_guest_gone, c);
  bufferevent_enable (c->guest, EV_READ);
}

/* ---- set-up ------------------------------------------------------------------- */

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
  if (rt_egress_rules_copy (rules, &px->rules, err) < 0 || rt_dns_overrides_parse (&px->dns, resolve_spec, err) < 0
      || load_host_addrs (px, err) < 0)
    goto fail;
  px->log_fd = open (log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (px->log_fd < 0)
    {
      rt_error_set (err, errno, "startup_failed", "cannot open the egress log '%s': %s", log_path, strerror (errno));
      goto fail;
    }
  if (rt_dns_resolver_new (&px->dns, base, err) < 0)
    goto fail;
  px->proxy_l = evconnlistener_new (base, on_proxy_accept, px, LEV_OPT_CLOSE_ON_FREE, -1, ns->proxy_fd);
  if (px->proxy_l)
    ns->proxy_fd = -1;
  px->transparent_l = evconnlistener_new (base, on_transparent_accept, px, LEV_OPT_CLOSE_ON_FREE, -1,
                                          ns->transparent_fd);
  if (px->transparent_l)
    ns->transparent_fd = -1;
  if (rt_dns_serve (px, base, ns->dns_fd))
    ns->dns_fd = -1;
  if (px->proxy_l == NULL || px->transparent_l == NULL || px->dns.port == NULL)
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
  for (struct conn *c = LIST_FIRST (&px->conns); c; c = next)
    {
      const char *why;
      next = LIST_NEXT (c, link);
      if (c->up == NULL || !c->have_addr)
        continue;
      why = rt_proxy_refusal (px, c->name, (struct sockaddr *) &c->addr, c->port);
      if (why)
        {
          rt_conn_reset (c, "cut", why);
          closed++;
        }
    }
  return closed;
}

void
rt_proxy_free (struct rt_proxy *px)
{
  struct conn *c;

  if (px == NULL)
    return;
  while ((c = LIST_FIRST (&px->conns)))
    rt_conn_free (c, c->relaying ? "allowed" : NULL, "allowed");
  rt_relay_orphans_free (px);
  if (px->proxy_l)
    evconnlistener_free (px->proxy_l);
  if (px->transparent_l)
    evconnlistener_free (px->transparent_l);
  rt_dns_clear (&px->dns);
  free (px->host_addrs);
  rt_egress_rules_clear (&px->rules);
  if (px->log_fd >= 0)
    close (px->log_fd);
  free (px);
}
