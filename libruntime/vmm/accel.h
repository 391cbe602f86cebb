/* accel.h - the accelerator guests run on, and what the host's CPU must
   tell them.  rt_context_accel (runtime.h) decides KVM or TCG.  */
#ifndef RT_ACCEL_H
#define RT_ACCEL_H

#include <stdbool.h>
#include <sys/stat.h>

/* The host's TSC frequency in kHz, 0 when unknown.  Guests under TCG hang
   at random without it (docs/ARCHITECTURE.md).  */
unsigned long rt_host_tsc_khz (void);

/* Whether a jailed QEMU (its own uid, no capabilities) can open the KVM
   node @st: it is open to all, or to a group other than root's, which
   becomes QEMU's one supplementary group (*gid, 0 for none).  */
bool rt_kvm_node_open_to_jail (const struct stat *st, gid_t *gid);

#endif
