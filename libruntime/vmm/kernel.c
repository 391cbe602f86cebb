/* kernel.c - the guest kernel (Debian's cloud kernel, unpacked to an ELF
   vmlinux and the few modules the agent loads); initramfs.c packs those
   with the agent.

   Cache layout under <cache>/kernel/:
     current                    symlink naming the version fetched with apt
     deb-<key>                  same, for a RUNTIME_KERNEL .deb (key: its stat)
     <version>/vmlinux          uncompressed ELF kernel, booted through PVH
     <version>/modules/<name>.ko  the modules listed in rt_initramfs_modules[]
     <version>/initramfs-<agentkey>.cpio
     .lock                      flock held around every slow step
   A version directory is made under a temp name and renamed whole, so its
   presence means it is complete.  */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "core/archive.h"
#include "vmm/initramfs.h"
#include "vmm/kernel.h"

/* Bounds on what we accept from a .deb; real ones are far below.  */
#define MAX_VMLINUZ (256u << 20)
#define MAX_MODULE (64u << 20)

void
rt_kernel_files_clear (struct rt_kernel_files *k)
{
  if (k == NULL)
    return;
  free (k->vmlinux);
  free (k->initramfs);
  free (k->version);
  k->vmlinux = k->initramfs = k->version = NULL;
}

static void
fnv1a (uint64_t *h, const void *data, size_t len)
{
  const unsigned char *p = data;

  for (size_t i = 0; i < len; i++)
    {
      *h ^= p[i];
      *h *= 0x100000001b3ULL;
    }
}

/* A short key that changes whenever the file is replaced or rewritten,
   or one of @extra (NULL-terminated, may be NULL) changes.  Cheap on
   purpose: it runs on every sandbox start.  */
static void
stat_key (const struct stat *st, const char *const *extra, char key[17])
{
  uint64_t h = 0xcbf29ce484222325ULL;
  uint64_t v[5] = { st->st_dev, st->st_ino, (uint64_t) st->st_size, (uint64_t) st->st_mtim.tv_sec,
                    (uint64_t) st->st_mtim.tv_nsec };

  fnv1a (&h, v, sizeof (v));
  for (; extra && *extra; extra++)
    fnv1a (&h, *extra, strlen (*extra) + 1);
  snprintf (key, 17, "%016llx", (unsigned long long) h);
}

static bool
valid_version (const char *v)
{
  if (v == NULL || *v == '\0' || *v == '.' || strlen (v) > 128)
    return false;
  return strspn (v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.+-_~") == strlen (v);
}

static int
agent_key (rt_context *ctx, char key[17], rt_error **err)
{
  struct stat st;

  if (ctx->agent == NULL || stat (ctx->agent, &st) < 0 || !S_ISREG (st.st_mode))
    {
      rt_error_set (err, errno ? errno : ENOENT, "internal", "guest agent '%s' not found",
                    ctx->agent ? ctx->agent : "(unset)");
      return rt_error_hint (err, "reinstall runtime or set RUNTIME_AGENT");
    }
  /* The module list is in the initramfs too: a changed list rebuilds it.  */
  stat_key (&st, rt_initramfs_modules, key);
  return 0;
}

/* The name of the pointer that says which version to use: "current" for
   apt's kernel, "deb-<key>" for RUNTIME_KERNEL so that pointing it at
   another .deb takes effect.  */
static int
pointer_name (rt_context *ctx, char **out, rt_error **err)
{
  struct stat st;
  char key[17];

  if (ctx->kernel_deb == NULL)
    *out = strdup ("current");
  else
    {
      if (stat (ctx->kernel_deb, &st) < 0)
        {
          rt_error_set (err, errno, "internal", "cannot use RUNTIME_KERNEL '%s': %s", ctx->kernel_deb,
                        strerror (errno));
          return rt_error_hint (err, "set RUNTIME_KERNEL to a linux-image-*-cloud-amd64 .deb, or unset it");
        }
      stat_key (&st, NULL, key);
      *out = rt_strdup_printf ("deb-%s", key);
    }
  return *out ? 0 : rt_error_oom (err);
}

static char *
read_pointer (const char *kdir, const char *name)
{
  char path[PATH_MAX], target[256];
  ssize_t n;

  if (snprintf (path, sizeof (path), "%s/%s", kdir, name) >= (int) sizeof (path))
    return NULL;
  n = readlink (path, target, sizeof (target) - 1);
  if (n <= 0)
    return NULL;
  target[n] = '\0';
  return valid_version (target) ? strdup (target) : NULL;
}

/* Whether kernel/<version> has the vmlinux and every module we load
   (older caches may lack one added since).  */
static bool
version_complete (const char *kdir, const char *version)
{
  char path[PATH_MAX];
  struct stat st;

  if (snprintf (path, sizeof (path), "%s/%s/vmlinux", kdir, version) >= (int) sizeof (path) || stat (path, &st) < 0)
    return false;
  for (size_t i = 0; i < RT_INITRAMFS_N_MODULES; i++)
    if (snprintf (path, sizeof (path), "%s/%s/modules/%s.ko", kdir, version, rt_initramfs_modules[i]) >= (int) sizeof (path)
        || stat (path, &st) < 0)
      return false;
  return true;
}

/* Fills @out when everything for @version and @akey is in place.
   Return: 1 when cached, 0 when not, <0 on out of memory.  */
static int
lookup_cached (const char *kdir, const char *version, const char *akey, struct rt_kernel_files *out, rt_error **err)
{
  cleanup_free char *vmlinux = rt_strdup_printf ("%s/%s/vmlinux", kdir, version);
  cleanup_free char *initramfs = rt_strdup_printf ("%s/%s/initramfs-%s.cpio", kdir, version, akey);
  cleanup_free char *ver = strdup (version);
  struct stat st;

  if (vmlinux == NULL || initramfs == NULL || ver == NULL)
    return rt_error_oom (err);
  if (stat (vmlinux, &st) < 0 || !S_ISREG (st.st_mode) || stat (initramfs, &st) < 0 || !S_ISREG (st.st_mode))
    return 0;
  out->vmlinux = steal_pointer (&vmlinux);
  out->initramfs = steal_pointer (&initramfs);
  out->version = steal_pointer (&ver);
  return 1;
}

/* Finds the cloud kernel package apt would install and downloads it into
   @dir.  */
static int
download_deb (rt_context *ctx, const char *dir, char **deb, rt_error **err)
{
  char *depends_argv[] = { (char *) "apt-cache", (char *) "depends", (char *) "linux-image-cloud-amd64", NULL };
  cleanup_free char *output = NULL;
  cleanup_free char *pkg = NULL;
  cleanup_free char *dl_output = NULL;
  cleanup_dir DIR *d = NULL;
  struct dirent *de;
  char *line, *save = NULL;
  int ret;

  ret = rt_run_capture (depends_argv, &output, err);
  if (ret < 0)
    return ret;
  for (line = strtok_r (output, "\n", &save); ret == 0 && line; line = strtok_r (NULL, "\n", &save))
    {
      const char *p = line + strspn (line, " \t|");
      if (strncmp (p, "Depends: linux-image-", 21) == 0)
        {
          pkg = strndup (p + 9, strcspn (p + 9, " \t"));
          break;
        }
    }
  if (pkg == NULL)
    {
      rt_error_set (err, ENOENT, "internal", "cannot find the Debian cloud kernel package");
      return rt_error_hint (err, "run apt-get update, or set RUNTIME_KERNEL to a linux-image-*-cloud-amd64 .deb");
    }

  rt_progress (ctx, "Fetching the guest kernel (%s)…", pkg);
  /* apt-get download saves into the working directory; the positional
     parameters keep the names out of the shell's parsing.  */
  {
    char *argv[] = { (char *) "/bin/sh", (char *) "-c", (char *) "cd \"$1\" && exec apt-get -q download \"$2\"",
                     (char *) "sh", (char *) dir, pkg, NULL };
    ret = rt_run_capture (argv, &dl_output, err);
    if (ret < 0)
      return ret;
    if (ret != 0)
      {
        rt_error_set (err, EIO, "internal", "apt-get download %s failed: %s", pkg, dl_output);
        return rt_error_hint (err, "check the network and apt's sources, or set RUNTIME_KERNEL to a .deb");
      }
  }

  d = opendir (dir);
  if (d == NULL)
    return rt_error_set (err, errno, "internal", "cannot open '%s': %s", dir, strerror (errno));
  while ((de = readdir (d)))
    if (fnmatch ("linux-image-*.deb", de->d_name, 0) == 0)
      {
        *deb = rt_strdup_printf ("%s/%s", dir, de->d_name);
        return *deb ? 0 : rt_error_oom (err);
      }
  return rt_error_set (err, ENOENT, "internal", "apt-get download %s left no .deb in '%s'", pkg, dir);
}

static int
create_file (const char *dir, const char *name, mode_t mode, rt_error **err)
{
  cleanup_free char *path = rt_strdup_printf ("%s/%s", dir, name);
  int fd;

  if (path == NULL)
    return rt_error_oom (err);
  fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", path, strerror (errno));
  return fd;
}

/* Reads the current entry of @a into memory.  */
static int
read_entry (struct archive *a, struct archive_entry *e, size_t max, char **out, size_t *len, rt_error **err)
{
  cleanup_free char *buf = NULL;
  size_t size = 0, alloc = 0;
  la_int64_t hint = archive_entry_size_is_set (e) ? archive_entry_size (e) : 0;

  if (hint < 0 || (uint64_t) hint > max)
    return rt_error_set (err, EFBIG, "internal", "'%s' in the kernel package is too large", archive_entry_pathname (e));
  alloc = hint + 65536;
  buf = malloc (alloc);
  if (buf == NULL)
    return rt_error_oom (err);
  for (;;)
    {
      la_ssize_t n;
      if (alloc == size)
        {
          char *nb;
          if (alloc > max)
            return rt_error_set (err, EFBIG, "internal", "'%s' in the kernel package is too large",
                                 archive_entry_pathname (e));
          alloc = alloc * 2 + 65536;
          nb = realloc (buf, alloc);
          if (nb == NULL)
            return rt_error_oom (err);
          buf = nb;
        }
      n = archive_read_data (a, buf + size, alloc - size);
      if (n < 0)
        return rt_archive_fail (err, a, "cannot read", archive_entry_pathname (e));
      if (n == 0)
        break;
      size += n;
    }
  *len = size;
  *out = steal_pointer (&buf);
  return 0;
}

/* Decompresses @data (any format libarchive knows: xz, lz4 legacy, gzip,
   zstd, …) into @fd; *written is the output size and *head its first
   bytes, for callers that check a magic number.  */
static int
decompress_to_fd (const void *data, size_t len, int fd, const char *what, uint64_t *written, unsigned char head[4],
                  rt_error **err)
{
  struct archive *a = archive_read_new ();
  struct archive_entry *e;
  static const size_t chunk = 1 << 20;
  cleanup_free char *buf = malloc (chunk);
  uint64_t total = 0;
  int ret = 0;

  if (a == NULL || buf == NULL)
    {
      archive_read_free (a);
      return rt_error_oom (err);
    }
  archive_read_support_filter_all (a);
  archive_read_support_format_raw (a);
  if (archive_read_open_memory (a, data, len) != ARCHIVE_OK || archive_read_next_header (a, &e) != ARCHIVE_OK)
    ret = rt_archive_fail (err, a, "cannot decompress", what);
  while (ret == 0)
    {
      la_ssize_t n = archive_read_data (a, buf, chunk);
      if (n < 0)
        ret = rt_archive_fail (err, a, "cannot decompress", what);
      else if (n == 0)
        break;
      else
        {
          if (total < 4)
            memcpy (head + total, buf, n < (la_ssize_t) (4 - total) ? (size_t) n : 4 - total);
          total += n;
          if (rt_write_all (fd, buf, n) < 0)
            ret = rt_error_set (err, errno, "internal", "cannot write %s: %s", what, strerror (errno));
        }
    }
  archive_read_free (a);
  if (ret == 0)
    *written = total;
  return ret;
}

static uint32_t
le32 (const unsigned char *p)
{
  return p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16 | (uint32_t) p[3] << 24;
}

/* The bzImage's protected-mode part carries the kernel ELF compressed; the
   x86 boot header says where (Documentation/x86/boot.rst).  QEMU boots the
   ELF through its PVH note, faster than a bzImage under TCG.  */
static int
write_vmlinux (const unsigned char *bz, size_t len, const char *dir, rt_error **err)
{
  cleanup_close int fd = -1;
  size_t setup_sects, start, off, plen;
  unsigned char head[4] = { 0 };
  uint64_t written = 0;
  int ret;

  if (len < 0x250 || memcmp (bz + 0x202, "HdrS", 4) != 0 || (bz[0x206] | bz[0x207] << 8) < 0x208)
    return rt_error_set (err, EINVAL, "internal", "the kernel package's vmlinuz is not an x86 bzImage");
  setup_sects = bz[0x1f1] ? bz[0x1f1] : 4;
  start = (setup_sects + 1) * 512;
  off = le32 (bz + 0x248);
  plen = le32 (bz + 0x24c);
  /* The payload ends with the uncompressed size (le32), appended by the
     kernel's build; decompressors do not expect it.  */
  if (start > len || off > len - start || plen > len - start - off || plen < 8)
    return rt_error_set (err, EINVAL, "internal", "the kernel's boot header points outside vmlinuz");

  fd = create_file (dir, "vmlinux", 0644, err);
  if (fd < 0)
    return fd;
  ret = decompress_to_fd (bz + start + off, plen - 4, fd, "the kernel payload", &written, head, err);
  if (ret < 0)
    return ret;
  if (memcmp (head, "\177ELF", 4) != 0)
    return rt_error_set (err, EINVAL, "internal", "the decompressed kernel is not an ELF file");
  if (written != le32 (bz + start + off + plen - 4))
    return rt_error_set (err, EINVAL, "internal", "the decompressed kernel has %llu bytes, the header says %u",
                         (unsigned long long) written, le32 (bz + start + off + plen - 4));
  if (fsync (fd) < 0)
    return rt_error_set (err, errno, "internal", "cannot write vmlinux: %s", strerror (errno));
  return 0;
}

/* Which of rt_initramfs_modules[] @path names, or -1.  Accepts .ko and the
   compressed forms some kernels ship.  */
static int
module_index (const char *path, bool *compressed)
{
  const char *base = strrchr (path, '/');
  size_t n;

  base = base ? base + 1 : path;
  n = strcspn (base, ".");
  if (strcmp (base + n, ".ko") != 0 && strcmp (base + n, ".ko.xz") != 0 && strcmp (base + n, ".ko.zst") != 0
      && strcmp (base + n, ".ko.gz") != 0)
    return -1;
  *compressed = base[n + 3] != '\0';
  for (size_t i = 0; i < RT_INITRAMFS_N_MODULES; i++)
    if (strlen (rt_initramfs_modules[i]) == n && strncmp (rt_initramfs_modules[i], base, n) == 0)
      return (int) i;
  return -1;
}

struct nested_read
{
  struct archive *outer;
  char buf[65536];
};

static la_ssize_t
nested_read_cb (struct archive *a, void *data, const void **buf)
{
  struct nested_read *n = data;
  la_ssize_t r = archive_read_data (n->outer, n->buf, sizeof (n->buf));

  if (r < 0)
    archive_set_error (a, archive_errno (n->outer) > 0 ? archive_errno (n->outer) : EIO, "%s",
                       archive_error_string (n->outer) ? archive_error_string (n->outer) : "read error");
  *buf = n->buf;
  return r;
}

/* boot/vmlinuz-<version>: the version names the cache directory; the
   bzImage becomes <dir>/vmlinux.  */
static int
extract_vmlinuz (struct archive *a, struct archive_entry *e, const char *path, const char *deb, const char *dir,
                 char **version, rt_error **err)
{
  cleanup_free char *bz = NULL;
  size_t len = 0;
  int ret;

  if (!valid_version (path + 13))
    return rt_error_set (err, EINVAL, "internal", "odd kernel file name '%s' in '%s'", path, deb);
  *version = strdup (path + 13);
  if (*version == NULL)
    return rt_error_oom (err);
  ret = read_entry (a, e, MAX_VMLINUZ, &bz, &len, err);
  if (ret == 0)
    ret = write_vmlinux ((const unsigned char *) bz, len, dir, err);
  return ret;
}

/* One module (.ko, or compressed) into <moddir>/<name>.ko.  */
static int
extract_module (struct archive *a, struct archive_entry *e, const char *path, const char *moddir, const char *module,
                bool compressed, rt_error **err)
{
  cleanup_free char *name = rt_strdup_printf ("%s.ko", module);
  cleanup_close int fd = -1;
  int ret = 0;

  if (name == NULL)
    return rt_error_oom (err);
  fd = create_file (moddir, name, 0644, err);
  if (fd < 0)
    return fd;
  if (compressed)
    {
      cleanup_free char *data = NULL;
      unsigned char head[4];
      uint64_t written;
      size_t len = 0;

      ret = read_entry (a, e, MAX_MODULE, &data, &len, err);
      if (ret == 0)
        ret = decompress_to_fd (data, len, fd, path, &written, head, err);
    }
  else if (archive_read_data_into_fd (a, fd) != ARCHIVE_OK)
    ret = rt_archive_fail (err, a, "cannot extract", path);
  /* The directory is renamed into place next: its files must be on disk
     first.  */
  if (ret == 0 && fsync (fd) < 0)
    ret = rt_error_set (err, errno, "internal", "cannot write %s: %s", name, strerror (errno));
  return ret;
}

/* Walks data.tar.* of the .deb (read straight out of the ar member) and
   writes vmlinux and modules/ into @dir.  */
static int
extract_data_tar (struct archive *outer, const char *deb, const char *dir, char **version, rt_error **err)
{
  struct nested_read *nr = calloc (1, sizeof (*nr));
  struct archive *a = archive_read_new ();
  struct archive_entry *e;
  cleanup_free char *moddir = rt_strdup_printf ("%s/modules", dir);
  cleanup_free char *ver = NULL;
  bool found[RT_INITRAMFS_N_MODULES] = { false };
  int ret = 0, r;

  if (nr == NULL || a == NULL || moddir == NULL)
    {
      free (nr);
      archive_read_free (a);
      return rt_error_oom (err);
    }
  if (mkdir (moddir, 0755) < 0)
    {
      free (nr);
      archive_read_free (a);
      return rt_error_set (err, errno, "internal", "cannot create '%s': %s", moddir, strerror (errno));
    }
  nr->outer = outer;
  archive_read_support_filter_all (a);
  archive_read_support_format_tar (a);
  if (archive_read_open (a, nr, NULL, nested_read_cb, NULL) != ARCHIVE_OK)
    ret = rt_archive_fail (err, a, "cannot read the data of", deb);

  while (ret == 0 && (r = archive_read_next_header (a, &e)) != ARCHIVE_EOF)
    {
      const char *path = archive_entry_pathname (e);
      bool compressed = false;
      int idx;

      if (r < ARCHIVE_WARN)
        {
          ret = rt_archive_fail (err, a, "cannot read", deb);
          break;
        }
      if (path == NULL || archive_entry_filetype (e) != AE_IFREG)
        continue;
      path += strspn (path, "./");
      if (strncmp (path, "boot/vmlinuz-", 13) == 0 && ver == NULL)
        ret = extract_vmlinuz (a, e, path, deb, dir, &ver, err);
      else if (strncmp (path, "lib/modules/", 12) == 0 && strstr (path, "/kernel/")
               && (idx = module_index (path, &compressed)) >= 0 && !found[idx])
        {
          ret = extract_module (a, e, path, moddir, rt_initramfs_modules[idx], compressed, err);
          found[idx] = true;
        }
    }
  archive_read_free (a);
  free (nr);
  if (ret < 0)
    return ret;

  if (ver == NULL)
    return rt_error_set (err, ENOENT, "internal", "'%s' holds no boot/vmlinuz-*", deb);
  for (size_t i = 0; i < RT_INITRAMFS_N_MODULES; i++)
    if (!found[i])
      return rt_error_set (err, ENOENT, "internal", "'%s' lacks the module %s.ko", deb, rt_initramfs_modules[i]);
  *version = steal_pointer (&ver);
  return 0;
}

static int
extract_deb (const char *deb, const char *dir, char **version, rt_error **err)
{
  struct archive *a = archive_read_new ();
  struct archive_entry *e;
  bool done = false;
  int ret = 0, r;

  if (a == NULL)
    return rt_error_oom (err);
  archive_read_support_format_ar (a);
  if (archive_read_open_filename (a, deb, 65536) != ARCHIVE_OK)
    ret = rt_archive_fail (err, a, "cannot open", deb);
  while (ret == 0 && !done && (r = archive_read_next_header (a, &e)) != ARCHIVE_EOF)
    {
      const char *name = archive_entry_pathname (e);
      if (r < ARCHIVE_WARN)
        ret = rt_archive_fail (err, a, "cannot read", deb);
      else if (name && strncmp (name, "data.tar", 8) == 0)
        {
          ret = extract_data_tar (a, deb, dir, version, err);
          done = true;
        }
    }
  archive_read_free (a);
  if (ret == 0 && !done)
    return rt_error_set (err, EINVAL, "internal", "'%s' is not a Debian package (no data.tar member)", deb);
  return ret;
}

/* Points kernel/<name> at @version, atomically.  */
static int
set_pointer (const char *kdir, const char *name, const char *version, rt_error **err)
{
  cleanup_free char *path = rt_strdup_printf ("%s/%s", kdir, name);
  cleanup_free char *tmp = rt_strdup_printf ("%s/.%s.tmp.%d", kdir, name, (int) getpid ());

  if (path == NULL || tmp == NULL)
    return rt_error_oom (err);
  unlink (tmp);
  if (symlink (version, tmp) < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", tmp, strerror (errno));
  if (rename (tmp, path) < 0)
    {
      int e = errno;
      unlink (tmp);
      return rt_error_set (err, e, "internal", "cannot rename '%s': %s", tmp, strerror (e));
    }
  return 0;
}

/* Fetches and unpacks the kernel into kernel/<version>.  Called with the
   lock held.  */
static int
fetch_kernel (rt_context *ctx, const char *kdir, char **version, rt_error **err)
{
  cleanup_free char *tmpdir = rt_strdup_printf ("%s/.tmp-XXXXXX", kdir);
  cleanup_free char *dldir = NULL;
  cleanup_free char *deb = NULL;
  cleanup_free char *ver = NULL;
  cleanup_free char *vdir = NULL;
  cleanup_error rt_error *ignored = NULL;
  struct stat st;
  int ret;

  if (tmpdir == NULL)
    return rt_error_oom (err);
  if (mkdtemp (tmpdir) == NULL)
    return rt_error_set (err, errno, "internal", "cannot create a directory in '%s': %s", kdir, strerror (errno));
  if (chmod (tmpdir, 0755) < 0)
    {
      ret = rt_error_set (err, errno, "internal", "cannot chmod '%s': %s", tmpdir, strerror (errno));
      goto out;
    }

  if (ctx->kernel_deb)
    {
      rt_progress (ctx, "Unpacking the guest kernel from %s…", ctx->kernel_deb);
      deb = strdup (ctx->kernel_deb);
      if (deb == NULL)
        {
          ret = rt_error_oom (err);
          goto out;
        }
    }
  else
    {
      dldir = rt_strdup_printf ("%s/download", tmpdir);
      if (dldir == NULL)
        {
          ret = rt_error_oom (err);
          goto out;
        }
      if (mkdir (dldir, 0755) < 0)
        {
          ret = rt_error_set (err, errno, "internal", "cannot create '%s': %s", dldir, strerror (errno));
          goto out;
        }
      ret = download_deb (ctx, dldir, &deb, err);
      if (ret < 0)
        goto out;
    }

  ret = extract_deb (deb, tmpdir, &ver, err);
  if (ret < 0)
    {
      if (ctx->kernel_deb)
        rt_error_hint (err, "set RUNTIME_KERNEL to a linux-image-*-cloud-amd64 .deb, or unset it");
      goto out;
    }
  if (dldir)
    {
      /* The .deb is not needed once unpacked.  */
      ret = rt_rm_rf (dldir, err);
      if (ret < 0)
        goto out;
    }

  vdir = rt_strdup_printf ("%s/%s", kdir, ver);
  if (vdir == NULL)
    {
      ret = rt_error_oom (err);
      goto out;
    }
  if (lstat (vdir, &st) == 0)
    {
      /* Another .deb of the same version, or a directory from an older
         layout: the new one wins.  */
      ret = rt_rm_rf (vdir, err);
      if (ret < 0)
        goto out;
    }
  if (rename (tmpdir, vdir) < 0)
    {
      ret = rt_error_set (err, errno, "internal", "cannot rename '%s': %s", tmpdir, strerror (errno));
      goto out;
    }
  *version = steal_pointer (&ver);
  return 0;

out:
  rt_rm_rf (tmpdir, &ignored);
  return ret;
}

int
rt_kernel_ensure (rt_context *ctx, struct rt_kernel_files *out, rt_error **err)
{
  cleanup_free char *kdir = rt_strdup_printf ("%s/kernel", ctx->cache_dir);
  cleanup_free char *pointer = NULL;
  cleanup_free char *version = NULL;
  cleanup_free char *lockfile = NULL;
  cleanup_close int lockfd = -1;
  char akey[17];
  int ret;

  if (kdir == NULL)
    return rt_error_oom (err);
  ret = agent_key (ctx, akey, err);
  if (ret < 0)
    return ret;
  ret = pointer_name (ctx, &pointer, err);
  if (ret < 0)
    return ret;

  /* The hot path: a readlink and a few stats, no subprocess.  */
  version = read_pointer (kdir, pointer);
  if (version)
    {
      ret = lookup_cached (kdir, version, akey, out, err);
      if (ret != 0)
        return ret < 0 ? ret : 0;
    }

  ret = rt_mkdir_p (kdir, 0755, err);
  if (ret < 0)
    return ret;
  lockfile = rt_strdup_printf ("%s/.lock", kdir);
  if (lockfile == NULL)
    return rt_error_oom (err);
  ret = rt_lock_file (lockfile, &lockfd, err);
  if (ret < 0)
    return ret;

  /* Someone else may have done the work while we waited.  */
  free (version);
  version = read_pointer (kdir, pointer);
  if (version == NULL || !version_complete (kdir, version))
    {
      free (version);
      version = NULL;
      rt_remove_matching (kdir, ".tmp-*");
      rt_remove_matching (kdir, ".*.tmp.*");
      ret = fetch_kernel (ctx, kdir, &version, err);
      if (ret < 0)
        return ret;
      ret = set_pointer (kdir, pointer, version, err);
      if (ret < 0)
        return ret;
    }

  ret = lookup_cached (kdir, version, akey, out, err);
  if (ret != 0)
    return ret < 0 ? ret : 0;
  {
    cleanup_free char *vdir = rt_strdup_printf ("%s/%s", kdir, version);
    if (vdir == NULL)
      return rt_error_oom (err);
    ret = rt_initramfs_build (ctx, vdir, akey, err);
    if (ret < 0)
      return ret;
  }
  ret = lookup_cached (kdir, version, akey, out, err);
  if (ret == 0)
    return rt_error_set (err, EIO, "internal", "the kernel cache in '%s' vanished while in use", kdir);
  return ret < 0 ? ret : 0;
}
