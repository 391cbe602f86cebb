/* extract.c - layers extracted onto a root, the tree a boot disk is made
   of (image/disk.c).  Entries go through the path checks of
   image/layer.h; overlayfs's whiteouts and opaque directories of the
   layers above the first hide what the layers below put there.  The tree
   keeps the layers' owners, modes (setuid too) and file capabilities, so
   it is made inside a directory only its owner (root) can enter.  */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "image/extract.h"
#include "image/layer.h"
#include "image/tar.h"

/* For layers above the first, overlayfs's markers: a 0:0 character device
   deletes the path below it, a directory with trusted.overlay.opaque=y
   hides everything below it.  Both act on @root/@path only after checking
   that no symlink leads out of @root.  The path's last component is never
   followed: an opaque directory or a whiteout named "app/" that replaces
   the symlink app hides the symlink, as overlayfs does, not what it
   points to.  */
static int
clear_below (const char *root, const char *rel, bool keep_dir, rt_error **err)
{
  cleanup_free char *parent_rel = strdup (rel);
  cleanup_free char *parent = NULL;
  cleanup_free char *real = NULL;
  cleanup_free char *path = NULL;
  char *slash;
  struct stat st;
  size_t rlen = strlen (root);

  if (parent_rel == NULL)
    return rt_error_oom (err);
  slash = strrchr (parent_rel, '/');
  if (slash)
    *slash = '\0';
  parent = rt_strdup_printf ("%s/%s", root, slash ? parent_rel : "");
  if (parent == NULL)
    return rt_error_oom (err);
  real = realpath (parent, NULL);
  if (real == NULL)
    return 0; /* nothing there to hide */
  if (strncmp (real, root, rlen) != 0 || (real[rlen] != '\0' && real[rlen] != '/'))
    return rt_error_set (err, EPERM, "internal", "a layer's whiteout '%s' points outside the image", rel);
  path = rt_strdup_printf ("%s/%s", real, slash ? slash + 1 : rel);
  if (path == NULL)
    return rt_error_oom (err);
  if (lstat (path, &st) < 0)
    return 0;
  if (keep_dir && S_ISDIR (st.st_mode))
    {
      cleanup_dir DIR *d = opendir (path);
      struct dirent *de;
      while (d && (de = readdir (d)))
        if (strcmp (de->d_name, ".") != 0 && strcmp (de->d_name, "..") != 0)
          {
            cleanup_free char *child = rt_strdup_printf ("%s/%s", path, de->d_name);
            if (child == NULL || rt_rm_rf (child, err) < 0)
              return child ? -EIO : rt_error_oom (err);
          }
      return 0;
    }
  return rt_rm_rf (path, err);
}

/* One layer being extracted.  */
struct extraction
{
  const char *root;
  const char *layer;
  bool upper; /* above the first: its whiteouts and opaque dirs count */
  const struct rt_layer_budget *budget;
  struct archive *in;
  struct archive *out;
};

/* Writes entry @e, checked as @c says, under @x->root.  */
static int
write_entry (struct extraction *x, struct archive_entry *e, const struct rt_layer_check *c, bool opaque, rt_error **err)
{
  cleanup_free char *full = NULL;
  cleanup_free char *full_link = NULL;
  int ret = 0;

  if (x->upper && opaque)
    {
      ret = clear_below (x->root, c->path, true, err);
      if (ret < 0)
        return ret;
    }
  full = rt_strdup_printf ("%s/%s", x->root, c->path);
  if (full == NULL)
    return rt_error_oom (err);
  archive_entry_copy_pathname (e, full);
  if (c->target)
    {
      full_link = rt_strdup_printf ("%s/%s", x->root, c->target);
      if (full_link == NULL)
        return rt_error_oom (err);
      archive_entry_copy_hardlink (e, full_link);
    }
  switch (rt_archive_copy_entry (x->in, x->out, e, true))
    {
    case RT_COPY_WRITE_FAILED:
      return rt_archive_fail (err, x->out, "cannot extract", full);
    case RT_COPY_READ_FAILED:
      return rt_archive_fail (err, x->in, "cannot read", x->layer);
    default:
      break;
    }
  if (archive_write_finish_entry (x->out) < ARCHIVE_WARN)
    return rt_archive_fail (err, x->out, "cannot extract", full);
  return 0;
}

/* A layer that unpacks past what is left of the image's budget: a bomb,
   or an image no disk could hold.  */
static int
too_big (struct extraction *x, rt_error **err)
{
  rt_error_set (err, EFBIG, "invalid_request", "layer '%s' unpacks past %" PRIu64 " MiB, the most an image's layers "
                "may unpack to", x->layer, x->budget->limit >> 20);
  return rt_error_hint (err, "an image's layers may unpack to at most 4 times its %d MiB disk", RT_MIN_DISK_MIB);
}

/* One entry of the layer: checked (image/layer.h), then written, dropped
   or, for a whiteout, acted on.  */
static int
extract_entry (struct extraction *x, struct archive_entry *e, rt_error **err)
{
  struct rt_layer_entry le;
  struct rt_layer_check c;
  int ret = 0;

  rt_layer_entry_of (e, &le);
  if (!rt_layer_within (x->budget, archive_filter_bytes (x->in, 0), archive_entry_size (e)))
    return too_big (x, err);
  switch (rt_layer_check_entry (NULL, false, &le, &c))
    {
    case RT_LAYER_WRITE:
      ret = write_entry (x, e, &c, le.opaque, err);
      break;
    case RT_LAYER_WHITEOUT:
      if (x->upper)
        ret = clear_below (x->root, c.path, false, err);
      break;
    case RT_LAYER_ROOT:
    case RT_LAYER_DEVICE:
      break;
    case RT_LAYER_BAD_PATH:
      ret = rt_error_set (err, EPERM, "internal", "layer '%s' holds an unsafe path '%s'", x->layer,
                          le.name ? le.name : "(none)");
      break;
    case RT_LAYER_BAD_LINK:
      ret = rt_error_set (err, EPERM, "internal", "layer '%s' holds an unsafe link '%s'", x->layer, le.hardlink);
      break;
    case RT_LAYER_NO_MEMORY:
    case RT_LAYER_VIA_LINK: /* only an import's check says so */
    default:
      ret = rt_error_oom (err);
      break;
    }
  rt_layer_check_clear (&c);
  return ret;
}

int
rt_image_extract_layer (const char *root, const char *layer, bool upper, struct rt_layer_budget *budget, rt_error **err)
{
  struct extraction x = { .root = root, .layer = layer, .upper = upper, .budget = budget };
  struct archive_entry *e;
  int ret = 0, r;

  x.in = archive_read_new ();
  x.out = archive_write_disk_new ();
  if (x.in == NULL || x.out == NULL)
    ret = rt_error_oom (err);
  if (ret == 0)
    {
      archive_read_support_format_tar (x.in);
      archive_read_support_filter_all (x.in);
      archive_write_disk_set_options (x.out, ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME
                                                 | ARCHIVE_EXTRACT_XATTR | ARCHIVE_EXTRACT_SECURE_NODOTDOT
                                                 | ARCHIVE_EXTRACT_SECURE_SYMLINKS);
      if (archive_read_open_filename (x.in, layer, 1 << 16) != ARCHIVE_OK)
        ret = rt_archive_fail (err, x.in, "cannot open", layer);
    }
  while (ret == 0 && (r = archive_read_next_header (x.in, &e)) != ARCHIVE_EOF)
    {
      if (r < ARCHIVE_WARN)
        ret = rt_archive_fail (err, x.in, "cannot read", layer);
      else
        ret = extract_entry (&x, e, err);
    }
  /* The end: the headers and padding after the last entry count too.  */
  if (ret == 0 && !rt_layer_within (budget, archive_filter_bytes (x.in, 0), 0))
    ret = too_big (&x, err);
  if (ret == 0)
    budget->used += archive_filter_bytes (x.in, 0);
  /* Directory modes and times are applied here, last.  */
  if (ret == 0 && archive_write_close (x.out) != ARCHIVE_OK)
    ret = rt_archive_fail (err, x.out, "cannot finish extracting", layer);
  archive_read_free (x.in);
  archive_write_free (x.out);
  return ret;
}

int
rt_image_work_dir (const char *dir, char **work, char **root, rt_error **err)
{
  cleanup_free char *w = rt_strdup_printf ("%s/.tmp-XXXXXX", dir);
  cleanup_free char *r = NULL;
  cleanup_free char *real = NULL;

  if (w == NULL)
    return rt_error_oom (err);
  if (mkdtemp (w) == NULL)
    return rt_error_set (err, errno, "internal", "cannot create a directory in '%s': %s", dir, strerror (errno));
  r = rt_strdup_printf ("%s/root", w);
  if (r == NULL)
    {
      rmdir (w);
      return rt_error_oom (err);
    }
  /* mkdtemp made @w 0700; mkfs.ext4 -d copies the root's mode to the
     disk's root, which the guest needs as 0755.  */
  if (mkdir (r, 0700) < 0 || chmod (r, 0755) < 0 || (real = realpath (r, NULL)) == NULL)
    {
      int e = errno;
      cleanup_error rt_error *ignored = NULL;
      rt_rm_rf (w, &ignored);
      return rt_error_set (err, e, "internal", "cannot prepare '%s': %s", r, strerror (e));
    }
  *work = steal_pointer (&w);
  *root = steal_pointer (&real);
  return 0;
}
