/* privs.h - a process of the library gives up every capability it no
 * longer needs: the monitor once its sandbox runs (docs/ARCHITECTURE.md,
 * "The monitor's capabilities"), a template's keeper at once.
 *
 * The monitor calls it after the namespace, tap, nft table, listeners and QEMU exist and
 * before the monitor reads a byte the guest sent (monitor.c).  What stays:
 * RT_MONITOR_KEPT_CAPS, in the effective, permitted and bounding sets; the
 * inheritable and ambient sets are emptied.  Raw capget/capset and prctl,
 * no libcap.
 */
#ifndef RT_VMM_PRIVS_H
#define RT_VMM_PRIVS_H

#include <linux/capability.h>
#include <stdint.h>

#include "common/util.h"

/* CAP_NET_ADMIN: rule changes (one nft batch) and the conntrack flush of
   `sandbox network`, on netlink sockets opened in the namespace
   (net/netns.c).  CAP_KILL: signalling QEMU, which runs as its own uid
   (the jail).  CAP_DAC_OVERRIDE: removing what QEMU's uid left in its
   /vm (vmm/vm.c) at the end; owning that dir is not enough, since QEMU
   can make a subdir of mode 0 there.  */
#define RT_MONITOR_KEPT_CAPS                                                                                           \
  ((UINT64_C (1) << CAP_NET_ADMIN) | (UINT64_C (1) << CAP_KILL) | (UINT64_C (1) << CAP_DAC_OVERRIDE))

/* Drops every capability but @keep (a mask of 1 << CAP_*) from the
   bounding set, then keeps only @keep in the effective and permitted
   sets and nothing in the inheritable and ambient ones.  Errors:
   "startup_failed" naming the step.  */
int rt_drop_privileges (uint64_t keep, rt_error **err);

#endif
