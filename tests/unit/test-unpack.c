/* test-unpack.c - what of a hostile guest's tar lands on the host in a
   `cp` out (sandbox/unpack.h): archives made here with libarchive, fed to
   rt_unpack, and the disk looked at afterwards.  */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "common/util.h"
#include "sandbox/unpack.h"
#include "tap.h"

#define BUF_SIZE (32 << 20)

struct ent
{
  const char *name;
  mode_t type; /* AE_IFREG… */
  mode_t perm;
  int64_t size;     /* data written when below 1 MiB, else the header only */
  const char *link; /* a symlink's target */
  const char *hard; /* a hard link's target */
  dev_t rdev;
  int64_t sparse; /* when set: a sparse file, this many bytes of data at
                     offset 0, the rest of .size a hole */
};

/* The ustar header at @h made a hard link to @target that keeps its size:
   libarchive writes hard links with size 0, but pax lets them carry data
   (and a reader obeys it when the entry has a pax header).  */
static void
as_hardlink (char *h, const char *target)
{
  unsigned sum = 0;

  h[156] = '1';
  strncpy (h + 157, target, 100);
  memset (h + 148, ' ', 8);
  for (int i = 0; i < 512; i++)
    sum += (unsigned char) h[i];
  snprintf (h + 148, 8, "%06o", sum);
}

/* The tar of @n entries in a temp file: its fd at offset 0.  */
static int
make_tar (const struct ent *e, size_t n)
{
  char *buf = malloc (BUF_SIZE), *data = calloc (1, 1 << 20);
  struct archive *a = archive_write_new ();
  char path[] = "/tmp/test-unpack-XXXXXX";
  size_t used = 0;
  int fd = mkstemp (path);

  unlink (path);
  archive_write_set_format_pax_restricted (a);
  /* Unblocked: a header whose data never follows is still in the bytes.  */
  archive_write_set_bytes_per_block (a, 0);
  archive_write_open_memory (a, buf, BUF_SIZE, &used);
  for (size_t i = 0; i < n; i++)
    {
      struct archive_entry *ae = archive_entry_new ();
      archive_entry_set_pathname (ae, e[i].name);
      archive_entry_set_filetype (ae, e[i].type);
      archive_entry_set_perm (ae, e[i].perm);
      archive_entry_set_size (ae, e[i].size);
      if (e[i].link)
        archive_entry_set_symlink (ae, e[i].link);
      if (e[i].hard && e[i].size == 0)
        archive_entry_set_hardlink (ae, e[i].hard);
      archive_entry_set_rdev (ae, e[i].rdev);
      if (e[i].sparse)
        archive_entry_sparse_add_entry (ae, 0, e[i].sparse);
      archive_write_header (a, ae);
      if (e[i].hard && e[i].size > 0)
        as_hardlink (buf + used - 512, e[i].hard);
      if (e[i].sparse)
        archive_write_data (a, data, e[i].sparse);
      else if (e[i].size > 0 && e[i].size < (1 << 20))
        archive_write_data (a, data, e[i].size);
      archive_entry_free (ae);
      if (e[i].size >= (1 << 20) && !e[i].sparse)
        break;
    }
  archive_write_close (a);
  archive_write_free (a);
  if (write (fd, buf, used) != (ssize_t) used)
    abort ();
  lseek (fd, 0, SEEK_SET);
  free (buf);
  free (data);
  return fd;
}

static char base[] = "/tmp/test-unpack-dir-XXXXXX";
static int case_no;

/* Extracts @e into a fresh directory, made the current one.  */
static enum rt_unpack_status
unpack (const struct ent *e, size_t n, const struct rt_unpack_limits *lim, rt_copy_result *res, char *why)
{
  char dir[64];
  int fd = make_tar (e, n);
  enum rt_unpack_status st;

  snprintf (dir, sizeof dir, "%s/%d", base, ++case_no);
  if (mkdir (dir, 0700) < 0 || chdir (dir) < 0)
    abort ();
  st = rt_unpack (fd, lim, res, why, 256);
  close (fd);
  return st;
}

static mode_t
mode_of (const char *p)
{
  struct stat st;
  return lstat (p, &st) == 0 ? st.st_mode : 0;
}

static bool
absent (const char *p)
{
  struct stat st;
  return lstat (p, &st) < 0;
}

static void
test_hostile_tree (void)
{
  const struct ent e[] = {
    { "x/", AE_IFDIR, 0777, 0, NULL, NULL, 0 },
    { "x/sda", AE_IFBLK, 0666, 0, NULL, NULL, makedev (8, 0) },
    { "x/null", AE_IFCHR, 0666, 0, NULL, NULL, makedev (1, 3) },
    { "x/fifo", AE_IFIFO, 0666, 0, NULL, NULL, 0 },
    { "x/suid", AE_IFREG, 04755, 5, NULL, NULL, 0 },
    { "x/sgid", AE_IFREG, 02777, 5, NULL, NULL, 0 },
    { "x/sticky/", AE_IFDIR, 01777, 0, NULL, NULL, 0 },
    { "x/locked/", AE_IFDIR, 0, 0, NULL, NULL, 0 },
    { "x/abs", AE_IFLNK, 0777, 0, "/etc/shadow", NULL, 0 },
    { "x/up", AE_IFLNK, 0777, 0, "../../etc", NULL, 0 },
    { "x/sub/", AE_IFDIR, 0755, 0, NULL, NULL, 0 },
    { "x/sub/ok", AE_IFLNK, 0777, 0, "../suid", NULL, 0 },
    { "x/sub/root", AE_IFLNK, 0777, 0, "..", NULL, 0 },
    { "x/sub/zigzag", AE_IFLNK, 0777, 0, "root/../../etc", NULL, 0 },
    { "x/hl", AE_IFREG, 0644, 0, NULL, "x/suid", 0 },
    { "x/hl-out", AE_IFREG, 0644, 0, NULL, "etc/passwd", 0 },
    { "x/hl-dev", AE_IFREG, 0644, 0, NULL, "x/sub/ok", 0 },
    { "y/outside", AE_IFREG, 0644, 3, NULL, NULL, 0 },
    { "../evil", AE_IFREG, 0644, 3, NULL, NULL, 0 },
    { "/tmp/evil-abs", AE_IFREG, 0644, 3, NULL, NULL, 0 },
  };
  struct rt_unpack_limits lim = { .name = "x", .max_size = 1 << 20 };
  rt_copy_result r;
  char why[256];
  struct stat st;
  enum rt_unpack_status s = unpack (e, sizeof (e) / sizeof (e[0]), &lim, &r, why);

  ok (s == RT_UNPACK_OK, "a tree with devices, FIFOs, setuid and escaping links unpacks (status %d: %s)", s, why);
  ok (absent ("x/sda") && absent ("x/null"), "no block or character device lands");
  ok (absent ("x/fifo"), "no FIFO lands");
  ok ((mode_of ("x/suid") & 07777) == 0755, "setuid is dropped: 04755 -> 0755 (%o)", mode_of ("x/suid") & 07777);
  ok ((mode_of ("x/sgid") & 07777) == 0755, "setgid and world-writable are dropped: 02777 -> 0755 (%o)",
      mode_of ("x/sgid") & 07777);
  ok ((mode_of ("x/sticky") & 07777) == 0755, "sticky and world-writable directories: 01777 -> 0755 (%o)",
      mode_of ("x/sticky") & 07777);
  ok ((mode_of ("x") & 07777) == 0755, "the item's own 0777 -> 0755 (%o)", mode_of ("x") & 07777);
  ok ((mode_of ("x/locked") & 07777) == 0700, "a 0000 directory stays removable: 0700 (%o)",
      mode_of ("x/locked") & 07777);
  ok (absent ("x/abs"), "an absolute symlink (-> /etc/shadow) is skipped");
  ok (absent ("x/up"), "a symlink climbing out (-> ../../etc) is skipped");
  ok (S_ISLNK (mode_of ("x/sub/ok")) && S_ISLNK (mode_of ("x/sub/root")), "symlinks inside the copy are kept");
  ok (absent ("x/sub/zigzag"), "a symlink climbing after a name (root/../../etc) is skipped");
  ok (lstat ("x/hl", &st) == 0 && S_ISREG (st.st_mode) && st.st_nlink == 2, "a hard link to a copied file is kept");
  ok (absent ("x/hl-out") && absent ("x/hl-dev"), "hard links out of the copy or to a symlink are skipped");
  ok (absent ("y") && absent ("../evil") && absent ("/tmp/evil-abs"), "entries outside the item are not written");
  ok (r.devices == 2 && r.fifos == 1 && r.links == 3 && r.hardlinks == 2 && r.others == 3 && r.skipped == 11,
      "skipped 11, by kind: devices 2, FIFOs 1, links 3, hard links 2, others 3 (got %u: %u %u %u %u %u)", r.skipped,
      r.devices, r.fifos, r.links, r.hardlinks, r.others);
  ok (r.bytes == 10, "the bytes written are counted (%llu)", (unsigned long long) r.bytes);
}

static void
test_item_link (void)
{
  const struct ent e[] = { { "report.txt", AE_IFLNK, 0777, 0, "/etc/shadow", NULL, 0 } };
  struct rt_unpack_limits lim = { .name = "report.txt", .max_size = 1 << 20 };
  rt_copy_result r;
  char why[256];
  enum rt_unpack_status s = unpack (e, 1, &lim, &r, why);

  ok (s == RT_UNPACK_TOP_LINK && strcmp (why, "/etc/shadow") == 0 && absent ("report.txt"),
      "the item as a symlink (-> /etc/shadow) is refused, nothing written (status %d, '%s')", s, why);
  lim.keep_links = true;
  s = unpack (e, 1, &lim, &r, why);
  ok (s == RT_UNPACK_OK && S_ISLNK (mode_of ("report.txt")), "with keep_links it lands as a symlink (status %d)", s);
}

static void
test_limits (void)
{
  struct ent big[] = { { "x", AE_IFREG, 0644, 8192, NULL, NULL, 0 } };
  struct ent huge[]
      = { { "x/", AE_IFDIR, 0755, 0, NULL, NULL, 0 }, { "x/huge", AE_IFREG, 0644, 1LL << 40, NULL, NULL, 0 } };
  struct ent vast[]
      = { { "x/", AE_IFDIR, 0755, 0, NULL, NULL, 0 }, { "x/vast", AE_IFREG, 0644, 1LL << 60, NULL, NULL, 0 } };
  struct ent *bomb = calloc (5000, sizeof (*bomb));
  char (*names)[16] = calloc (5000, 16);
  struct rt_unpack_limits lim = { .name = "x", .max_size = 4096 };
  rt_copy_result r;
  char why[256];
  enum rt_unpack_status s;

  s = unpack (big, 1, &lim, &r, why);
  ok (s == RT_UNPACK_TOO_BIG && r.bytes == 0 && absent ("x"), "a file past the cap: too big, nothing written (%d)", s);
  lim.max_size = RT_COPY_MAX_SIZE_DEFAULT;
  s = unpack (huge, 2, &lim, &r, why);
  ok (s == RT_UNPACK_TOO_BIG && r.bytes == 0, "a 1 TiB header is refused before any byte (status %d)", s);
  lim.max_size = UINT64_MAX;
  s = unpack (vast, 2, &lim, &r, why);
  ok (s == RT_UNPACK_NO_SPACE && r.bytes == 0, "an entry larger than the free space: no space (status %d)", s);
  for (int i = 0; i < 5000; i++)
    {
      snprintf (names[i], 16, "x/f%d", i);
      bomb[i] = (struct ent){ names[i], AE_IFREG, 0644, 0, NULL, NULL, 0 };
    }
  lim.max_size = 1 << 20;
  s = unpack (bomb, 5000, &lim, &r, why);
  ok (s == RT_UNPACK_TOO_BIG, "5000 empty files count against a 1 MiB cap (status %d)", s);
  free (bomb);
  free (names);
}

/* A pax hard link may carry data: libarchive would then rewrite its target
   and chmod it with the link's mode, setuid included.  */
static void
test_hardlink_data (void)
{
  const struct ent e[] = {
    { "x/", AE_IFDIR, 0755, 0, NULL, NULL, 0, 0 },
    { "x/f", AE_IFREG, 0644, 5, NULL, NULL, 0, 0 },
    /* Named past 100 bytes: a pax header, so the size is obeyed.  */
    { "x/hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh",
      AE_IFREG, 06777, 5, NULL, "x/f", 0, 0 },
    { "x/h0", AE_IFREG, 06777, 0, NULL, "x/f", 0, 0 },
  };
  struct rt_unpack_limits lim = { .name = "x", .max_size = 1 << 20 };
  rt_copy_result r;
  char why[256];
  struct stat st;
  enum rt_unpack_status s = unpack (e, sizeof (e) / sizeof (e[0]), &lim, &r, why);

  ok (s == RT_UNPACK_OK, "a hard link with data (mode 06777, owner 0) unpacks (status %d: %s)", s, why);
  ok (lstat ("x/f", &st) == 0 && (st.st_mode & 07777) == 0644,
      "its target keeps its own mode: no setuid, setgid or world write (%o)", st.st_mode & 07777);
  ok (absent (e[2].name) && r.hardlinks == 1 && r.skipped == 1,
      "the hard link with data is skipped and counted (hard links %u, skipped %u)", r.hardlinks, r.skipped);
  ok (lstat ("x/h0", &st) == 0 && st.st_nlink == 2 && (st.st_mode & 07777) == 0644,
      "a hard link without data is kept, its 06777 never applied (%o, %lu links)", st.st_mode & 07777,
      (unsigned long) st.st_nlink);
}

/* A tree past what a path can name: removable by descriptors.  */
static void
test_rm_deep (void)
{
  int fd = open (".", O_RDONLY | O_DIRECTORY), made = 0;
  rt_error *err = NULL;

  if (fd < 0 || mkdir ("deep", 0700) < 0)
    abort ();
  for (int i = 0; i < 2500; i++)
    {
      int next;
      if (mkdirat (fd, i ? "a" : "deep", 0700) < 0 && i > 0)
        break;
      next = openat (fd, i ? "a" : "deep", O_RDONLY | O_DIRECTORY);
      close (fd);
      if ((fd = next) < 0)
        break;
      close (openat (fd, "file", O_WRONLY | O_CREAT, 0600));
      made++;
    }
  if (fd >= 0)
    close (fd);
  ok (made == 2500 && rt_rm_rf ("deep", &err) == 0 && absent ("deep"),
      "rt_rm_rf removes a tree 2500 directories deep (%d made: %s)", made, err ? err->msg : "ok");
  rt_error_free (err);
}

/* Past RT_LAYER_MAX_DEPTH or RT_LAYER_MAX_PATH: skipped, so that the
   copy's temp directory stays removable.  */
static void
test_deep (void)
{
  struct ent *e = calloc (2501, sizeof (*e));
  char *names = calloc (2501, 5010), seg[251];
  struct ent wide[12];
  char wnames[12][3000];
  struct rt_unpack_limits lim = { .name = "x", .max_size = 1 << 30 };
  rt_copy_result r;
  char why[256];
  enum rt_unpack_status s;

  strcpy (names, "x/");
  e[0] = (struct ent){ names, AE_IFDIR, 0755, 0, NULL, NULL, 0, 0 };
  for (int i = 1; i <= 2500; i++)
    {
      char *n = names + i * 5010;
      snprintf (n, 5010, "%sa/", names + (i - 1) * 5010);
      e[i] = (struct ent){ n, AE_IFDIR, 0755, 0, NULL, NULL, 0, 0 };
    }
  s = unpack (e, 2501, &lim, &r, why);
  ok (s == RT_UNPACK_OK && r.others == 2500 - 255 && r.skipped == r.others,
      "2500 nested directories: those past 256 components are skipped (status %d, skipped %u)", s, r.skipped);
  ok (rt_rm_rf ("x", NULL) == 0 && absent ("x"), "… and what landed can be removed");
  memset (seg, 'y', 250);
  seg[250] = '\0';
  strcpy (wnames[0], "x/");
  wide[0] = (struct ent){ wnames[0], AE_IFDIR, 0755, 0, NULL, NULL, 0, 0 };
  for (int i = 1; i < 12; i++)
    {
      snprintf (wnames[i], sizeof wnames[i], "%s%s/", wnames[i - 1], seg);
      wide[i] = (struct ent){ wnames[i], AE_IFDIR, 0755, 0, NULL, NULL, 0, 0 };
    }
  s = unpack (wide, 12, &lim, &r, why);
  ok (s == RT_UNPACK_OK && r.others == 3, "paths past 2048 bytes are skipped (status %d, skipped %u)", s, r.others);
  free (e);
  free (names);
}

/* Entries that each fit in the free space but not all together.  */
static void
test_space (void)
{
  struct statvfs vfs;
  int64_t part;
  struct rt_unpack_limits lim = { .name = "x", .max_size = UINT64_MAX };
  rt_copy_result r;
  char why[256];
  enum rt_unpack_status s;

  if (statvfs (base, &vfs) < 0)
    abort ();
  part = (int64_t) ((uint64_t) vfs.f_bavail * vfs.f_frsize / 5 * 3);
  {
    const struct ent e[] = {
      { "x/", AE_IFDIR, 0755, 0, NULL, NULL, 0, 0 },
      { "x/a", AE_IFREG, 0644, part, NULL, NULL, 0, 4096 },
      { "x/b", AE_IFREG, 0644, part, NULL, NULL, 0, 4096 },
    };
    s = unpack (e, 3, &lim, &r, why);
  }
  ok (s == RT_UNPACK_NO_SPACE && absent ("x/b"),
      "two sparse files of 3/5 of the free space each: no space at the second (status %d, %llu bytes)", s,
      (unsigned long long) r.bytes);
}

static void
test_broken (void)
{
  const struct ent other[] = { { "y", AE_IFREG, 0644, 3, NULL, NULL, 0 } };
  struct rt_unpack_limits lim = { .name = "x", .max_size = 1 << 20 };
  rt_copy_result r;
  char why[256];
  enum rt_unpack_status s = unpack (other, 1, &lim, &r, why);
  int fd;

  ok (s == RT_UNPACK_MISSING && absent ("y"), "an archive without the item: missing (status %d)", s);
  fd = open ("/dev/null", O_RDONLY);
  s = rt_unpack (fd, &lim, &r, why, sizeof why);
  close (fd);
  ok (s == RT_UNPACK_BROKEN, "an empty stream: broken (status %d, '%s')", s, why);
}

static void
test_escape (void)
{
  char out[64];
  const char s[] = "a\033[2Jb\n\302\233c\xc3\xa9";

  rt_unpack_escape (out, sizeof out, s, sizeof (s) - 1);
  ok (strcmp (out, "a\\x1b[2Jb\\x0a\\xc2\\x9bc\xc3\xa9") == 0, "control characters are escaped, UTF-8 kept: %s", out);
  rt_unpack_escape (out, 8, s, sizeof (s) - 1);
  ok (strlen (out) < 8, "escaping stays within its buffer ('%s')", out);
}

int
main (void)
{
  umask (022);
  if (mkdtemp (base) == NULL)
    return 1;
  test_hostile_tree ();
  test_item_link ();
  test_limits ();
  test_hardlink_data ();
  test_deep ();
  test_space ();
  test_rm_deep ();
  test_broken ();
  test_escape ();
  if (chdir ("/") < 0 || rt_rm_rf (base, NULL) < 0)
    return 1;
  return tap_done ();
}
