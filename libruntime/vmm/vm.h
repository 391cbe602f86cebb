/* vm.h - one QEMU microvm process.  */
#ifndef RT_VM_H
#define RT_VM_H

#include "core/context.h"
#include "vmm/cgroup.h"
#include "vmm/qemu-args.h"
#include "vmm/uidpool.h"

struct rt_vm_config
{
  const char *dir;        /* state dir: sockets, console.log, qemu.log */
  const char *disk_dir;   /* where the disk's writes go (overlay.qcow2 or
                             QEMU's snapshot file), made and removed with
                             the VM; NULL: @dir.  Not the state dir, which
                             may be RAM (/run) */
  const char *accel;      /* "kvm" or "tcg" */
  unsigned vcpu;
  unsigned memory_mib;
  const char *vmlinux;
  const char *initramfs;
  const char *disk;       /* read-only base disk, NULL for none */
  unsigned disk_mib;      /* > 0: the sandbox's disk size, larger than the
                             base (a qcow2 overlay the guest grows into) */
  const char *cmdline;    /* appended to the base kernel command line */
  bool channel;           /* add the agent's virtio-serial port */
  int tap_fd;             /* > 0: the guest's virtio-net is this tap (0, the
                             default, is never one) */
  int netns_fd;           /* > 0: QEMU runs in this network namespace */
  int console_fd;         /* > 0: the serial console is this socket, whose
                             reader writes console.log; else QEMU writes it */
  bool trial;             /* a trial sandbox: its cgroup caps the CPU */
  /* Saved memory: templates, clones, snapshots (snapshot/saved.h).  */
  int ram_fd;             /* > 0: guest RAM is this memfd (the caller's),
                             at RT_QEMU_FD_RAM, mapped shared */
  const char *layers[RT_QEMU_MAX_LAYERS + 1]; /* read-only qcow2 layers
                             between the base and the overlay, oldest
                             first, NULL-terminated (a clone's template
                             disk, a snapshot's disks) */
  const char *overlay;    /* a qcow2 overlay the caller made and keeps (a
                             template's disk, a woken sandbox's), used in
                             place */
  const char *overlay_from;  /* an empty qcow2 whose copy is the overlay
                                (instead of qemu-img create: 30-110 ms);
                                NULL: a cached empty one of the disk's
                                size (rt_vm_empty_overlay) */
  bool incoming;          /* -incoming defer: QEMU waits for its device
                             state (vmm/migrate.h) */
};

struct rt_vm
{
  pid_t pid;
  int pidfd;              /* readable when QEMU exits */
  char *agent_sock;
  char *console_log;
  char *disk_dir;         /* made by rt_vm_start, removed by rt_vm_kill */
  char *jail_root;        /* <disk_dir or dir>/root: the jail's mount point */
  char *jail_vm;          /* <disk_dir or dir>/vm: QEMU's one writable dir */
  bool jailed;            /* false only under RUNTIME_UNSAFE_NO_JAIL */
  struct rt_uid_lease lease; /* QEMU's uid, held until it is reaped */
  struct rt_cgroup cgroup;
  bool cgroup_made;
  uint64_t jail_setup_us; /* from before clone to QEMU's exec */
  bool keep_disk;         /* rt_vm_kill keeps the disk dir's overlay.qcow2
                             and layers/ (a pause to disk) */
  pid_t end_pid;          /* > 0: QEMU's ender (rt_vm_end_arm) */
  int end_fd;             /* its command pipe, when end_pid > 0 */
};

/* The one command QEMU's ender knows: kill QEMU, empty its dir.  */
#define RT_VM_END_CMD 'K'

/* Starts QEMU in its own session, in its jail (vmm/jail.h) unless
   ctx->unsafe_no_jail; it dies with the calling process.  */
int rt_vm_start (rt_context *ctx, const struct rt_vm_config *cfg, struct rt_vm *vm, rt_error **err);
/* Waits up to @timeout_ms for QEMU to exit; 1 if it did (status in
   *status), 0 if still running.  */
int rt_vm_wait (struct rt_vm *vm, int timeout_ms, int *status);
/* SIGKILLs and reaps QEMU (idempotent), gives its uid and cgroup back,
   removes its disk dir (but overlay.qcow2 and layers/ with
   vm->keep_disk), frees the struct's members.  */
void rt_vm_kill (struct rt_vm *vm);
/* Forks QEMU's ender (vm-end.c), which keeps RT_VM_END_KEPT_CAPS and,
   on one byte or the caller's death, SIGKILLs QEMU and removes
   vm->jail_vm: a caller may then drop CAP_KILL and CAP_DAC_OVERRIDE and
   still end QEMU with rt_vm_kill.  Call after rt_vm_start, before the
   drop.  Errors: "startup_failed".  */
int rt_vm_end_arm (struct rt_vm *vm, rt_error **err);
/* Has the ender do its job and reaps it (rt_vm_kill calls it); 0 when
   none was armed or it succeeded, -1 when it failed or died.  */
int rt_vm_end_run (struct rt_vm *vm);
/* qemu-img create: a qcow2 overlay at @path of @backing (format @fmt),
   of @size_mib, or of the backing's size when 0.  Only on files no guest
   has written: qemu-img follows the backing files a header names.  */
int rt_qcow2_create (const char *backing, const char *fmt, const char *path, unsigned size_mib, rt_error **err);
/* An empty qcow2 overlay of @base (raw) of @size_mib (0: the base's
   size) at the new file @path: a copy of one cached in <cache>/overlays
   for an image's disk, made once (qemu-img).  */
int rt_vm_empty_overlay (rt_context *ctx, const char *base, unsigned size_mib, const char *path, rt_error **err);
/* An error carrying the console's last lines.  */
int rt_vm_startup_error (struct rt_vm *vm, rt_error **err, const char *what);

#endif
