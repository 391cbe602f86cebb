/* proxy.h - a sandbox's egress proxy and DNS server, inside its monitor.
 *
 * Listens on the sockets rt_netns_create bound in the sandbox's namespace
 * and dials from the monitor's own (the host's): the only way out of a
 * sandbox.  Three doors, one decision (rt_egress_decide):
 *   - the HTTP proxy port: CONNECT host:port, and plain HTTP with an
 *     absolute URI (forwarded with "Connection: close");
 *   - the transparent port, where nftables redirects every other guest TCP
 *     connection: the name comes from the DNS answers this server gave for
 *     that address, else from TLS SNI or the HTTP Host header, else none;
 *   - DNS: refused names get NXDOMAIN, allowed ones the addresses the
 *     rules allow.
 * TLS to a host bound to one of the sandbox's secrets is terminated here
 * (intercept.h) and its requests rewritten (rewrite.h); everything else is
 * relayed untouched.
 * Refused connections are reset, or answered 403 with X-Runtime-Egress:
 * <reason> on the proxy port.  Every connection is logged as one JSON line
 * when it ends (or is refused).
 */
#ifndef RT_PROXY_H
#define RT_PROXY_H

#include <event2/event.h>

#include "net/egress.h"
#include "net/netns.h"

struct rt_proxy;
struct rt_intercept;

/* Takes the listeners of @ns (its fds are set to -1).  @log_path: the
   egress log, appended to.  @resolve: RUNTIME_RESOLVE-style overrides
   ("name=addr,…") or NULL.  @ic: TLS interception for the sandbox's
   secrets (borrowed), or NULL: then every connection is relayed as it is.  */
struct rt_proxy *rt_proxy_new (struct event_base *base, struct rt_netns *ns, const struct rt_egress_rules *rules,
                               const char *log_path, const char *resolve, struct rt_intercept *ic, rt_error **err);
/* New rules for every later decision; every open connection they refuse
   is closed now.  Returns how many were closed.  */
int rt_proxy_set_rules (struct rt_proxy *px, const struct rt_egress_rules *rules, rt_error **err);
void rt_proxy_free (struct rt_proxy *px);

#endif
