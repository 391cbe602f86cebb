/* boot.h - the initramfs part of boot: pseudo file systems, the kernel
   command line, modules, the switch to the root disk.  */
#ifndef AGENT_BOOT_H
#define AGENT_BOOT_H

#include <stddef.h>
#include <sys/types.h>

#include "agent.h"

/* mkdir that only logs a failure; EEXIST is fine.  */
void mkdir_quiet (const char *path, mode_t mode);
int mount_fs (const char *src, const char *target, const char *type, unsigned long flags, const char *data);
void boot_early (void);
void read_cmdline (struct agent *ag);
const char *cmdline_get (const struct agent *ag, const char *key, char *buf, size_t size);
void load_modules (void);
void switch_root (void);

#endif
