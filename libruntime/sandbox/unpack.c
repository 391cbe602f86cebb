/* unpack.c - extracting the tar a guest sends for `cp` out, trusting none
   of it (unpack.h says what lands).
 *
 * Names are checked with the layers' path scheme (image/layer.h): cleaned,
 * relative, without "..".  libarchive's ARCHIVE_EXTRACT_SECURE_* flags stay
 * on as a second line: no write through a symlink, no absolute name, no
 * "..".  The caller's directory is private (0700, copy.c), so nobody can
 * race the opens libarchive makes in it.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "common/cleanup.h"
#include "common/strutil.h"
#include "image/layer.h"
#include "sandbox/unpack.h"

void
rt_unpack_escape (char *out, size_t size, const char *s, size_t len)
{
  cleanup_free char *text = strndup (s, len);
  cleanup_free char *safe = text ? rt_text_escape (text, false) : NULL;

  if (size > 0)
    snprintf (out, size, "%s", safe ? safe : "");
}

/* What to do with one entry.  */
enum step
{
  STEP_WRITE,
  STEP_SKIP,
  STEP_STOP,
};

struct unpack
{
  const struct rt_unpack_limits *lim;
  rt_copy_result *res;
  mode_t umask;
  uint64_t charged;
  uint64_t free_bytes; /* the destination's, measured once at the start */
  uint64_t free_files;
  uint64_t entries;
  bool seen_item;
  enum rt_unpack_status status; /* STEP_STOP's */
  char *why;
  size_t why_size;
};

static enum rt_unpack_status
halt (struct unpack *u, enum rt_unpack_status status, const char *why)
{
  u->status = status;
  if (why)
    rt_unpack_escape (u->why, u->why_size, why, strlen (why));
  return status;
}

static enum step
stop (struct unpack *u, enum rt_unpack_status status, const char *why)
{
  halt (u, status, why);
  return STEP_STOP;
}

static enum step
skip (struct unpack *u, unsigned *kind)
{
  (*kind)++;
  u->res->skipped++;
  return STEP_SKIP;
}

/* Whether a symlink at @path (cleaned, the item's name first) pointing at
   @target stays inside the item.  Only leading ".." components are taken:
   those climb real directories (libarchive writes nothing through a
   symlink), whereas "a/.." climbs from wherever the symlink a points.
   Whatever follows them descends, through symlinks held to the same rule.  */
static bool
link_stays_inside (const char *path, const char *target)
{
  int depth = -1; /* directories between the item and the link */
  bool named = false;

  if (*target == '\0' || *target == '/')
    return false;
  for (const char *p = path; *p; p++)
    depth += *p == '/';
  while (*target)
    {
      size_t n = strcspn (target, "/");
      if (n == 2 && target[0] == '.' && target[1] == '.')
        {
          if (named || --depth < 0)
            return false;
        }
      else if (n > 0 && !(n == 1 && target[0] == '.'))
        named = true;
      target += n;
      target += strspn (target, "/");
    }
  return true;
}

/* The item itself, or a name below it.  */
static bool
in_item (const char *path, const char *name, bool *is_item)
{
  size_t n = strlen (name);

  *is_item = strcmp (path, name) == 0;
  return *is_item || (strncmp (path, name, n) == 0 && path[n] == '/');
}

/* Whether @target (cleaned) is a regular file written before, reached
   through directories only.  */
static bool
hardlink_ok (const struct unpack *u, const char *target)
{
  cleanup_free char *copy = strdup (target);
  struct stat st;
  bool is_item;

  if (copy == NULL || !rt_layer_path_safe (copy) || !in_item (copy, u->lim->name, &is_item))
    return false;
  for (char *slash = strchr (copy, '/'); slash; slash = strchr (slash + 1, '/'))
    {
      *slash = '\0';
      if (fstatat (AT_FDCWD, copy, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR (st.st_mode))
        return false;
      *slash = '/';
    }
  return fstatat (AT_FDCWD, copy, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG (st.st_mode);
}

/* Charges @size bytes (and the entry) against the cap and against the
   free space and inodes measured at the start: all the entries together
   must fit, not each one alone.  */
static enum step
charge (struct unpack *u, int64_t size)
{
  uint64_t want = (size > 0 ? (uint64_t) size : 0) + RT_UNPACK_ENTRY_COST;

  if (want > u->lim->max_size - u->charged || u->charged > u->lim->max_size)
    return stop (u, RT_UNPACK_TOO_BIG, NULL);
  u->charged += want;
  if (u->charged > u->free_bytes || ++u->entries > u->free_files)
    return stop (u, RT_UNPACK_NO_SPACE, NULL);
  return STEP_WRITE;
}

/* Only the mode, masked: no owner (never restored), ACLs, extended
   attributes or file flags from the guest.  */
static void
mask (struct archive_entry *e, mode_t perm)
{
  archive_entry_set_perm (e, perm);
  archive_entry_acl_clear (e);
  archive_entry_xattr_clear (e);
  archive_entry_set_fflags (e, 0, 0);
}

/* The verdict on @e, whose name it cleans and whose mode it masks.  */
static enum step
filter (struct unpack *u, struct archive_entry *e)
{
  const char *name = archive_entry_pathname (e), *hard = archive_entry_hardlink (e);
  cleanup_free char *path = name ? rt_layer_path_clean (name) : NULL;
  mode_t type = archive_entry_filetype (e), perm = archive_entry_perm (e) & 0777 & ~u->umask;
  rt_copy_result *r = u->res;
  bool is_item;

  /* Past the length or depth a path-based removal handles: such a tree
     could not be cleaned up (rt_layer_path_fits).  */
  if (path == NULL || !rt_layer_path_safe (path) || !rt_layer_path_fits (path)
      || !in_item (path, u->lim->name, &is_item))
    return skip (u, &r->others);
  archive_entry_set_pathname (e, path);
  if (hard)
    {
      cleanup_free char *target = rt_layer_path_clean (hard);
      /* One with data (pax allows it) would rewrite its target and give it
         the entry's mode: libarchive opens the target O_TRUNC.  */
      if (is_item || target == NULL || archive_entry_size (e) > 0 || !hardlink_ok (u, target))
        return skip (u, &r->hardlinks);
      archive_entry_set_hardlink (e, target);
      mask (e, perm);
      return charge (u, 0);
    }
  switch (type)
    {
    case AE_IFREG:
      break;
    case AE_IFDIR:
      perm |= S_IRWXU;
      break;
    case AE_IFLNK:
      if (is_item && !u->lim->keep_links)
        return stop (u, RT_UNPACK_TOP_LINK, archive_entry_symlink (e) ? archive_entry_symlink (e) : "");
      if (!is_item && !link_stays_inside (path, archive_entry_symlink (e) ? archive_entry_symlink (e) : ""))
        return skip (u, &r->links);
      break;
    case AE_IFCHR:
    case AE_IFBLK:
      return skip (u, &r->devices);
    case AE_IFIFO:
      return skip (u, &r->fifos);
    default:
      return skip (u, &r->others);
    }
  u->seen_item |= is_item;
  mask (e, perm);
  return charge (u, type == AE_IFREG && archive_entry_size_is_set (e) ? archive_entry_size (e) : 0);
}

/* A write failed: out of room, or another reason libarchive gives.  */
static enum rt_unpack_status
write_failed (struct unpack *u, struct archive *out)
{
  int e = archive_errno (out);

  if (e == ENOSPC || e == EDQUOT)
    return halt (u, RT_UNPACK_NO_SPACE, NULL);
  return halt (u, RT_UNPACK_FAILED, archive_error_string (out) ? archive_error_string (out) : "cannot write");
}

/* The data of the entry just written, counted against the cap as it comes
   (a header's size is checked before, but the count is what matters).  */
static enum rt_unpack_status
copy_data (struct unpack *u, struct archive *in, struct archive *out, uint64_t declared)
{
  uint64_t got = 0;
  const void *buf;
  size_t size;
  la_int64_t off;
  int r;

  while ((r = archive_read_data_block (in, &buf, &size, &off)) == ARCHIVE_OK)
    {
      got += size;
      if (got > declared && (got - declared > u->lim->max_size - u->charged))
        return halt (u, RT_UNPACK_TOO_BIG, NULL);
      if (archive_write_data_block (out, buf, size, off) < ARCHIVE_WARN)
        return write_failed (u, out);
      u->res->bytes += size;
    }
  if (got > declared)
    u->charged += got - declared;
  if (r != ARCHIVE_EOF)
    return halt (u, RT_UNPACK_BROKEN,
                 archive_error_string (in) ? archive_error_string (in) : "the archive ended early");
  if (archive_write_finish_entry (out) < ARCHIVE_WARN)
    return write_failed (u, out);
  return RT_UNPACK_OK;
}

static enum rt_unpack_status
unpack_all (struct unpack *u, struct archive *in, struct archive *out)
{
  struct archive_entry *entry;
  int r;

  while ((r = archive_read_next_header (in, &entry)) == ARCHIVE_OK)
    {
      enum step s = filter (u, entry);
      uint64_t declared;

      if (s == STEP_STOP)
        return u->status;
      if (s == STEP_SKIP)
        continue;
      declared = archive_entry_size_is_set (entry) && archive_entry_size (entry) > 0 ? archive_entry_size (entry) : 0;
      if (archive_write_header (out, entry) < ARCHIVE_WARN)
        return write_failed (u, out);
      if (copy_data (u, in, out, declared) != RT_UNPACK_OK)
        return u->status;
    }
  if (r != ARCHIVE_EOF)
    return halt (u, RT_UNPACK_BROKEN,
                 archive_error_string (in) ? archive_error_string (in) : "the archive ended early");
  if (!u->seen_item)
    return halt (u, RT_UNPACK_MISSING, NULL);
  /* Directories get their modes and times here.  */
  if (archive_write_close (out) != ARCHIVE_OK)
    return write_failed (u, out);
  return RT_UNPACK_OK;
}

enum rt_unpack_status
rt_unpack (int fd, const struct rt_unpack_limits *lim, rt_copy_result *res, char *why, size_t why_size)
{
  struct archive *in = archive_read_new (), *out = archive_write_disk_new ();
  struct unpack u = { .lim = lim, .res = res, .why = why, .why_size = why_size };
  enum rt_unpack_status status;
  struct statvfs vfs;

  memset (res, 0, sizeof (*res));
  if (why_size > 0)
    why[0] = '\0';
  /* Read by setting it back at once: this runs in copy.c's extractor
     process, whose only thread it is.  */
  u.umask = umask (0);
  umask (u.umask);
  u.free_bytes = u.free_files = UINT64_MAX;
  if (statvfs (".", &vfs) == 0)
    {
      u.free_bytes = (uint64_t) vfs.f_bavail * vfs.f_frsize;
      u.free_files = vfs.f_files ? vfs.f_favail : UINT64_MAX; /* 0: no inode count */
    }
  if (in == NULL || out == NULL)
    status = halt (&u, RT_UNPACK_FAILED, "out of memory");
  else
    {
      archive_read_support_format_tar (in);
      archive_write_disk_set_options (out, ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SECURE_NODOTDOT
                                               | ARCHIVE_EXTRACT_SECURE_SYMLINKS
                                               | ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS);
      if (archive_read_open_fd (in, fd, 65536) != ARCHIVE_OK)
        status = halt (&u, RT_UNPACK_BROKEN, archive_error_string (in) ? archive_error_string (in) : "not an archive");
      else
        status = unpack_all (&u, in, out);
    }
  archive_read_free (in);
  archive_write_free (out);
  return status;
}
