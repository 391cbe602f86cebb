/* store.c - the snapshots under <data>/snapshots (store.h): ids, names,
   listing, removal, the sweep of what dead captures left, and which
   images they need.  */
#include <fnmatch.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "common/pidfile.h"
#include "snapshot/store.h"

/* A capture or fork older than this is abandoned whatever its pid file
   says (a pid may be reused; no capture takes that long).  */
#define STALE_S 3600

int
rt_snapshot_make_id (char id[RT_SNAPSHOT_ID_LEN + 1], rt_error **err)
{
  unsigned char rnd[6];

  if (getrandom (rnd, sizeof rnd, 0) != sizeof rnd)
    return rt_error_set (err, errno, "internal", "getrandom: %s", strerror (errno));
  snprintf (id, RT_SNAPSHOT_ID_LEN + 1, RT_SNAPSHOT_PREFIX "%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3],
            rnd[4], rnd[5]);
  return 0;
}

bool
rt_snapshot_id_valid (const char *id)
{
  size_t n = strlen (RT_SNAPSHOT_PREFIX);

  if (id == NULL || strlen (id) != RT_SNAPSHOT_ID_LEN || strncmp (id, RT_SNAPSHOT_PREFIX, n) != 0)
    return false;
  for (const char *p = id + n; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
      return false;
  return true;
}

char *
rt_snapshots_root (rt_context *ctx, bool make, rt_error **err)
{
  cleanup_free char *root = rt_strdup_printf ("%s/snapshots", ctx->data_dir);

  if (root == NULL)
    {
      rt_error_oom (err);
      return NULL;
    }
  if (make && rt_mkdir_p (root, 0700, err) < 0)
    return NULL;
  return steal_pointer (&root);
}

static json_object *
read_meta (const char *dir)
{
  cleanup_free char *path = rt_strdup_printf ("%s/meta.json", dir);
  cleanup_free char *data = NULL;
  json_object *o;

  if (path == NULL || rt_read_file (path, &data, NULL, NULL) < 0)
    return NULL;
  o = json_tokener_parse (data);
  if (o && !json_object_is_type (o, json_type_object))
    {
      json_object_put (o);
      return NULL;
    }
  return o;
}

/* @key of @from copied into @to (null when missing).  */
static void
copy_member (json_object *to, json_object *from, const char *key)
{
  json_object *v = NULL;

  json_object_object_get_ex (from, key, &v);
  json_object_object_add (to, key, json_object_get (v));
}

/* The public object (include/runtime.h, rt_snapshot_get_json) of the
   snapshot in @dir with meta.json @meta.  */
static json_object *
snapshot_object (json_object *meta, const char *dir)
{
  json_object *o = json_object_new_object (), *labels = NULL;
  static const char *const copied[]
      = { "sourceSandboxId", "image", "shape", "storedBytes", "memoryBytes", "memoryDataBytes", "diskBytes",
          "createdAt" };

  copy_member (o, meta, "id");
  json_object_object_add (o, "kind", json_object_new_string ("snapshot"));
  copy_member (o, meta, "name");
  if (!json_object_object_get_ex (meta, "labels", &labels) || !json_object_is_type (labels, json_type_object))
    json_object_object_add (o, "labels", json_object_new_object ());
  else
    json_object_object_add (o, "labels", json_object_get (labels));
  json_object_object_add (o, "state", json_object_new_string ("ready"));
  for (size_t i = 0; i < sizeof copied / sizeof *copied; i++)
    copy_member (o, meta, copied[i]);
  json_object_object_add (o, "path", json_object_new_string (dir));
  return o;
}

static int
by_created (const void *a, const void *b)
{
  json_object *x = *(json_object *const *) a, *y = *(json_object *const *) b;
  const char *cx = rt_json_str (x, "createdAt"), *cy = rt_json_str (y, "createdAt");
  int c = strcmp (cx ? cx : "", cy ? cy : "");

  return c ? c : strcmp (rt_json_str (x, "id"), rt_json_str (y, "id"));
}

/* The tenant of the sandbox a snapshot was taken of (its saved state's
   "tenant"), or NULL: a tenant context sees its own snapshots only.  */
static const char *
snapshot_tenant (json_object *meta)
{
  json_object *sb = NULL, *state = NULL;

  json_object_object_get_ex (meta, "sandbox", &sb);
  json_object_object_get_ex (sb, "state", &state);
  return rt_json_str (state, "tenant");
}

/* Every complete snapshot (a dir named by an id, with a meta.json that
   says so) the context sees, oldest first, as public objects.  */
static int
list_snapshots (rt_context *ctx, json_object **out, rt_error **err)
{
  cleanup_free char *root = rt_snapshots_root (ctx, false, err);
  cleanup_json json_object *arr = json_object_new_array ();
  cleanup_dir DIR *d = NULL;
  struct dirent *e;

  if (root == NULL)
    return -ENOMEM;
  d = opendir (root);
  if (d == NULL && errno != ENOENT)
    return rt_error_set (err, errno, "internal", "%s: %s", root, strerror (errno));
  while (d && (e = readdir (d)) != NULL)
    {
      cleanup_free char *dir = NULL;
      cleanup_json json_object *meta = NULL;
      if (!rt_snapshot_id_valid (e->d_name) || (dir = rt_strdup_printf ("%s/%s", root, e->d_name)) == NULL)
        continue;
      meta = read_meta (dir);
      /* The id inside must be the dir's: the object is found by it.  */
      if (meta == NULL || !rt_json_str (meta, "id") || strcmp (rt_json_str (meta, "id"), e->d_name) != 0
          || !rt_tenant_sees (ctx, snapshot_tenant (meta)))
        continue;
      json_object_array_add (arr, snapshot_object (meta, dir));
      if (snapshot_tenant (meta))
        json_object_object_add (json_object_array_get_idx (arr, json_object_array_length (arr) - 1), "tenant",
                                json_object_new_string (snapshot_tenant (meta)));
    }
  json_object_array_sort (arr, by_created);
  *out = steal_pointer (&arr);
  return 0;
}

static int
not_found (rt_error **err, const char *ref)
{
  rt_error_set (err, ENOENT, "not_found", "no snapshot '%s'", ref);
  return rt_error_hint (err, "runtime snapshot ls lists them");
}

/* The public object of the snapshot @ref (id or name) into *out.  */
static int
find_snapshot (rt_context *ctx, const char *ref, json_object **out, rt_error **err)
{
  cleanup_json json_object *arr = NULL;
  int ret;

  if (ref == NULL || *ref == '\0' || strchr (ref, '/'))
    return rt_error_set (err, EINVAL, "usage", "a snapshot id or name is needed");
  ret = list_snapshots (ctx, &arr, err);
  if (ret < 0)
    return ret;
  /* An id first: a name may look like another snapshot's id.  */
  for (int by_name = 0; by_name < 2; by_name++)
    for (size_t i = 0; i < json_object_array_length (arr); i++)
      {
        json_object *s = json_object_array_get_idx (arr, i);
        const char *key = rt_json_str (s, by_name ? "name" : "id");
        if (key && strcmp (key, ref) == 0)
          {
            *out = json_object_get (s);
            return 0;
          }
      }
  return not_found (err, ref);
}

int
rt_snapshot_resolve (rt_context *ctx, const char *ref, char **dir, rt_error **err)
{
  cleanup_json json_object *s = NULL;
  int ret = find_snapshot (ctx, ref, &s, err);

  if (ret < 0)
    return ret;
  *dir = strdup (rt_json_str (s, "path"));
  return *dir ? 0 : rt_error_oom (err);
}

int
rt_snapshot_lock (rt_context *ctx, int *fd, rt_error **err)
{
  cleanup_free char *root = rt_snapshots_root (ctx, true, err);

  if (root == NULL)
    return -ENOMEM;
  return rt_lock_dir (root, fd, err);
}

int
rt_snapshot_name_free (rt_context *ctx, const char *name, rt_error **err)
{
  cleanup_json json_object *arr = NULL;
  int ret = list_snapshots (ctx, &arr, err);

  if (ret < 0)
    return ret;
  for (size_t i = 0; i < json_object_array_length (arr); i++)
    {
      json_object *s = json_object_array_get_idx (arr, i);
      const char *other = rt_json_str (s, "name");
      /* Unique per tenant, as sandbox names.  */
      if (other && strcmp (other, name) == 0 && rt_tenant_same (ctx, rt_json_str (s, "tenant")))
        {
          rt_error_set (err, EEXIST, "name_taken", "a snapshot is already named '%s' (%s)", name,
                        rt_json_str (s, "id"));
          return rt_error_hint (err, "runtime snapshot rm %s frees the name", rt_json_str (s, "id"));
        }
    }
  return 0;
}

/* 1 when the "pid starttime" text @s names a live process, 0 when a dead
   one, -1 when it names none.  */
static int
pid_text_alive (const char *s)
{
  unsigned long long start = 0;
  int pid = 0;

  if (s == NULL || sscanf (s, "%d %llu", &pid, &start) != 2 || pid <= 0)
    return -1;
  return rt_proc_starttime (pid) == start ? 1 : 0;
}

/* Whether the leftover @name in @root is abandoned: a removal's, a
   capture whose monitor died, a fork whose creator did, or any over an
   hour old.  */
static bool
abandoned (const char *root, const char *name)
{
  cleanup_free char *dir = rt_strdup_printf ("%s/%s", root, name);
  cleanup_free char *pidfile = NULL;
  cleanup_json json_object *meta = NULL;
  struct stat st;
  int alive = -1;

  if (dir == NULL || lstat (dir, &st) < 0 || !S_ISDIR (st.st_mode))
    return false;
  if (strncmp (name, ".tmp-del-", 9) == 0)
    return true;
  if (strncmp (name, ".tmp-", 5) == 0 && (pidfile = rt_strdup_printf ("%s/monitor.pid", dir)) != NULL)
    alive = rt_pidfile_alive (pidfile, NULL);
  else if (strncmp (name, ".fork-", 6) == 0 && (meta = read_meta (dir)) != NULL)
    alive = pid_text_alive (rt_json_str (meta, "creatorPid"));
  return alive == 0 || time (NULL) - st.st_mtime > STALE_S;
}

void
rt_snapshot_sweep (rt_context *ctx)
{
  cleanup_free char *root = rt_snapshots_root (ctx, false, NULL);
  cleanup_dir DIR *d = NULL;
  struct dirent *e;

  if (root == NULL || (d = opendir (root)) == NULL)
    return;
  while ((e = readdir (d)) != NULL)
    {
      cleanup_free char *dir = NULL;
      if (fnmatch (".tmp-*", e->d_name, 0) != 0 && fnmatch (".fork-*", e->d_name, 0) != 0)
        continue;
      if (abandoned (root, e->d_name) && (dir = rt_strdup_printf ("%s/%s", root, e->d_name)) != NULL)
        rt_rm_rf (dir, NULL);
    }
}

/* 1 with *who set when the saved VM in @dir needs @image_id.  */
static int
saved_needs (const char *dir, const char *image_id, const char *id, char **who)
{
  cleanup_json json_object *meta = read_meta (dir);
  json_object *image = NULL;
  const char *uses;

  if (meta == NULL || !json_object_object_get_ex (meta, "image", &image))
    return 0;
  uses = rt_json_str (image, "id");
  if (uses == NULL || strcmp (uses, image_id) != 0)
    return 0;
  *who = strdup (id);
  return *who ? 1 : -ENOMEM;
}

/* 1 when a paused sandbox's saved VM (<data>/sandboxes/<id>/saved) needs
   @image_id.  */
static int
paused_need (rt_context *ctx, const char *image_id, char **who, rt_error **err)
{
  cleanup_free char *root = rt_strdup_printf ("%s/sandboxes", ctx->data_dir);
  cleanup_dir DIR *d = NULL;
  struct dirent *e;
  int ret = 0;

  if (root == NULL)
    return rt_error_oom (err);
  if ((d = opendir (root)) == NULL)
    return errno == ENOENT ? 0 : rt_error_set (err, errno, "internal", "%s: %s", root, strerror (errno));
  while (ret == 0 && (e = readdir (d)) != NULL)
    {
      cleanup_free char *dir = NULL;
      if (strncmp (e->d_name, "sb-", 3) != 0 || (dir = rt_strdup_printf ("%s/%s/saved", root, e->d_name)) == NULL)
        continue;
      ret = saved_needs (dir, image_id, e->d_name, who);
    }
  return ret < 0 ? rt_error_oom (err) : ret;
}

int
rt_snapshot_image_in_use (rt_context *ctx, const char *image_id, char **who, rt_error **err)
{
  cleanup_json json_object *arr = NULL;
  int ret = list_snapshots (ctx, &arr, err);

  if (ret < 0)
    return ret;
  *who = NULL;
  for (size_t i = 0; ret == 0 && i < json_object_array_length (arr); i++)
    {
      json_object *s = json_object_array_get_idx (arr, i);
      ret = saved_needs (rt_json_str (s, "path"), image_id, rt_json_str (s, "id"), who);
    }
  if (ret < 0)
    return rt_error_oom (err);
  return ret ? ret : paused_need (ctx, image_id, who, err);
}

static int
dump (json_object *o, char **json, rt_error **err)
{
  *json = strdup (json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}

int
rt_local_snapshot_list_json (rt_context *ctx, char **json, rt_error **err)
{
  cleanup_json json_object *arr = NULL;
  int ret;

  rt_snapshot_sweep (ctx);
  ret = list_snapshots (ctx, &arr, err);
  return ret < 0 ? ret : dump (arr, json, err);
}

int
rt_local_snapshot_get_json (rt_context *ctx, const char *ref, char **json, rt_error **err)
{
  cleanup_json json_object *s = NULL;
  int ret = find_snapshot (ctx, ref, &s, err);

  return ret < 0 ? ret : dump (s, json, err);
}

int
rt_local_snapshot_remove (rt_context *ctx, const char *ref, rt_error **err)
{
  cleanup_free char *root = NULL, *gone = NULL;
  cleanup_json json_object *s = NULL;
  cleanup_close int lockfd = -1;
  int ret = find_snapshot (ctx, ref, &s, err);

  /* Found first, so that a mistyped name makes no store; then again
     under the lock, which a capture that takes the name holds.  */
  if (ret < 0)
    return ret;
  json_object_put (steal_pointer (&s));
  ret = rt_snapshot_lock (ctx, &lockfd, err);
  if (ret < 0)
    return ret;
  ret = find_snapshot (ctx, ref, &s, err);
  if (ret < 0)
    return ret;
  root = rt_snapshots_root (ctx, false, err);
  if (root == NULL || (gone = rt_strdup_printf ("%s/.tmp-del-%s", root, rt_json_str (s, "id"))) == NULL)
    return rt_error_oom (err);
  /* Out of the listing in one step: a removal cut short leaves a
     .tmp-del- dir the next sweep finishes, never half a snapshot.  */
  if (rename (rt_json_str (s, "path"), gone) < 0)
    return rt_error_set (err, errno, "internal", "cannot remove %s: %s", rt_json_str (s, "path"), strerror (errno));
  rt_rm_rf (gone, NULL);
  return 0;
}
