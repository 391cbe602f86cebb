/* accel.h - the accelerator guests run on, and what the host's CPU must
   tell them.  rt_context_accel (runtime.h) decides KVM or TCG.  */
#ifndef RT_ACCEL_H
#define RT_ACCEL_H

#include <stdbool.h>
#include <sys/stat.h>

#include "core/context.h"

/* The host's TSC frequency in kHz, 0 when unknown.  Guests under TCG hang
   at random without it (docs/ARCHITECTURE.md).  */
unsigned long rt_host_tsc_khz (void);

/* What rt_context_accel would answer and why, without a probe boot or
   writing anything: *accel "kvm", "tcg", or NULL when not known yet (not
   probed, or the probe's cached answer unreadable); *why a sentence
   (free it).  -ENOMEM, else 0.  */
int rt_accel_explain (rt_context *ctx, const char **accel, char **why);

/* Whether a jailed QEMU (its own uid, no capabilities) can open the KVM
   node @st: it is open to all, or to a group other than root's, which
   becomes QEMU's one supplementary group (*gid, 0 for none).  */
bool rt_kvm_node_open_to_jail (const struct stat *st, gid_t *gid);

#endif
