/* test-template.c - templates on disk without a VM (template/template.h):
   keys, lookup, listing, removal and sweep over fake template dirs, and
   the keeper: a sealed memfd that nothing can write, one per template,
   gone when idle, when its dir goes, and after a kill -9 replaced with
   nothing left behind.  */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/pidfile.h"
#include "snapshot/saved.h"
#include "tap.h"
#include "template/template.h"

#define MIB 4 /* the fake templates' memory */

static char top[] = "/tmp/rt-template.XXXXXX";
static char files[512], tdir[512], sockdir[512];

static void
put (const char *path, const char *text)
{
  FILE *f = fopen (path, "w");
  if (f)
    {
      fputs (text, f);
      fclose (f);
    }
}

/* A whole fake template of @in under its key (without @skip, when not
   NULL); its RAM: a pattern at 0 and 2 MiB, a written zero page at
   1 MiB, holes elsewhere.  */
static void
make_fake (rt_context *ctx, const struct rt_template_inputs *in, const char *skip, char key[65])
{
  static const char *const names[] = { "state", "disk.qcow2", "clone.qcow2" };
  json_object *inputs = NULL, *meta = json_object_new_object ();
  rt_error *err = NULL;
  char dir[700], path[800], page[4096];
  int fd;

  if (rt_template_key (ctx, in, key, &inputs, &err) < 0)
    return;
  snprintf (dir, sizeof dir, "%s/%s", tdir, key);
  mkdir (tdir, 0755);
  mkdir (dir, 0755);
  json_object_object_add (meta, "inputs", inputs);
  json_object_object_add (meta, "createdAt", json_object_new_string ("2026-12-01T00:00:00Z"));
  json_object_object_add (meta, "cmdline", json_object_new_string ("console=hvc0 quiet"));
  json_object_object_add (meta, "memoryMiB", json_object_new_int (in->memory_mib));
  json_object_object_add (meta, "makeMs", json_object_new_int (1234));
  snprintf (path, sizeof path, "%s/meta.json", dir);
  put (path, json_object_to_json_string (meta));
  json_object_put (meta);
  for (size_t i = 0; i < 3; i++)
    if (skip == NULL || strcmp (skip, names[i]) != 0)
      {
        snprintf (path, sizeof path, "%s/%s", dir, names[i]);
        put (path, names[i]);
      }
  /* Written as a template's maker writes it (snapshot/ramfile.h).  */
  snprintf (path, sizeof path, "%s/ram", dir);
  unlink (path);
  fd = memfd_create ("fake-ram", MFD_CLOEXEC);
  memset (page, 'A', sizeof page);
  ok (ftruncate (fd, (off_t) in->memory_mib << 20) == 0 && pwrite (fd, page, sizeof page, 0) == sizeof page,
      "fake RAM page 0 written");
  memset (page, 0, sizeof page);
  ok (pwrite (fd, page, sizeof page, 1 << 20) == sizeof page, "a zero page at 1 MiB");
  memset (page, 'B', sizeof page);
  ok (pwrite (fd, page, 100, 2 << 20) == 100 && rt_saved_write_ram (fd, (uint64_t) in->memory_mib << 20, path, true, NULL, &err) == 0,
      "100 bytes at 2 MiB, saved as a RAM of %d MiB %s", (int) in->memory_mib, err ? err->msg : "");
  rt_error_free (err);
  close (fd);
}

/* How many other processes hold the file @fd is (its keepers), and one
   of their pids in *pid.  */
static int
holders (int fd, pid_t *pid)
{
  DIR *proc = opendir ("/proc");
  struct dirent *de;
  struct stat me, st;
  int n = 0;

  fstat (fd, &me);
  while (proc && (de = readdir (proc)))
    {
      char path[600];
      DIR *fds;
      struct dirent *f;
      bool found = false;
      if (atoi (de->d_name) <= 0 || atoi (de->d_name) == getpid ())
        continue;
      snprintf (path, sizeof path, "/proc/%s/fd", de->d_name);
      fds = opendir (path);
      while (fds && !found && (f = readdir (fds)))
        {
          snprintf (path, sizeof path, "/proc/%s/fd/%s", de->d_name, f->d_name);
          found = f->d_name[0] != '.' && stat (path, &st) == 0 && st.st_ino == me.st_ino && st.st_dev == me.st_dev;
        }
      if (fds)
        closedir (fds);
      if (found)
        {
          n++;
          if (pid)
            *pid = atoi (de->d_name);
        }
    }
  if (proc)
    closedir (proc);
  return n;
}

/* Waits up to @ms for the file of @fd to have no holder but us.  */
static bool
keeper_gone (int fd, int ms)
{
  for (int i = 0; i < ms / 50; i++)
    {
      if (holders (fd, NULL) == 0)
        return true;
      usleep (50 * 1000);
    }
  return false;
}

/* Whether the template dir of @key (@sock false) or its keeper's socket
   is there.  */
static bool
present (const char *key, bool sock)
{
  char path[700];
  if (sock)
    snprintf (path, sizeof path, "%s/%.32s.sock", sockdir, key);
  else
    snprintf (path, sizeof path, "%s/%s", tdir, key);
  return access (path, F_OK) == 0;
}

static bool
sock_exists (const char *key)
{
  return present (key, true);
}

static bool
exists (const char *key)
{
  return present (key, false);
}

static int
count_socks (void)
{
  DIR *d = opendir (sockdir);
  struct dirent *de;
  int n = 0;

  while (d && (de = readdir (d)))
    n += strstr (de->d_name, ".sock") != NULL;
  if (d)
    closedir (d);
  return n;
}

static bool
key_changes (rt_context *ctx, const struct rt_template_inputs *in, const char *base)
{
  char key[65];
  rt_error *err = NULL;
  bool changed = rt_template_key (ctx, in, key, NULL, &err) == 0 && strcmp (key, base) != 0;

  rt_error_free (err);
  return changed;
}

/* Each file input: a changed mtime is another key, and so is a file
   replaced (another inode) or grown.  */
static void
test_key_files (rt_context *ctx, struct rt_template_inputs *in, const char *base)
{
  const char *paths[] = { in->disk, in->vmlinux, in->initramfs, ctx->qemu };
  const char *names[] = { "disk", "vmlinux", "initramfs", "QEMU binary" };
  char key[65], tmp[600];
  rt_error *err = NULL;
  struct stat st;

  for (size_t i = 0; i < 4; i++)
    {
      struct timespec t[2];
      stat (paths[i], &st);
      t[0] = st.st_atim;
      t[1] = (struct timespec){ .tv_sec = st.st_mtim.tv_sec - 10 };
      utimensat (AT_FDCWD, paths[i], t, 0);
      ok (key_changes (ctx, in, base), "the key changes with the %s's mtime", names[i]);
      t[1] = st.st_mtim;
      utimensat (AT_FDCWD, paths[i], t, 0);
      ok (!key_changes (ctx, in, base), "and is the same again with its mtime back");
    }
  snprintf (tmp, sizeof tmp, "%s.new", in->disk);
  put (tmp, "disk");
  rename (tmp, in->disk);
  ok (key_changes (ctx, in, base), "the key changes with the disk replaced (its inode)");
  rt_template_key (ctx, in, key, NULL, &err);
  ok (truncate (in->disk, 8192) == 0 && key_changes (ctx, in, key), "and with its size");
  ok (rt_template_key (ctx, &(struct rt_template_inputs){ .image_id = "x", .accel = "tcg", .disk = "/nonexistent" }, key,
                       NULL, &err) < 0 && strcmp (err->code, "file_not_found") == 0,
      "a missing input file is an error: %s", err ? err->msg : "");
  rt_error_free (err);
}

static void
test_key (rt_context *ctx, struct rt_template_inputs *in)
{
  char a[65], b[65];
  rt_error *err = NULL;
  json_object *inputs = NULL;
  struct rt_template_inputs o;

  ok (rt_template_key (ctx, in, a, &inputs, &err) == 0 && rt_template_key (ctx, in, b, NULL, &err) == 0
          && strcmp (a, b) == 0 && strlen (a) == 64,
      "the key is stable: %s", a);
  ok (inputs && strcmp (rt_json_str (inputs, "imageId"), in->image_id) == 0 && strcmp (rt_json_str (inputs, "accel"), "tcg") == 0,
      "its inputs are an object: %s", inputs ? json_object_to_json_string (inputs) : "NULL");
  json_object_put (inputs);
  o = *in, o.image_id = "bbbb";
  ok (key_changes (ctx, &o, a), "the key changes with the image id");
  o = *in, o.vcpu = 4;
  ok (key_changes (ctx, &o, a), "the key changes with the vCPUs");
  o = *in, o.memory_mib = 8;
  ok (key_changes (ctx, &o, a), "the key changes with the memory");
  o = *in, o.disk_mib = 8192;
  ok (key_changes (ctx, &o, a), "the key changes with the disk size");
  o = *in, o.accel = "kvm";
  ok (key_changes (ctx, &o, a), "the key changes with the accelerator");
  o = *in, o.initramfs = in->vmlinux;
  ok (key_changes (ctx, &o, a), "the key changes with the initramfs's path");
  test_key_files (ctx, in, a);
}

static void
test_find_list (rt_context *ctx, struct rt_template_inputs *in)
{
  struct rt_template t;
  struct rt_template_inputs o = *in;
  rt_error *err = NULL;
  json_object *arr = NULL;
  char key[65], other[65], path[800];

  ok (rt_template_find (ctx, in, &t, &err) == 0, "no template: find says 0");
  make_fake (ctx, in, NULL, key);
  ok (rt_template_find (ctx, in, &t, &err) == 1 && strcmp (t.key, key) == 0 && t.memory_mib == MIB
          && strcmp (t.cmdline, "console=hvc0 quiet") == 0 && strstr (t.ram, key) && strstr (t.clone_disk, "/clone.qcow2"),
      "a whole template is found, with its cmdline and memory");
  rt_template_clear (&t);
  o.vcpu = 3;
  make_fake (ctx, &o, "clone.qcow2", other);
  ok (rt_template_find (ctx, &o, &t, &err) == 0, "one without clone.qcow2 is not used");
  snprintf (path, sizeof path, "%s/%s/clone.qcow2", tdir, other);
  put (path, "");
  snprintf (path, sizeof path, "%s/%s/meta.json", tdir, other);
  put (path, "{\"inputs\":");
  ok (rt_template_find (ctx, &o, &t, &err) == 0, "one whose meta.json does not parse is not used");
  put (path, "{\"inputs\":{\"imageId\":\"forged\"},\"cmdline\":\"x\",\"memoryMiB\":4}");
  ok (rt_template_find (ctx, &o, &t, &err) == 0, "one whose inputs do not hash to its name is not used");
  snprintf (path, sizeof path, "%s/.tmp-abcdef", tdir);
  mkdir (path, 0755);
  ok (rt_template_list (ctx, &arr, &err) == 0 && json_object_array_length (arr) == 1, "list shows the one whole template");
  ok (arr && strcmp (rt_json_str (json_object_array_get_idx (arr, 0), "key"), key) == 0
          && json_object_get_int64 (json_object_object_get (json_object_array_get_idx (arr, 0), "sizeBytes")) >= 8192,
      "with its key and size on disk: %s", arr ? json_object_to_json_string (arr) : "NULL");
  json_object_put (arr);
  snprintf (path, sizeof path, "%s/%s", tdir, other);
  rt_rm_rf (path, NULL);
  snprintf (path, sizeof path, "%s/.tmp-abcdef", tdir);
  rmdir (path);
}

/* The sealed memfd: its content, and every way to change it refused.  */
static void
test_sealed (int fd)
{
  char buf[4096], *p;
  bool same = true;

  ok (pread (fd, buf, sizeof buf, 0) == sizeof buf && buf[0] == 'A' && buf[4095] == 'A', "the RAM holds page 0");
  ok (pread (fd, buf, 100, 2 << 20) == 100 && buf[0] == 'B' && buf[99] == 'B', "and the page at 2 MiB");
  ok (pread (fd, buf, 1, (1 << 20) + 7) == 1 && buf[0] == 0 && pread (fd, buf, 1, 3 << 20) == 1 && buf[0] == 0,
      "zeros and holes read as zeros");
  ok (write (fd, "x", 1) < 0 && errno == EPERM, "write() is refused");
  ok (mmap (NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED, "a shared writable mapping is refused");
  ok (ftruncate (fd, 1 << 20) < 0 && ftruncate (fd, 8 << 20) < 0, "shrinking and growing are refused");
  ok (fallocate (fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096) < 0, "punching a hole is refused");
  ok (fcntl (fd, F_ADD_SEALS, 0) < 0 || fcntl (fd, F_GET_SEALS) & F_SEAL_SEAL, "the seals cannot be removed");
  p = mmap (NULL, MIB << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  ok (p != MAP_FAILED, "a private writable mapping works");
  same = false;
  if (p != MAP_FAILED)
    {
      memset (p, 'Z', 8192);
      same = pread (fd, buf, 1, 0) == 1 && buf[0] == 'A' && p[0] == 'Z';
      munmap (p, MIB << 20);
    }
  ok (same, "and writing it leaves the memfd as it was");
}

/* Whether @pid holds no capability (CapEff, CapPrm).  */
static bool
no_caps (pid_t pid)
{
  char path[64], line[300];
  bool caps = false;
  FILE *f;

  snprintf (path, sizeof path, "/proc/%d/status", (int) pid);
  f = fopen (path, "r");
  while (f && fgets (line, sizeof line, f))
    if (strncmp (line, "CapEff:", 7) == 0 || strncmp (line, "CapPrm:", 7) == 0)
      caps |= strtoull (line + 7, NULL, 16) != 0;
  if (f)
    fclose (f);
  return f && !caps;
}

/* What a keeper holds: cwd /, stdio on /dev/null, its socket and the
   memfd, no other fd, no capability.  */
static void
test_keeper_process (pid_t pid)
{
  char path[300], link[300];
  int fds = 0, nulls = 0;
  DIR *d;
  struct dirent *de;
  ssize_t n;

  snprintf (path, sizeof path, "/proc/%d/cwd", (int) pid);
  n = readlink (path, link, sizeof link - 1);
  ok (n == 1 && link[0] == '/', "the keeper's cwd is /");
  /* A connection it answered a moment ago may still be open: looked at
     again until it is closed (at most 1 s).  */
  for (int tries = 0; tries < 100 && (tries == 0 || fds != 5); tries++)
    {
      if (tries)
        usleep (10000);
      fds = nulls = 0;
      snprintf (path, sizeof path, "/proc/%d/fd", (int) pid);
      d = opendir (path);
      while (d && (de = readdir (d)))
        {
          if (de->d_name[0] == '.')
            continue;
          fds++;
          snprintf (path, sizeof path, "/proc/%d/fd/%.20s", (int) pid, de->d_name);
          n = readlink (path, link, sizeof link - 1);
          link[n > 0 ? n : 0] = '\0';
          nulls += atoi (de->d_name) <= 2 && strcmp (link, "/dev/null") == 0;
        }
      if (d)
        closedir (d);
    }
  ok (fds == 5 && nulls == 3, "it has stdio on /dev/null, its socket and the memfd, nothing else (%d fds)", fds);
  ok (no_caps (pid), "and no capability");
}

/* A caller without CAP_SETPCAP (a monitor after its start) still gets a
   keeper, and that keeper holds no capability.  */
static void
test_keeper_unprivileged (rt_context *ctx, struct rt_template_inputs *in)
{
  struct rt_template t;
  rt_error *err = NULL;
  char key[65];
  int status = -1;
  pid_t child;

  make_fake (ctx, in, NULL, key);
  rt_template_find (ctx, in, &t, &err);
  ctx->template_keep_s = 1;
  child = fork ();
  if (child == 0)
    {
      struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
      struct __user_cap_data_struct data[2];
      int fd = -1;
      pid_t keeper = 0;
      syscall (SYS_capget, &hdr, data);
      data[0].effective &= ~(1u << CAP_SETPCAP);
      data[0].permitted &= ~(1u << CAP_SETPCAP);
      if (syscall (SYS_capset, &hdr, data) < 0 || rt_template_ram_fd (ctx, &t, &fd, &err) < 0)
        _exit (2);
      if (holders (fd, &keeper) != 1)
        _exit (1);
      /* It drops them just before it serves: wait for that.  */
      for (int i = 0; i < 40 && !no_caps (keeper); i++)
        usleep (50 * 1000);
      _exit (no_caps (keeper) ? 0 : 3);
    }
  waitpid (child, &status, 0);
  ok (WIFEXITED (status) && WEXITSTATUS (status) == 0,
      "a caller without CAP_SETPCAP gets a keeper, and it holds no capability (%d)", status);
  usleep (2500 * 1000);
  ok (!sock_exists (key), "that keeper is gone after 1 s unasked");
  rt_template_clear (&t);
}

static void
test_keeper (rt_context *ctx, struct rt_template_inputs *in)
{
  struct rt_template t;
  rt_error *err = NULL;
  int fd = -1, fd2 = -1, n;
  struct stat a, b;
  pid_t pid = 0;

  rt_template_find (ctx, in, &t, &err);
  ctx->template_keep_s = 1;
  ok (rt_template_ram_fd (ctx, &t, &fd, &err) == 0 && fd >= 0, "ram_fd gives an fd %s", err ? err->msg : "");
  test_sealed (fd);
  ok (rt_template_ram_fd (ctx, &t, &fd2, &err) == 0 && fstat (fd, &a) == 0 && fstat (fd2, &b) == 0 && a.st_ino == b.st_ino,
      "a second call gets the same memfd (inode %lu)", (unsigned long) a.st_ino);
  ok ((n = holders (fd, &pid)) == 1, "one keeper holds it (%d)", n);
  test_keeper_process (pid);
  ok (sock_exists (t.key), "its socket is there");
  close (fd2);
  ok (keeper_gone (fd, 5000) && !sock_exists (t.key), "the keeper exits after 1 s unasked, its socket gone");
  close (fd);

  ctx->template_keep_s = 60;
  rt_template_ram_fd (ctx, &t, &fd, &err);
  ok (holders (fd, &pid) == 1 && kill (pid, SIGKILL) == 0 && keeper_gone (fd, 3000) && sock_exists (t.key),
      "a keeper killed with -9 leaves its socket");
  ok (rt_template_ram_fd (ctx, &t, &fd2, &err) == 0 && holders (fd2, NULL) == 1 && fstat (fd, &a) == 0
          && fstat (fd2, &b) == 0 && a.st_ino != b.st_ino,
      "the next call works: a new keeper %s", err ? err->msg : "");
  close (fd);
  fd = fd2;
  rt_rm_rf (t.dir, NULL);
  ok (keeper_gone (fd, 4000) && !sock_exists (t.key), "a keeper exits when its dir is removed, its socket gone");
  close (fd);
  fd = -1;
  ok (rt_template_ram_fd (ctx, &t, &fd, &err) < 0 && fd == -1, "no template dir: no RAM");
  rt_error_free (err);
  err = NULL;
  rt_template_clear (&t);
}

static void
test_remove (rt_context *ctx, struct rt_template_inputs *in)
{
  struct rt_template_inputs stale = *in, shape = *in, image = *in, busy = *in;
  char k[65], ks[65], kshape[65], kimage[65], kbusy[65], path[700];
  struct rt_template t;
  rt_error *err = NULL;
  int fd = -1, lock;
  pid_t pid = 0;

  stale.disk_mib = 8192;
  shape.memory_mib = 8;
  image.image_id = "cccc";
  busy.accel = "kvm";
  make_fake (ctx, in, NULL, k);
  make_fake (ctx, &stale, NULL, ks);
  make_fake (ctx, &shape, NULL, kshape);
  make_fake (ctx, &image, NULL, kimage);
  make_fake (ctx, &busy, NULL, kbusy);
  snprintf (path, sizeof path, "%s/.lock-%s", tdir, kbusy);
  lock = open (path, O_RDWR | O_CREAT, 0600);
  flock (lock, LOCK_EX);
  rt_template_remove_stale (ctx, in, k);
  ok (exists (k) && !exists (ks), "remove_stale removes another key of the same image and shape");
  ok (exists (kshape) && exists (kimage), "and keeps other shapes and images");
  ok (exists (kbusy), "and one whose maker holds its lock");
  close (lock);

  /* One keeper alive, one killed (its socket left behind).  */
  rt_template_find (ctx, &shape, &t, &err);
  rt_template_ram_fd (ctx, &t, &fd, &err);
  ok (fd >= 0 && holders (fd, &pid) == 1 && kill (pid, SIGKILL) == 0 && keeper_gone (fd, 3000) && sock_exists (kshape),
      "a killed keeper's socket is left");
  close (fd);
  rt_template_clear (&t);
  rt_template_find (ctx, in, &t, &err);
  rt_template_ram_fd (ctx, &t, &fd, &err);
  ok (rt_template_remove_image (ctx, in->image_id, &err) == 0 && !exists (k) && !exists (kshape) && !exists (kbusy),
      "remove_image removes every template of the image");
  ok (exists (kimage), "and no other image's");
  ok (fd >= 0 && keeper_gone (fd, 500) && !sock_exists (t.key), "its live keeper has ended, its socket gone");
  ok (!sock_exists (kshape), "and the killed keeper's socket is gone too");
  close (fd);
  rt_template_clear (&t);
  ok (rt_template_remove_image (ctx, image.image_id, &err) == 0 && !exists (kimage), "the other image's go too");
}

static void
test_sweep (rt_context *ctx)
{
  char fresh[700], old[700], del[700], lockp[700], live[700], dead[700], pidfile[800];
  struct timespec t[2] = { { .tv_sec = time (NULL) - 7200 }, { .tv_sec = time (NULL) - 7200 } };
  int lock;

  snprintf (fresh, sizeof fresh, "%s/.tmp-fresh1", tdir);
  snprintf (old, sizeof old, "%s/.tmp-old111", tdir);
  snprintf (del, sizeof del, "%s/.tmp-del-abcdef", tdir);
  snprintf (live, sizeof live, "%s/.tmp-live11", tdir);
  snprintf (dead, sizeof dead, "%s/.tmp-dead11", tdir);
  snprintf (lockp, sizeof lockp, "%s/.lock-%064d", tdir, 0);
  mkdir (fresh, 0755);
  mkdir (old, 0755);
  mkdir (del, 0755);
  snprintf (pidfile, sizeof pidfile, "%s/ram", del);
  put (pidfile, "half");
  utimensat (AT_FDCWD, old, t, 0);
  lock = open (lockp, O_RDWR | O_CREAT, 0600);
  flock (lock, LOCK_EX);
  mkdir (live, 0755);
  mkdir (dead, 0755);
  snprintf (pidfile, sizeof pidfile, "%s/maker.pid", live);
  rt_write_pidfile (pidfile, getpid (), NULL);
  snprintf (pidfile, sizeof pidfile, "%s/maker.pid", dead);
  put (pidfile, "2147483646 1\n");
  rt_template_sweep (ctx);
  ok (access (fresh, F_OK) == 0, "sweep keeps a young .tmp- dir while a maker holds its lock");
  ok (access (old, F_OK) < 0 && access (del, F_OK) < 0, "and removes an hour-old one and a removal cut short");
  ok (access (dead, F_OK) < 0, "and one whose maker.pid names a dead process");
  close (lock);
  rt_template_sweep (ctx);
  ok (access (fresh, F_OK) < 0, "with no maker running, every .tmp- dir without maker.pid goes");
  ok (access (live, F_OK) == 0, "but not one whose maker.pid names a live process");
  rt_rm_rf (live, NULL);
}

int
main (void)
{
  rt_context *ctx = NULL;
  rt_error *err = NULL;
  char path[600], disk[600], vmlinux[600], initramfs[600], qemu[600];
  struct rt_template_inputs in;

  if (mkdtemp (top) == NULL)
    return 1;
  snprintf (path, sizeof path, "%s/cache", top);
  setenv ("RUNTIME_CACHE_DIR", path, 1);
  snprintf (path, sizeof path, "%s/state", top);
  setenv ("RUNTIME_STATE_DIR", path, 1);
  snprintf (tdir, sizeof tdir, "%s/cache/templates", top);
  snprintf (sockdir, sizeof sockdir, "%s/state/.templates", top);
  snprintf (files, sizeof files, "%s/files", top);
  mkdir (files, 0755);
  snprintf (path, sizeof path, "%s/cache", top);
  mkdir (path, 0755);
  snprintf (disk, sizeof disk, "%s/disk.ext4", files);
  snprintf (vmlinux, sizeof vmlinux, "%s/vmlinux", files);
  snprintf (initramfs, sizeof initramfs, "%s/initramfs-1.cpio", files);
  snprintf (qemu, sizeof qemu, "%s/qemu", files);
  put (disk, "disk");
  put (vmlinux, "vmlinux");
  put (initramfs, "initramfs");
  put (qemu, "qemu");
  if (rt_context_new (&ctx, &err) < 0)
    return 1;
  free (ctx->qemu);
  ctx->qemu = strdup (qemu);
  in = (struct rt_template_inputs){ .image_id = "aaaa", .disk = disk, .vcpu = 2, .memory_mib = MIB, .disk_mib = 4096,
                                    .vmlinux = vmlinux, .initramfs = initramfs, .accel = "tcg" };

  test_key (ctx, &in);
  test_find_list (ctx, &in);
  test_keeper (ctx, &in);
  test_keeper_unprivileged (ctx, &in);
  test_remove (ctx, &in);
  test_sweep (ctx);
  ok (count_socks () == 0, "no keeper socket is left");

  rt_context_free (ctx);
  rt_rm_rf (top, NULL);
  return tap_done ();
}
