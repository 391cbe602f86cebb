/* extract.c - layers extracted onto a root, the tree a boot disk is made
   of (image/disk.c).  Entries go through the path checks of
   image/layer.h; overlayfs's whiteouts and opaque directories of the
   layers above the first hide what the layers below put there.  */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
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
   that no symlink leads out of @root.  @dir_name: the entry's name ended
   in "/" (GNU tar's directories do); such a path is resolved whole, so a
   symlink at it is followed and what it points to is cleared.  Extraction
   has always done so; overlayfs would hide only the symlink (an opaque
   directory that replaces a symlink).  */
static int
clear_below (const char *root, const char *path_clean, bool dir_name, bool keep_dir, rt_error **err)
{
  cleanup_free char *rel = rt_strdup_printf ("%s%s", path_clean, dir_name ? "/" : "");
  cleanup_free char *parent_rel = rel ? strdup (rel) : NULL;
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
      ret = clear_below (x->root, c->path, c->dir_name, true, err);
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

/* One entry of the layer: checked (image/layer.h), then written, dropped
   or, for a whiteout, acted on.  */
static int
extract_entry (struct extraction *x, struct archive_entry *e, rt_error **err)
{
  struct rt_layer_entry le;
  struct rt_layer_check c;
  int ret = 0;

  rt_layer_entry_of (e, &le);
  switch (rt_layer_check_entry (NULL, false, &le, &c))
    {
    case RT_LAYER_WRITE:
      ret = write_entry (x, e, &c, le.opaque, err);
      break;
    case RT_LAYER_WHITEOUT:
      if (x->upper)
        ret = clear_below (x->root, c.path, c.dir_name, false, err);
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
rt_image_extract_layer (const char *root, const char *layer, bool upper, rt_error **err)
{
  struct extraction x = { .root = root, .layer = layer, .upper = upper };
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
  /* Directory modes and times are applied here, last.  */
  if (ret == 0 && archive_write_close (x.out) != ARCHIVE_OK)
    ret = rt_archive_fail (err, x.out, "cannot finish extracting", layer);
  archive_read_free (x.in);
  archive_write_free (x.out);
  return ret;
}
