/* qemu-args.c - QEMU's command line for one microvm (qemu-args.h).  */
#include <string.h>

#include "common/util.h"
#include "vmm/qemu-args.h"

struct argv_builder
{
  char **v;
  size_t n, alloc;
  bool oom;
};

static void
add_owned (struct argv_builder *b, char *s)
{
  if (s == NULL || b->oom)
    {
      free (s);
      b->oom = true;
      return;
    }
  if (b->n + 2 > b->alloc)
    {
      size_t alloc = b->alloc ? b->alloc * 2 : 64;
      char **nv = realloc (b->v, alloc * sizeof (char *));
      if (nv == NULL)
        {
          free (s);
          b->oom = true;
          return;
        }
      b->v = nv;
      b->alloc = alloc;
    }
  b->v[b->n++] = s;
  b->v[b->n] = NULL;
}

static void
add (struct argv_builder *b, const char *s)
{
  add_owned (b, strdup (s));
}

/* @path as a value inside a QEMU option list, where ',' separates options:
   doubled, so "/tmp/a,b=c" cannot add an option of its own.  A new
   string, or NULL when out of memory.  */
static char *
opt_path (const char *path)
{
  size_t len = strlen (path), commas = 0;
  char *out, *o;

  for (const char *p = path; *p; p++)
    commas += *p == ',';
  out = o = malloc (len + commas + 1);
  if (out == NULL)
    return NULL;
  for (const char *p = path; *p; p++)
    {
      *o++ = *p;
      if (*p == ',')
        *o++ = ',';
    }
  *o = '\0';
  return out;
}

/* @before, @path escaped by opt_path, @after: one argument.  */
static void
add_opt_path (struct argv_builder *b, const char *before, const char *path, const char *after)
{
  cleanup_free char *esc = opt_path (path);

  add_owned (b, esc ? rt_strdup_printf ("%s%s%s", before, esc, after) : NULL);
}

static void
add_pairs (struct argv_builder *b, const char *const *pairs)
{
  for (; *pairs; pairs++)
    add (b, *pairs);
}

/* What an idle guest need not wake up for: the lockup watchdogs, PSI
   averaging (2 s), vmstat folding (1 s, here 10 s) and kcompactd's
   proactive pass (500 ms).  Under TCG every guest wake-up costs the host
   far more than under KVM.  */
#define IDLE_APPEND                                                                                                    \
  " nowatchdog nosoftlockup psi=0 workqueue.power_efficient=1 sysctl.vm.stat_interval=10"                              \
  " sysctl.vm.compaction_proactiveness=0"

/* The kernel command line: quiet, no reboot on panic, the TSC frequency
   (without it TCG guests hang at random after "Marking TSC unstable", see
   rt_host_tsc_khz), rt.growfs when the disk is larger than the base.
   tsc=reliable: TCG's TSC is the host's, synchronized across vCPUs, but
   "max" lacks invtsc, so the kernel would fall back to jiffies as its
   clock and tick at HZ on every vCPU (6 % of a host core when idle).  */
static void
add_append (struct argv_builder *b, const struct rt_qemu_args *a, bool tcg)
{
  char tsc[64] = "";

  if (tcg && a->tsc_khz > 0)
    snprintf (tsc, sizeof (tsc), " tsc_early_khz=%lu tsc=reliable", a->tsc_khz);
  add (b, "-append");
  add_owned (b, rt_strdup_printf ("console=ttyS0 quiet panic=-1 reboot=t" IDLE_APPEND "%s%s%s%s", tsc,
                                  a->disk && a->growfs ? " rt.growfs=1" : "", a->cmdline ? " " : "",
                                  a->cmdline ? a->cmdline : ""));
}

/* Every fd a listening socket or an fdset (/dev/fdset/N: QEMU dups the
   fd whose access mode matches what it opens), so QEMU needs no path.
   Every qcow2 names its backing node: QEMU never opens the path its
   header holds (a layer a guest wrote may name any file).  The chain:
   base (raw, fdset 1) <- layer 0 (fdset 4) <- … <- root (fdset 2).  */
static void
add_devices (struct argv_builder *b, const struct rt_qemu_args *a)
{
  static const char *const layer_names[RT_QEMU_MAX_LAYERS]
      = { "layer0", "layer1", "layer2", "layer3", "layer4", "layer5", "layer6", "layer7" };
  const char *below = "base";

  if (a->channel)
    add_pairs (b, (const char *const[]){ "-device", "virtio-serial-device", "-chardev",
                                         "socket,id=agent,fd=" RT_STR (RT_QEMU_FD_AGENT) ",server=on,wait=off",
                                         "-device", "virtserialport,chardev=agent,name=runtime.agent", "-chardev",
                                         "socket,id=qmp,fd=" RT_STR (RT_QEMU_FD_QMP) ",server=on,wait=off", "-mon",
                                         "chardev=qmp,mode=control", NULL });
  if (a->tap)
    add_pairs (b, (const char *const[]){ "-netdev", "tap,id=net0,fd=" RT_STR (RT_QEMU_FD_TAP) ",vhost=off", "-device",
                                         "virtio-net-device,netdev=net0,mac=52:54:00:12:34:56", NULL });
  if (!a->disk)
    return;
  add_pairs (b, (const char *const[]){ "-add-fd", "fd=" RT_STR (RT_QEMU_FD_BASE) ",set=1,opaque=base", "-add-fd",
                                       "fd=" RT_STR (RT_QEMU_FD_OVERLAY) ",set=2,opaque=overlay", "-blockdev",
                                       "driver=raw,node-name=base,read-only=on,file.driver=file,"
                                       "file.filename=/dev/fdset/1,file.read-only=on",
                                       NULL });
  for (unsigned i = 0; i < a->n_layers && i < RT_QEMU_MAX_LAYERS; i++)
    {
      add (b, "-add-fd");
      add_owned (b, rt_strdup_printf ("fd=%u,set=%u,opaque=layer%u", RT_QEMU_FD_LAYER0 + i, 4 + i, i));
      add (b, "-blockdev");
      add_owned (b, rt_strdup_printf ("driver=qcow2,node-name=%s,backing=%s,read-only=on,file.driver=file,"
                                      "file.filename=/dev/fdset/%u,file.read-only=on",
                                      layer_names[i], below, 4 + i));
      below = layer_names[i];
    }
  add (b, "-blockdev");
  add_owned (b, rt_strdup_printf ("driver=qcow2,node-name=root,backing=%s,discard=unmap,file.driver=file,"
                                  "file.filename=/dev/fdset/2,file.discard=unmap",
                                  below));
  add_pairs (b, (const char *const[]){ "-device", "virtio-blk-device,drive=root", NULL });
}

/* Guest RAM in the memfd at fd 10: reopened by path, since QEMU 7.2's
   memory-backend-file takes no fd.  Shared, so that the monitor reads it
   for a snapshot or a pause (snapshot/saved.h) and the device state is
   saved without it (x-ignore-shared skips only shared RAM).  */
static void
add_ram (struct argv_builder *b, const struct rt_qemu_args *a)
{
  if (!a->ram_file)
    return;
  add (b, "-object");
  add_owned (b, rt_strdup_printf ("memory-backend-file,id=ram,size=%uM,mem-path=/proc/self/fd/" RT_STR (
                                      RT_QEMU_FD_RAM) ",share=on",
                                  a->memory_mib));
}

int
rt_qemu_argv (const struct rt_qemu_args *a, char ***out, rt_error **err)
{
  struct argv_builder b = { 0 };
  bool tcg;

  if (a->qemu == NULL || a->accel == NULL || a->vmlinux == NULL || a->initramfs == NULL)
    return rt_error_set (err, EINVAL, "internal", "the VM's description lacks a binary, kernel or path");
  tcg = strcmp (a->accel, "tcg") == 0;
  add (&b, a->qemu);
  /* The PIT stays: pit=off saved 0.4 % of a core when idle, but a boot
     under load hung with it (docs/performance.md, "Idle cost").  */
  add (&b, "-M");
  add_owned (&b, rt_strdup_printf ("microvm,x-option-roms=off,isa-serial=on,rtc=on%s",
                                   a->ram_file ? ",memory-backend=ram" : ""));
  add_pairs (&b,
             (const char *const[]){ "-accel", tcg ? "tcg,tb-size=64" : "kvm", "-cpu", tcg ? "max" : "host", "-m", NULL });
  add_owned (&b, rt_strdup_printf ("%u", a->memory_mib));
  add_ram (&b, a);
  add (&b, "-smp");
  add_owned (&b, rt_strdup_printf ("%u", a->vcpu));
  /* Named threads ("CPU 0/TCG"): the meter bills exactly those.  QEMU's
     seccomp filter: no exec, no setuid, no scheduler or affinity calls,
     no obsolete system calls.  */
  add (&b, "-name");
  if (a->name)
    add_opt_path (&b, "runtime:", a->name, ",debug-threads=on");
  else
    add (&b, "runtime,debug-threads=on");
  add_pairs (&b,
             (const char *const[]){ "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot", "-sandbox",
                                    "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny", NULL });
  if (a->console_sock)
    add_pairs (&b, (const char *const[]){ "-chardev", "socket,id=console,fd=" RT_STR (RT_QEMU_FD_CONSOLE), "-serial",
                                          "chardev:console", NULL });
  else
    add_pairs (&b, (const char *const[]){ "-add-fd", "fd=" RT_STR (RT_QEMU_FD_CONSOLE) ",set=3,opaque=console",
                                          "-serial", "file:/dev/fdset/3", NULL });
  /* A clone boots nothing: its kernel is in the template's RAM.  Loading
     it again would cost QEMU ~50 ms and copy its 50 MB into private
     pages.  */
  if (!a->incoming)
    {
      add (&b, "-kernel");
      add (&b, a->vmlinux);
      add (&b, "-initrd");
      add (&b, a->initramfs);
      add_append (&b, a, tcg);
    }
  add_devices (&b, a);
  if (a->incoming)
    add_pairs (&b, (const char *const[]){ "-incoming", "defer", NULL });
  if (b.oom || b.v == NULL)
    {
      cleanup_strvp (&b.v);
      return rt_error_oom (err);
    }
  *out = b.v;
  return 0;
}
