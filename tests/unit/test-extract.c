/* test-extract.c - crafted layers fed to the extraction that makes a boot
   disk's tree (image/extract.h), as a hostile image or build step would
   craft them: a setuid-root file lands in the tree, but no other user
   can reach the tree while it is there; a decompression bomb is refused
   before it is written; a whiteout or an opaque directory named "app/"
   that replaces the symlink app hides the symlink, not what it points
   to.  */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <grp.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image/extract.h"
#include "tap.h"

#define MIB (1024 * 1024)

/* One entry of a crafted layer.  */
struct entry
{
  const char *name;
  unsigned type; /* AE_IFREG, AE_IFDIR, AE_IFLNK, AE_IFCHR (0:0: a whiteout) */
  unsigned mode;
  const char *data; /* a file's bytes, or a symlink's target */
  size_t zeros;     /* or this many zero bytes */
  bool opaque;      /* trusted.overlay.opaque=y */
};

/* Writes @n entries as a gzip'd pax tar at @path, as the layers of an
   imported archive may be.  Return: its size, or -1.  */
static off_t
write_layer (const char *path, const struct entry *es, size_t n)
{
  static char zeros[MIB];
  struct archive *a = archive_write_new ();
  struct stat st;
  int ok_ = 0;

  archive_write_add_filter_gzip (a);
  archive_write_set_format_pax_restricted (a);
  if (archive_write_open_filename (a, path) != ARCHIVE_OK)
    ok_ = -1;
  for (size_t i = 0; ok_ == 0 && i < n; i++)
    {
      struct archive_entry *e = archive_entry_new ();
      size_t size = es[i].type == AE_IFREG ? (es[i].data ? strlen (es[i].data) : es[i].zeros) : 0;
      archive_entry_set_pathname (e, es[i].name);
      archive_entry_set_filetype (e, es[i].type);
      archive_entry_set_perm (e, es[i].mode);
      archive_entry_set_uid (e, 0);
      archive_entry_set_gid (e, 0);
      archive_entry_set_size (e, size);
      if (es[i].type == AE_IFLNK)
        archive_entry_set_symlink (e, es[i].data);
      if (es[i].opaque)
        archive_entry_xattr_add_entry (e, "trusted.overlay.opaque", "y", 1);
      if (archive_write_header (a, e) != ARCHIVE_OK)
        ok_ = -1;
      if (es[i].type == AE_IFREG && es[i].data)
        archive_write_data (a, es[i].data, size);
      for (size_t left = es[i].data ? 0 : size; ok_ == 0 && left > 0; left -= left < MIB ? left : MIB)
        if (archive_write_data (a, zeros, left < MIB ? left : MIB) < 0)
          ok_ = -1;
      archive_entry_free (e);
    }
  if (archive_write_close (a) != ARCHIVE_OK)
    ok_ = -1;
  archive_write_free (a);
  return ok_ == 0 && stat (path, &st) == 0 ? st.st_size : -1;
}

static char *
path_in (const char *dir, const char *name)
{
  return rt_strdup_printf ("%s/%s", dir, name);
}

static bool
exists (const char *dir, const char *name)
{
  cleanup_free char *p = path_in (dir, name);
  struct stat st;

  return lstat (p, &st) == 0;
}

/* What another user (nobody) gets trying to reach @work, the file @file
   in its tree and to run it: a bit per attempt that succeeded (a run
   exits 99).  */
static int
as_nobody (const char *work, const char *file)
{
  pid_t pid = fork ();
  int status;

  if (pid == 0)
    {
      struct stat st;
      DIR *d;
      int got = 0;
      if (setgroups (0, NULL) < 0 || setgid (65534) < 0 || setuid (65534) < 0)
        _exit (64);
      if ((d = opendir (work)) != NULL)
        {
          got |= 1;
          closedir (d);
        }
      if (stat (file, &st) == 0 || errno != EACCES)
        got |= 2;
      execl (file, file, (char *) NULL);
      _exit (got | (errno == EACCES ? 0 : 4));
    }
  if (pid < 0 || waitpid (pid, &status, 0) < 0 || !WIFEXITED (status))
    return 255;
  return WEXITSTATUS (status);
}

/* A setuid-root file lands in the tree (the guest needs it), inside a
   directory no one else can enter, even in a cache dir everyone can.  */
static void
test_setuid (const char *tmp)
{
  static const struct entry es[] = {
    { "usr/", AE_IFDIR, 0755, NULL, 0, false },
    { "usr/bin/", AE_IFDIR, 0755, NULL, 0, false },
    { "usr/bin/rootme", AE_IFREG, 04755, "#!/bin/sh\nexit 99\n", 0, false },
  };
  cleanup_free char *layer = path_in (tmp, "suid.tar.gz"), *disks = path_in (tmp, "disks");
  cleanup_free char *work = NULL, *root = NULL, *file = NULL;
  cleanup_error rt_error *err = NULL;
  struct rt_layer_budget budget = { .limit = 64 * MIB };
  struct stat st, wst, rst;
  int got;

  mkdir (disks, 0755);
  ok (write_layer (layer, es, 3) > 0, "a layer with a setuid-root file");
  ok (rt_image_work_dir (disks, &work, &root, &err) == 0, "a work dir is made in a cache dir others may enter");
  if (work == NULL)
    return;
  ok (rt_image_extract_layer (root, layer, false, &budget, &err) == 0, "the layer is extracted: %s",
      err ? err->msg : "ok");
  file = path_in (root, "usr/bin/rootme");
  ok (lstat (file, &st) == 0 && S_ISREG (st.st_mode)
          && (geteuid () != 0 || ((st.st_mode & 07777) == 04755 && st.st_uid == 0)),
      "the setuid-root file is in the tree as the layer says (mode %o, uid %u)", st.st_mode & 07777,
      (unsigned) st.st_uid);
  ok (stat (work, &wst) == 0 && (wst.st_mode & 07777) == 0700 && wst.st_uid == geteuid (),
      "the work dir is 0700 and the caller's (%o)", wst.st_mode & 07777);
  ok (strncmp (root, work, strlen (work)) == 0 && root[strlen (work)] == '/', "the tree's root is inside it");
  ok (stat (root, &rst) == 0 && (rst.st_mode & 07777) == 0755, "the tree's root is 0755, as the disk's root must be");
  ok (strncmp (work, disks, strlen (disks)) == 0 && strncmp (work + strlen (disks), "/.tmp-", 6) == 0,
      "it is named .tmp-*, so a crashed run's leftover is found");
  if (geteuid () == 0)
    {
      got = as_nobody (work, file);
      ok (got == 0, "another user (nobody) cannot list the work dir, stat the file or run it (got %d)", got);
    }
  else
    ok (1, "# SKIP another user's view needs root");
  ok (budget.used > 0 && budget.used < MIB, "what the layer unpacked to is counted (%llu bytes)",
      (unsigned long long) budget.used);
  rt_rm_rf (work, NULL);
  ok (access (work, F_OK) < 0, "removing the work dir removes the tree");
}

/* A bomb: 300 MB of zeros in a few hundred KB of gzip.  The entry's
   header gives it away: nothing of it is written.  */
static void
test_bomb (const char *tmp)
{
  static const struct entry bomb[] = { { "zeros", AE_IFREG, 0644, NULL, 300 * MIB, false } };
  struct entry many[100];
  cleanup_free char *layer = path_in (tmp, "bomb.tar.gz"), *layer2 = path_in (tmp, "many.tar.gz");
  cleanup_free char *half = path_in (tmp, "half.tar.gz");
  cleanup_free char *disks = path_in (tmp, "disks"), *work = NULL, *root = NULL;
  cleanup_error rt_error *err = NULL;
  struct rt_layer_budget budget = { .limit = 64 * MIB };
  char names[100][16];
  off_t size;
  int ret;

  size = write_layer (layer, bomb, 1);
  ok (size > 0 && size < MIB, "a 300 MB bomb is %lld KB of gzip", (long long) size / 1024);
  rt_image_work_dir (disks, &work, &root, NULL);
  ret = rt_image_extract_layer (root, layer, false, &budget, &err);
  ok (ret < 0 && err && strcmp (err->code, "invalid_request") == 0 && strstr (err->msg, "unpacks past 64 MiB"),
      "it is refused past the limit: %s", err ? err->msg : "(no error)");
  ok (!exists (root, "zeros"), "… before any of it is written");
  rt_error_free (steal_pointer (&err));

  /* Many small files: refused at the one that crosses the limit.  */
  for (int i = 0; i < 100; i++)
    {
      snprintf (names[i], sizeof names[i], "z%03d", i);
      many[i] = (struct entry){ names[i], AE_IFREG, 0644, NULL, MIB, false };
    }
  write_layer (layer2, many, 100);
  budget.used = 0;
  ret = rt_image_extract_layer (root, layer2, false, &budget, &err);
  ok (ret < 0 && err && strstr (err->msg, "unpacks past"), "100 files of 1 MiB are refused past 64 MiB");
  ok (exists (root, "z062") && !exists (root, "z063") && !exists (root, "z064"), "… at the file that would cross it");
  rt_error_free (steal_pointer (&err));

  /* The image's layers share the limit: 40 MiB, then 40 more.  */
  write_layer (half, many, 40);
  budget.used = 0;
  ok (rt_image_extract_layer (root, half, false, &budget, &err) == 0, "a layer of 40 MiB is within 64 MiB");
  ret = rt_image_extract_layer (root, half, true, &budget, &err);
  ok (ret < 0 && err && strstr (err->msg, "unpacks past"), "… and the same again over it is not: %s",
      err ? err->msg : "(no error)");
  rt_error_free (steal_pointer (&err));
  ok (RT_LAYER_MAX_BYTES == (uint64_t) 4 * RT_MIN_DISK_MIB * MIB, "the default limit is 4 times the disk: %llu MiB",
      (unsigned long long) (RT_LAYER_MAX_BYTES / MIB));
  rt_rm_rf (work, NULL);
}

/* app -> target, then a whiteout "app/" and an opaque directory "app2/"
   over app2 -> target: the symlinks go, target keeps its file.  */
static void
test_trailing_slash (const char *tmp)
{
  static const struct entry lower[] = {
    { "target/", AE_IFDIR, 0755, NULL, 0, false },
    { "target/keep", AE_IFREG, 0644, "kept\n", 0, false },
    { "app", AE_IFLNK, 0777, "target", 0, false },
    { "app2", AE_IFLNK, 0777, "target", 0, false },
  };
  static const struct entry whiteout[] = { { "app/", AE_IFCHR, 0, NULL, 0, false } };
  static const struct entry opaque[] = {
    { "app2/", AE_IFDIR, 0755, NULL, 0, true },
    { "app2/new", AE_IFREG, 0644, "new\n", 0, false },
  };
  cleanup_free char *l1 = path_in (tmp, "lower.tar.gz"), *l2 = path_in (tmp, "whiteout.tar.gz");
  cleanup_free char *l3 = path_in (tmp, "opaque.tar.gz");
  cleanup_free char *disks = path_in (tmp, "disks"), *work = NULL, *root = NULL, *app2 = NULL;
  cleanup_error rt_error *err = NULL;
  struct rt_layer_budget budget = { .limit = 64 * MIB };
  struct archive *a = archive_read_new ();
  struct archive_entry *e;
  struct stat st;

  write_layer (l1, lower, 4);
  write_layer (l2, whiteout, 1);
  write_layer (l3, opaque, 2);
  archive_read_support_format_tar (a);
  archive_read_support_filter_all (a);
  ok (archive_read_open_filename (a, l2, 1 << 16) == ARCHIVE_OK && archive_read_next_header (a, &e) == ARCHIVE_OK
          && strcmp (archive_entry_pathname (e), "app/") == 0,
      "the whiteout's name in the layer ends in '/'");
  archive_read_free (a);
  rt_image_work_dir (disks, &work, &root, NULL);
  ok (rt_image_extract_layer (root, l1, false, &budget, &err) == 0 && exists (root, "target/keep")
          && exists (root, "app/keep"),
      "the lower layer: target/keep, app and app2 -> target");
  ok (rt_image_extract_layer (root, l2, true, &budget, &err) == 0, "the whiteout 'app/' is applied: %s",
      err ? err->msg : "ok");
  ok (!exists (root, "app"), "… the symlink app is gone");
  ok (exists (root, "target/keep") && exists (root, "target"), "… and what it pointed to is not");
  ok (rt_image_extract_layer (root, l3, true, &budget, &err) == 0, "the opaque directory 'app2/' is applied: %s",
      err ? err->msg : "ok");
  app2 = path_in (root, "app2");
  ok (lstat (app2, &st) == 0 && S_ISDIR (st.st_mode) && exists (root, "app2/new"),
      "… app2 is now a directory with its file");
  ok (exists (root, "target/keep") && !exists (root, "target/new"), "… and target is untouched");
  rt_rm_rf (work, NULL);
}

int
main (void)
{
  char tmp[] = "/tmp/rt-extract.XXXXXX";

  /* Open to everyone, as a cache dir may be: only the work dir keeps
     others out.  */
  if (mkdtemp (tmp) == NULL || chmod (tmp, 0755) < 0)
    return 1;
  test_setuid (tmp);
  test_bomb (tmp);
  test_trailing_slash (tmp);
  rt_rm_rf (tmp, NULL);
  return tap_done ();
}
