/* relay.h - one proxied connection once decided: dialling the server
 * from the host's namespace, then the bytes both ways between two
 * bufferevents, with back-pressure and half-close, and the draining of a
 * closed TLS side.
 */
#ifndef RT_RELAY_H
#define RT_RELAY_H

#include <stdbool.h>

#include "net/proxy-internal.h"

#define DIAL_TIMEOUT_S 10
#define RELAY_HIGH (128 * 1024) /* bytes queued toward one side before reading the other pauses: 256 connections hold at most 64 MiB */

/* Dials @c's address and port; relays once connected, else refuses.  */
void rt_relay_dial (struct conn *c);
/* Plain HTTP on @c, whose first request named @host (NULL: none): every
   request the guest sends on it must name that host or none
   (rt_rewrite_checker_new), else the connection is refused
   (name_mismatch).  -1 when @c was reset (out of memory).  */
int rt_relay_check_requests (struct conn *c, const char *host);
/* Frees one side; with @drain, what a TLS filter already encrypted is
   still written out, within RT_PROXY_MAX_ORPHANS, RT_PROXY_MAX_ORPHAN_BYTES
   and RT_PROXY_ORPHAN_DEADLINE_S (else dropped with a RST).  */
void rt_relay_release (struct rt_proxy *px, struct bufferevent *bev, bool drain);
/* Drops the sockets still draining.  */
void rt_relay_orphans_free (struct rt_proxy *px);

#endif
