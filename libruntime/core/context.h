/* context.h - the context object and the internal interfaces between the
   library's parts (kernel, image, accel, vm, channel).  */
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

/* The host's TSC frequency in kHz, 0 when unknown.  Guests under TCG hang
   at random without it (docs/ARCHITECTURE.md).  */
unsigned long rt_host_tsc_khz (void);

/* kernel.c: the guest kernel and our initramfs.  */
struct rt_kernel_files
{
  char *vmlinux;   /* uncompressed ELF kernel (PVH entry) */
  char *initramfs; /* cpio newc: /init = agent, /lib/modules/<name>.ko */
  char *version;   /* e.g. "6.1.0-57-cloud-amd64" */
};
/* Fetches (apt-get download, or RUNTIME_KERNEL) and extracts the kernel on
   first use, builds the initramfs for the current agent binary; afterwards
   a few stat() calls.  */
int rt_kernel_ensure (rt_context *ctx, struct rt_kernel_files *out, rt_error **err);
void rt_kernel_files_clear (struct rt_kernel_files *k);

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
