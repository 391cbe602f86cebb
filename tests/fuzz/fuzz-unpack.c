/* fuzz-unpack.c - the cp-out extractor (sandbox/unpack.h) against the tar
 * a hostile guest sends, with a property check of what lands on the host.
 *
 * Input: byte 0 chooses the limits (bit 0: keep_links; bit 1: a small
 * size cap of 64 KiB, else 16 MiB); the rest is the archive.  It is
 * extracted, as copy.c does, in a private directory (.../target) whose
 * parent also holds a canary file and a directory "outside".
 *
 * Checked whatever the status: nothing was written outside the target
 * directory (its parent holds the same three names, the canary its bytes
 * and one link, "outside" stays empty).  Checked on every archive it
 * accepts (RT_UNPACK_OK), walking the tree without following links: only
 * regular files, directories and symlinks; no setuid, setgid or sticky bit
 * and no group or other write bit (the umask is 022, as a user's); every
 * path within the copied item; each symlink, followed by the kernel
 * (openat2 RESOLVE_BENEATH from the item's directory), stays inside it;
 * no hard link reached the canary (it keeps its one link).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/unpack.h"
#include "fuzz.h"

#define CANARY "the host's own file\n"

static char root[64];
static int home = -1; /* the cwd to go back to: the driver reads inputs by relative paths */

static void
remove_root (void)
{
  rmdir (root);
}

/* A fresh root/{target,outside,canary}; cwd is root/target.  */
static void
setup (void)
{
  char p[128];
  int fd;

  if (root[0] == '\0')
    {
      snprintf (root, sizeof root, "/tmp/fuzz-unpack.XXXXXX");
      FUZZ_CHECK (mkdtemp (root) != NULL);
      FUZZ_CHECK ((home = open (".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0);
      atexit (remove_root);
      umask (022);
    }
  snprintf (p, sizeof p, "%s/target", root);
  FUZZ_CHECK (mkdir (p, 0700) == 0);
  snprintf (p, sizeof p, "%s/outside", root);
  FUZZ_CHECK (mkdir (p, 0700) == 0);
  snprintf (p, sizeof p, "%s/canary", root);
  fd = open (p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  FUZZ_CHECK (fd >= 0 && write (fd, CANARY, strlen (CANARY)) == (ssize_t) strlen (CANARY));
  close (fd);
  snprintf (p, sizeof p, "%s/target", root);
  FUZZ_CHECK (chdir (p) == 0);
}

/* Removes what @dirfd holds (and closes it), each directory made
   writable first.  */
static void
empty (int dirfd)
{
  DIR *d = fdopendir (dirfd);
  struct dirent *de;

  FUZZ_CHECK (d != NULL);
  rewinddir (d); /* a dup of it may have been read to the end */
  while ((de = readdir (d)))
    {
      struct stat st;
      if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
        continue;
      if (fstatat (dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR (st.st_mode))
        {
          int sub;
          FUZZ_CHECK (fchmodat (dirfd, de->d_name, 0700, 0) == 0);
          sub = openat (dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
          FUZZ_CHECK (sub >= 0);
          empty (sub);
          FUZZ_CHECK (unlinkat (dirfd, de->d_name, AT_REMOVEDIR) == 0);
        }
      else
        FUZZ_CHECK (unlinkat (dirfd, de->d_name, 0) == 0);
    }
  closedir (d);
}

/* Nothing outside root/target changed.  */
static void
check_outside (void)
{
  char p[128], buf[64] = "";
  struct stat st;
  DIR *d;
  struct dirent *de;
  int fd, names = 0;
  ssize_t n;

  FUZZ_CHECK ((d = opendir (root)) != NULL);
  while ((de = readdir (d)))
    if (strcmp (de->d_name, ".") != 0 && strcmp (de->d_name, "..") != 0)
      {
        FUZZ_CHECK (strcmp (de->d_name, "target") == 0 || strcmp (de->d_name, "outside") == 0
                    || strcmp (de->d_name, "canary") == 0);
        names++;
      }
  closedir (d);
  FUZZ_CHECK (names == 3);
  snprintf (p, sizeof p, "%s/canary", root);
  fd = open (p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  FUZZ_CHECK (fd >= 0 && fstat (fd, &st) == 0 && S_ISREG (st.st_mode) && st.st_nlink == 1);
  n = read (fd, buf, sizeof buf - 1);
  close (fd);
  FUZZ_CHECK (n == (ssize_t) strlen (CANARY) && memcmp (buf, CANARY, n) == 0);
  snprintf (p, sizeof p, "%s/outside", root);
  FUZZ_CHECK (rmdir (p) == 0); /* only an empty directory goes */
}

struct walk
{
  int item_dir; /* where the item is: target (relative paths start here) */
  const char *item;
  size_t files;
};

static void check_tree (struct walk *w, int dirfd, const char *rel, int depth);

/* One entry at @rel (relative to target), @name in @dirfd.  */
static void
check_entry (struct walk *w, int dirfd, const char *name, const char *rel, int depth)
{
  struct stat st;
  size_t il = strlen (w->item);

  FUZZ_CHECK (fstatat (dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0);
  FUZZ_CHECK (S_ISREG (st.st_mode) || S_ISDIR (st.st_mode) || S_ISLNK (st.st_mode));
  /* Under the item: "item" or "item/…".  */
  FUZZ_CHECK (strncmp (rel, w->item, il) == 0 && (rel[il] == '\0' || rel[il] == '/'));
  if (S_ISLNK (st.st_mode))
    {
      struct open_how how = { .flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS };
      int top = openat (w->item_dir, w->item, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      long fd;
      if (top < 0)
        return; /* the item itself is a symlink: keep_links, its target is the guest's business */
      fd = syscall (SYS_openat2, top, rel[il] ? rel + il + 1 : ".", &how, sizeof how);
      /* Inside, or dangling inside, or a loop inside; never EXDEV.  */
      FUZZ_CHECK (fd >= 0 || errno == ENOENT || errno == ELOOP || errno == ENOTDIR);
      if (fd >= 0)
        close ((int) fd);
      close (top);
      return;
    }
  FUZZ_CHECK ((st.st_mode & (S_ISUID | S_ISGID | S_ISVTX)) == 0);
  FUZZ_CHECK ((st.st_mode & (S_IWGRP | S_IWOTH)) == 0);
  if (S_ISREG (st.st_mode))
    w->files++;
  if (S_ISDIR (st.st_mode))
    {
      int sub = openat (dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      FUZZ_CHECK (sub >= 0);
      check_tree (w, sub, rel, depth + 1);
    }
}

static void
check_tree (struct walk *w, int dirfd, const char *rel, int depth)
{
  DIR *d = fdopendir (dirfd);
  struct dirent *de;

  FUZZ_CHECK (d != NULL && depth < 4096);
  while ((de = readdir (d)))
    {
      char sub[8192];
      if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
        continue;
      FUZZ_CHECK ((size_t) snprintf (sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", de->d_name) < sizeof sub);
      check_entry (w, dirfd, de->d_name, sub, depth);
    }
  closedir (d);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct rt_unpack_limits lim = { .name = "item" };
  rt_copy_result res;
  enum rt_unpack_status st;
  char why[256];
  int fd, target;

  if (size < 1)
    return 0;
  lim.keep_links = data[0] & 1;
  lim.max_size = data[0] & 2 ? 64u << 10 : 16u << 20;
  setup ();
  fd = memfd_create ("fuzz-unpack", MFD_CLOEXEC);
  FUZZ_CHECK (fd >= 0 && write (fd, data + 1, size - 1) == (ssize_t) (size - 1) && lseek (fd, 0, SEEK_SET) == 0);
  st = rt_unpack (fd, &lim, &res, why, sizeof why);
  close (fd);
  FUZZ_CHECK (memchr (why, '\0', sizeof why) != NULL);
  target = open (".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  FUZZ_CHECK (target >= 0);
  if (st == RT_UNPACK_OK)
    {
      struct walk w = { .item_dir = target, .item = lim.name };
      check_tree (&w, dup (target), "", 0);
    }
  check_outside ();
  FUZZ_CHECK (chdir (root) == 0);
  empty (target); /* closes it */
  FUZZ_CHECK (rmdir ("target") == 0 && unlink ("canary") == 0);
  FUZZ_CHECK (fchdir (home) == 0);
  return 0;
}
