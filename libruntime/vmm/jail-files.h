/* jail-files.h - what QEMU opens of the host's files, bound read-only into
 * its jail (jail.h): its binary, the ELF closure of it and of its TCG
 * module (the dynamic loader's answer, `ld.so --list`, cached under the
 * cache dir and keyed by both files' inode, size and mtime), the loader's
 * cache, its module dir, the microvm firmware.  Found with
 * `strace -f -e trace=%file` on a real start; QEMU reads /proc and /sys
 * only for what it does without (NUMA nodes, its own cmdline in a
 * message), so they stay out.
 */
#ifndef RT_JAIL_FILES_H
#define RT_JAIL_FILES_H

#include "vmm/jail.h"

/* Binds QEMU's files into @j; *qemu: the binary's path (in the jail and
   on the host), for argv[0].  */
int rt_jail_bind_qemu (rt_context *ctx, struct rt_jail *j, char **qemu, rt_error **err);

#endif
