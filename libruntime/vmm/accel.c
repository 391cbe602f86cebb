/* accel.c - KVM or TCG, decided by a probe boot and cached.
 *
 * /dev/kvm existing proves little: on kvm_pvm hosts it is a software
 * hypervisor on which stock kernels crawl and then die (docs/ARCHITECTURE.md).
 * So KVM is chosen only when our kernel really reaches the agent on it,
 * quickly.  */
#include <fcntl.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include "vmm/accel.h"
#include "vmm/kernel.h"
#include "vmm/vm.h"

/* A healthy KVM boots to the agent in well under a second; kvm_pvm needs
   over a minute.  */
#define PROBE_TIMEOUT_MS 10000

static int
probe_kvm (rt_context *ctx, const char **out, rt_error **err)
{
  struct rt_kernel_files k = { 0 };
  struct rt_vm vm = { .pid = -1, .pidfd = -1 };
  cleanup_free char *dir = rt_strdup_printf ("%s/probe-XXXXXX", ctx->cache_dir);
  cleanup_free char *console = NULL;
  int status = 0, ret;
  bool ok = false;

  if (dir == NULL)
    return rt_error_oom (err);
  if (ctx->qemu == NULL)
    {
      rt_error_set (err, ENOENT, "startup_failed", "qemu-system-x86_64 not found");
      return rt_error_hint (err, "apt-get install qemu-system-x86");
    }
  ret = rt_kernel_ensure (ctx, &k, err);
  if (ret < 0)
    return ret;
  if (mkdtemp (dir) == NULL)
    {
      rt_kernel_files_clear (&k);
      return rt_error_set (err, errno, "internal", "cannot create '%s': %s", dir, strerror (errno));
    }
  rt_progress (ctx, "Checking whether KVM works here (once)…");
  {
    struct rt_vm_config cfg = { .dir = dir, .accel = "kvm", .vcpu = 1, .memory_mib = 256,
                                .vmlinux = k.vmlinux, .initramfs = k.initramfs, .cmdline = "rt.probe=1" };
    /* Failing to start QEMU at all says nothing about KVM: report it and
       cache nothing.  */
    ret = rt_vm_start (ctx, &cfg, &vm, err);
    if (ret == 0 && rt_vm_wait (&vm, PROBE_TIMEOUT_MS, &status) == 1)
      {
        console = rt_file_tail (vm.console_log, 20);
        ok = WIFEXITED (status) && WEXITSTATUS (status) == 0 && console && strstr (console, "probe ok");
      }
  }
  rt_vm_kill (&vm);
  rt_kernel_files_clear (&k);
  rt_rm_rf (dir, NULL);
  if (ret < 0)
    return ret;
  *out = ok ? "kvm" : "tcg";
  return 0;
}

/* The answer depends on the host kernel, QEMU and who may open the node
   @st: the cache is keyed on all three (a node made open later is probed
   again).  */
static char *
cache_key (const rt_context *ctx, const struct stat *st)
{
  struct utsname u;

  uname (&u);
  return rt_strdup_printf ("%s %s %s %04o:%u", u.release, u.version, ctx->qemu ? ctx->qemu : "-",
                           (unsigned) (st->st_mode & 07777), (unsigned) st->st_gid);
}

/* "kvm" or "tcg" as the file @cache says for @key, else NULL.  */
static const char *
cached_verdict (const char *cache, const char *key)
{
  cleanup_free char *cached = NULL;
  cleanup_error rt_error *tmp = NULL;
  char *nl;

  if (rt_read_file (cache, &cached, NULL, &tmp) < 0 || (nl = strchr (cached, '\n')) == NULL
      || strcmp (nl + 1, key) != 0)
    return NULL;
  *nl = '\0';
  return strcmp (cached, "kvm") == 0 ? "kvm" : strcmp (cached, "tcg") == 0 ? "tcg" : NULL;
}

int
rt_context_accel (rt_context *ctx, const char **out, rt_error **err)
{
  cleanup_free char *cache = NULL, *key = NULL;
  struct stat st;
  int fd, ret;

  if (ctx->accel)
    {
      *out = ctx->accel;
      return 0;
    }
  if (ctx->accel_env)
    {
      if (strcmp (ctx->accel_env, "kvm") != 0 && strcmp (ctx->accel_env, "tcg") != 0)
        {
          rt_error_set (err, EINVAL, "usage", "RUNTIME_ACCEL must be kvm or tcg, not '%s'", ctx->accel_env);
          return rt_error_hint (err, "unset it to let runtime decide");
        }
      *out = ctx->accel = strcmp (ctx->accel_env, "kvm") == 0 ? "kvm" : "tcg";
      return 0;
    }
  fd = open ("/dev/kvm", O_RDWR | O_CLOEXEC);
  if (fd < 0 || fstat (fd, &st) < 0)
    {
      if (fd >= 0)
        close (fd);
      *out = ctx->accel = "tcg";
      return 0;
    }
  close (fd);

  key = cache_key (ctx, &st);
  cache = rt_strdup_printf ("%s/accel", ctx->cache_dir);
  if (key == NULL || cache == NULL)
    return rt_error_oom (err);
  if ((*out = cached_verdict (cache, key)) != NULL)
    {
      ctx->accel = *out;
      return 0;
    }
  /* Without QEMU the probe reports it and nothing is cached.  The rule is
     the jail's even for an unjailed test run, so that both read one
     cached verdict.  */
  if (ctx->qemu && !rt_kvm_node_open_to_jail (&st, NULL))
    {
      /* Root could use it, but QEMU runs as a uid of its own: said once
         (the answer is cached), with the fix, rather than failing every
         start.  */
      rt_progress (ctx,
                   "KVM is not used: /dev/kvm (mode %04o, group %u) is not open to QEMU's own uid; "
                   "guests run on TCG (slower). Give /dev/kvm a group of its own with rw "
                   "(root:kvm 0660, as Debian's udev rule does) to use it.",
                   (unsigned) (st.st_mode & 07777), (unsigned) st.st_gid);
      *out = "tcg";
    }
  else
    {
      ret = probe_kvm (ctx, out, err);
      if (ret < 0)
        return ret;
    }
  ctx->accel = *out;
  {
    cleanup_free char *data = rt_strdup_printf ("%s\n%s", *out, key);
    if (data && rt_mkdir_p (ctx->cache_dir, 0755, NULL) == 0)
      rt_write_file_atomic (cache, data, strlen (data), 0644, NULL);
  }
  return 0;
}

int
rt_accel_explain (rt_context *ctx, const char **accel, char **why)
{
  cleanup_free char *key = NULL, *cache = NULL;
  const char *pvm = access ("/sys/module/kvm_pvm", F_OK) == 0 ? " of kvm_pvm (a software hypervisor)" : "";
  struct stat st;

  *accel = NULL;
  if (ctx->accel_env)
    {
      bool known = strcmp (ctx->accel_env, "kvm") == 0 || strcmp (ctx->accel_env, "tcg") == 0;
      *accel = known ? (strcmp (ctx->accel_env, "kvm") == 0 ? "kvm" : "tcg") : NULL;
      *why = rt_strdup_printf (known ? "RUNTIME_ACCEL=%s" : "RUNTIME_ACCEL=%s is neither kvm nor tcg", ctx->accel_env);
      return *why ? 0 : -ENOMEM;
    }
  if (stat ("/dev/kvm", &st) < 0)
    {
      *accel = "tcg";
      *why = rt_strdup_printf ("no /dev/kvm (%s): TCG, QEMU's emulator", strerror (errno));
      return *why ? 0 : -ENOMEM;
    }
  key = cache_key (ctx, &st);
  cache = rt_strdup_printf ("%s/accel", ctx->cache_dir);
  if (key == NULL || cache == NULL)
    return -ENOMEM;
  if (!rt_kvm_node_open_to_jail (&st, NULL))
    {
      *accel = "tcg";
      *why = rt_strdup_printf ("/dev/kvm%s, mode %04o and group %u, is not open to QEMU's own uid: TCG", pvm,
                               (unsigned) (st.st_mode & 07777), (unsigned) st.st_gid);
    }
  else if ((*accel = cached_verdict (cache, key)) != NULL && strcmp (*accel, "kvm") == 0)
    *why = rt_strdup_printf ("/dev/kvm%s booted the probe guest (answer cached in %s)", pvm, cache);
  else if (*accel)
    *why = rt_strdup_printf ("/dev/kvm%s did not boot the probe guest within %d s (answer cached in %s): TCG", pvm,
                             PROBE_TIMEOUT_MS / 1000, cache);
  else if (access (cache, F_OK) < 0 && errno == EACCES)
    *why = rt_strdup_printf ("/dev/kvm%s: the probe's answer (%s) is not readable by uid %u", pvm, cache,
                             (unsigned) geteuid ());
  else
    *why = rt_strdup_printf ("/dev/kvm%s: not probed yet for this host kernel and QEMU; the first sandbox boots "
                             "the probe guest (at most %d s)", pvm, PROBE_TIMEOUT_MS / 1000);
  return *why ? 0 : -ENOMEM;
}

bool
rt_kvm_node_open_to_jail (const struct stat *st, gid_t *gid)
{
  if (gid)
    *gid = 0;
  if ((st->st_mode & (S_IROTH | S_IWOTH)) == (S_IROTH | S_IWOTH))
    return true;
  if ((st->st_mode & (S_IRGRP | S_IWGRP)) == (S_IRGRP | S_IWGRP) && st->st_gid != 0)
    {
      if (gid)
        *gid = st->st_gid;
      return true;
    }
  return false;
}

unsigned long
rt_host_tsc_khz (void)
{
  cleanup_file FILE *f = NULL;
  char line[256];
  unsigned long khz = 0;
  double mhz;

  /* Kernels with the tsc_freq_khz patch export the exact value.  */
  f = fopen ("/sys/devices/system/cpu/cpu0/tsc_freq_khz", "re");
  if (f && fscanf (f, "%lu", &khz) == 1 && khz > 0)
    return khz;
  if (f)
    fclose (steal_pointer (&f));
  f = fopen ("/proc/cpuinfo", "re");
  if (f == NULL)
    return 0;
  while (fgets (line, sizeof (line), f))
    if (strncmp (line, "cpu MHz", 7) == 0)
      {
        const char *colon = strchr (line, ':');
        if (colon && sscanf (colon + 1, "%lf", &mhz) == 1 && mhz > 0)
          return (unsigned long) (mhz * 1000.0 + 0.5);
      }
  return 0;
}
