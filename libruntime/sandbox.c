/* sandbox.c - a sandbox: its state dir, its VM and its agent channel.  */
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "channel.h"
#include "vm.h"

/* TCG on a loaded 2-core host can take several seconds to boot.  */
#define BOOT_TIMEOUT_MS 60000

struct rt_sandbox
{
  rt_context *ctx;
  char id[32];
  char *dir;
  struct rt_vm vm;
  struct rt_channel ch;
  struct rt_image_disk image;
};

static void
sandbox_free (rt_sandbox *sb)
{
  if (sb == NULL)
    return;
  rt_channel_close (&sb->ch);
  rt_vm_kill (&sb->vm);
  if (sb->dir)
    rt_rm_rf (sb->dir, NULL);
  rt_image_disk_clear (&sb->image);
  free (sb->dir);
  free (sb);
}

static inline void
cleanup_sandboxp (rt_sandbox **sb)
{
  sandbox_free (*sb);
}
#define cleanup_sandbox __attribute__ ((cleanup (cleanup_sandboxp)))

/* A sandbox dir whose owner process is gone was left by a killed caller
   (its QEMU died with it, PR_SET_PDEATHSIG): remove it.  */
static void
reap_stale (rt_context *ctx)
{
  cleanup_dir DIR *d = opendir (ctx->state_dir);
  struct dirent *de;

  if (d == NULL)
    return;
  while ((de = readdir (d)))
    {
      cleanup_free char *owner = NULL, *data = NULL, *dir = NULL;
      cleanup_error rt_error *tmp = NULL;
      unsigned long long start = 0;
      int pid = 0;

      if (strncmp (de->d_name, "sb-", 3) != 0)
        continue;
      dir = rt_strdup_printf ("%s/%s", ctx->state_dir, de->d_name);
      owner = rt_strdup_printf ("%s/owner", dir);
      if (dir == NULL || owner == NULL)
        return;
      if (rt_read_file (owner, &data, NULL, &tmp) < 0)
        {
          /* No owner file: being created right now, or a crash between
             mkdir and writing it; only an old one is stale.  */
          struct stat st;
          if (stat (dir, &st) == 0 && st.st_mtime + 60 < time (NULL))
            rt_rm_rf (dir, NULL);
          continue;
        }
      if (sscanf (data, "%d %llu", &pid, &start) == 2 && pid > 0 && rt_proc_starttime (pid) == start)
        continue;
      rt_rm_rf (dir, NULL);
    }
}

static int
write_owner (rt_sandbox *sb, rt_error **err)
{
  cleanup_free char *path = rt_strdup_printf ("%s/owner", sb->dir);
  char data[64];
  int len = snprintf (data, sizeof (data), "%d %llu\n", (int) getpid (), rt_proc_starttime (getpid ()));

  if (path == NULL)
    return rt_error_oom (err);
  return rt_write_file_atomic (path, data, len, 0600, err);
}

static int
make_id (char out[32], rt_error **err)
{
  unsigned char rnd[6];

  if (getrandom (rnd, sizeof (rnd), 0) != sizeof (rnd))
    return rt_error_set (err, errno, "internal", "getrandom: %s", strerror (errno));
  snprintf (out, 32, "sb-%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
  return 0;
}

int
rt_sandbox_create (rt_context *ctx, const rt_sandbox_config *cfg, rt_sandbox **out, rt_error **err)
{
  static const rt_sandbox_config defaults = { 0 };
  cleanup_sandbox rt_sandbox *sb = NULL;
  struct rt_kernel_files k = { 0 };
  cleanup_free char *cmdline = NULL;
  const char *accel;
  unsigned vcpu, mem;
  int ret;

  if (cfg == NULL)
    cfg = &defaults;
  vcpu = cfg->vcpu ? cfg->vcpu : 2;
  mem = cfg->memory_mib ? cfg->memory_mib : 4096;
  if (vcpu > 16)
    return rt_error_set (err, EINVAL, "invalid_request", "--vcpu must be 1 to 16, not %u", vcpu);
  if (mem < 256 || mem > 65536)
    return rt_error_set (err, EINVAL, "invalid_request", "--memory must be 256 to 65536 MiB, not %u", mem);

  sb = calloc (1, sizeof (*sb));
  if (sb == NULL)
    return rt_error_oom (err);
  sb->ctx = ctx;
  sb->vm.pid = -1;
  sb->vm.pidfd = -1;
  sb->ch.fd = -1;

  /* The kernel first: it fails faster than building a boot disk.  */
  ret = rt_kernel_ensure (ctx, &k, err);
  if (ret < 0)
    return ret;
  ret = rt_image_ensure_disk (ctx, cfg->image, &sb->image, err);
  if (ret < 0)
    goto out;
  ret = rt_context_accel (ctx, &accel, err);
  if (ret < 0)
    goto out;

  ret = make_id (sb->id, err);
  if (ret < 0)
    goto out;
  ret = rt_mkdir_p (ctx->state_dir, 0755, err);
  if (ret < 0)
    goto out;
  reap_stale (ctx);
  sb->dir = rt_strdup_printf ("%s/%s", ctx->state_dir, sb->id);
  cmdline = rt_strdup_printf ("rt.hostname=%s", sb->id);
  if (sb->dir == NULL || cmdline == NULL)
    {
      ret = rt_error_oom (err);
      goto out;
    }
  if (mkdir (sb->dir, 0700) < 0)
    {
      ret = rt_error_set (err, errno, "internal", "cannot create '%s': %s", sb->dir, strerror (errno));
      free (steal_pointer (&sb->dir));
      goto out;
    }
  ret = write_owner (sb, err);
  if (ret < 0)
    goto out;

  {
    struct rt_vm_config vc = { .dir = sb->dir, .accel = accel, .vcpu = vcpu, .memory_mib = mem,
                               .vmlinux = k.vmlinux, .initramfs = k.initramfs, .disk = sb->image.disk,
                               .cmdline = cmdline, .channel = true };
    ret = rt_vm_start (ctx, &vc, &sb->vm, err);
    if (ret < 0)
      goto out;
  }
  ret = rt_channel_connect (&sb->ch, sb->vm.agent_sock, sb->vm.pidfd, BOOT_TIMEOUT_MS, err);
  if (ret < 0)
    {
      cleanup_free char *why = *err ? strdup ((*err)->msg) : NULL;
      cleanup_free char *qemu_log = rt_strdup_printf ("%s/qemu.log", sb->dir);
      cleanup_free char *qemu_tail = qemu_log ? rt_file_tail (qemu_log, 3) : NULL;
      rt_error_free (*err);
      *err = NULL;
      /* QEMU's own complaint beats an empty console.  */
      if (qemu_tail && *qemu_tail)
        {
          rt_error_set (err, EIO, "startup_failed", "the sandbox did not start: %s", why ? why : "QEMU failed");
          ret = rt_error_hint (err, "QEMU said: %s", qemu_tail);
        }
      else
        ret = rt_vm_startup_error (&sb->vm, err, why ? why : "unknown");
      goto out;
    }
  *out = steal_pointer (&sb);
  ret = 0;
out:
  rt_kernel_files_clear (&k);
  return ret;
}

const char *
rt_sandbox_id (rt_sandbox *sb)
{
  return sb->id;
}

int
rt_sandbox_exec (rt_sandbox *sb, char *const argv[], const rt_exec_opts *opts, rt_exec_result *res, rt_error **err)
{
  return rt_channel_exec (&sb->ch, argv, sb->image.env, sb->image.workdir, opts, res, err);
}

int
rt_sandbox_destroy (rt_sandbox *sb, rt_error **err)
{
  struct stat st;
  char *dir;
  int ret = 0;

  if (sb == NULL)
    return 0;
  /* The root disk is a throwaway overlay: nothing in the guest needs an
     orderly shutdown, so SIGKILL is both safe and fastest.  */
  rt_channel_close (&sb->ch);
  rt_vm_kill (&sb->vm);
  dir = steal_pointer (&sb->dir);
  if (dir && rt_rm_rf (dir, err) < 0)
    ret = -EIO;
  else if (dir && lstat (dir, &st) == 0)
    ret = rt_error_set (err, EBUSY, "cleanup_failed", "could not remove '%s'", dir);
  free (dir);
  sandbox_free (sb);
  return ret;
}
