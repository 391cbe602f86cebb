/* fork.c - snapshots and forks of a sandbox (fork.h): its monitor
   captures it (monitor/capture.h); the children are new sandboxes started
   from the capture (sandbox/create.h).  */
#include <string.h>
#include <sys/stat.h>

#include "sandbox/list.h"
#include "monitor/client.h"
#include "sandbox/create.h"
#include "sandbox/fork.h"
#include "records/store.h"
#include "sandbox/wake.h"
#include "snapshot/store.h"

/* {"id", "name"?, "labels"?} for the monitor; "invalid_request" for a
   label without '=' or a name too long.  */
static json_object *
capture_body (const char *id, const char *name, const char *const *labels, rt_error **err)
{
  cleanup_json json_object *body = json_object_new_object ();
  json_object *l = json_object_new_object ();

  if (body == NULL || l == NULL)
    {
      json_object_put (l);
      return (rt_error_oom (err), NULL);
    }
  json_object_object_add (body, "labels", l);
  json_object_object_add (body, "id", json_object_new_string (id));
  if (name && (name[0] == '\0' || strlen (name) > RT_MAX_NAME))
    return (rt_error_set (err, EINVAL, "invalid_request", "a name is 1 to %d bytes", RT_MAX_NAME), NULL);
  if (name)
    json_object_object_add (body, "name", json_object_new_string (name));
  for (size_t i = 0; labels && labels[i]; i++)
    {
      const char *eq = strchr (labels[i], '=');
      cleanup_free char *key = eq ? strndup (labels[i], eq - labels[i]) : NULL;
      if (eq == NULL || eq == labels[i] || i >= RT_MAX_LABELS)
        return (rt_error_set (err, EINVAL, "invalid_request", "a label is key=value (at most %d): '%s'", RT_MAX_LABELS,
                              labels[i]),
                NULL);
      if (key == NULL)
        return (rt_error_oom (err), NULL);
      json_object_object_add (l, key, json_object_new_string (eq + 1));
    }
  return steal_pointer (&body);
}

/* A paused sandbox's snapshot, taken from its saved VM (no VM runs): its
   memory, state and layers linked, its overlay copied as the last layer.  */
static int
snapshot_paused (rt_sandbox *sb, const char *id, json_object *body, rt_error **err)
{
  cleanup_free char *disk = rt_sandbox_disk_dir (sb->ctx, sb->id);
  cleanup_free char *root = rt_snapshots_root (sb->ctx, true, err);
  cleanup_free char *tmp = root ? rt_strdup_printf ("%s/.tmp-%s", root, id) : NULL;
  cleanup_free char *dst = root ? rt_strdup_printf ("%s/%s", root, id) : NULL;
  cleanup_free char *from = disk ? rt_strdup_printf ("%s/saved", disk) : NULL;
  cleanup_free char *overlay = disk ? rt_strdup_printf ("%s/overlay.qcow2", disk) : NULL;
  cleanup_saved struct rt_saved saved = { 0 };
  cleanup_json json_object *meta = NULL;
  json_object *v;
  char now[32];
  const char *text;
  int ret;

  if (root == NULL)
    return -1;
  if (tmp == NULL || dst == NULL || from == NULL || overlay == NULL)
    return rt_error_oom (err);
  ret = rt_saved_load (from, NULL, &saved, err);
  if (ret < 0)
    return ret;
  if (saved.n_layers >= RT_MAX_LAYERS)
    return rt_error_set (err, E2BIG, "invalid_request", "sandbox %s descends from %d snapshots already", sb->id,
                         RT_MAX_LAYERS);
  meta = json_object_get (saved.meta);
  rt_format_time (rt_epoch_ms (), now);
  json_object_object_add (meta, "id", json_object_new_string (id));
  json_object_object_add (meta, "kind", json_object_new_string ("snapshot"));
  json_object_object_add (meta, "createdAt", json_object_new_string (now));
  json_object_object_add (meta, "name", json_object_object_get_ex (body, "name", &v) ? json_object_get (v) : NULL);
  json_object_object_add (meta, "labels", json_object_object_get_ex (body, "labels", &v) ? json_object_get (v) : NULL);
  if (mkdir (tmp, 0700) < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", tmp, strerror (errno));
  {
    cleanup_free char *ram = rt_strdup_printf ("%s/ram", tmp), *state = rt_strdup_printf ("%s/state", tmp);
    ret = ram && state ? 0 : rt_error_oom (err);
    if (ret == 0)
      ret = rt_saved_link (saved.ram, ram, err);
    if (ret == 0)
      ret = rt_saved_link (saved.state, state, err);
    if (ret == 0)
      ret = rt_saved_capture_disk (saved.layers, overlay, tmp, meta, err);
  }
  if (ret == 0)
    {
      json_object_object_add (meta, "storedBytes", json_object_new_int64 (rt_saved_stored_bytes (tmp)));
      text = json_object_to_json_string_ext (meta, JSON_C_TO_STRING_PLAIN);
      cleanup_free char *path = rt_strdup_printf ("%s/meta.json", tmp);
      ret = path ? rt_write_file_atomic (path, text, strlen (text), 0600, err) : rt_error_oom (err);
    }
  if (ret == 0 && rename (tmp, dst) < 0)
    ret = rt_error_set (err, errno, "internal", "cannot rename '%s': %s", tmp, strerror (errno));
  if (ret < 0)
    rt_rm_rf (tmp, NULL);
  return ret;
}

int
rt_local_sandbox_snapshot (rt_sandbox *sb, const char *name, const char *const *labels, char **json, rt_error **err)
{
  char id[RT_SNAPSHOT_ID_LEN + 1];
  cleanup_close int lock = -1;
  cleanup_json json_object *body = NULL;
  int ret;

  bool paused;

  rt_snapshot_sweep (sb->ctx);
  ret = rt_sandbox_is_paused (sb, err);
  paused = ret > 0;
  if (ret >= 0)
    ret = rt_snapshot_make_id (id, err);
  if (ret == 0)
    body = capture_body (id, name, labels, err);
  if (ret < 0 || body == NULL)
    return -1;
  /* A name is taken under the lock until the snapshot bearing it is whole.  */
  ret = rt_snapshot_lock (sb->ctx, &lock, err);
  if (ret == 0 && name)
    ret = rt_snapshot_name_free (sb->ctx, name, err);
  if (ret == 0 && paused)
    {
      /* Not woken under it.  */
      cleanup_close int wake_lock = -1;
      ret = rt_sandbox_lock_wake (sb, &wake_lock, err);
      if (ret == 0)
        ret = rt_sandbox_is_paused (sb, err) > 0 ? snapshot_paused (sb, id, body, err)
                                                  : rt_error_set (err, EAGAIN, "sandbox_not_ready",
                                                                  "sandbox %s woke during the snapshot: try again", sb->id);
    }
  else if (ret == 0)
    ret = rt_api_call (sb->sock, sb->id, "snapshot", body, NULL, err);
  if (ret < 0)
    return ret;
  close (steal_fd (&lock));
  return json ? rt_local_snapshot_get_json (sb->ctx, id, json, err) : 0;
}

/* The children of the capture in @dir, named @name-1… (or @name alone).  */
static int
make_children (rt_sandbox *sb, const char *dir, unsigned count, const char *name, const char *const *labels,
               char **ids, rt_error **err)
{
  for (unsigned i = 0; i < count; i++)
    {
      cleanup_free char *child_name = name && count > 1 ? rt_strdup_printf ("%s-%u", name, i + 1) : NULL;
      rt_sandbox_config cfg = { .name = child_name ? child_name : name, .labels = labels };
      rt_sandbox *child = NULL;
      int ret;

      if (name && count > 1 && child_name == NULL)
        return rt_error_oom (err);
      ret = rt_sandbox_create_from (sb->ctx, &cfg, dir, &child, err);
      if (ret < 0)
        return ret;
      ids[i] = strdup (rt_sandbox_id (child));
      rt_sandbox_close (child);
      if (ids[i] == NULL)
        return rt_error_oom (err);
    }
  return 0;
}

int
rt_local_sandbox_fork (rt_sandbox *sb, unsigned count, const char *name, const char *const *labels, char ***ids,
                 rt_error **err)
{
  char id[RT_SNAPSHOT_ID_LEN + 1], creator[64];
  cleanup_json json_object *body = NULL;
  cleanup_free char *root = NULL, *dir = NULL;
  char **out;
  int ret;

  if (count < 1 || count > RT_MAX_FORK)
    return rt_error_set (err, EINVAL, "invalid_request", "a fork makes 1 to %d sandboxes", RT_MAX_FORK);
  if (rt_sandbox_is_paused (sb, NULL) == 1)
    {
      rt_error_set (err, EAGAIN, "sandbox_not_ready", "sandbox %s is paused: a fork continues a running one", sb->id);
      return rt_error_hint (err, "runtime sandbox wake %s, or runtime sandbox snapshot it and create from that",
                            sb->id);
    }
  rt_snapshot_sweep (sb->ctx);
  ret = rt_snapshot_make_id (id, err);
  if (ret == 0)
    body = capture_body (id, NULL, NULL, err);
  if (ret < 0 || body == NULL)
    return -1;
  /* The capture goes with this process: a sweep removes it once it is
     gone, children made or not.  */
  snprintf (creator, sizeof creator, "%d %llu", (int) getpid (), rt_proc_starttime (getpid ()));
  json_object_object_add (body, "creatorPid", json_object_new_string (creator));
  root = rt_snapshots_root (sb->ctx, true, err);
  dir = root ? rt_strdup_printf ("%s/.fork-%s", root, id) : NULL;
  out = calloc (count + 1, sizeof (char *));
  if (root == NULL || dir == NULL || out == NULL)
    {
      free (out);
      return root ? rt_error_oom (err) : -1;
    }
  ret = rt_api_call (sb->sock, sb->id, "fork", body, NULL, err);
  if (ret == 0)
    ret = make_children (sb, dir, count, name, labels, out, err);
  rt_rm_rf (dir, NULL);
  if (ret < 0)
    {
      /* No child is left of a fork that failed.  */
      for (char **p = out; *p; p++)
        rt_local_sandbox_remove (sb->ctx, *p, NULL);
      cleanup_strvp (&out);
      return ret;
    }
  *ids = out;
  return 0;
}
