/* netns.h - a sandbox's network on the host: its own network namespace,
 * the tap the guest's virtio-net uses, the nftables table that confines
 * the guest, and the listeners of the egress proxy and DNS server.
 *
 * Nothing routes between the namespace and the host: the only way out is
 * the monitor's proxy, which accepts inside the namespace and dials from
 * the host's (see proxy.h).  The namespace has no name: it lives exactly
 * as long as the monitor and QEMU hold it, so a kill -9 leaks nothing.
 */
#ifndef RT_NETNS_H
#define RT_NETNS_H

#include "net/egress.h"
#include "common/util.h"

/* The same small network in every sandbox, as QEMU's user networking.  */
#define RT_NET_GATEWAY "10.0.2.2"
#define RT_NET_GUEST "10.0.2.15"
#define RT_NET_TAP "tap0"
#define RT_NET_PROXY_PORT 3128       /* HTTP proxy (CONNECT and absolute URIs) */
#define RT_NET_TRANSPARENT_PORT 3129 /* every other guest TCP connection lands here */
#define RT_NET_DNS_PORT 53

struct nft_ctx;
struct nfct_handle;

struct rt_netns
{
  int host_fd;        /* the monitor's own namespace */
  int ns_fd;          /* the sandbox's */
  int tap_fd;         /* handed to QEMU */
  int proxy_fd;       /* listeners bound in the sandbox's namespace */
  int transparent_fd;
  int dns_fd;
  /* Netlink sockets opened inside the sandbox's namespace, where they stay
     bound: later rule changes need no setns, so the monitor can give up
     CAP_SYS_ADMIN after start-up (vmm/privs.c).  */
  struct nft_ctx *nft;
  struct nfct_handle *conntrack;
};

/* Makes the namespace, the tap, the listeners and the netlink sockets
   and installs the table for @rules; the caller stays in its own
   namespace.  Needs CAP_SYS_ADMIN and CAP_NET_ADMIN; the calls below
   only CAP_NET_ADMIN.  */
int rt_netns_create (struct rt_netns *n, const struct rt_egress_rules *rules, rt_error **err);
/* Replaces the table for @rules in one nft batch and flushes the
   namespace's conntrack table, so that no packet of an old decision is
   let through.  */
int rt_netns_apply (struct rt_netns *n, const struct rt_egress_rules *rules, rt_error **err);
/* The table as nft prints it (JSON); for tests and debugging.  */
int rt_netns_list (struct rt_netns *n, char **json, rt_error **err);
void rt_netns_close (struct rt_netns *n);

#endif
