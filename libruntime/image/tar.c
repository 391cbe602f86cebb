/* tar.c - layer files: writing them (a tree, a build step's changes),
   storing them under their digest, and the libarchive glue the other
   image files share.  A layer is a pax tar through zstd, or gzip where
   libarchive was built without zstd.  */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "image/store.h"
#include "image/tar.h"

int
rt_archive_copy_entry (struct archive *in, struct archive *out, struct archive_entry *e, bool to_disk)
{
  const void *buf;
  size_t size;
  la_int64_t off;
  int r;

  if (archive_write_header (out, e) < ARCHIVE_WARN)
    return RT_COPY_WRITE_FAILED;
  if (archive_entry_size (e) <= 0)
    return RT_COPY_OK;
  while ((r = archive_read_data_block (in, &buf, &size, &off)) == ARCHIVE_OK)
    if (to_disk ? archive_write_data_block (out, buf, size, off) < ARCHIVE_WARN
                : archive_write_data (out, buf, size) < 0)
      return RT_COPY_WRITE_FAILED;
  return r == ARCHIVE_EOF ? RT_COPY_OK : RT_COPY_READ_FAILED;
}

char *
rt_image_find_tar (const char *prefix, const char *name)
{
  static const char *const exts[] = { ".tar.zst", ".tar.gz", NULL };
  struct stat st;

  for (const char *const *e = exts; *e; e++)
    {
      char *p = rt_strdup_printf ("%s%s%s", prefix, name, *e);
      if (p == NULL || (stat (p, &st) == 0 && S_ISREG (st.st_mode)))
        return p;
      free (p);
    }
  return NULL;
}

/* Tarring a tree in sorted order (the same tree gives the same tar),
   numeric owners only (the host's names mean nothing in the guest), one
   file system only.  */
struct tar_walk
{
  struct archive *disk;
  struct archive *out;
  struct archive_entry_linkresolver *links;
  dev_t dev;
  size_t root_len;
  char path[PATH_MAX];
  char buf[1 << 16];
};

static int
by_name (const struct dirent **a, const struct dirent **b)
{
  return strcmp ((*a)->d_name, (*b)->d_name);
}

static int
not_dots (const struct dirent *d)
{
  return strcmp (d->d_name, ".") != 0 && strcmp (d->d_name, "..") != 0;
}

static int
tar_add (struct tar_walk *w, const struct stat *st, rt_error **err)
{
  struct archive_entry *e = archive_entry_new ();
  struct archive_entry *spare = NULL;
  cleanup_close int fd = -1;
  int ret = 0;

  if (e == NULL)
    return rt_error_oom (err);
  if (S_ISREG (st->st_mode))
    {
      fd = open (w->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0)
        {
          archive_entry_free (e);
          return rt_error_set (err, errno, "internal", "cannot open '%s': %s", w->path, strerror (errno));
        }
    }
  archive_entry_copy_sourcepath (e, w->path);
  archive_entry_copy_pathname (e, w->path + w->root_len + 1);
  if (archive_read_disk_entry_from_file (w->disk, e, fd, st) < ARCHIVE_WARN)
    ret = rt_archive_fail (err, w->disk, "cannot read", w->path);
  /* Times other than mtime would only make the tar differ run to run.  */
  archive_entry_unset_atime (e);
  archive_entry_unset_ctime (e);
  archive_entry_unset_birthtime (e);
  if (ret == 0)
    archive_entry_linkify (w->links, &e, &spare);
  if (ret == 0 && archive_write_header (w->out, e) < ARCHIVE_WARN)
    ret = rt_archive_fail (err, w->out, "cannot write", w->path);
  /* After linkify a later hard link has size 0: only its first name
     carries the data.  */
  if (ret == 0 && fd >= 0 && archive_entry_size (e) > 0)
    {
      int64_t left = archive_entry_size (e);
      while (ret == 0 && left > 0)
        {
          ssize_t n = read (fd, w->buf, left < (int64_t) sizeof (w->buf) ? (size_t) left : sizeof (w->buf));
          if (n < 0 && errno == EINTR)
            continue;
          if (n <= 0)
            ret = rt_error_set (err, n < 0 ? errno : EIO, "internal", "cannot read '%s' (did it change?)", w->path);
          else if (archive_write_data (w->out, w->buf, n) != n)
            ret = rt_archive_fail (err, w->out, "cannot write", w->path);
          else
            left -= n;
        }
    }
  archive_entry_free (e);
  archive_entry_free (spare);
  return ret;
}

static int
tar_dir (struct tar_walk *w, rt_error **err)
{
  struct dirent **names = NULL;
  size_t len = strlen (w->path);
  int n, ret = 0;

  n = scandir (w->path, &names, not_dots, by_name);
  if (n < 0)
    return rt_error_set (err, errno, "internal", "cannot list '%s': %s", w->path, strerror (errno));
  for (int i = 0; i < n; i++)
    {
      struct stat st;
      if (ret == 0)
        {
          if (len + 1 + strlen (names[i]->d_name) >= sizeof (w->path))
            ret = rt_error_set (err, ENAMETOOLONG, "internal", "path too long under '%s'", w->path);
          else
            {
              w->path[len] = '/';
              strcpy (w->path + len + 1, names[i]->d_name);
              if (lstat (w->path, &st) < 0)
                ret = rt_error_set (err, errno, "internal", "cannot stat '%s': %s", w->path, strerror (errno));
              if (ret == 0)
                ret = tar_add (w, &st, err);
              /* A mount point's contents are not the tree's.  */
              if (ret == 0 && S_ISDIR (st.st_mode) && st.st_dev == w->dev)
                ret = tar_dir (w, err);
              w->path[len] = '\0';
            }
        }
      free (names[i]);
    }
  free (names);
  return ret;
}

/* A layer writer: pax tar through zstd, or gzip where libarchive was built
   without zstd.  *ext names the result.  */
static int
layer_writer (int fd, const char *where, struct archive **out, const char **ext, rt_error **err)
{
  struct archive *a = archive_write_new ();

  if (a == NULL)
    return rt_error_oom (err);
  if (archive_write_add_filter_zstd (a) == ARCHIVE_OK)
    *ext = ".tar.zst";
  else
    {
      /* The failed attempt may leave state behind; start clean.  */
      archive_write_free (a);
      a = archive_write_new ();
      if (a == NULL)
        return rt_error_oom (err);
      if (archive_write_add_filter_gzip (a) != ARCHIVE_OK)
        {
          rt_archive_fail (err, a, "cannot compress", where);
          archive_write_free (a);
          return -EIO;
        }
      *ext = ".tar.gz";
    }
  if (archive_write_set_format_pax_restricted (a) != ARCHIVE_OK || archive_write_open_fd (a, fd) != ARCHIVE_OK)
    {
      int ret = rt_archive_fail (err, a, "cannot write", where);
      archive_write_free (a);
      return ret;
    }
  *out = a;
  return 0;
}

int
rt_image_tar_tree (const char *root, const char *dest_prefix, rt_error **err)
{
  cleanup_free char *tmp = rt_strdup_printf ("%s.tmp.XXXXXX", dest_prefix);
  cleanup_free char *dest = NULL;
  cleanup_free struct tar_walk *w = calloc (1, sizeof (*w));
  cleanup_close int fd = -1;
  const char *ext = NULL;
  struct stat st;
  int ret = 0;

  if (tmp == NULL || w == NULL)
    return rt_error_oom (err);
  if (lstat (root, &st) < 0 || strlen (root) >= sizeof (w->path))
    return rt_error_set (err, errno ? errno : ENAMETOOLONG, "internal", "cannot stat '%s'", root);
  fd = mkostemp (tmp, O_CLOEXEC);
  if (fd < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", tmp, strerror (errno));
  ret = layer_writer (fd, tmp, &w->out, &ext, err);
  if (ret < 0)
    {
      unlink (tmp);
      return ret;
    }
  w->disk = archive_read_disk_new ();
  w->links = archive_entry_linkresolver_new ();
  if (w->disk == NULL || w->links == NULL)
    ret = rt_error_oom (err);
  else
    {
      /* xattrs stay (file capabilities); ACLs, chattr flags and holes are
         not worth their trouble here.  */
      archive_read_disk_set_behavior (w->disk, ARCHIVE_READDISK_NO_ACL | ARCHIVE_READDISK_NO_FFLAGS
                                                   | ARCHIVE_READDISK_NO_SPARSE);
      archive_entry_linkresolver_set_strategy (w->links, archive_format (w->out));
      w->dev = st.st_dev;
      w->root_len = strlen (root);
      strcpy (w->path, root);
      ret = tar_dir (w, err);
    }
  if (ret == 0 && archive_write_close (w->out) != ARCHIVE_OK)
    ret = rt_archive_fail (err, w->out, "cannot write", tmp);
  archive_write_free (w->out);
  archive_read_free (w->disk);
  archive_entry_linkresolver_free (w->links);
  if (ret == 0 && fsync (fd) < 0)
    ret = rt_error_set (err, errno, "internal", "cannot write '%s': %s", tmp, strerror (errno));
  if (ret == 0)
    {
      dest = rt_strdup_printf ("%s%s", dest_prefix, ext);
      if (dest == NULL)
        ret = rt_error_oom (err);
      else if (rename (tmp, dest) < 0)
        ret = rt_error_set (err, errno, "internal", "cannot rename '%s': %s", tmp, strerror (errno));
    }
  if (ret < 0)
    unlink (tmp);
  return ret;
}

static int
copy_file (const char *src, const char *dst, rt_error **err)
{
  cleanup_close int in = open (src, O_RDONLY | O_CLOEXEC);
  cleanup_close int out = -1;
  cleanup_free char *buf = malloc (1 << 20);
  ssize_t n;

  if (buf == NULL)
    return rt_error_oom (err);
  if (in < 0)
    return rt_error_set (err, errno, "internal", "cannot open '%s': %s", src, strerror (errno));
  out = open (dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (out < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", dst, strerror (errno));
  while ((n = read (in, buf, 1 << 20)) != 0)
    {
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 || rt_write_all (out, buf, n) < 0)
        return rt_error_set (err, errno, "internal", "cannot copy '%s' to '%s': %s", src, dst, strerror (errno));
    }
  if (fsync (out) < 0)
    return rt_error_set (err, errno, "internal", "cannot write '%s': %s", dst, strerror (errno));
  return 0;
}

int
rt_image_store_layer (const char *imgdir, const char *src, char digest[65], rt_error **err)
{
  const char *ext = strstr (src, ".tar.");
  cleanup_free char *dest = NULL;
  cleanup_free char *tmp = NULL;
  struct stat st;
  int ret;

  ret = rt_sha256_file (src, digest, err);
  if (ret < 0)
    return ret;
  dest = rt_strdup_printf ("%s/layers/%s%s", imgdir, digest, ext ? ext : ".tar");
  tmp = rt_strdup_printf ("%s.tmp.%d", dest ? dest : "", (int) getpid ());
  /* A hard link shares @src's inode, and so its mode (0600, image/base.c);
     a copy is made 0600, under a name no one else made (O_EXCL).  */
  if (dest == NULL || tmp == NULL)
    return rt_error_oom (err);
  if (stat (dest, &st) == 0)
    return 0;
  unlink (tmp);
  if (link (src, tmp) < 0)
    {
      ret = copy_file (src, tmp, err);
      if (ret < 0)
        {
          unlink (tmp);
          return ret;
        }
    }
  if (rename (tmp, dest) < 0)
    {
      ret = rt_error_set (err, errno, "internal", "cannot rename '%s': %s", tmp, strerror (errno));
      unlink (tmp);
      return ret;
    }
  return 0;
}

/* overlayfs's mark of a directory that hides everything below it.  */
static bool
is_opaque (struct archive_entry *e)
{
  const char *name;
  const void *value;
  size_t size;

  if (archive_entry_filetype (e) != AE_IFDIR)
    return false;
  archive_entry_xattr_reset (e);
  while (archive_entry_xattr_next (e, &name, &value, &size) == ARCHIVE_OK)
    if (strcmp (name, "trusted.overlay.opaque") == 0 && size == 1 && *(const char *) value == 'y')
      return true;
  return false;
}

void
rt_layer_entry_of (struct archive_entry *ae, struct rt_layer_entry *e)
{
  e->name = archive_entry_pathname (ae);
  e->type = archive_entry_filetype (ae);
  e->rdev = archive_entry_rdev (ae);
  e->opaque = is_opaque (ae);
  e->hardlink = archive_entry_hardlink (ae);
}

char *
rt_image_layer_path (rt_context *ctx, const char *digest)
{
  cleanup_free char *prefix = rt_strdup_printf ("%s/images/layers/", ctx->data_dir);

  if (prefix == NULL || !rt_image_is_sha256 (digest))
    return NULL;
  return rt_image_find_tar (prefix, digest);
}

int
rt_image_layer_from_tar (rt_context *ctx, const char *raw_tar, char digest[65], rt_error **err)
{
  cleanup_free char *imgdir = rt_strdup_printf ("%s/images", ctx->data_dir);
  cleanup_free char *ldir = NULL, *tmp = NULL, *dest = NULL;
  struct archive *in = archive_read_new (), *out = NULL;
  struct archive_entry *e;
  const char *ext = ".tar.zst";
  bool made;
  int ret = 0, r, fd = -1;

  if (imgdir == NULL || in == NULL || (ldir = rt_strdup_printf ("%s/layers", imgdir)) == NULL
      || (tmp = rt_strdup_printf ("%s/layer.tmp.XXXXXX", ldir)) == NULL)
    ret = rt_error_oom (err);
  if (ret == 0)
    ret = rt_image_private_dir (ldir, err);
  if (ret == 0 && (fd = mkostemp (tmp, O_CLOEXEC)) < 0)
    ret = rt_error_set (err, errno, "internal", "cannot create '%s': %s", tmp, strerror (errno));
  made = fd >= 0;
  if (ret == 0)
    ret = layer_writer (fd, tmp, &out, &ext, err);
  if (ret == 0)
    {
      archive_read_support_format_tar (in);
      if (archive_read_open_filename (in, raw_tar, 1 << 16) != ARCHIVE_OK)
        ret = rt_archive_fail (err, in, "cannot open", raw_tar);
    }
  while (ret == 0 && (r = archive_read_next_header (in, &e)) != ARCHIVE_EOF)
    {
      const char *name = r < ARCHIVE_WARN ? NULL : archive_entry_pathname (e);
      if (name == NULL || !rt_layer_path_safe (name)
          || (archive_entry_hardlink (e) && !rt_layer_path_safe (archive_entry_hardlink (e))))
        {
          ret = rt_error_set (err, EPERM, "internal", "the build step's changes hold an unsafe path '%s'",
                              name ? name : "(unreadable)");
          break;
        }
      /* Whiteouts (0:0) stay; other device nodes never enter a layer.  */
      if ((archive_entry_filetype (e) == AE_IFCHR && archive_entry_rdev (e) != 0)
          || archive_entry_filetype (e) == AE_IFBLK || archive_entry_filetype (e) == AE_IFSOCK)
        continue;
      switch (rt_archive_copy_entry (in, out, e, false))
        {
        case RT_COPY_WRITE_FAILED:
          ret = rt_archive_fail (err, out, "cannot write", tmp);
          break;
        case RT_COPY_READ_FAILED:
          ret = rt_archive_fail (err, in, "cannot read", raw_tar);
          break;
        }
    }
  if (out && archive_write_close (out) != ARCHIVE_OK && ret == 0)
    ret = rt_archive_fail (err, out, "cannot write", tmp);
  if (out)
    archive_write_free (out);
  archive_read_free (in);
  if (fd >= 0)
    close (fd);
  if (ret == 0)
    ret = rt_sha256_file (tmp, digest, err);
  if (ret == 0 && (dest = rt_strdup_printf ("%s/%s%s", ldir, digest, ext)) == NULL)
    ret = rt_error_oom (err);
  if (ret == 0 && rename (tmp, dest) < 0)
    ret = rt_error_set (err, errno, "internal", "cannot store '%s': %s", dest, strerror (errno));
  if (ret < 0 && made)
    unlink (tmp);
  return ret;
}
