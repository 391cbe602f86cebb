/* saved.c - a VM saved to disk: its RAM, device state and disk layers
   (saved.h).  */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "snapshot/ramfile.h"
#include "snapshot/saved.h"
#include "vmm/migrate.h"

#define CAPTURE_TIMEOUT_MS 60000

enum
{
  CHUNK = 1 << 20,
  PAGE = 4096
};

static bool
all_zero (const uint8_t *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (p[i])
      return false;
  return true;
}

struct ram_copy
{
  int in, out;
  uint8_t *buf;
  const char *what; /* for errors */
};

static int
copy_extent (void *arg, off_t from, off_t to, rt_error **err)
{
  struct ram_copy *c = arg;

  for (off_t pos = from; pos < to;)
    {
      size_t n = to - pos < CHUNK ? (size_t) (to - pos) : CHUNK;
      ssize_t r = pread (c->in, c->buf, n, pos);
      if (r <= 0)
        return rt_error_set (err, r < 0 ? errno : EIO, "internal", "cannot read the guest's memory: %s",
                             r < 0 ? strerror (errno) : "short read");
      for (ssize_t off = 0; off < r;)
        {
          /* A run of non-zero pages, written at once.  */
          ssize_t end = off;
          size_t len;
          while (end < r && !all_zero (c->buf + end, r - end < PAGE ? (size_t) (r - end) : PAGE))
            end += PAGE;
          if (end > r)
            end = r;
          len = end - off;
          if (len > 0 && pwrite (c->out, c->buf + off, len, pos + off) != (ssize_t) len)
            return rt_error_set (err, errno, "internal", "cannot write %s: %s", c->what, strerror (errno));
          off = end + (end < r ? PAGE : 0);
        }
      pos += r;
    }
  return 0;
}

int
rt_saved_write_ram (int ram_fd, uint64_t size, const char *path, bool compress, struct rt_ramfile_sizes *sizes,
                    rt_error **err)
{
  cleanup_close int out = open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

  if (out < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", path, strerror (errno));
  return rt_ramfile_write (ram_fd, size, out, 0, compress, sizes, err);
}

int
rt_saved_ram_fill (int src_fd, int dst_fd, uint64_t size, rt_error **err)
{
  cleanup_free uint8_t *buf = malloc (CHUNK);
  struct ram_copy c = { .in = src_fd, .out = dst_fd, .what = "the guest's memory" };

  if (buf == NULL)
    return rt_error_oom (err);
  c.buf = buf;
  return rt_ramfile_each_extent (src_fd, size, copy_extent, &c, err);
}

int
rt_saved_link (const char *src, const char *dst, rt_error **err)
{
  /* AT_SYMLINK_FOLLOW: @src may be /proc/self/fd/N; a file whose last
     name is gone, or one on another file system, is copied instead.  */
  if (linkat (AT_FDCWD, src, AT_FDCWD, dst, AT_SYMLINK_FOLLOW) == 0)
    return 0;
  if (errno != EXDEV && errno != ENOENT && errno != EPERM)
    return rt_error_set (err, errno, "internal", "cannot link '%s' to '%s': %s", src, dst, strerror (errno));
  return rt_copy_file (src, dst, err);
}

static int64_t
file_size (const char *path)
{
  struct stat st;
  return stat (path, &st) == 0 ? (int64_t) st.st_size : 0;
}

int64_t
rt_saved_stored_bytes (const char *dir)
{
  cleanup_dir DIR *d = opendir (dir);
  struct dirent *e;
  int64_t total = 0;

  while (d && (e = readdir (d)))
    {
      struct stat st;
      if (e->d_name[0] == '.' || fstatat (dirfd (d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        continue;
      if (S_ISDIR (st.st_mode))
        {
          cleanup_free char *sub = rt_strdup_printf ("%s/%s", dir, e->d_name);
          total += sub ? rt_saved_stored_bytes (sub) : 0;
        }
      else if (S_ISREG (st.st_mode))
        total += (int64_t) st.st_blocks * 512;
    }
  return total;
}

/* @layers linked into @dir/layers/0.qcow2…, then @overlay copied as the
   last one.  */
static int
capture_disk (char *const *layers, const char *overlay, const char *dir, int *n, int64_t *disk_bytes, rt_error **err)
{
  cleanup_free char *ldir = rt_strdup_printf ("%s/layers", dir);
  int i = 0, ret;

  if (ldir == NULL)
    return rt_error_oom (err);
  if (mkdir (ldir, 0700) < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", ldir, strerror (errno));
  for (; layers && layers[i]; i++)
    {
      cleanup_free char *dst = rt_strdup_printf ("%s/%d.qcow2", ldir, i);
      ret = dst ? rt_saved_link (layers[i], dst, err) : rt_error_oom (err);
      if (ret < 0)
        return ret;
    }
  if (overlay)
    {
      cleanup_free char *dst = rt_strdup_printf ("%s/%d.qcow2", ldir, i);
      ret = dst ? rt_copy_file (overlay, dst, err) : rt_error_oom (err);
      if (ret < 0)
        return ret;
      *disk_bytes = file_size (dst);
      chmod (dst, 0400);
      i++;
    }
  *n = i;
  return 0;
}

int
rt_saved_capture (struct rt_qmp *q, int ram_fd, unsigned memory_mib, char *const *layers, const char *overlay,
                  const char *dir, bool once, json_object *meta, rt_error **err)
{
  cleanup_free char *state = rt_strdup_printf ("%s/state", dir), *ram = rt_strdup_printf ("%s/ram", dir);
  cleanup_close int sfd = -1;
  struct rt_ramfile_sizes ram_bytes = { 0 };
  int ret;

  if (state == NULL || ram == NULL)
    return rt_error_oom (err);
  sfd = open (state, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (sfd < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", state, strerror (errno));
  /* QEMU's disks are flushed and inactive once the state is saved: the
     overlay is whole on disk for the copy.  */
  ret = rt_vm_save_state (q, sfd, CAPTURE_TIMEOUT_MS, err);
  if (ret == 0)
    ret = rt_saved_write_ram (ram_fd, (uint64_t) memory_mib << 20, ram, !once, &ram_bytes, err);
  if (ret == 0)
    ret = rt_saved_capture_disk (layers, overlay, dir, meta, err);
  if (ret < 0)
    return ret;
  json_object_object_add (meta, "ramFormat", json_object_new_string (RT_SAVED_RAM_FORMAT));
  json_object_object_add (meta, "memoryBytes", json_object_new_int64 (ram_bytes.file));
  json_object_object_add (meta, "memoryDataBytes", json_object_new_int64 (ram_bytes.data));
  json_object_object_add (meta, "stateBytes", json_object_new_int64 (file_size (state)));
  return 0;
}

int
rt_saved_capture_disk (char *const *layers, const char *overlay, const char *dir, json_object *meta, rt_error **err)
{
  int64_t disk_bytes = 0;
  int n = 0, ret = capture_disk (layers, overlay, dir, &n, &disk_bytes, err);

  if (ret < 0)
    return ret;
  json_object_object_add (meta, "layers", json_object_new_int (n));
  json_object_object_add (meta, "diskBytes", json_object_new_int64 (disk_bytes));
  return 0;
}

json_object *
rt_saved_base_json (const char *disk)
{
  json_object *o = json_object_new_object ();
  struct stat st;

  if (o == NULL || disk == NULL || stat (disk, &st) < 0)
    return o;
  json_object_object_add (o, "inode", json_object_new_int64 ((int64_t) st.st_ino));
  json_object_object_add (o, "size", json_object_new_int64 ((int64_t) st.st_size));
  json_object_object_add (o, "mtimeNs",
                          json_object_new_int64 ((int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec));
  return o;
}

int
rt_saved_check_base (const struct rt_saved *s, const char *disk, rt_error **err)
{
  cleanup_json json_object *now = rt_saved_base_json (disk);
  json_object *then = NULL;

  json_object_object_get_ex (s->meta, "base", &then);
  if (then && now && json_object_equal (then, now))
    return 0;
  rt_error_set (err, ESTALE, "invalid_request",
                "the image's boot disk '%s' is not the one %s was saved on (it was made again)", disk,
                rt_json_str (s->meta, "id") ? rt_json_str (s->meta, "id") : "it");
  return rt_error_hint (err, "its disk layers only make sense over the same file: it cannot be restored");
}

void
rt_saved_clear (struct rt_saved *s)
{
  free (s->dir);
  free (s->ram);
  free (s->state);
  for (size_t i = 0; i < s->n_layers; i++)
    free (s->layers[i]);
  json_object_put (s->meta);
  memset (s, 0, sizeof *s);
}

static unsigned
shape_get (json_object *meta, const char *key)
{
  json_object *shape = NULL, *v = NULL;
  int64_t n;

  json_object_object_get_ex (meta, "shape", &shape);
  json_object_object_get_ex (shape, key, &v);
  n = v ? json_object_get_int64 (v) : 0;
  return n > 0 && n < (1 << 20) ? (unsigned) n : 0;
}

int
rt_saved_load (const char *dir, const char *layers_dir, struct rt_saved *out, rt_error **err)
{
  cleanup_free char *meta_path = rt_strdup_printf ("%s/meta.json", dir);
  cleanup_free char *ldir = layers_dir ? strdup (layers_dir) : rt_strdup_printf ("%s/layers", dir);
  cleanup_free char *text = NULL;
  json_object *v = NULL, *image = NULL;
  int64_t n;

  memset (out, 0, sizeof *out);
  if (meta_path == NULL || ldir == NULL)
    return rt_error_oom (err);
  if (rt_read_file (meta_path, &text, NULL, NULL) < 0)
    return rt_error_set (err, ENOENT, "not_found", "no saved sandbox at '%s'", dir);
  out->meta = json_tokener_parse (text);
  out->dir = strdup (dir);
  out->ram = rt_strdup_printf ("%s/ram", dir);
  out->state = rt_strdup_printf ("%s/state", dir);
  if (out->dir == NULL || out->ram == NULL || out->state == NULL)
    return rt_error_oom (err);
  json_object_object_get_ex (out->meta, "layers", &v);
  n = v ? json_object_get_int64 (v) : -1;
  out->vcpu = shape_get (out->meta, "vcpu");
  out->memory_mib = shape_get (out->meta, "memoryMiB");
  out->disk_mib = shape_get (out->meta, "diskMiB");
  json_object_object_get_ex (out->meta, "image", &image);
  out->image_id = json_object_object_get_ex (image, "id", &v) ? json_object_get_string (v) : NULL;
  out->kind = json_object_object_get_ex (out->meta, "kind", &v) ? json_object_get_string (v) : NULL;
  /* Saved before the RAM was compressed: its `ram` is the memory, sparse.  */
  out->ram_packed = json_object_object_get_ex (out->meta, "ramFormat", &v);
  if (out->ram_packed && strcmp (json_object_get_string (v), RT_SAVED_RAM_FORMAT) != 0)
    return rt_error_set (err, EINVAL, "invalid_request", "'%s' holds a memory in a format this runtime does not know",
                         dir);
  if (!json_object_is_type (out->meta, json_type_object) || n < 0 || n > RT_MAX_LAYERS || out->vcpu == 0
      || out->memory_mib == 0 || out->image_id == NULL || out->kind == NULL)
    return rt_error_set (err, EINVAL, "internal", "'%s' is not a saved sandbox's description", meta_path);
  for (int64_t i = 0; i < n; i++)
    {
      out->layers[i] = rt_strdup_printf ("%s/%d.qcow2", ldir, (int) i);
      if (out->layers[i] == NULL)
        return rt_error_oom (err);
      out->n_layers++;
    }
  return 0;
}
