/* context.h - the context object: directories, options and progress,
   what every part of the library takes instead of globals.  */
#ifndef RT_CONTEXT_H
#define RT_CONTEXT_H

#include "common/util.h"

struct rt_context
{
  char *state_dir;   /* live sandboxes */
  char *data_dir;    /* images, ledger, secrets */
  char *cache_dir;   /* kernel, base rootfs, derived disks */
  char *libexec_dir; /* runtime-agent, runtime-base-rootfs */
  char *agent;       /* the guest agent binary */
  char *qemu;        /* qemu-system-x86_64, NULL when not installed */
  char *kernel_deb;  /* RUNTIME_KERNEL, or NULL */
  char *accel_env;   /* RUNTIME_ACCEL, or NULL */
  char *uid_range;   /* RUNTIME_UID_RANGE, or NULL (vmm/uidpool.h) */
  bool unsafe_no_jail; /* RUNTIME_UNSAFE_NO_JAIL=1: QEMU without its jail
                          (vmm/jail.h), for tests only */
  bool templates_off;  /* RUNTIME_TEMPLATES=off: every start is cold
                          (template/template.h) */
  unsigned template_keep_s; /* RUNTIME_TEMPLATE_KEEP_S: a template keeper's
                               idle life, default 300 */
  const char *accel; /* decided accelerator, NULL until asked */
  rt_progress_fn progress;
  void *progress_data;
};

void rt_progress (rt_context *ctx, const char *fmt, ...) RT_PRINTF (2, 3);

#endif
