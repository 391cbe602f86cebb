/* store.c - live state dirs, records of ended sandboxes, and the reaper.  */
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <time.h>

#include "sandbox/store.h"
#include "vmm/cgroup.h"

/* How long the reaper waits for a dead monitor's QEMU to end: its uid and
   control group are free only then.  */
#define QEMU_EXIT_WAIT_MS 2000

int64_t
rt_epoch_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_REALTIME, &ts);
  return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
rt_format_time (int64_t epoch_ms, char out[32])
{
  time_t t = epoch_ms / 1000;
  struct tm tm;
  char base[24];

  gmtime_r (&t, &tm);
  strftime (base, sizeof (base), "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf (out, 32, "%s.%03dZ", base, (int) (epoch_ms % 1000));
}

char *
rt_sandbox_dir (rt_context *ctx, const char *id)
{
  return rt_strdup_printf ("%s/%s", ctx->state_dir, id);
}

char *
rt_record_path (rt_context *ctx, const char *id)
{
  return rt_strdup_printf ("%s/sandboxes/%s.json", ctx->data_dir, id);
}

char *
rt_sandbox_disk_dir (rt_context *ctx, const char *id)
{
  return rt_strdup_printf ("%s/sandboxes/%s", ctx->data_dir, id);
}

char *
rt_egress_log_path (rt_context *ctx, const char *id)
{
  return rt_strdup_printf ("%s/sandboxes/%s.egress.jsonl", ctx->data_dir, id);
}

static int
write_json (const char *path, json_object *obj, rt_error **err)
{
  size_t len;
  const char *s = json_object_to_json_string_length (obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
                                                     &len);
  return rt_write_file_atomic (path, s, len, 0600, err);
}

int
rt_store_write_state (const char *dir, json_object *state, rt_error **err)
{
  cleanup_free char *path = rt_strdup_printf ("%s/state.json", dir);
  if (path == NULL)
    return rt_error_oom (err);
  return write_json (path, state, err);
}

int
rt_store_write_record (rt_context *ctx, json_object *state, rt_error **err)
{
  cleanup_free char *dir = rt_strdup_printf ("%s/sandboxes", ctx->data_dir);
  json_object *id;
  cleanup_free char *path = NULL;
  int ret;

  if (!json_object_object_get_ex (state, "id", &id))
    return rt_error_set (err, EINVAL, "internal", "sandbox state without an id");
  path = rt_record_path (ctx, json_object_get_string (id));
  if (dir == NULL || path == NULL)
    return rt_error_oom (err);
  ret = rt_mkdir_p (dir, 0700, err);
  if (ret < 0)
    return ret;
  return write_json (path, state, err);
}

int
rt_write_pidfile (const char *path, pid_t pid, rt_error **err)
{
  char data[64];
  int len = snprintf (data, sizeof (data), "%d %llu\n", (int) pid, rt_proc_starttime (pid));
  return rt_write_file_atomic (path, data, len, 0600, err);
}

int
rt_pidfile_alive (const char *path, pid_t *pid)
{
  cleanup_free char *data = NULL;
  unsigned long long start = 0;
  int p = 0;

  if (rt_read_file (path, &data, NULL, NULL) < 0)
    return -1;
  if (sscanf (data, "%d %llu", &p, &start) != 2 || p <= 0)
    return -1;
  if (pid)
    *pid = p;
  return rt_proc_starttime (p) == start ? 1 : 0;
}

static json_object *
read_json_file (const char *path)
{
  cleanup_free char *data = NULL;
  json_object *obj;

  if (rt_read_file (path, &data, NULL, NULL) < 0)
    return NULL;
  obj = json_tokener_parse (data);
  if (obj && !json_object_is_type (obj, json_type_object))
    {
      json_object_put (obj);
      return NULL;
    }
  return obj;
}

/* A dead monitor's sandbox: write its record as host_stopped, make sure its
   QEMU is gone (it dies with the monitor: PR_SET_PDEATHSIG), remove it.  */
static void
reap_dead (rt_context *ctx, const char *dir)
{
  cleanup_free char *state_path = rt_strdup_printf ("%s/state.json", dir);
  cleanup_free char *qemu_pid = rt_strdup_printf ("%s/qemu.pid", dir);
  json_object *state = state_path ? read_json_file (state_path) : NULL;
  pid_t pid = 0;

  if (qemu_pid && rt_pidfile_alive (qemu_pid, &pid) == 1)
    {
      int pidfd = pidfd_open (pid, 0);
      struct pollfd p = { .fd = pidfd, .events = POLLIN };

      kill (pid, SIGKILL);
      if (pidfd >= 0)
        {
          while (poll (&p, 1, QEMU_EXIT_WAIT_MS) < 0 && errno == EINTR)
            ;
          close (pidfd);
        }
    }
  /* A spare nobody claimed leaves no record (monitor/spare.h).  */
  if (state && json_object_get_boolean (json_object_object_get (state, "spare")))
    {
      json_object_put (state);
      state = NULL;
    }
  if (state)
    {
      const char *st = rt_json_str (state, "state");
      char now[32];
      rt_format_time (rt_epoch_ms (), now);
      if (st == NULL || strcmp (st, "stopped") != 0)
        {
          json_object_object_add (state, "state", json_object_new_string ("stopped"));
          json_object_object_add (state, "stopReason", json_object_new_string ("host_stopped"));
          json_object_object_add (state, "endedAt", json_object_new_string (now));
        }
      rt_store_write_record (ctx, state, NULL);
      json_object_put (state);
    }
  rt_rm_rf (dir, NULL);
}

/* A paused sandbox whose state dir went with a reboot (/run is RAM): its
   saved VM holds its state object, so the state dir is made again and it
   stays paused.  */
static bool
revive_paused (rt_context *ctx, const char *id, const char *disk)
{
  cleanup_free char *meta_path = rt_strdup_printf ("%s/saved/meta.json", disk);
  cleanup_free char *saved = rt_strdup_printf ("%s/saved", disk);
  cleanup_free char *dir = rt_sandbox_dir (ctx, id);
  cleanup_free char *text = NULL;
  cleanup_json json_object *meta = NULL;
  json_object *sb = NULL, *state = NULL, *p;

  if (meta_path == NULL || saved == NULL || dir == NULL || rt_read_file (meta_path, &text, NULL, NULL) < 0
      || (meta = json_tokener_parse (text)) == NULL || !json_object_object_get_ex (meta, "sandbox", &sb)
      || !json_object_object_get_ex (sb, "state", &state) || !json_object_is_type (state, json_type_object)
      || (mkdir (dir, 0700) < 0 && errno != EEXIST))
    return false;
  p = json_object_new_object ();
  json_object_object_add (p, "path", json_object_new_string (saved));
  json_object_object_add (p, "storedBytes", json_object_new_int64 (rt_json_i64 (meta, "storedBytes")));
  json_object_object_add (state, "paused", p);
  json_object_object_add (state, "state", json_object_new_string ("paused"));
  return rt_store_write_state (dir, state, NULL) == 0;
}

/* A sandbox paused to disk has no monitor: its state says paused and
   its saved VM is whole (sandbox/wake.h).  */
static bool
paused_to_disk (rt_context *ctx, const char *id, const char *dir)
{
  cleanup_free char *state_path = rt_strdup_printf ("%s/state.json", dir);
  cleanup_free char *disk = rt_sandbox_disk_dir (ctx, id);
  cleanup_free char *meta = disk ? rt_strdup_printf ("%s/saved/meta.json", disk) : NULL;
  cleanup_free char *text = NULL;
  cleanup_json json_object *state = NULL;
  const char *s;

  if (state_path == NULL || meta == NULL || access (meta, F_OK) < 0
      || rt_read_file (state_path, &text, NULL, NULL) < 0 || (state = json_tokener_parse (text)) == NULL)
    return false;
  s = rt_json_str (state, "state");
  if (s && strcmp (s, "paused") == 0)
    return true;
  /* Its monitor died between the capture and writing "paused": the
     capture is whole (saved/meta.json comes last), so it is paused.  */
  return revive_paused (ctx, id, disk);
}

/* Disk dirs (<data>/sandboxes/<id>/) whose state dir is gone: their
   "live" link (vmm/vm.c) dangles.  One without the link yet is being made,
   unless it is old.  */
static void
reap_disks (rt_context *ctx)
{
  cleanup_free char *records = rt_strdup_printf ("%s/sandboxes", ctx->data_dir);
  cleanup_dir DIR *d = records ? opendir (records) : NULL;
  struct dirent *de;

  while (d && (de = readdir (d)))
    {
      cleanup_free char *dir = NULL, *live = NULL;
      struct stat st;
      if (strncmp (de->d_name, "sb-", 3) != 0 || strchr (de->d_name, '.'))
        continue;
      dir = rt_sandbox_disk_dir (ctx, de->d_name);
      live = rt_strdup_printf ("%s/%s/live", records, de->d_name);
      if (dir == NULL || live == NULL || lstat (dir, &st) < 0 || !S_ISDIR (st.st_mode))
        continue;
      if (stat (live, &st) == 0 || revive_paused (ctx, de->d_name, dir))
        continue;
      if (lstat (live, &st) == 0 || (lstat (dir, &st) == 0 && st.st_mtime + 60 < time (NULL)))
        rt_rm_rf (dir, NULL);
    }
}

/* State dirs whose monitor died, or whose creation did.  */
static void
reap_states (rt_context *ctx)
{
  cleanup_dir DIR *d = opendir (ctx->state_dir);
  struct dirent *de;

  if (d == NULL)
    return;
  while ((de = readdir (d)))
    {
      cleanup_free char *dir = NULL, *monitor = NULL, *owner = NULL;
      int alive;

      if (strncmp (de->d_name, "sb-", 3) != 0)
        continue;
      dir = rt_sandbox_dir (ctx, de->d_name);
      monitor = rt_strdup_printf ("%s/monitor.pid", dir);
      owner = rt_strdup_printf ("%s/owner", dir);
      if (dir == NULL || monitor == NULL || owner == NULL)
        return;
      alive = rt_pidfile_alive (monitor, NULL);
      if (alive == 1 || paused_to_disk (ctx, de->d_name, dir))
        continue;
      if (alive == 0)
        {
          reap_dead (ctx, dir);
          continue;
        }
      /* No monitor yet: being created while its creator lives.  */
      alive = rt_pidfile_alive (owner, NULL);
      if (alive == 1)
        continue;
      if (alive == 0)
        {
          rt_rm_rf (dir, NULL);
          continue;
        }
      {
        /* Neither file: a crash between mkdir and the owner file; only an
           old one is surely stale.  */
        struct stat st;
        if (stat (dir, &st) == 0 && st.st_mtime + 60 < time (NULL))
          rt_rm_rf (dir, NULL);
      }
    }
}

void
rt_store_reap (rt_context *ctx)
{
  reap_states (ctx);
  /* After the state dirs: a disk dir goes with its state dir, and a
     control group with its QEMU (a monitor killed -9 leaves both).  */
  reap_disks (ctx);
  rt_cgroup_sweep ();
}

static int
by_created (const void *a, const void *b)
{
  json_object *x = *(json_object *const *) a, *y = *(json_object *const *) b;
  const char *cx = rt_json_str (x, "createdAt"), *cy = rt_json_str (y, "createdAt");
  int c = strcmp (cx ? cx : "", cy ? cy : "");
  if (c)
    return c;
  return strcmp (rt_json_str (x, "id") ? rt_json_str (x, "id") : "", rt_json_str (y, "id") ? rt_json_str (y, "id") : "");
}

static bool
array_has_id (json_object *arr, const char *id)
{
  size_t n = json_object_array_length (arr);
  for (size_t i = 0; i < n; i++)
    {
      const char *other = rt_json_str (json_object_array_get_idx (arr, i), "id");
      if (other && strcmp (other, id) == 0)
        return true;
    }
  return false;
}

/* A tenant context sees only its own sandboxes (core/context.h).  */
static bool
visible (rt_context *ctx, bool scoped, json_object *sb)
{
  return !scoped || rt_tenant_sees (ctx, rt_json_str (sb, "tenant"));
}

static int
store_list (rt_context *ctx, bool all, bool scoped, json_object **out, rt_error **err)
{
  json_object *arr = json_object_new_array ();
  cleanup_free char *records = rt_strdup_printf ("%s/sandboxes", ctx->data_dir);
  DIR *d;
  struct dirent *de;

  if (arr == NULL || records == NULL)
    {
      json_object_put (arr);
      return rt_error_oom (err);
    }
  rt_store_reap (ctx);
  d = opendir (ctx->state_dir);
  while (d && (de = readdir (d)))
    {
      cleanup_free char *path = NULL;
      json_object *state;
      if (strncmp (de->d_name, "sb-", 3) != 0)
        continue;
      path = rt_strdup_printf ("%s/%s/state.json", ctx->state_dir, de->d_name);
      state = path ? read_json_file (path) : NULL;
      if (state == NULL)
        continue;
      /* A stopping monitor wrote its record already: the record wins.
         Spares are no one's sandboxes yet (monitor/spare.h).  */
      if (!visible (ctx, scoped, state)
          || (rt_json_str (state, "state")
              && (strcmp (rt_json_str (state, "state"), "stopped") == 0
                  || json_object_get_boolean (json_object_object_get (state, "spare")))))
        {
          json_object_put (state);
          continue;
        }
      json_object_array_add (arr, state);
    }
  if (d)
    closedir (d);
  d = all ? opendir (records) : NULL;
  while (d && (de = readdir (d)))
    {
      cleanup_free char *path = NULL;
      json_object *rec;
      size_t len = strlen (de->d_name);
      if (strncmp (de->d_name, "sb-", 3) != 0 || len < 6 || strcmp (de->d_name + len - 5, ".json") != 0)
        continue;
      path = rt_strdup_printf ("%s/%s", records, de->d_name);
      rec = path ? read_json_file (path) : NULL;
      if (rec == NULL)
        continue;
      if (!visible (ctx, scoped, rec) || array_has_id (arr, rt_json_str (rec, "id") ? rt_json_str (rec, "id") : ""))
        json_object_put (rec);
      else
        json_object_array_add (arr, rec);
    }
  if (d)
    closedir (d);
  json_object_array_sort (arr, by_created);
  *out = arr;
  return 0;
}

int
rt_store_list (rt_context *ctx, bool all, json_object **out, rt_error **err)
{
  return store_list (ctx, all, true, out, err);
}

int
rt_store_list_unscoped (rt_context *ctx, bool all, json_object **out, rt_error **err)
{
  return store_list (ctx, all, false, out, err);
}

/* The entries of @arr with id @ref (then *n = 1), else those named @ref
   (counted in *n, the last in *found); with @stopped, only ended ones;
   with @own, only those of the context's own owner.  */
static void
match_owned (rt_context *ctx, json_object *arr, const char *ref, bool stopped, bool own, json_object **found, int *n)
{
  *n = 0;
  for (size_t i = 0; i < json_object_array_length (arr); i++)
    {
      json_object *o = json_object_array_get_idx (arr, i);
      const char *id = rt_json_str (o, "id"), *name = rt_json_str (o, "name"), *st = rt_json_str (o, "state");
      if ((stopped && (st == NULL || strcmp (st, "stopped") != 0))
          || (own && !rt_tenant_same (ctx, rt_json_str (o, "tenant"))))
        continue;
      if (id && strcmp (id, ref) == 0)
        {
          *found = o;
          *n = 1;
          return;
        }
      if (name && strcmp (name, ref) == 0)
        {
          *found = o;
          (*n)++;
        }
    }
}

/* match_owned of every owner the context sees; a name several share is
   the host's own sandbox's when the host (untenanted) has one by it, so
   a tenant's "dev" never makes the host's "dev" ambiguous.  */
static void
match_ref (rt_context *ctx, json_object *arr, const char *ref, bool stopped, json_object **found, int *n)
{
  json_object *own = NULL;
  int n_own = 0;

  match_owned (ctx, arr, ref, stopped, false, found, n);
  if (*n <= 1 || ctx->tenant)
    return;
  match_owned (ctx, arr, ref, stopped, true, &own, &n_own);
  if (n_own == 1)
    {
      *found = own;
      *n = 1;
    }
}

int
rt_store_resolve (rt_context *ctx, const char *ref, json_object **out, rt_error **err)
{
  cleanup_json json_object *arr = NULL;
  cleanup_free char *record = NULL;
  json_object *found = NULL;
  int n = 0, ret;

  if (ref == NULL || *ref == '\0' || strchr (ref, '/'))
    return rt_error_set (err, EINVAL, "usage", "a sandbox id or name is needed");
  /* Live sandboxes first: few, and what scripts name.  Records of ended
     ones grow with every run, so they are read only when needed.  */
  ret = rt_store_list (ctx, false, &arr, err);
  if (ret < 0)
    return ret;
  match_ref (ctx, arr, ref, false, &found, &n);
  if (n == 0)
    {
      record = rt_record_path (ctx, ref);
      if (record && strncmp (ref, "sb-", 3) == 0 && (found = read_json_file (record)) != NULL)
        {
          if (rt_tenant_sees (ctx, rt_json_str (found, "tenant")))
            {
              *out = found;
              return 0;
            }
          json_object_put (found);
          found = NULL;
        }
      json_object_put (steal_pointer (&arr));
      ret = rt_store_list (ctx, true, &arr, err);
      if (ret < 0)
        return ret;
      match_ref (ctx, arr, ref, true, &found, &n);
    }
  if (n == 1)
    {
      *out = json_object_get (found);
      return 0;
    }
  if (n > 1)
    {
      rt_error_set (err, EINVAL, "invalid_request", "more than one sandbox is named '%s'", ref);
      return rt_error_hint (err, "use its id (runtime sandbox ls --all)");
    }
  rt_error_set (err, ENOENT, "not_found", "no sandbox '%s'", ref);
  return rt_error_hint (err, "runtime sandbox ls --all lists them");
}

int
rt_store_lock (rt_context *ctx, int *fd, rt_error **err)
{
  int ret = rt_mkdir_p (ctx->state_dir, 0755, err);
  if (ret < 0)
    return ret;
  return rt_lock_dir (ctx->state_dir, fd, err);
}
