/* doctor.c - rt_doctor_json: what this host gives sandboxes, read without
   booting, fetching or writing anything (what a bug report needs).
   (no header of its own: its function is include/runtime/admin.h's.)  */
#include <dirent.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>

#include "billing/trial.h"
#include "image/store.h"
#include "public/driver.h"
#include "snapshot/saved.h"
#include "vmm/accel.h"
#include "vmm/cgroup.h"
#include "vmm/uidpool.h"

/* The shape a sandbox gets when nothing is asked (sandbox/create.c).  */
#define SHAPE_VCPU 2
#define SHAPE_MIB 4096
#define SHAPE_DISK_MIB 4096

struct report
{
  json_object *o;
  json_object *unreadable; /* ["what: why", …] */
};

static void
put (json_object *o, const char *key, json_object *v)
{
  json_object_object_add (o, key, v);
}

static json_object *
str_or_null (const char *s)
{
  return s ? json_object_new_string (s) : NULL;
}

/* @url without a user:password@ part: the report is for pasting.  */
static json_object *
url_without_login (const char *url)
{
  const char *host = url ? strstr (url, "://") : NULL, *at, *slash;

  if (url == NULL)
    return NULL;
  if (host == NULL)
    return json_object_new_string (url);
  host += 3;
  at = strchr (host, '@');
  slash = strchr (host, '/');
  if (at == NULL || (slash && slash < at))
    return json_object_new_string (url);
  {
    cleanup_free char *s = rt_strdup_printf ("%.*s%s", (int) (host - url), url, at + 1);
    return s ? json_object_new_string (s) : NULL;
  }
}

static void
unreadable (struct report *r, const char *what, const char *why)
{
  cleanup_free char *line = rt_strdup_printf ("%s: %s", what, why);
  if (line)
    json_object_array_add (r->unreadable, json_object_new_string (line));
}

static void
add_accel (struct report *r, rt_context *ctx)
{
  json_object *a = json_object_new_object ();
  cleanup_free char *why = NULL;
  const char *accel = NULL;

  if (rt_accel_explain (ctx, &accel, &why) < 0)
    why = NULL;
  put (a, "name", str_or_null (accel));
  put (a, "why", str_or_null (why));
  put (r->o, "accelerator", a);
}

/* The first line of `PROGRAM --version`, or NULL.  */
static char *
first_line_of (const char *program)
{
  char *argv[] = { (char *) program, (char *) "--version", NULL };
  cleanup_error rt_error *err = NULL;
  char *out = NULL;

  if (program == NULL || rt_run_capture (argv, &out, &err) != 0)
    {
      free (out);
      return NULL;
    }
  out[strcspn (out, "\n")] = '\0';
  return out;
}

static void
add_versions (struct report *r, rt_context *ctx)
{
  json_object *q = json_object_new_object (), *k = json_object_new_object ();
  cleanup_free char *qemu = first_line_of (ctx->qemu);
  cleanup_free char *link = rt_strdup_printf ("%s/kernel/current", ctx->cache_dir);
  char guest[256];
  ssize_t n = link ? readlink (link, guest, sizeof guest - 1) : -1;
  struct utsname u;

  put (q, "path", str_or_null (ctx->qemu));
  put (q, "version", str_or_null (qemu));
  if (ctx->qemu == NULL)
    unreadable (r, "QEMU", "qemu-system-x86_64 is not on PATH (apt-get install qemu-system-x86)");
  put (r->o, "qemu", q);
  put (k, "host", uname (&u) == 0 ? json_object_new_string (u.release) : NULL);
  if (n > 0)
    guest[n] = '\0';
  else if (errno == EACCES)
    unreadable (r, "guest kernel", strerror (errno));
  put (k, "guest", n > 0 ? json_object_new_string (guest) : NULL);
  put (r->o, "kernel", k);
}

/* One cache or store directory: its path and what its files hold on disk
   (0 when it is not there yet).  */
static void
add_dir (struct report *r, json_object *to, const char *key, const char *top, const char *sub)
{
  cleanup_free char *path = rt_strdup_printf ("%s/%s", top, sub);
  json_object *d = json_object_new_object ();
  bool present = path && access (path, F_OK) == 0;

  put (d, "path", str_or_null (path));
  if (present && access (path, R_OK | X_OK) < 0)
    {
      unreadable (r, path, strerror (errno));
      put (d, "bytes", NULL);
    }
  else
    put (d, "bytes", json_object_new_int64 (present ? rt_saved_stored_bytes (path) : 0));
  put (to, key, d);
}

/* Spares: sandbox dirs of the state dir whose state is "spare" (sandbox/pool.h).  */
static void
add_spares (struct report *r, rt_context *ctx, json_object *caches)
{
  cleanup_dir DIR *d = opendir (ctx->state_dir);
  struct dirent *e;
  int n = 0;

  if (d == NULL && errno != ENOENT)
    {
      unreadable (r, ctx->state_dir, strerror (errno));
      put (caches, "spares", NULL);
      return;
    }
  while (d && (e = readdir (d)))
    {
      cleanup_free char *path = NULL, *text = NULL;
      cleanup_error rt_error *err = NULL;
      cleanup_json json_object *st = NULL;
      if (strncmp (e->d_name, "sb-", 3) != 0
          || (path = rt_strdup_printf ("%s/%s/state.json", ctx->state_dir, e->d_name)) == NULL
          || rt_read_file (path, &text, NULL, &err) < 0)
        continue;
      st = json_tokener_parse (text);
      n += st && rt_json_str (st, "state") && strcmp (rt_json_str (st, "state"), "spare") == 0;
    }
  put (caches, "spares", json_object_new_int (n));
}

static void
add_caches (struct report *r, rt_context *ctx)
{
  json_object *c = json_object_new_object ();

  add_dir (r, c, "kernel", ctx->cache_dir, "kernel");
  add_dir (r, c, "baseRootfs", ctx->cache_dir, "base");
  add_dir (r, c, "bootDisks", ctx->cache_dir, "disks");
  add_dir (r, c, "overlays", ctx->cache_dir, "overlays");
  add_dir (r, c, "templates", ctx->cache_dir, "templates");
  add_dir (r, c, "images", ctx->data_dir, "images");
  add_dir (r, c, "snapshots", ctx->data_dir, "snapshots");
  add_dir (r, c, "sandboxes", ctx->data_dir, "sandboxes");
  add_spares (r, ctx, c);
  put (r->o, "caches", c);
}

/* The default image as the index names it; the index is read, not opened
   (rt_image_store_open would make the store).  */
static void
add_image (struct report *r, rt_context *ctx)
{
  cleanup_free char *path = rt_strdup_printf ("%s/images/index.json", ctx->data_dir);
  cleanup_json json_object *index = NULL;
  cleanup_error rt_error *err = NULL;
  json_object *img = json_object_new_object ();
  const char *id = NULL;

  put (img, "name", json_object_new_string (RT_IMAGE_DEFAULT));
  if (path && rt_image_read_json (path, true, &index, &err) == 0)
    id = rt_image_index_resolve (index, NULL);
  else
    unreadable (r, "default image", err && err->msg ? err->msg : "out of memory");
  put (img, "id", str_or_null (id));
  put (img, "built", err ? NULL : json_object_new_boolean (id != NULL));
  put (r->o, "defaultImage", img);
}

static void
add_trial (struct report *r, rt_context *ctx)
{
  json_object *t = json_object_new_object ();
  cleanup_error rt_error *err = NULL;
  int64_t left = RT_TRIAL_US;
  int running = 0;
  bool known = true;

  /* rt_trial_left takes the store's lock, made on first use: an absent
     data dir is a whole trial, and only root may lock root's.  */
  if (access (ctx->data_dir, F_OK) == 0)
    {
      if (access (ctx->data_dir, W_OK) < 0)
        unreadable (r, "trial", strerror (errno));
      else if (rt_trial_left (ctx, &left, &running, &err) < 0)
        unreadable (r, "trial", err->msg);
      known = err == NULL && access (ctx->data_dir, W_OK) == 0;
    }
  put (t, "hoursLeft", known ? json_object_new_double ((double) (left / 36000000) / 100) : NULL);
  put (t, "running", known ? json_object_new_int (running) : NULL);
  put (r->o, "trial", t);
}

/* Uids of the pool a live sandbox holds, from the lock files there are
   (as many as the most sandboxes ever live at once), or -1.  */
static int
uids_in_use (struct report *r)
{
  cleanup_dir DIR *d = opendir (RT_UID_LOCK_DIR);
  struct dirent *e;
  int n = 0;

  if (d == NULL && errno != ENOENT)
    {
      unreadable (r, RT_UID_LOCK_DIR, strerror (errno));
      return -1;
    }
  while (d && (e = readdir (d)))
    {
      char *end;
      unsigned long uid = strtoul (e->d_name, &end, 10);
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && *end == '\0')
        n += rt_uid_in_use ((uid_t) uid) != 0;
    }
  return n;
}

static void
add_jail (struct report *r, rt_context *ctx)
{
  json_object *j = json_object_new_object ();
  cleanup_error rt_error *err = NULL;
  unsigned count = 0;
  uid_t first = 0;
  int n;

  put (j, "on", json_object_new_boolean (!ctx->unsafe_no_jail));
  put (j, "uidRange", json_object_new_string (ctx->uid_range ? ctx->uid_range : RT_UID_RANGE_DEFAULT));
  if (rt_uid_range_parse (ctx->uid_range, &first, &count, &err) < 0)
    unreadable (r, "uid range", err->msg);
  put (j, "uids", err ? NULL : json_object_new_int64 (count));
  n = uids_in_use (r);
  put (j, "uidsInUse", n >= 0 ? json_object_new_int (n) : NULL);
  put (j, "cgroup", json_object_new_string (rt_cgroup_version ()));
  put (r->o, "jail", j);
}

/* MemTotal and MemAvailable in MiB, 0 when unknown.  */
static void
host_memory (uint64_t *total, uint64_t *available)
{
  cleanup_file FILE *f = fopen ("/proc/meminfo", "re");
  char line[256];
  unsigned long long kb;

  *total = *available = 0;
  while (f && fgets (line, sizeof line, f))
    if (sscanf (line, "MemTotal: %llu kB", &kb) == 1)
      *total = kb / 1024;
    else if (sscanf (line, "MemAvailable: %llu kB", &kb) == 1)
      *available = kb / 1024;
}

/* Free space where sandbox disks go: the data dir, else the nearest of
   its parents that exists (it is made on first use).  */
static int64_t
disk_free_mib (const char *dir)
{
  cleanup_free char *path = strdup (dir);
  struct statvfs vfs;
  char *slash;

  while (path && statvfs (path, &vfs) < 0 && (slash = strrchr (path, '/')) != NULL && path[1] != '\0')
    {
      if (slash == path)
        path[1] = '\0';
      else
        *slash = '\0';
    }
  if (path == NULL || statvfs (path, &vfs) < 0)
    return -1;
  return (int64_t) ((uint64_t) vfs.f_bavail * vfs.f_frsize / (1024 * 1024));
}

static void
add_host (struct report *r, rt_context *ctx)
{
  json_object *h = json_object_new_object (), *shape = json_object_new_object ();
  long cpus = sysconf (_SC_NPROCESSORS_ONLN);
  int64_t disk = disk_free_mib (ctx->data_dir);
  uint64_t total, avail;

  host_memory (&total, &avail);
  put (h, "cpus", json_object_new_int (cpus > 0 ? (int) cpus : 0));
  put (h, "memoryTotalMiB", json_object_new_int64 ((int64_t) total));
  put (h, "memoryAvailableMiB", json_object_new_int64 ((int64_t) avail));
  put (h, "diskFreeMiB", disk >= 0 ? json_object_new_int64 (disk) : NULL);
  put (shape, "vcpu", json_object_new_int (SHAPE_VCPU));
  put (shape, "memoryMiB", json_object_new_int (SHAPE_MIB));
  put (shape, "diskMiB", json_object_new_int (SHAPE_DISK_MIB));
  put (h, "defaultShape", shape);
  /* A guest's memory is taken as it is touched, so one sandbox of the
     default shape "fits" when its whole memory and disk could be.  */
  put (h, "fitsDefaultShape",
       json_object_new_boolean (avail >= SHAPE_MIB && disk >= SHAPE_DISK_MIB && cpus >= SHAPE_VCPU));
  put (r->o, "host", h);
}

static void
add_caller (struct report *r, rt_context *ctx)
{
  json_object *c = json_object_new_object ();
  cleanup_error rt_error *err = NULL;
  bool client = rt_driver_of (ctx) != &rt_local_driver;

  put (c, "uid", json_object_new_int64 (geteuid ()));
  put (c, "canManage", json_object_new_boolean (rt_context_can_manage (ctx, &err) == 0));
  put (c, "why", json_object_new_string (err ? err->msg : client ? "a client: the server decides" : "root"));
  put (r->o, "caller", c);
  put (r->o, "mode", json_object_new_string (client ? "client" : "local"));
  put (r->o, "apiUrl", client ? url_without_login (ctx->api_url) : NULL);
}

int
rt_doctor_json (rt_context *ctx, char **json, rt_error **err)
{
  cleanup_json json_object *o = json_object_new_object ();
  struct report r = { o, json_object_new_array () };
  json_object *dirs = json_object_new_object ();
  rt_context *host = NULL;

  if (o == NULL || r.unreadable == NULL || dirs == NULL)
    {
      json_object_put (r.unreadable);
      json_object_put (dirs);
      return rt_error_oom (err);
    }
  put (o, "version", json_object_new_string (rt_version ()));
  add_caller (&r, ctx);
  put (o, "directories", dirs);
  put (o, "unreadable", r.unreadable);
  /* Any caller reports on the directories root's commands use, where
     sandboxes are made: a copy of @ctx with those, @ctx left as it is.  */
  if (rt_context_dup (ctx, &host, err) < 0 || rt_context_host_dirs (host, err) < 0)
    {
      rt_context_free (host);
      return -ENOMEM;
    }
  put (dirs, "state", json_object_new_string (host->state_dir));
  put (dirs, "data", json_object_new_string (host->data_dir));
  put (dirs, "cache", json_object_new_string (host->cache_dir));
  add_versions (&r, host);
  add_accel (&r, host);
  add_caches (&r, host);
  add_image (&r, host);
  add_trial (&r, host);
  add_jail (&r, host);
  add_host (&r, host);
  rt_context_free (host);
  *json = strdup (json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}
