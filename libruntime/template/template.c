/* template.c - where templates live, their keys, lookup and removal
   (template.h).  The keeper of a template's RAM is in keeper.c.  */
#include <fcntl.h>
#include <openssl/evp.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include "common/pidfile.h"
#include "snapshot/saved.h"
#include "template/template.h"
#include "vmm/accel.h"
#include "vmm/qemu-args.h"

/* A .tmp-* dir this old is a dead maker's even while some maker holds a
   lock: making a template takes seconds to minutes.  */
#define SWEEP_AGE_S 3600

static const char *const template_files[] = { "meta.json", "ram", "state", "disk.qcow2", "clone.qcow2" };

bool
rt_templates_enabled (rt_context *ctx)
{
  return !ctx->templates_off;
}

static char *
templates_dir (rt_context *ctx)
{
  return rt_strdup_printf ("%s/templates", ctx->cache_dir);
}

static bool
is_key (const char *s)
{
  size_t n = 0;

  for (; s[n]; n++)
    if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
      return false;
  return n == 64;
}

/* {path, size, mtimeNs, inode} of @path: the file a template was made
   from is that file only while these stay the same.  */
static int
file_json (const char *what, const char *path, json_object **out, rt_error **err)
{
  struct stat st;
  json_object *o;

  if (path == NULL)
    return rt_error_set (err, EINVAL, "internal", "a template needs its %s", what);
  if (stat (path, &st) < 0)
    return rt_error_set (err, errno, "file_not_found", "cannot stat the %s '%s': %s", what, path, strerror (errno));
  o = json_object_new_object ();
  json_object_object_add (o, "path", json_object_new_string (path));
  json_object_object_add (o, "size", json_object_new_int64 (st.st_size));
  json_object_object_add (o, "mtimeNs", json_object_new_int64 ((int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec));
  json_object_object_add (o, "inode", json_object_new_int64 ((int64_t) st.st_ino));
  *out = o;
  return 0;
}

/* The inputs in a fixed order (json-c keeps insertion order), so that
   their plain JSON text is canonical.  */
/* The machine a template VM is given (qemu-args.c: -M, devices, the
   kernel command line with the host's TSC frequency): a clone must be
   given the same, so any change in how runtime describes VMs is a new
   key.  Paths are placeholders: only the shape counts.  */
static int
machine_json (rt_context *ctx, const struct rt_template_inputs *in, json_object *o, rt_error **err)
{
  bool tcg = strcmp (in->accel, "tcg") == 0;
  struct rt_qemu_args a = { .qemu = "qemu", .accel = in->accel, .vcpu = in->vcpu, .memory_mib = in->memory_mib,
                            .vmlinux = "vmlinux", .initramfs = "initramfs",
                            /* Whether the guest is given a TSC frequency, not
                               the figure: it may move with the host's clock. */
                            .tsc_khz = tcg && rt_host_tsc_khz () > 0 ? 1 : 0, .cmdline = RT_TEMPLATE_CMDLINE,
                            .console_sock = true, .channel = true, .tap = true, .disk = true,
                            .ram_file = true, .n_layers = 0 };
  cleanup_strv char **argv = NULL;
  json_object *arr;
  int ret = rt_qemu_argv (&a, &argv, err);

  (void) ctx;
  if (ret < 0)
    return ret;
  arr = json_object_new_array ();
  for (char **p = argv; arr && *p; p++)
    json_object_array_add (arr, json_object_new_string (*p));
  json_object_object_add (o, "machine", arr);
  return arr ? 0 : rt_error_oom (err);
}

static int
inputs_json (rt_context *ctx, const struct rt_template_inputs *in, json_object **out, rt_error **err)
{
  cleanup_json json_object *o = json_object_new_object ();
  json_object *disk = NULL, *vmlinux = NULL, *initramfs = NULL, *qemu = NULL;
  int ret;

  if (in->image_id == NULL || in->accel == NULL)
    return rt_error_set (err, EINVAL, "internal", "a template needs its image id and accelerator");
  if ((ret = file_json ("disk", in->disk, &disk, err)) < 0)
    return ret;
  json_object_object_add (o, "imageId", json_object_new_string (in->image_id));
  json_object_object_add (o, "disk", disk);
  json_object_object_add (o, "vcpu", json_object_new_int64 (in->vcpu));
  json_object_object_add (o, "memoryMiB", json_object_new_int64 (in->memory_mib));
  json_object_object_add (o, "diskMiB", json_object_new_int64 (in->disk_mib));
  if ((ret = file_json ("kernel", in->vmlinux, &vmlinux, err)) < 0)
    return ret;
  json_object_object_add (o, "vmlinux", vmlinux);
  if ((ret = file_json ("initramfs", in->initramfs, &initramfs, err)) < 0)
    return ret;
  json_object_object_add (o, "initramfs", initramfs);
  json_object_object_add (o, "accel", json_object_new_string (in->accel));
  /* How `ram` is written (snapshot/ramfile.h): a template of another
     format is stale.  */
  json_object_object_add (o, "ramFormat", json_object_new_string (RT_SAVED_RAM_FORMAT));
  /* No QEMU: no template can be made, but the key is still defined.  */
  if (ctx->qemu && (ret = file_json ("QEMU binary", ctx->qemu, &qemu, err)) < 0)
    return ret;
  json_object_object_add (o, "qemu", qemu);
  ret = machine_json (ctx, in, o, err);
  if (ret < 0)
    return ret;
  *out = steal_pointer (&o);
  return 0;
}

static int
sha256_hex (const char *text, char key[65], rt_error **err)
{
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;

  if (EVP_Digest (text, strlen (text), md, &len, EVP_sha256 (), NULL) != 1 || len != 32)
    return rt_error_set (err, EIO, "internal", "cannot compute SHA-256");
  for (unsigned int i = 0; i < len; i++)
    sprintf (key + 2 * i, "%02x", md[i]);
  key[64] = '\0';
  return 0;
}

int
rt_template_key (rt_context *ctx, const struct rt_template_inputs *in, char key[65], json_object **inputs,
                 rt_error **err)
{
  cleanup_json json_object *o = NULL;
  int ret = inputs_json (ctx, in, &o, err);

  if (ret < 0)
    return ret;
  ret = sha256_hex (json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN), key, err);
  if (ret < 0)
    return ret;
  if (inputs)
    *inputs = steal_pointer (&o);
  return 0;
}

/* meta.json of <templates>/<key>, when that dir is a whole template:
   parseable, its inputs hashing to @key, every file there.  NULL if not.  */
static json_object *
read_meta (const char *dir, const char *key)
{
  cleanup_free char *path = rt_strdup_printf ("%s/meta.json", dir);
  cleanup_free char *data = NULL;
  cleanup_json json_object *meta = NULL;
  json_object *inputs;
  char sum[65];

  if (path == NULL || rt_read_file (path, &data, NULL, NULL) < 0 || (meta = json_tokener_parse (data)) == NULL
      || !json_object_object_get_ex (meta, "inputs", &inputs) || !json_object_is_type (inputs, json_type_object)
      || sha256_hex (json_object_to_json_string_ext (inputs, JSON_C_TO_STRING_PLAIN), sum, NULL) < 0
      || strcmp (sum, key) != 0)
    return NULL;
  for (size_t i = 1; i < sizeof (template_files) / sizeof (*template_files); i++)
    {
      cleanup_free char *f = rt_strdup_printf ("%s/%s", dir, template_files[i]);
      struct stat st;
      if (f == NULL || lstat (f, &st) < 0 || !S_ISREG (st.st_mode))
        return NULL;
    }
  return steal_pointer (&meta);
}

static int64_t
meta_int (json_object *o, const char *key)
{
  json_object *v;

  return json_object_object_get_ex (o, key, &v) && json_object_is_type (v, json_type_int) ? json_object_get_int64 (v)
                                                                                          : -1;
}

int
rt_template_find (rt_context *ctx, const struct rt_template_inputs *in, struct rt_template *out, rt_error **err)
{
  cleanup_free char *top = templates_dir (ctx);
  cleanup_json json_object *meta = NULL;
  struct rt_template t = { .key = "" };
  int64_t mem;
  int ret;

  memset (out, 0, sizeof (*out));
  if (top == NULL)
    return rt_error_oom (err);
  ret = rt_template_key (ctx, in, t.key, NULL, err);
  if (ret < 0)
    return ret;
  t.dir = rt_strdup_printf ("%s/%s", top, t.key);
  if (t.dir == NULL)
    return rt_error_oom (err);
  meta = read_meta (t.dir, t.key);
  mem = meta_int (meta, "memoryMiB");
  if (meta == NULL || mem != (int64_t) in->memory_mib || rt_json_str (meta, "cmdline") == NULL)
    {
      rt_template_clear (&t);
      return 0;
    }
  t.memory_mib = (unsigned) mem;
  t.cmdline = strdup (rt_json_str (meta, "cmdline"));
  t.ram = rt_strdup_printf ("%s/ram", t.dir);
  t.state = rt_strdup_printf ("%s/state", t.dir);
  t.disk = rt_strdup_printf ("%s/disk.qcow2", t.dir);
  t.clone_disk = rt_strdup_printf ("%s/clone.qcow2", t.dir);
  if (t.cmdline == NULL || t.ram == NULL || t.state == NULL || t.disk == NULL || t.clone_disk == NULL)
    {
      rt_template_clear (&t);
      return rt_error_oom (err);
    }
  *out = t;
  return 1;
}

void
rt_template_clear (struct rt_template *t)
{
  free (t->dir);
  free (t->ram);
  free (t->state);
  free (t->disk);
  free (t->clone_disk);
  free (t->cmdline);
  memset (t, 0, sizeof (*t));
}

/* Blocks the files of @dir use on disk (ram is sparse: its size is not
   what it costs).  */
static int64_t
dir_bytes (const char *dir)
{
  int64_t sum = 0;

  for (size_t i = 0; i < sizeof (template_files) / sizeof (*template_files); i++)
    {
      cleanup_free char *f = rt_strdup_printf ("%s/%s", dir, template_files[i]);
      struct stat st;
      if (f && lstat (f, &st) == 0)
        sum += (int64_t) st.st_blocks * 512;
    }
  return sum;
}

/* Calls @fn for each whole template (by its meta.json) in @top; stops at
   a negative return.  */
static int
each_template (const char *top, int (*fn) (const char *top, const char *key, json_object *meta, void *data),
               void *data)
{
  cleanup_dir DIR *d = opendir (top);
  struct dirent *de;
  int ret = 0;

  if (d == NULL)
    return 0;
  while (ret >= 0 && (de = readdir (d)))
    {
      cleanup_free char *dir = NULL;
      cleanup_json json_object *meta = NULL;
      if (!is_key (de->d_name) || (dir = rt_strdup_printf ("%s/%s", top, de->d_name)) == NULL)
        continue;
      meta = read_meta (dir, de->d_name);
      if (meta)
        ret = fn (top, de->d_name, meta, data);
    }
  return ret;
}

static int
list_one (const char *top, const char *key, json_object *meta, void *data)
{
  cleanup_free char *dir = rt_strdup_printf ("%s/%s", top, key);

  if (dir == NULL)
    return -ENOMEM;
  json_object_object_add (meta, "key", json_object_new_string (key));
  json_object_object_add (meta, "sizeBytes", json_object_new_int64 (dir_bytes (dir)));
  json_object_array_add (data, json_object_get (meta));
  return 0;
}

int
rt_template_list (rt_context *ctx, json_object **out, rt_error **err)
{
  cleanup_free char *top = templates_dir (ctx);
  cleanup_json json_object *arr = json_object_new_array ();

  if (top == NULL || arr == NULL || each_template (top, list_one, arr) < 0)
    return rt_error_oom (err);
  *out = steal_pointer (&arr);
  return 0;
}

/* Removes <top>/<key> so that no reader sees half of it: renamed onto an
   empty .tmp-del-XXXXXX first (one step), then removed.  Its keeper sees
   the dir gone and exits (rt_template_keeper_stop).  */
static int
remove_template (rt_context *ctx, const char *top, const char *key, rt_error **err)
{
  cleanup_free char *dir = rt_strdup_printf ("%s/%s", top, key);
  cleanup_free char *del = rt_strdup_printf ("%s/.tmp-del-XXXXXX", top);

  if (dir == NULL || del == NULL)
    return rt_error_oom (err);
  if (mkdtemp (del) == NULL)
    return rt_error_set (err, errno, "cleanup_failed", "cannot create '%s': %s", del, strerror (errno));
  if (rename (dir, del) < 0)
    {
      int e = errno;
      rmdir (del);
      if (e == ENOENT)
        return 0;
      return rt_error_set (err, e, "cleanup_failed", "cannot remove the template '%s': %s", dir, strerror (e));
    }
  rt_template_keeper_stop (ctx, key);
  return rt_rm_rf (del, err);
}

/* Whether a maker of @key holds its lock now (a lock file that is not
   there is held by no one; none is made here).  */
static bool
maker_holds (const char *top, const char *key)
{
  cleanup_free char *path = rt_strdup_printf ("%s/.lock-%s", top, key);
  cleanup_close int fd = path ? open (path, O_RDONLY | O_CLOEXEC) : -1;

  return fd >= 0 && flock (fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
}

struct remove_match
{
  rt_context *ctx;
  const char *image_id;
  const char *keep;           /* remove_stale: the key just made */
  unsigned vcpu, memory_mib;  /* remove_stale: its shape */
  rt_error **err;
};

static int
remove_one (const char *top, const char *key, json_object *meta, void *data)
{
  struct remove_match *m = data;
  json_object *inputs = NULL;

  json_object_object_get_ex (meta, "inputs", &inputs);
  if (rt_json_str (inputs, "imageId") == NULL || strcmp (rt_json_str (inputs, "imageId"), m->image_id) != 0)
    return 0;
  if (m->keep)
    {
      /* A template whose maker still runs is left alone.  */
      if (strcmp (key, m->keep) == 0 || meta_int (inputs, "vcpu") != m->vcpu
          || meta_int (inputs, "memoryMiB") != m->memory_mib || maker_holds (top, key))
        return 0;
    }
  return remove_template (m->ctx, top, key, m->err);
}

int
rt_template_remove_image (rt_context *ctx, const char *image_id, rt_error **err)
{
  cleanup_free char *top = templates_dir (ctx);
  struct remove_match m = { .ctx = ctx, .image_id = image_id, .err = err };

  if (top == NULL)
    return rt_error_oom (err);
  rt_template_sweep (ctx);
  return each_template (top, remove_one, &m);
}

void
rt_template_remove_stale (rt_context *ctx, const struct rt_template_inputs *in, const char *key)
{
  cleanup_free char *top = templates_dir (ctx);
  struct remove_match m = { .ctx = ctx, .image_id = in->image_id, .keep = key, .vcpu = in->vcpu,
                            .memory_mib = in->memory_mib };

  if (top && in->image_id)
    each_template (top, remove_one, &m);
}

/* Whether any maker holds its .lock-<key> in @top.  */
static bool
maker_running (const char *top)
{
  cleanup_dir DIR *d = opendir (top);
  struct dirent *de;

  while (d && (de = readdir (d)))
    if (strncmp (de->d_name, ".lock-", 6) == 0 && is_key (de->d_name + 6) && maker_holds (top, de->d_name + 6))
      return true;
  return false;
}

void
rt_template_sweep (rt_context *ctx)
{
  cleanup_free char *top = templates_dir (ctx);
  cleanup_strv char **names = NULL;
  cleanup_dir DIR *d = NULL;
  struct dirent *de;
  size_t n = 0;
  bool busy;

  /* The names first, the locks after: a maker takes its lock before it
     makes its .tmp- dir, so a dir listed here whose maker holds no lock
     below is a dead maker's (or a finished one's, already renamed).  */
  if (top == NULL || (d = opendir (top)) == NULL || (names = calloc (1, sizeof (char *))) == NULL)
    return;
  while ((de = readdir (d)))
    if (strncmp (de->d_name, ".tmp-", 5) == 0)
      {
        char **more = realloc (names, (n + 2) * sizeof (char *));
        if (more == NULL)
          return;
        names = more;
        names[n + 1] = NULL;
        if ((names[n] = rt_strdup_printf ("%s/%s", top, de->d_name)) != NULL)
          n++;
      }
  busy = maker_running (top);
  for (size_t i = 0; i < n; i++)
    {
      cleanup_free char *pidfile = rt_strdup_printf ("%s/maker.pid", names[i]);
      struct stat st;
      int alive;
      if (strstr (names[i], "/.tmp-del-"))
        {
          rt_rm_rf (names[i], NULL);
          continue;
        }
      if (pidfile == NULL || lstat (names[i], &st) < 0 || !S_ISDIR (st.st_mode))
        continue;
      /* The maker's pid file (template/make.c) says best; a dir without
         one yet is judged by the locks and its age.  */
      alive = rt_pidfile_alive (pidfile, NULL);
      if (alive == 0 || (alive < 0 && (!busy || st.st_mtime < time (NULL) - SWEEP_AGE_S)))
        rt_rm_rf (names[i], NULL);
    }
}
