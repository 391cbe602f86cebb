/* initramfs.h - the guest's first file system: our agent as /init and the
   kernel modules it loads, as an uncompressed cpio.  */
#ifndef RT_INITRAMFS_H
#define RT_INITRAMFS_H

#include "core/context.h"

/* What the agent loads with finit_module, in dependency order (there is
   no modules.dep): the kernel's unpacking keeps exactly these.  */
#define RT_INITRAMFS_N_MODULES 12
extern const char *const rt_initramfs_modules[RT_INITRAMFS_N_MODULES + 1];

/* Writes <vdir>/initramfs-<akey>.cpio (through a temp name) from the agent
   binary and <vdir>/modules/<name>.ko, then removes the cpio files of older
   agents.  Call with the kernel cache's lock held.
   Return: 0, or <0 with @err set ("internal").  */
int rt_initramfs_build (rt_context *ctx, const char *vdir, const char *akey, rt_error **err);

#endif
