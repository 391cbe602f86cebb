/* context.h - the context object and the internal interfaces between the
   library's parts (image); the vmm's are in vmm/.  */
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
  const char *accel; /* decided accelerator, NULL until asked */
  rt_progress_fn progress;
  void *progress_data;
};

void rt_progress (rt_context *ctx, const char *fmt, ...) RT_PRINTF (2, 3);

/* image/disk.c: images and their boot disks.  */
struct rt_image_disk
{
  char *id;      /* image id (sha256 of the manifest) */
  char *disk;    /* ext4 boot disk, shared read-only by its sandboxes */
  char **env;    /* NULL-terminated "K=V" from the manifest */
  char *workdir; /* default cwd */
};
/* Resolves @ref (NULL: "runtime"), building the default image on first use,
   and derives its boot disk if not cached.  image_not_found when unknown.  */
int rt_image_ensure_disk (rt_context *ctx, const char *ref, struct rt_image_disk *out, rt_error **err);
void rt_image_disk_clear (struct rt_image_disk *d);

#endif
