/* intercept-relay.h - the egress proxy's TLS path to a host bound to one
 * of the sandbox's secrets: TLS to the real server (verified for the
 * name), TLS to the guest as that host (intercept.h), the guest's
 * requests through the rewriter (rewrite.h) and the server's answers
 * through the scrubber (scrub.h).
 */
#ifndef RT_INTERCEPT_RELAY_H
#define RT_INTERCEPT_RELAY_H

#include <event2/bufferevent.h>
#include <stdbool.h>

#include "net/proxy-internal.h"

/* Is @name bound to a secret of the sandbox?  */
bool rt_intercept_relay_name_bound (struct rt_proxy *px, const char *name);
/* Bound to a secret?  Then @c (TLS, with a name) is intercepted.  */
void rt_intercept_relay_bind (struct conn *c);
/* The TCP connection to the server is up: TLS over it, @on_done called
   once that handshake ends (or @c refused now).  */
void rt_intercept_relay_server_tls (struct conn *c, bufferevent_event_cb on_done);
/* Why dialling @c (intercepted) failed.  */
const char *rt_intercept_relay_failure (struct conn *c);
/* The server proved to be the host: be that host to the guest.  -1 when
   @c was reset.  */
int rt_intercept_relay_guest (struct conn *c);
/* The guest's pending requests, rewritten, toward the server.  */
void rt_intercept_relay_rewrite (struct conn *c);
/* The server's pending answers, scrubbed (scrub.h), toward the guest;
   @eof: the server has ended.  -1 when @c was refused (answered 502).  */
int rt_intercept_relay_scrub (struct conn *c, bool eof);

#endif
