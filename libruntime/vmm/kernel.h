/* kernel.h - the guest kernel: Debian's cloud kernel, fetched and unpacked
   once into the cache, with the initramfs for the current agent.  */
#ifndef RT_KERNEL_H
#define RT_KERNEL_H

#include "core/context.h"

struct rt_kernel_files
{
  char *vmlinux;   /* uncompressed ELF kernel (PVH entry) */
  char *initramfs; /* cpio newc: /init = agent, /lib/modules/<name>.ko */
  char *version;   /* e.g. "6.1.0-57-cloud-amd64" */
};

/* Fetches (apt-get download, or RUNTIME_KERNEL) and extracts the kernel on
   first use, builds the initramfs for the current agent binary; afterwards
   a few stat() calls.  Return: 0 with @out filled (free with
   rt_kernel_files_clear), or <0 with @err set ("internal").  */
int rt_kernel_ensure (rt_context *ctx, struct rt_kernel_files *out, rt_error **err);
/* Frees @k's members (NULL is fine).  */
void rt_kernel_files_clear (struct rt_kernel_files *k);

#endif
