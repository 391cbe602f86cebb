/* boot.c - the initramfs part of boot: pseudo file systems, the kernel
   command line, modules, the switch to the root disk.  */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "boot.h"

void
mkdir_quiet (const char *path, mode_t mode)
{
  if (mkdir (path, mode) < 0 && errno != EEXIST)
    agent_log ("cannot create '%s': %s", path, strerror (errno));
}

int
mount_fs (const char *src, const char *target, const char *type, unsigned long flags, const char *data)
{
  mkdir_quiet (target, 0755);
  if (mount (src, target, type, flags, data) < 0)
    {
      agent_log ("cannot mount %s on %s: %s", type, target, strerror (errno));
      return -1;
    }
  return 0;
}

/* Mounts /proc, /sys, /dev and puts the console on fds 0-2: the kernel
   leaves them closed when the initramfs has no /dev/console.  */
void
boot_early (void)
{
  int fd;

  mount_fs ("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
  mount_fs ("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
  mount_fs ("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");

  fd = open ("/dev/console", O_RDWR | O_NOCTTY);
  if (fd < 0)
    fd = open ("/dev/null", O_RDWR);
  if (fd >= 0)
    {
      for (int i = 0; i < 3; i++)
        if (fd != i)
          dup2 (fd, i);
      if (fd > 2)
        close (fd);
    }
}

void
read_cmdline (struct agent *ag)
{
  cleanup_close int fd = open ("/proc/cmdline", O_RDONLY | O_CLOEXEC);
  ssize_t n;

  if (fd < 0)
    return;
  n = read (fd, ag->cmdline, sizeof ag->cmdline - 1);
  ag->cmdline[n > 0 ? n : 0] = '\0';
}

/* Value of `key=` on the kernel command line, copied into buf; NULL when
   absent.  Values are unquoted words (base64, host names).  */
const char *
cmdline_get (const struct agent *ag, const char *key, char *buf, size_t size)
{
  size_t klen = strlen (key);
  const char *p = ag->cmdline;

  while (*p)
    {
      size_t len;

      while (*p && isspace ((unsigned char) *p))
        p++;
      len = strcspn (p, " \t\n");
      if (len > klen && strncmp (p, key, klen) == 0 && p[klen] == '=')
        {
          size_t vlen = len - klen - 1;
          if (vlen >= size)
            {
              agent_log ("kernel argument %s is too long", key);
              return NULL;
            }
          memcpy (buf, p + klen + 1, vlen);
          buf[vlen] = '\0';
          return buf;
        }
      p += len;
    }
  return NULL;
}

/* Load order that satisfies the dependencies of the usual modules in one
   pass; anything else follows, and later passes catch what is left.  */
static const char *const module_order[] = {
  "virtio_ring", "virtio", "virtio_mmio", "virtio_blk", "virtio_console", "failover",
  "net_failover", "virtio_net", "libcrc32c", "overlay", "erofs", "squashfs",
};

static size_t
module_rank (const char *file)
{
  size_t n = sizeof module_order / sizeof module_order[0];

  for (size_t i = 0; i < n; i++)
    {
      size_t len = strlen (module_order[i]);
      if (strncmp (file, module_order[i], len) == 0 && strcmp (file + len, ".ko") == 0)
        return i;
    }
  return n;
}

static int
module_cmp (const void *a, const void *b)
{
  const char *x = *(const char *const *) a, *y = *(const char *const *) b;
  size_t rx = module_rank (x), ry = module_rank (y);

  if (rx != ry)
    return rx < ry ? -1 : 1;
  return strcmp (x, y);
}

/* Loads every /lib/modules/ *.ko with finit_module.  There is no
   modules.dep: retry the failures (unknown symbols) while a pass makes
   progress.  */
void
load_modules (void)
{
  enum { MAX_MODULES = 128 };
  cleanup_dir DIR *d = opendir ("/lib/modules");
  static char names[MAX_MODULES][NAME_MAX + 1];
  char *pending[MAX_MODULES];
  int errs[MAX_MODULES];
  size_t n = 0;
  struct dirent *de;
  bool progress = true;

  if (d == NULL)
    return;
  while ((de = readdir (d)) != NULL)
    {
      size_t len = strlen (de->d_name);
      if (len < 4 || strcmp (de->d_name + len - 3, ".ko") != 0)
        continue;
      if (n == MAX_MODULES)
        {
          agent_log ("too many modules, ignoring %s", de->d_name);
          continue;
        }
      memcpy (names[n], de->d_name, len + 1);
      pending[n] = names[n];
      n++;
    }
  qsort (pending, n, sizeof pending[0], module_cmp);

  while (n > 0 && progress)
    {
      size_t left = 0;

      progress = false;
      for (size_t i = 0; i < n; i++)
        {
          char path[sizeof "/lib/modules/" + NAME_MAX];
          int fd, ret;

          snprintf (path, sizeof path, "/lib/modules/%s", pending[i]);
          fd = open (path, O_RDONLY | O_CLOEXEC);
          if (fd < 0)
            {
              errs[left] = errno;
              pending[left++] = pending[i];
              continue;
            }
          ret = syscall (SYS_finit_module, fd, "", 0);
          if (ret < 0 && errno != EEXIST)
            {
              errs[left] = errno;
              pending[left++] = pending[i];
            }
          else
            progress = true;
          close (fd);
        }
      n = left;
    }
  for (size_t i = 0; i < n; i++)
    agent_log ("cannot load module %s: %s", pending[i], strerror (errs[i]));
}

static bool
wait_for_path (const char *path, int timeout_ms)
{
  int64_t end = now_ms () + timeout_ms;
  struct stat st;

  for (;;)
    {
      if (stat (path, &st) == 0)
        return true;
      if (now_ms () >= end)
        return false;
      sleep_ms (DEVICE_POLL_MS);
    }
}

/* Mounts /dev/vda on /newroot, moves /dev /proc /sys into it and makes it
   the root (switch_root; the initramfs stays in memory, it is tiny).  Powers
   off with a console line on failure: without a root there is nothing to
   serve.  */
void
switch_root (void)
{
  static const char *const moved[] = { "/dev", "/proc", "/sys" };

  if (!wait_for_path ("/dev/vda", WAIT_DEVICE_MS))
    {
      agent_log ("FATAL: root disk /dev/vda did not appear within %d s", WAIT_DEVICE_MS / 1000);
      power_off ();
    }
  mkdir_quiet ("/newroot", 0755);
  if (mount ("/dev/vda", "/newroot", "ext4", MS_NOATIME, NULL) < 0)
    {
      agent_log ("FATAL: cannot mount root disk /dev/vda (ext4): %s", strerror (errno));
      power_off ();
    }
  for (size_t i = 0; i < sizeof moved / sizeof moved[0]; i++)
    {
      char target[32];

      snprintf (target, sizeof target, "/newroot%s", moved[i]);
      mkdir_quiet (target, 0755);
      if (mount (moved[i], target, NULL, MS_MOVE, NULL) < 0)
        {
          agent_log ("FATAL: cannot move %s to the new root: %s", moved[i], strerror (errno));
          power_off ();
        }
    }
  if (chdir ("/newroot") < 0 || mount ("/newroot", "/", NULL, MS_MOVE, NULL) < 0 || chroot (".") < 0
      || chdir ("/") < 0)
    {
      agent_log ("FATAL: cannot switch to the new root: %s", strerror (errno));
      power_off ();
    }
}
