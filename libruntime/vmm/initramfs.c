/* initramfs.c - the cpio the guest kernel unpacks first (initramfs.h).  */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <string.h>

#include "core/archive.h"
#include "vmm/initramfs.h"

/* erofs needs libcrc32c.  */
const char *const rt_initramfs_modules[RT_INITRAMFS_N_MODULES + 1] = {
  "virtio_ring",  "virtio",     "virtio_mmio", "virtio_blk", "virtio_console", "failover", "net_failover",
  "virtio_net",   "libcrc32c",  "overlay",     "erofs",      "squashfs",       NULL,
};

static int
cpio_header (struct archive *a, struct archive_entry *e, const char *name, mode_t type, mode_t perm, int64_t size,
             int64_t ino, const char *where, rt_error **err)
{
  archive_entry_clear (e);
  archive_entry_set_pathname (e, name);
  archive_entry_set_filetype (e, type);
  archive_entry_set_perm (e, perm);
  archive_entry_set_uid (e, 0);
  archive_entry_set_gid (e, 0);
  archive_entry_set_ino64 (e, ino);
  archive_entry_set_nlink (e, type == AE_IFDIR ? 2 : 1);
  archive_entry_set_size (e, size);
  if (type == AE_IFCHR)
    {
      /* /dev/console, so the kernel can give /init a console before
         devtmpfs is mounted.  */
      archive_entry_set_rdevmajor (e, 5);
      archive_entry_set_rdevminor (e, 1);
    }
  if (archive_write_header (a, e) != ARCHIVE_OK)
    return rt_archive_fail (err, a, "cannot write", where);
  return 0;
}

static int
cpio_file (struct archive *a, struct archive_entry *e, const char *name, mode_t perm, const char *src, int64_t ino,
           const char *where, rt_error **err)
{
  cleanup_close int fd = open (src, O_RDONLY | O_CLOEXEC);
  char buf[65536];
  struct stat st;
  int64_t left;
  int ret;

  if (fd < 0 || fstat (fd, &st) < 0)
    return rt_error_set (err, errno, "internal", "cannot open '%s': %s", src, strerror (errno));
  ret = cpio_header (a, e, name, AE_IFREG, perm, st.st_size, ino, where, err);
  if (ret < 0)
    return ret;
  for (left = st.st_size; left > 0;)
    {
      ssize_t n = read (fd, buf, left < (int64_t) sizeof (buf) ? (size_t) left : sizeof (buf));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return rt_error_set (err, n < 0 ? errno : EIO, "internal", "cannot read '%s'", src);
      if (archive_write_data (a, buf, n) != n)
        return rt_archive_fail (err, a, "cannot write", where);
      left -= n;
    }
  return 0;
}

/* /init = the agent, /lib/modules/<name>.ko, the directories the agent mounts
   on.  Uncompressed: the kernel unpacks it fastest that way.  */
int
rt_initramfs_build (rt_context *ctx, const char *vdir, const char *akey, rt_error **err)
{
  static const char *const dirs[] = { "dev", "proc", "sys", "newroot", "lib", "lib/modules", NULL };
  cleanup_free char *path = rt_strdup_printf ("%s/initramfs-%s.cpio", vdir, akey);
  cleanup_free char *tmp = rt_strdup_printf ("%s/.initramfs-%s.cpio.tmp.%d", vdir, akey, (int) getpid ());
  cleanup_free char *keep = rt_strdup_printf ("initramfs-%s.cpio", akey);
  cleanup_close int fd = -1;
  struct archive *a = NULL;
  struct archive_entry *e = NULL;
  int64_t ino = 1;
  int ret = 0;

  if (path == NULL || tmp == NULL || keep == NULL)
    return rt_error_oom (err);
  rt_progress (ctx, "Building the initramfs for %s…", ctx->agent);
  fd = open (tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", tmp, strerror (errno));
  a = archive_write_new ();
  e = archive_entry_new ();
  if (a == NULL || e == NULL)
    ret = rt_error_oom (err);
  if (ret == 0
      && (archive_write_set_format_cpio_newc (a) != ARCHIVE_OK || archive_write_add_filter_none (a) != ARCHIVE_OK
          || archive_write_set_bytes_in_last_block (a, 1) != ARCHIVE_OK || archive_write_open_fd (a, fd) != ARCHIVE_OK))
    ret = rt_archive_fail (err, a, "cannot write", tmp);
  for (const char *const *d = dirs; ret == 0 && *d; d++)
    ret = cpio_header (a, e, *d, AE_IFDIR, 0755, 0, ino++, tmp, err);
  if (ret == 0)
    ret = cpio_header (a, e, "dev/console", AE_IFCHR, 0600, 0, ino++, tmp, err);
  if (ret == 0)
    ret = cpio_file (a, e, "init", 0755, ctx->agent, ino++, tmp, err);
  for (size_t i = 0; ret == 0 && i < RT_INITRAMFS_N_MODULES; i++)
    {
      cleanup_free char *src = rt_strdup_printf ("%s/modules/%s.ko", vdir, rt_initramfs_modules[i]);
      cleanup_free char *name = rt_strdup_printf ("lib/modules/%s.ko", rt_initramfs_modules[i]);
      if (src == NULL || name == NULL)
        ret = rt_error_oom (err);
      else
        ret = cpio_file (a, e, name, 0644, src, ino++, tmp, err);
    }
  if (ret == 0 && archive_write_close (a) != ARCHIVE_OK)
    ret = rt_archive_fail (err, a, "cannot write", tmp);
  archive_write_free (a);
  archive_entry_free (e);
  if (ret == 0 && fsync (fd) < 0)
    ret = rt_error_set (err, errno, "internal", "cannot write '%s': %s", tmp, strerror (errno));
  if (ret == 0 && rename (tmp, path) < 0)
    ret = rt_error_set (err, errno, "internal", "cannot rename '%s': %s", tmp, strerror (errno));
  if (ret < 0)
    {
      unlink (tmp);
      return ret;
    }

  /* Initramfs files of older agent builds are dead weight, and temp files
     here are a dead process's (we hold the lock).  */
  {
    cleanup_dir DIR *d = opendir (vdir);
    struct dirent *de;
    while (d && (de = readdir (d)))
      if ((fnmatch ("initramfs-*.cpio", de->d_name, 0) == 0 && strcmp (de->d_name, keep) != 0)
          || fnmatch (".initramfs-*.tmp.*", de->d_name, 0) == 0)
        unlinkat (dirfd (d), de->d_name, 0);
  }
  return 0;
}
