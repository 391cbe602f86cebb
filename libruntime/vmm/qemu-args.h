/* qemu-args.h - QEMU's command line for one microvm, from a description
   of it.  Pure (no I/O, no environment) so that tests/unit/test-qemu-args.c
   pins every argument; vm.c gathers the inputs and runs the result.  */
#ifndef RT_QEMU_ARGS_H
#define RT_QEMU_ARGS_H

#include <stdbool.h>

#include "runtime.h"

/* The fds QEMU finds open (vm.c's child puts them there): it needs no
   path to its sockets, disks or tap (the jail, jail.h).  */
#define RT_STR_(x) #x
#define RT_STR(x) RT_STR_ (x)
#define RT_QEMU_FD_TAP 3
#define RT_QEMU_FD_CONSOLE 4   /* the console socket, or console.log */
#define RT_QEMU_FD_UID_LOCK 5  /* held only, never used: uidpool.h */
#define RT_QEMU_FD_QMP 6       /* listening sockets */
#define RT_QEMU_FD_AGENT 7
#define RT_QEMU_FD_BASE 8      /* the base disk, O_RDONLY */
#define RT_QEMU_FD_OVERLAY 9   /* the qcow2 overlay, O_RDWR */
#define RT_QEMU_FD_RAM 10      /* guest RAM: the monitor's memfd */
#define RT_QEMU_FD_LAYER0 11   /* read-only qcow2 layers between the base
                                  and the overlay, oldest first: 11, 12… */
#define RT_QEMU_MAX_LAYERS 8
#define RT_QEMU_NFDS (8 + RT_QEMU_MAX_LAYERS) /* fds 3 to 18 */

struct rt_qemu_args
{
  const char *qemu;          /* the binary: argv[0] */
  const char *accel;         /* "kvm" or "tcg" */
  const char *name;          /* the state dir, or NULL: in the VM's name
                                (never shown to the guest), for the host's
                                tools to find a sandbox's QEMU by */
  unsigned vcpu;
  unsigned memory_mib;
  const char *vmlinux;       /* paths QEMU opens (-kernel takes no fd) */
  const char *initramfs;
  unsigned long tsc_khz;     /* > 0 under TCG: passed as tsc_early_khz */
  const char *cmdline;       /* appended to the base kernel command line, or NULL */
  bool console_sock;         /* the console is the socket at fd 4, whose
                                reader keeps a capped log (vmm/console.c);
                                else fd 4 is the console.log file */
  bool channel;              /* the agent's virtio-serial port on the
                                socket listening at fd 7, QMP at fd 6 */
  bool tap;                  /* a virtio-net device on the tap at fd 3 */
  bool disk;                 /* a root disk: the raw base at fd 8 */
                             /* written through the sandbox's own qcow2
                                overlay at fd 9 */
  bool growfs;               /* the overlay is larger than the base: the
                                agent grows the file system (rt.growfs) */
  bool ram_file;             /* guest RAM is the memfd at fd 10, reopened
                                through /proc/self/fd (mounted in the jail),
                                share=on: the monitor can save it */
  unsigned n_layers;         /* read-only qcow2 layers at fds 11…, the
                                first backed by the base, the overlay by
                                the last (a clone's template disk, a
                                snapshot's disks) */
  bool incoming;             /* -incoming defer */
};

/* Builds the NULL-terminated argv for @a into *out (free every string and
   the array; cleanup_strv does).  Return: 0, or <0 with @err set (out of
   memory only).  */
int rt_qemu_argv (const struct rt_qemu_args *a, char ***out, rt_error **err);

#endif
