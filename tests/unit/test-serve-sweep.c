/* test-serve-sweep.c - old server files removed (serve/sweep.h): only
   files older than the age, only those the keep callback does not keep,
   one level down with depth 1 (deleted/<tenant>/<id>), never a symbolic
   link or what it points at.  */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "serve/sweep.h"
#include "tap.h"

static void
put (const char *dir, const char *name, time_t mtime)
{
  char *p = rt_strdup_printf ("%s/%s", dir, name);
  struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };
  int fd = open (p, O_WRONLY | O_CREAT | O_TRUNC, 0600);

  if (fd >= 0)
    close (fd);
  utimensat (AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW);
  free (p);
}

static bool
there (const char *dir, const char *name)
{
  char *p = rt_strdup_printf ("%s/%s", dir, name);
  struct stat st;
  bool yes = lstat (p, &st) == 0;

  free (p);
  return yes;
}

static bool
keep_live (const char *name, void *arg)
{
  (void) arg;
  return strcmp (name, "sb-live") == 0;
}

int
main (void)
{
  char dir[] = "/tmp/test-sweep-XXXXXX";
  time_t now = time (NULL), old = now - 2 * SRV_SWEEP_KEEP_S;
  char *sub, *outside, *link, *fresh;

  ok (mkdtemp (dir) != NULL, "a temp dir");
  sub = rt_strdup_printf ("%s/tenant", dir);
  outside = rt_strdup_printf ("%s/outside", dir);
  link = rt_strdup_printf ("%s/tenant/sb-link", dir);
  fresh = rt_strdup_printf ("%s/sb-new", dir);
  mkdir (sub, 0700);
  put (dir, "sb-old", old);
  put (dir, "sb-new", now);
  put (dir, "sb-live", old);
  put (sub, "sb-deep", old);
  put (dir, "outside", old);
  ok (symlink (outside, link) == 0, "a symbolic link to an old file");

  ok (srv_sweep_dir (dir, now, SRV_SWEEP_KEEP_S, 0, keep_live, NULL) == 2, "depth 0: two removed");
  ok (!there (dir, "sb-old") && !there (dir, "outside"), "… the old ones");
  ok (there (dir, "sb-new"), "… not a new one");
  ok (there (dir, "sb-live"), "… not one the callback keeps (its sandbox still is)");
  ok (there (sub, "sb-deep"), "… nor one in a subdirectory");

  put (dir, "outside", old);
  ok (srv_sweep_dir (dir, now, SRV_SWEEP_KEEP_S, 1, keep_live, NULL) == 2, "depth 1: the one below too");
  ok (!there (sub, "sb-deep") && there (dir, "tenant"), "… removed, its dir left");
  ok (there (sub, "sb-link") && !there (dir, "outside"),
      "a symbolic link is left (the old file it names went as itself)");
  ok (srv_sweep_dir (dir, now, SRV_SWEEP_KEEP_S, 0, NULL, NULL) == 1, "no callback: every old file");
  ok (srv_sweep_dir ("/nonexistent-sweep", now, 1, 0, NULL, NULL) == 0, "a missing dir: nothing");

  unlink (link);
  unlink (fresh);
  rmdir (sub);
  rmdir (dir);
  free (sub);
  free (outside);
  free (link);
  free (fresh);
  return tap_done ();
}
