/* proxy-internal.h - what the egress proxy's files share: the proxy
 * itself and one guest connection through it.
 *
 * proxy.c owns both (listeners, accepting, deciding, the connection table,
 * the log); dns.c answers names, relay.c dials and moves the bytes,
 * intercept-relay.c is the TLS path to a host bound to a secret.
 */
#ifndef RT_PROXY_INTERNAL_H
#define RT_PROXY_INTERNAL_H

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include "net/dns.h"
#include "net/egress.h"
#include "net/proxy.h"

struct rt_rewrite;
struct rt_secret_binding;

enum conn_kind
{
  CONN_PROXY,
  CONN_TRANSPARENT,
};

struct conn
{
  struct rt_proxy *px;
  LIST_ENTRY (conn) link;
  enum conn_kind kind;
  struct bufferevent *guest, *up;
  struct event *sniff_timer;
  struct rt_resolve_req *resolving;
  char *name;                   /* what the guest asked for, when known */
  struct sockaddr_storage addr; /* what is (to be) dialled */
  bool have_addr;
  int port;
  bool is_connect;
  bool dns_known;               /* transparent: the guest had addr from the sandbox's DNS */
  bool check_name;              /* the guest's first bytes wait for rt_conn_name_check (relay.c) */
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

struct orphan;

/* A guest's connections open through the proxy at once (both doors);
   more are reset at once and logged (reason too_many_connections).  */
#define RT_PROXY_MAX_CONNS 256
/* A closed TLS side still writing out what its filter encrypted is an
   orphan, no longer among those connections: at most this many per
   sandbox, holding at most this many bytes together, each ended this
   long after its connection at the latest (relay.c).  Past a cap the
   bytes are dropped and the socket reset.  */
#define RT_PROXY_MAX_ORPHANS 64
#define RT_PROXY_MAX_ORPHAN_BYTES (4 * 1024 * 1024)
#define RT_PROXY_ORPHAN_DEADLINE_S 30

struct rt_proxy
{
  struct event_base *base;
  struct rt_dns dns;
  struct evconnlistener *proxy_l, *transparent_l;
  struct rt_egress_rules rules;
  LIST_HEAD (conn_list, conn) conns;
  size_t n_conns;                          /* in conns: at most RT_PROXY_MAX_CONNS */
  LIST_HEAD (orphan_list, orphan) orphans; /* sockets still writing out a closed TLS side */
  size_t n_orphans;                        /* in orphans: at most RT_PROXY_MAX_ORPHANS */
  size_t orphan_bytes;                     /* theirs when released: at most RT_PROXY_MAX_ORPHAN_BYTES */
  int orphan_deadline_s;                   /* 0: RT_PROXY_ORPHAN_DEADLINE_S (a test shortens it) */
  int log_fd;
  size_t log_bytes;
  struct sockaddr_storage *host_addrs; /* this host's own addresses */
  size_t n_host_addrs;
  struct rt_intercept *ic;             /* NULL: the sandbox has no secrets */
};

/* One JSON line per decision in the egress log.  */
void rt_proxy_log (struct rt_proxy *px, const char *kind, const char *name, const struct sockaddr_storage *addr,
                   int port, const char *decision, const char *reason, uint64_t out, uint64_t in,
                   const struct rt_rewrite *rw);
/* NULL when the rules allow the destination, else the reason.  */
const char *rt_proxy_refusal (struct rt_proxy *px, const char *name, const struct sockaddr *addr, int port);

/* The name @c's first bytes carry (*@sent: TLS SNI or HTTP Host, NULL for
   none; taken) against the names its address was dialled for
   (rt_egress_name_agrees).  The name becomes @c's, so the log and later
   rules see it.  Return: 1 when they agree; 0 when the name is allowed but
   the guest never had this address for it from the sandbox's DNS: it
   agrees only if it resolves to the address (the caller's to find out);
   -1 when refused, *@why set.  */
int rt_conn_name_check (struct conn *c, char **sent, const char **why);

/* Ends @c: logged with @decision and @reason unless @decision is NULL.  */
void rt_conn_free (struct conn *c, const char *decision, const char *reason);
/* Ends @c with a RST toward the guest.  */
void rt_conn_reset (struct conn *c, const char *decision, const char *reason);
/* Answers the guest with an HTTP error from the proxy itself, then ends.  */
void rt_conn_answer (struct conn *c, int status, const char *text, const char *reason);
/* Refuses @c for @reason as its door does: an HTTP answer or a RST.  */
void rt_conn_refuse (struct conn *c, const char *reason);

#endif
