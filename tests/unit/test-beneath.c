/* test-beneath.c - what a recipe's folder lets out (common/beneath.h):
   absolute paths, "..", symlinks that leave and /proc's magic links are
   refused by openat2 and by the walk that stands in for it; symlinks that
   stay inside are followed; a copied tree keeps its symlinks as symlinks
   and refuses another user's file with more than one hard link.
   A mistake here bakes a host file (/etc/shadow, the secrets) into an
   image.  */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/beneath.h"
#include "tap.h"

typedef int (*open_fn) (int, const char *, int);

static const char *
err_name (int e)
{
  switch (e)
    {
      case EXDEV:
        return "EXDEV";
      case ELOOP:
        return "ELOOP";
      case ENOENT:
        return "ENOENT";
      case ENOTDIR:
        return "ENOTDIR";
      default:
        return "another error";
    }
}

/* @path beneath @dirfd: refused with -@want (0: any error).  */
static void
refused (open_fn f, const char *how, int dirfd, const char *path, int want)
{
  int fd = f (dirfd, path, O_RDONLY);

  if (fd >= 0)
    close (fd);
  ok (fd < 0 && (want == 0 || fd == -want), "%s: '%s' refused (%s)", how, path, fd >= 0 ? "opened!" : err_name (-fd));
}

/* @path beneath @dirfd: opened, and its first line is @want.  */
static void
opened (open_fn f, const char *how, int dirfd, const char *path, const char *want)
{
  char buf[64] = "";
  int fd = f (dirfd, path, O_RDONLY);
  ssize_t n = fd >= 0 ? read (fd, buf, sizeof buf - 1) : -1;

  if (n > 0)
    buf[strcspn (buf, "\n")] = '\0';
  if (fd >= 0)
    close (fd);
  ok (fd >= 0 && strcmp (buf, want) == 0, "%s: '%s' opened, reads '%s' (got %s)", how, path, want,
      fd < 0 ? err_name (-fd) : buf);
}

static void
write_file (const char *path, const char *text)
{
  FILE *f = fopen (path, "w");
  if (f)
    {
      fputs (text, f);
      fclose (f);
    }
}

/* <root>/outside (the secret next door) and <root>/in (the folder).  */
static int
make_tree (const char *root)
{
  char p[4096];
  int made = 0;

#define P(...) (snprintf (p, sizeof p, __VA_ARGS__), p)
  write_file (P ("%s/outside", root), "secret\n");
  mkdir (P ("%s/in", root), 0755);
  mkdir (P ("%s/in/a", root), 0755);
  mkdir (P ("%s/in/a/b", root), 0755);
  write_file (P ("%s/in/file", root), "inside\n");
  write_file (P ("%s/in/a/b/deep", root), "deep\n");
  made += symlink ("/etc", P ("%s/in/etc", root)) == 0;
  made += symlink ("/etc/passwd", P ("%s/in/passwd", root)) == 0;
  made += symlink ("../outside", P ("%s/in/up", root)) == 0;
  made += symlink ("b/../../../outside", P ("%s/in/a/up2", root)) == 0;
  made += symlink ("file", P ("%s/in/to-file", root)) == 0;
  made += symlink ("b/deep", P ("%s/in/a/to-deep", root)) == 0;
  made += symlink ("../file", P ("%s/in/a/back", root)) == 0;
  made += symlink ("a", P ("%s/in/to-a", root)) == 0;
  made += symlink ("/proc/self/root", P ("%s/in/proc-root", root)) == 0;
  made += symlink ("/proc/self/cwd", P ("%s/in/proc-cwd", root)) == 0;
  made += symlink ("loop", P ("%s/in/loop", root)) == 0;
  mkfifo (P ("%s/in/a/fifo", root), 0600);
#undef P
  return made;
}

static void
resolve_tests (open_fn f, const char *how, int in)
{
  int proc = open ("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

  refused (f, how, in, "/etc/passwd", EXDEV);
  refused (f, how, in, "..", EXDEV);
  refused (f, how, in, "../outside", EXDEV);
  refused (f, how, in, "a/../../outside", EXDEV);
  refused (f, how, in, "a/b/../../../outside", EXDEV);
  refused (f, how, in, "etc/passwd", EXDEV);
  refused (f, how, in, "passwd", EXDEV);
  refused (f, how, in, "up", EXDEV);
  refused (f, how, in, "a/up2", EXDEV);
  refused (f, how, in, "to-a/../../outside", EXDEV);
  refused (f, how, in, "proc-root/etc/passwd", EXDEV);
  refused (f, how, in, "proc-cwd", EXDEV);
  refused (f, how, in, "loop", ELOOP);
  refused (f, how, in, "missing", ENOENT);
  refused (f, how, in, "file/x", ENOTDIR);
  refused (f, how, in, "", ENOENT);
  /* A folder that is /proc/self: its magic links lead anywhere.  */
  refused (f, how, proc, "root/etc/passwd", 0);
  refused (f, how, proc, "cwd", 0);
  refused (f, how, proc, "exe", 0);
  opened (f, how, in, "file", "inside");
  opened (f, how, in, "./a/../file", "inside");
  opened (f, how, in, "a/b/deep", "deep");
  opened (f, how, in, "to-file", "inside");
  opened (f, how, in, "a/to-deep", "deep");
  opened (f, how, in, "a/back", "inside");
  opened (f, how, in, "to-a/b/../b/deep", "deep");
  opened (f, how, in, "to-a/back", "inside");
  close (proc);
}

/* A copy of in/a: its files and directories copied, its symlinks kept as
   symlinks (their targets not read), its FIFO refused.  */
static void
copy_tests (const char *root, int in)
{
  char p[4096], target[256];
  int fd = rt_open_beneath (in, "a", O_RDONLY), to;
  rt_error *err = NULL;
  ssize_t n;
  int ret;

  snprintf (p, sizeof p, "%s/out", root);
  mkdir (p, 0700);
  to = open (p, O_RDONLY | O_DIRECTORY);
  ret = rt_copy_fd_tree (fd, to, "a", "in/a", &err);
  ok (ret < 0 && err && strcmp (err->code, "invalid_request") == 0 && strstr (err->msg, "in/a/fifo"),
      "a tree with a FIFO is refused, naming it (%s)", err ? err->msg : "copied!");
  rt_error_free (err);
  err = NULL;
  snprintf (p, sizeof p, "%s/in/a/fifo", root);
  unlink (p);
  close (fd);
  fd = rt_open_beneath (in, "a", O_RDONLY);
  ret = rt_copy_fd_tree (fd, to, "a2", "in/a", &err);
  ok (ret == 0, "a tree of files, directories and symlinks is copied (%s)", err ? err->msg : "ok");
  opened (rt_open_beneath, "copy", to, "a2/b/deep", "deep");
  snprintf (p, sizeof p, "%s/out/a2/up2", root);
  n = readlink (p, target, sizeof target - 1);
  target[n > 0 ? n : 0] = '\0';
  ok (n > 0 && strcmp (target, "b/../../../outside") == 0, "an escaping symlink is copied as a symlink ('%s')", target);
  rt_error_free (err);
  close (fd);
  close (to);
}

/* Whether copying @name (beneath @in) as @as into @to succeeds; the
   error's message in @msg.  */
static int
copy_one (int in, const char *name, int to, const char *as, char *msg, size_t size)
{
  int fd = rt_open_beneath (in, name, O_RDONLY);
  rt_error *err = NULL;
  int ret = fd < 0 ? fd : rt_copy_fd_tree (fd, to, as, name, &err);

  snprintf (msg, size, "%s", err ? err->msg : "copied");
  rt_error_free (err);
  if (fd >= 0)
    close (fd);
  return ret;
}

/* Hard links: RESOLVE_BENEATH sees names only, and a second name of a file
   elsewhere stays beneath.  Another user's file with two links is refused
   (alone or in a tree), the caller's own or one with a single link is
   copied.  Needs root to give a file away (chown).  */
static void
hard_link_tests (const char *root, int in)
{
  char p[4096], q[4096], msg[512];
  int to, ret;

  snprintf (p, sizeof p, "%s/out-links", root);
  mkdir (p, 0700);
  to = open (p, O_RDONLY | O_DIRECTORY);
  snprintf (p, sizeof p, "%s/in/links", root);
  mkdir (p, 0700);
  snprintf (p, sizeof p, "%s/elsewhere", root);
  close (open (p, O_WRONLY | O_CREAT, 0600));
  snprintf (q, sizeof q, "%s/in/links/mine", root);
  ok (link (p, q) == 0, "a second name of one's own file is made");
  ret = copy_one (in, "links/mine", to, "mine", msg, sizeof msg);
  ok (ret == 0, "one's own file with two links is copied (%s)", msg);
  ret = copy_one (in, "links", to, "tree-mine", msg, sizeof msg);
  ok (ret == 0, "a tree with one's own linked file is copied (%s)", msg);
  if (geteuid () != 0 || chown (p, 65534, 65534) < 0)
    {
      ok (1, "# SKIP not root: cannot give a file away");
      close (to);
      return;
    }
  ret = copy_one (in, "links/mine", to, "theirs", msg, sizeof msg);
  ok (ret < 0 && strstr (msg, "links/mine") && strstr (msg, "hard links"),
      "another user's file with two links is refused, naming it (%s)", msg);
  ret = copy_one (in, "links", to, "tree-theirs", msg, sizeof msg);
  ok (ret < 0 && strstr (msg, "links/mine") && strstr (msg, "hard links"),
      "a tree holding another user's linked file is refused (%s)", msg);
  unlink (p);
  ret = copy_one (in, "links/mine", to, "single", msg, sizeof msg);
  ok (ret == 0, "another user's file with one link is copied (%s)", msg);
  close (to);
}

int
main (void)
{
  char root[] = "/tmp/test-beneath.XXXXXX", p[4096];
  int in;

  if (mkdtemp (root) == NULL)
    return 1;
  ok (make_tree (root) == 11, "the test tree's symlinks are made");
  snprintf (p, sizeof p, "%s/in", root);
  in = open (p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  resolve_tests (rt_open_beneath, "openat2", in);
  resolve_tests (rt_open_beneath_walk, "walk", in);
  copy_tests (root, in);
  hard_link_tests (root, in);
  close (in);
  snprintf (p, sizeof p, "rm -rf '%s'", root);
  if (system (p) != 0)
    return 1;
  return tap_done ();
}
