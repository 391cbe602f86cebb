/* test-qemu-args.c - QEMU's exact command line for the shapes the library
   boots: TCG and KVM, with and without the agent's channel, network and
   disk overlay, 1 and 2 vCPUs; seccomp on each, every socket and disk an
   fd (qemu-args.h).  A changed argument must show here.  */
#include <string.h>

#include "common/util.h"
#include "tap.h"
#include "vmm/qemu-args.h"

/* What every guest is told so that it stays quiet when idle.  */
#define IDLE                                                                                                           \
  " nowatchdog nosoftlockup psi=0 workqueue.power_efficient=1 sysctl.vm.stat_interval=10"                              \
  " sysctl.vm.compaction_proactiveness=0"

/* Whether @got equals the NULL-terminated @want; prints the first
   difference as a TAP comment.  */
static bool
same_argv (char **got, const char *const *want)
{
  size_t i;

  for (i = 0; got[i] && want[i]; i++)
    if (strcmp (got[i], want[i]) != 0)
      {
        printf ("# argv[%zu]: got '%s', want '%s'\n", i, got[i], want[i]);
        return false;
      }
  if (got[i] || want[i])
    {
      printf ("# argv[%zu]: got '%s', want '%s'\n", i, got[i] ? got[i] : "(end)", want[i] ? want[i] : "(end)");
      return false;
    }
  return true;
}

static void
check (const char *what, const struct rt_qemu_args *a, const char *const *want)
{
  cleanup_strv char **argv = NULL;
  rt_error *err = NULL;
  int ret = rt_qemu_argv (a, &argv, &err);

  ok (ret == 0 && err == NULL && same_argv (argv, want), "%s", what);
  rt_error_free (err);
}

/* A sandbox under TCG: channel, raw base disk shared read-only, no tap.  */
static void
test_tcg_sandbox (void)
{
  struct rt_qemu_args a = { .qemu = "/usr/bin/qemu-system-x86_64", .accel = "tcg", .vcpu = 1, .memory_mib = 512,
                            .vmlinux = "/c/kernel/6.1/vmlinux", .initramfs = "/c/kernel/6.1/initramfs-ab.cpio",
                            .tsc_khz = 2100000, .cmdline = "rt.id=sb-1", .channel = true,
                            .disk = true };
  static const char *const want[] = {
    "/usr/bin/qemu-system-x86_64", "-M", "microvm,x-option-roms=off,isa-serial=on,rtc=on", "-accel",
    "tcg,tb-size=64",
    "-cpu", "max", "-m", "512", "-smp", "1", "-name", "runtime,debug-threads=on", "-nodefaults", "-no-user-config",
    "-display", "none", "-no-reboot", "-sandbox",
    "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny", "-add-fd", "fd=4,set=3,opaque=console", "-serial",
    "file:/dev/fdset/3", "-kernel", "/c/kernel/6.1/vmlinux",
    "-initrd", "/c/kernel/6.1/initramfs-ab.cpio", "-append",
    "console=ttyS0 quiet panic=-1 reboot=t" IDLE " tsc_early_khz=2100000 tsc=reliable rt.id=sb-1", "-device", "virtio-serial-device",
    "-chardev", "socket,id=agent,fd=7,server=on,wait=off", "-device", "virtserialport,chardev=agent,name=runtime.agent",
    "-chardev", "socket,id=qmp,fd=6,server=on,wait=off", "-mon", "chardev=qmp,mode=control", "-add-fd", "fd=8,set=1,opaque=base", "-add-fd", "fd=9,set=2,opaque=overlay", "-blockdev",
    "driver=raw,node-name=base,read-only=on,file.driver=file,file.filename=/dev/fdset/1,file.read-only=on",
    "-blockdev",
    "driver=qcow2,node-name=root,backing=base,discard=unmap,file.driver=file,file.filename=/dev/fdset/2,"
    "file.discard=unmap", "-device",
    "virtio-blk-device,drive=root", NULL
  };

  check ("TCG, 1 vCPU, channel, base disk, no network", &a, want);
  /* An unknown TSC frequency leaves the parameter out.  */
  a.tsc_khz = 0;
  {
    cleanup_strv char **argv = NULL;
    ok (rt_qemu_argv (&a, &argv, NULL) == 0 && strcmp (argv[29], "console=ttyS0 quiet panic=-1 reboot=t" IDLE " rt.id=sb-1") == 0
            && strcmp (argv[2], "microvm,x-option-roms=off,isa-serial=on,rtc=on") == 0,
        "TCG without a TSC frequency: no tsc_early_khz or tsc=reliable");
  }
}

/* A sandbox under KVM: 2 vCPUs, the tap, the disk a qcow2 overlay.  */
static void
test_kvm_sandbox (void)
{
  struct rt_qemu_args a = { .qemu = "qemu", .accel = "kvm", .vcpu = 2, .memory_mib = 4096, .vmlinux = "vmlinux",
                            .initramfs = "initrd", .tsc_khz = 2100000, .cmdline = "rt.id=sb-2",
                            .channel = true, .tap = true, .disk = true,
                            .growfs = true };
  static const char *const want[] = {
    "qemu", "-M", "microvm,x-option-roms=off,isa-serial=on,rtc=on", "-accel", "kvm", "-cpu", "host", "-m", "4096",
    "-smp", "2", "-name", "runtime,debug-threads=on", "-nodefaults", "-no-user-config", "-display", "none",
    "-no-reboot", "-sandbox",
    "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny", "-add-fd", "fd=4,set=3,opaque=console", "-serial",
    "file:/dev/fdset/3", "-kernel", "vmlinux", "-initrd", "initrd", "-append",
    "console=ttyS0 quiet panic=-1 reboot=t" IDLE " rt.growfs=1 rt.id=sb-2", "-device", "virtio-serial-device", "-chardev",
    "socket,id=agent,fd=7,server=on,wait=off", "-device", "virtserialport,chardev=agent,name=runtime.agent",
    "-chardev", "socket,id=qmp,fd=6,server=on,wait=off", "-mon", "chardev=qmp,mode=control", "-netdev",
    "tap,id=net0,fd=3,vhost=off", "-device", "virtio-net-device,netdev=net0,mac=52:54:00:12:34:56", "-add-fd", "fd=8,set=1,opaque=base", "-add-fd", "fd=9,set=2,opaque=overlay", "-blockdev",
    "driver=raw,node-name=base,read-only=on,file.driver=file,file.filename=/dev/fdset/1,file.read-only=on",
    "-blockdev",
    "driver=qcow2,node-name=root,backing=base,discard=unmap,file.driver=file,file.filename=/dev/fdset/2,"
    "file.discard=unmap", "-device", "virtio-blk-device,drive=root",
    NULL
  };

  /* tsc_early_khz is for TCG only.  */
  check ("KVM, 2 vCPUs, channel, network, disk overlay", &a, want);
}

/* TCG with 2 vCPUs and the network, no overlay.  */
static void
test_tcg_network (void)
{
  struct rt_qemu_args a = { .qemu = "qemu", .accel = "tcg", .vcpu = 2, .memory_mib = 1024, .vmlinux = "vmlinux",
                            .initramfs = "initrd", .channel = true, .tap = true, .disk = true };
  static const char *const want[] = {
    "qemu", "-M", "microvm,x-option-roms=off,isa-serial=on,rtc=on", "-accel", "tcg,tb-size=64", "-cpu", "max", "-m",
    "1024", "-smp", "2", "-name", "runtime,debug-threads=on", "-nodefaults", "-no-user-config", "-display", "none",
    "-no-reboot", "-sandbox",
    "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny", "-add-fd", "fd=4,set=3,opaque=console", "-serial",
    "file:/dev/fdset/3", "-kernel", "vmlinux", "-initrd", "initrd", "-append",
    "console=ttyS0 quiet panic=-1 reboot=t" IDLE, "-device", "virtio-serial-device", "-chardev",
    "socket,id=agent,fd=7,server=on,wait=off", "-device", "virtserialport,chardev=agent,name=runtime.agent",
    "-chardev", "socket,id=qmp,fd=6,server=on,wait=off", "-mon", "chardev=qmp,mode=control", "-netdev",
    "tap,id=net0,fd=3,vhost=off", "-device", "virtio-net-device,netdev=net0,mac=52:54:00:12:34:56", "-add-fd", "fd=8,set=1,opaque=base", "-add-fd", "fd=9,set=2,opaque=overlay", "-blockdev",
    "driver=raw,node-name=base,read-only=on,file.driver=file,file.filename=/dev/fdset/1,file.read-only=on",
    "-blockdev",
    "driver=qcow2,node-name=root,backing=base,discard=unmap,file.driver=file,file.filename=/dev/fdset/2,"
    "file.discard=unmap", "-device",
    "virtio-blk-device,drive=root",
    NULL
  };

  check ("TCG, 2 vCPUs, network, base disk, no TSC frequency, no extra cmdline", &a, want);
}

/* The accelerator probe (accel.c): KVM, 1 vCPU, no channel, no disk, no
   network.  */
static void
test_kvm_probe (void)
{
  struct rt_qemu_args a = { .qemu = "qemu", .accel = "kvm", .vcpu = 1, .memory_mib = 256, .vmlinux = "vmlinux",
                            .initramfs = "initrd", .cmdline = "rt.probe=1" };
  static const char *const want[] = {
    "qemu", "-M", "microvm,x-option-roms=off,isa-serial=on,rtc=on", "-accel", "kvm", "-cpu", "host", "-m", "256",
    "-smp", "1", "-name", "runtime,debug-threads=on", "-nodefaults", "-no-user-config", "-display", "none",
    "-no-reboot", "-sandbox",
    "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny", "-add-fd", "fd=4,set=3,opaque=console", "-serial",
    "file:/dev/fdset/3", "-kernel", "vmlinux", "-initrd", "initrd", "-append",
    "console=ttyS0 quiet panic=-1 reboot=t" IDLE " rt.probe=1", NULL
  };

  check ("KVM probe: 1 vCPU, no channel, no disk, no network", &a, want);
}

/* A sandbox whose console the monitor reads (vmm/console.c): the socket
   at fd 4, no file.  */
static void
test_console_sock (void)
{
  struct rt_qemu_args a = { .qemu = "qemu", .accel = "kvm", .vcpu = 1, .memory_mib = 256, .vmlinux = "vmlinux",
                            .initramfs = "initrd", .console_sock = true };
  static const char *const want[] = {
    "qemu", "-M", "microvm,x-option-roms=off,isa-serial=on,rtc=on", "-accel", "kvm", "-cpu", "host", "-m", "256",
    "-smp", "1", "-name", "runtime,debug-threads=on", "-nodefaults", "-no-user-config", "-display", "none",
    "-no-reboot", "-sandbox",
    "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny", "-chardev", "socket,id=console,fd=4", "-serial", "chardev:console", "-kernel", "vmlinux",
    "-initrd", "initrd", "-append", "console=ttyS0 quiet panic=-1 reboot=t" IDLE, NULL
  };

  check ("the console on the socket at fd 4", &a, want);
}

/* A state dir "/tmp/a,b=c" (RUNTIME_STATE_DIR is the caller's to choose)
   in the VM's name: a comma inside an option list would start an option
   of its own, so it is doubled (",,"); -kernel and -initrd take their
   value whole.  No other path is left: sockets, disks, console are fds.  */
static void
test_commas (void)
{
  struct rt_qemu_args a = { .qemu = "qemu", .accel = "kvm", .vcpu = 1, .memory_mib = 512, .vmlinux = "/c,x/vmlinux",
                            .initramfs = "/c,x/initrd", .name = "/tmp/a,b=c/sb-1", .channel = true, .disk = true,
                            .growfs = true };
  static const char *const want[] = {
    "qemu", "-M", "microvm,x-option-roms=off,isa-serial=on,rtc=on", "-accel", "kvm", "-cpu", "host", "-m", "512",
    "-smp", "1", "-name", "runtime:/tmp/a,,b=c/sb-1,debug-threads=on", "-nodefaults", "-no-user-config", "-display", "none",
    "-no-reboot", "-sandbox",
    "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny", "-add-fd", "fd=4,set=3,opaque=console", "-serial",
    "file:/dev/fdset/3", "-kernel", "/c,x/vmlinux", "-initrd", "/c,x/initrd",
    "-append", "console=ttyS0 quiet panic=-1 reboot=t" IDLE " rt.growfs=1", "-device", "virtio-serial-device", "-chardev",
    "socket,id=agent,fd=7,server=on,wait=off", "-device", "virtserialport,chardev=agent,name=runtime.agent",
    "-chardev", "socket,id=qmp,fd=6,server=on,wait=off", "-mon", "chardev=qmp,mode=control",
    "-add-fd", "fd=8,set=1,opaque=base", "-add-fd", "fd=9,set=2,opaque=overlay", "-blockdev",
    "driver=raw,node-name=base,read-only=on,file.driver=file,file.filename=/dev/fdset/1,file.read-only=on",
    "-blockdev",
    "driver=qcow2,node-name=root,backing=base,discard=unmap,file.driver=file,file.filename=/dev/fdset/2,"
    "file.discard=unmap", "-device",
    "virtio-blk-device,drive=root", NULL
  };

  check ("commas in the name are doubled; -kernel and -initrd take theirs whole", &a, want);
}

static void
test_incomplete (void)
{
  struct rt_qemu_args a = { .qemu = "qemu", .accel = "kvm", .vcpu = 1, .memory_mib = 256, .initramfs = "initrd" };
  char **argv = NULL;
  rt_error *err = NULL;

  ok (rt_qemu_argv (&a, &argv, &err) == -EINVAL && argv == NULL && err && strcmp (err->code, "internal") == 0,
      "a description without a kernel is refused");
  rt_error_free (err);
}

/* A template being made, a clone and a snapshot's child: RAM the memfd at
   fd 10, shared; the read-only layers between the base and the overlay;
   no kernel (it is in the RAM) and the device state awaited.  */
static void
test_template_and_clone (void)
{
  struct rt_qemu_args a = { .qemu = "qemu", .accel = "tcg", .vcpu = 1, .memory_mib = 1024, .vmlinux = "vmlinux",
                            .initramfs = "initrd", .tsc_khz = 2100000, .cmdline = "rt.hostname=runtime",
                            .console_sock = true, .channel = true, .tap = true, .disk = true, .ram_file = true };
  static const char *const head[] = { "qemu", "-M", "microvm,x-option-roms=off,isa-serial=on,rtc=on,memory-backend=ram",
                                      "-accel", "tcg,tb-size=64", "-cpu", "max", "-m", "1024", "-object",
                                      "memory-backend-file,id=ram,size=1024M,mem-path=/proc/self/fd/10,share=on" };
  cleanup_strv char **made = NULL, **clone = NULL;
  size_t n = 0;
  bool head_ok = rt_qemu_argv (&a, &made, NULL) == 0;

  for (size_t i = 0; head_ok && i < sizeof head / sizeof head[0]; i++)
    head_ok = made[i] && strcmp (made[i], head[i]) == 0;
  ok (head_ok, "a template: -M memory-backend=ram, RAM the memfd at fd 10, shared");
  a.n_layers = 2;
  a.incoming = true;
  ok (rt_qemu_argv (&a, &clone, NULL) == 0 && strcmp (clone[10], "memory-backend-file,id=ram,size=1024M,"
                                                                   "mem-path=/proc/self/fd/10,share=on") == 0,
      "a clone: its own memfd, shared (its monitor saves it)");
  for (char **p = clone; p && *p; p++, n++)
    if (strcmp (*p, "-kernel") == 0 || strcmp (*p, "-initrd") == 0 || strcmp (*p, "-append") == 0)
      n = 1000;
  ok (n < 1000 && strcmp (clone[n - 2], "-incoming") == 0 && strcmp (clone[n - 1], "defer") == 0,
      "a clone boots no kernel and waits for its state (-incoming defer)");
  n = 0;
  for (char **p = clone; p && *p; p++)
    n += strcmp (*p, "driver=qcow2,node-name=layer0,backing=base,read-only=on,file.driver=file,"
                     "file.filename=/dev/fdset/4,file.read-only=on") == 0
         || strcmp (*p, "driver=qcow2,node-name=layer1,backing=layer0,read-only=on,file.driver=file,"
                        "file.filename=/dev/fdset/5,file.read-only=on") == 0
         || strcmp (*p, "driver=qcow2,node-name=root,backing=layer1,discard=unmap,file.driver=file,"
                        "file.filename=/dev/fdset/2,file.discard=unmap") == 0
         || strcmp (*p, "fd=11,set=4,opaque=layer0") == 0 || strcmp (*p, "fd=12,set=5,opaque=layer1") == 0;
  ok (n == 5, "two layers: base <- layer0 (fd 11) <- layer1 (fd 12) <- the overlay, every backing named");
}

int
main (void)
{
  test_tcg_sandbox ();
  test_kvm_sandbox ();
  test_tcg_network ();
  test_kvm_probe ();
  test_console_sock ();
  test_commas ();
  test_incomplete ();
  test_template_and_clone ();
  return tap_done ();
}
