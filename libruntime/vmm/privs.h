/* privs.h - a process of the library gives up every capability it no
 * longer needs: the monitor once its sandbox runs (docs/ARCHITECTURE.md,
 * "The monitor's capabilities"), a template's keeper at once.
 *
 * The monitor calls it after the namespace, tap, nft table, listeners and
 * QEMU exist, and QEMU's ender is forked (vmm/vm-end.c), and before the
 * monitor reads a byte the guest sent (monitor.c).  What stays:
 * RT_MONITOR_KEPT_CAPS (the ender: RT_VM_END_KEPT_CAPS), in the effective,
 * permitted and bounding sets; the inheritable and ambient sets are
 * emptied.  The monitor stays uid 0 (docs/ARCHITECTURE.md says why).
 * Raw capget/capset and prctl, no libcap.
 */
#ifndef RT_VMM_PRIVS_H
#define RT_VMM_PRIVS_H

#include <linux/capability.h>
#include <stdint.h>

#include "common/util.h"

/* CAP_NET_ADMIN: rule changes (one nft batch) and the conntrack flush of
   `sandbox network`, on netlink sockets opened in the namespace
   (net/netns.c).  Nothing else: signalling QEMU, which runs as its own
   uid (the jail), and removing what QEMU's uid left in its /vm (QEMU can
   make a subdir of mode 0 there, which owning /vm does not open) are the
   job of QEMU's ender (vmm/vm-end.c), forked before the drop.  */
#define RT_MONITOR_KEPT_CAPS (UINT64_C (1) << CAP_NET_ADMIN)

/* QEMU's ender's: CAP_KILL for QEMU's uid, CAP_DAC_OVERRIDE for its
   leftovers.  It reads no byte of the guest's.  */
#define RT_VM_END_KEPT_CAPS ((UINT64_C (1) << CAP_KILL) | (UINT64_C (1) << CAP_DAC_OVERRIDE))

/* Drops every capability but @keep (a mask of 1 << CAP_*) from the
   bounding set, then keeps only @keep in the effective and permitted
   sets and nothing in the inheritable and ambient ones.  Errors:
   "startup_failed" naming the step.  */
int rt_drop_privileges (uint64_t keep, rt_error **err);

#endif
