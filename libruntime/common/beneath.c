/* beneath.c - files opened beneath a directory (openat2, or a walk of
   O_NOFOLLOW components where the kernel lacks it) and trees copied by
   their descriptors, symlinks kept as symlinks: nothing named inside a
   folder can make us read outside it, and nothing is looked up by its path
   twice.  */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/beneath.h"
#include "common/sys.h"

#define MAX_LINKS 40  /* as the kernel's own */
#define MAX_DEPTH 256 /* directories deep, for the walk and the copy */

int
rt_open_beneath (int dirfd, const char *path, int flags)
{
  struct open_how how = { .flags = (unsigned) flags | O_CLOEXEC, .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };

  if (path[0] == '/')
    return -EXDEV;
  /* EAGAIN: a rename raced a "..", and the kernel asks us to retry.
     EPERM: a seccomp filter that does not know openat2 (containers).  */
  for (int tries = 0; tries < 16; tries++)
    {
      long fd = syscall (SYS_openat2, dirfd, path, &how, sizeof how);
      if (fd >= 0)
        return (int) fd;
      if (errno == ENOSYS || errno == EPERM)
        return rt_open_beneath_walk (dirfd, path, flags);
      if (errno != EAGAIN)
        return -errno;
    }
  return -EAGAIN;
}

/* Where the walk is: the O_PATH descriptors of the directories walked
   into (below the start) and their names.  */
struct walk
{
  int start;
  int fd[MAX_DEPTH];
  char *name[MAX_DEPTH];
  size_t depth;
};

static int
walk_top (const struct walk *w)
{
  return w->depth ? w->fd[w->depth - 1] : w->start;
}

static void
walk_pop (struct walk *w)
{
  w->depth--;
  close (w->fd[w->depth]);
  free (w->name[w->depth]);
}

/* @comp (of @len bytes) opened in the walk's top without following it: a
   symlink's target goes in front of @rest (*rest replaced), anything else
   is walked into.  */
static int
walk_step (struct walk *w, const char *comp, size_t len, char **rest, const char *after, int *links)
{
  cleanup_free char *name = strndup (comp, len);
  char target[PATH_MAX];
  struct stat st;
  ssize_t n;
  int fd;

  if (name == NULL)
    return -ENOMEM;
  fd = openat (walk_top (w), name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  if (fstat (fd, &st) < 0)
    {
      close (fd);
      return -errno;
    }
  if (S_ISLNK (st.st_mode))
    {
      char *spliced;
      n = readlinkat (fd, "", target, sizeof target - 1);
      close (fd);
      if (n < 0)
        return -errno;
      target[n] = '\0';
      /* A magic link reads as "/…" or "pipe:[…]": never followed.  */
      if (++*links > MAX_LINKS)
        return -ELOOP;
      if (target[0] == '/')
        return -EXDEV;
      spliced = rt_strdup_printf ("%s%s", target, after);
      if (spliced == NULL)
        return -ENOMEM;
      free (*rest);
      *rest = spliced;
      return 0;
    }
  if (!S_ISDIR (st.st_mode) && *after != '\0')
    {
      close (fd);
      return -ENOTDIR;
    }
  if (w->depth == MAX_DEPTH)
    {
      close (fd);
      return -ENAMETOOLONG;
    }
  w->fd[w->depth] = fd;
  w->name[w->depth++] = steal_pointer (&name);
  return 0;
}

/* The object the walk ended on, opened with @flags from its parent by
   name with O_NOFOLLOW, and refused if it is not the one walked to.  */
static int
walk_open (struct walk *w, int flags)
{
  struct stat want, got;
  int fd;

  if (w->depth == 0)
    fd = openat (w->start, ".", flags | O_CLOEXEC);
  else
    fd = openat (w->depth > 1 ? w->fd[w->depth - 2] : w->start, w->name[w->depth - 1], flags | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return -errno;
  if (fstat (walk_top (w), &want) < 0 || fstat (fd, &got) < 0 || want.st_dev != got.st_dev || want.st_ino != got.st_ino)
    {
      close (fd);
      return -EAGAIN;
    }
  return fd;
}

int
rt_open_beneath_walk (int dirfd, const char *path, int flags)
{
  struct walk w = { .start = dirfd };
  char *rest = strdup (path);
  size_t pos = 0;
  int links = 0, ret = 0;

  if (rest == NULL)
    return -ENOMEM;
  if (path[0] == '/')
    ret = -EXDEV;
  else if (path[0] == '\0')
    ret = -ENOENT;
  while (ret == 0)
    {
      const char *comp = rest + pos, *after;
      size_t len;
      while (*comp == '/')
        comp++;
      if (*comp == '\0')
        break;
      len = strcspn (comp, "/");
      after = comp + len;
      pos = after - rest;
      if (len == 1 && comp[0] == '.')
        continue;
      if (len == 2 && comp[0] == '.' && comp[1] == '.')
        {
          if (w.depth == 0)
            ret = -EXDEV;
          else
            walk_pop (&w);
          continue;
        }
      {
        char *before = rest;
        ret = walk_step (&w, comp, len, &rest, after, &links);
        if (rest != before)
          pos = 0;
      }
    }
  if (ret == 0)
    ret = walk_open (&w, flags);
  while (w.depth)
    walk_pop (&w);
  free (rest);
  return ret;
}

/* @in's bytes into @out.  */
static int
copy_bytes (int in, int out)
{
  char buf[1 << 16];
  ssize_t n;

  for (;;)
    {
      n = copy_file_range (in, NULL, out, NULL, 1 << 30, 0);
      if (n == 0)
        return 0;
      if (n < 0)
        break;
    }
  if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
    return -errno;
  /* Another file system (or none that copies): by hand, from where the
     kernel stopped.  */
  while ((n = read (in, buf, sizeof buf)) > 0)
    if (rt_write_all (out, buf, n) < 0)
      return -errno;
  return n < 0 ? -errno : 0;
}

static int
refuse_kind (const char *shown, rt_error **err)
{
  rt_error_set (err, EINVAL, "invalid_request", "'%s' is not a file, a directory or a symlink", shown);
  return rt_error_hint (err, "device nodes, FIFOs and sockets are not copied into an image");
}

static int copy_node (int fd, const struct stat *st, int todir, const char *name, const char *shown, int depth,
                      rt_error **err);

/* One entry of a directory being copied: a symlink as a symlink, a
   directory or a regular file opened without following.  */
static int
copy_entry (int from, const char *name, int todir, const char *shown, int depth, rt_error **err)
{
  cleanup_free char *path = rt_strdup_printf ("%s/%s", shown, name);
  cleanup_close int fd = -1;
  char target[PATH_MAX];
  struct stat st;
  ssize_t n;

  if (path == NULL)
    return rt_error_oom (err);
  if (fstatat (from, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
    return rt_error_set (err, errno, "file_not_found", "cannot read '%s': %s", path, strerror (errno));
  if (S_ISLNK (st.st_mode))
    {
      struct timespec t[2] = { st.st_atim, st.st_mtim };
      n = readlinkat (from, name, target, sizeof target - 1);
      if (n < 0)
        return rt_error_set (err, errno, "file_not_found", "cannot read '%s': %s", path, strerror (errno));
      target[n] = '\0';
      if (symlinkat (target, todir, name) < 0)
        return rt_error_set (err, errno, "internal", "cannot copy '%s': %s", path, strerror (errno));
      utimensat (todir, name, t, AT_SYMLINK_NOFOLLOW);
      return 0;
    }
  if (!S_ISDIR (st.st_mode) && !S_ISREG (st.st_mode))
    return refuse_kind (path, err);
  fd = openat (from, name,
               (S_ISDIR (st.st_mode) ? O_DIRECTORY : O_NONBLOCK | O_NOCTTY) | O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || fstat (fd, &st) < 0)
    return rt_error_set (err, errno, "file_not_found", "cannot read '%s': %s", path, strerror (errno));
  return copy_node (fd, &st, todir, name, path, depth, err);
}

/* The entries of the directory @fd into the directory @to.  */
static int
copy_dir (int fd, int to, const char *shown, int depth, rt_error **err)
{
  cleanup_dir DIR *d = NULL;
  struct dirent *de;
  int dup_fd = dup (fd), ret = 0;

  if (dup_fd < 0 || (d = fdopendir (dup_fd)) == NULL)
    {
      if (dup_fd >= 0)
        close (dup_fd);
      return rt_error_set (err, errno, "internal", "cannot read '%s': %s", shown, strerror (errno));
    }
  while (ret == 0 && (errno = 0, de = readdir (d)) != NULL)
    if (strcmp (de->d_name, ".") != 0 && strcmp (de->d_name, "..") != 0)
      ret = copy_entry (fd, de->d_name, to, shown, depth, err);
  if (ret == 0 && errno != 0)
    ret = rt_error_set (err, errno, "internal", "cannot read '%s': %s", shown, strerror (errno));
  return ret;
}

/* A hard link is the same file under another name, and RESOLVE_BENEATH
   sees only the name: a link in the folder to a file outside it (made by
   someone who could read it, or while it was theirs) would carry that file
   into the image.  So a regular file with more than one link is copied
   only when it belongs to the caller, whose own files it may read anyway.  */
static int
refuse_hard_link (const struct stat *st, const char *shown, rt_error **err)
{
  if (!S_ISREG (st->st_mode) || st->st_nlink <= 1 || st->st_uid == geteuid ())
    return 0;
  rt_error_set (err, EPERM, "invalid_request", "'%s' has %ju hard links and belongs to uid %ju, not to this user", shown,
                (uintmax_t) st->st_nlink, (uintmax_t) st->st_uid);
  return rt_error_hint (err, "a hard link may name a file outside the recipe's folder; copy the file instead (cp)");
}

/* @fd (described by @st) as @name in @todir, with its mode and times.  */
static int
copy_node (int fd, const struct stat *st, int todir, const char *name, const char *shown, int depth, rt_error **err)
{
  struct timespec t[2] = { st->st_atim, st->st_mtim };
  cleanup_close int out = -1;
  int ret;

  /* Checked again on the descriptor: the entry may have been swapped.  */
  if (!S_ISREG (st->st_mode) && !S_ISDIR (st->st_mode))
    return refuse_kind (shown, err);
  ret = refuse_hard_link (st, shown, err);
  if (ret < 0)
    return ret;
  if (depth > MAX_DEPTH)
    return rt_error_set (err, ELOOP, "invalid_request", "'%s' is more than %d directories deep", shown, MAX_DEPTH);
  if (S_ISDIR (st->st_mode))
    {
      if (mkdirat (todir, name, 0700) < 0
          || (out = openat (todir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return rt_error_set (err, errno, "internal", "cannot copy '%s': %s", shown, strerror (errno));
      ret = copy_dir (fd, out, shown, depth + 1, err);
    }
  else
    {
      out = openat (todir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (out < 0)
        return rt_error_set (err, errno, "internal", "cannot copy '%s': %s", shown, strerror (errno));
      ret = copy_bytes (fd, out);
      if (ret < 0)
        return rt_error_set (err, -ret, "internal", "cannot copy '%s': %s", shown, strerror (-ret));
    }
  if (ret == 0 && (fchmod (out, st->st_mode & 07777) < 0 || futimens (out, t) < 0))
    ret = rt_error_set (err, errno, "internal", "cannot copy '%s': %s", shown, strerror (errno));
  return ret;
}

int
rt_copy_fd_tree (int fd, int todir, const char *name, const char *shown, rt_error **err)
{
  struct stat st;

  if (fstat (fd, &st) < 0)
    return rt_error_set (err, errno, "internal", "cannot read '%s': %s", shown, strerror (errno));
  return copy_node (fd, &st, todir, name, shown, 0, err);
}

char *
rt_fd_path (int fd)
{
  char proc[64], path[PATH_MAX];
  ssize_t n;

  snprintf (proc, sizeof proc, "/proc/self/fd/%d", fd);
  n = readlink (proc, path, sizeof path - 1);
  if (n <= 0 || path[0] != '/')
    return NULL;
  path[n] = '\0';
  return strdup (path);
}
