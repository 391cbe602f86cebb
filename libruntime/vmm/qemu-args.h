/* qemu-args.h - QEMU's command line for one microvm, from a description
   of it.  Pure (no I/O, no environment) so that tests/unit/test-qemu-args.c
   pins every argument; vm.c gathers the inputs and runs the result.  */
#ifndef RT_QEMU_ARGS_H
#define RT_QEMU_ARGS_H

#include <stdbool.h>

#include "runtime.h"

struct rt_qemu_args
{
  const char *qemu;          /* the binary: argv[0] */
  const char *accel;         /* "kvm" or "tcg" */
  unsigned vcpu;
  unsigned memory_mib;
  const char *vmlinux;
  const char *initramfs;
  unsigned long tsc_khz;     /* > 0 under TCG: passed as tsc_early_khz */
  const char *cmdline;       /* appended to the base kernel command line, or NULL */
  const char *console_log;   /* the serial console's file */
  bool console_sock;         /* instead, the socket at fd 4: its reader
                                keeps a capped log (monitor/console.c) */
  const char *agent_sock;    /* non-NULL: the agent's virtio-serial port
                                listens here, and QMP on @qmp_sock */
  const char *qmp_sock;
  bool tap;                  /* a virtio-net device on the tap at fd 3 */
  const char *disk;          /* the root disk, NULL for none */
  bool disk_overlay;         /* @disk is the sandbox's own qcow2 overlay
                                (the guest grows its file system into it);
                                otherwise a raw base shared read-only
                                (snapshot=on) */
};

/* Builds the NULL-terminated argv for @a into *out (free every string and
   the array; cleanup_strv does).  Return: 0, or <0 with @err set (out of
   memory only).  */
int rt_qemu_argv (const struct rt_qemu_args *a, char ***out, rt_error **err);

#endif
