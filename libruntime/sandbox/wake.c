/* wake.c - pause to disk and wake (wake.h).  */
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>

#include "core/state.h"
#include "billing/trial.h"
#include "image/disk.h"
#include "monitor/client.h"
#include "net/egress.h"
#include "common/pidfile.h"
#include "records/store.h"
#include "sandbox/wake.h"
#include "vmm/kernel.h"

/* A pause saves up to the guest's memory to disk: 4 GiB at disk speed.  */
#define PAUSE_WAIT_MS 120000

static char **
strv_from_json (json_object *arr)
{
  size_t n = arr && json_object_is_type (arr, json_type_array) ? json_object_array_length (arr) : 0;
  char **v = calloc (n + 1, sizeof (char *));

  for (size_t i = 0; v && i < n; i++)
    if ((v[i] = strdup (json_object_get_string (json_object_array_get_idx (arr, i)))) == NULL)
      {
        cleanup_strvp (&v);
        return NULL;
      }
  return v;
}

int
rt_saved_settings_get (const struct rt_saved *saved, struct rt_saved_settings *out, rt_error **err)
{
  json_object *sb = NULL, *v = NULL;

  memset (out, 0, sizeof *out);
  json_object_object_get_ex (saved->meta, "sandbox", &sb);
  json_object_object_get_ex (sb, "env", &v);
  out->env = strv_from_json (v);
  v = NULL;
  json_object_object_get_ex (sb, "secretEnv", &v);
  out->secret_env = strv_from_json (v);
  if (out->env == NULL || out->secret_env == NULL)
    return rt_error_oom (err);
  out->workdir = json_object_object_get_ex (sb, "workdir", &v) && v ? json_object_get_string (v) : NULL;
  out->stop_on_timeout = json_object_object_get_ex (sb, "stopOnTimeout", &v) && json_object_get_boolean (v);
  out->trial = json_object_object_get_ex (sb, "trial", &v) && json_object_get_boolean (v);
  return 0;
}

void
rt_saved_settings_clear (struct rt_saved_settings *s)
{
  cleanup_strvp (&s->env);
  cleanup_strvp (&s->secret_env);
}

json_object *
rt_sandbox_read_state (rt_sandbox *sb, rt_error **err)
{
  cleanup_free char *path = rt_strdup_printf ("%s/state.json", sb->dir);
  cleanup_free char *text = NULL;
  json_object *o;

  if (path == NULL)
    return (rt_error_oom (err), NULL);
  if (rt_read_file (path, &text, NULL, NULL) < 0 || (o = json_tokener_parse (text)) == NULL)
    return (rt_error_set (err, ENOENT, "not_found", "no sandbox %s", sb->id), NULL);
  return o;
}

int
rt_sandbox_is_paused (rt_sandbox *sb, rt_error **err)
{
  cleanup_free char *pidfile = rt_strdup_printf ("%s/monitor.pid", sb->dir);
  cleanup_json json_object *state = NULL;
  const char *s;

  if (pidfile == NULL)
    return rt_error_oom (err);
  if (rt_pidfile_alive (pidfile, NULL) == 1)
    return 0;
  state = rt_sandbox_read_state (sb, NULL);
  s = state ? rt_json_str (state, "state") : NULL;
  return s && rt_state_is (s, RT_SANDBOX_PAUSED);
}

int
rt_local_sandbox_pause (rt_sandbox *sb, rt_error **err)
{
  cleanup_free char *pidfile = rt_strdup_printf ("%s/monitor.pid", sb->dir);
  pid_t pid = 0;
  int ret;

  if (pidfile == NULL)
    return rt_error_oom (err);
  ret = rt_sandbox_is_paused (sb, err);
  if (ret != 0)
    return ret < 0 ? ret : 0;
  if (rt_pidfile_alive (pidfile, &pid) != 1)
    return rt_error_set (err, ENOENT, "sandbox_not_ready", "sandbox %s is not running", sb->id);
  ret = rt_api_call (sb->sock, sb->id, "pause", NULL, NULL, err);
  if (ret < 0)
    return ret;
  /* A pause ends the monitor once the sandbox is saved.  */
  if (!rt_pid_exited_within (pid, PAUSE_WAIT_MS))
    return rt_error_set (err, ETIMEDOUT, "internal", "sandbox %s did not finish pausing", sb->id);
  return 0;
}

/* The lease a woken sandbox gets: the one it had, or a new one if it ended
   while paused (for a trial sandbox, taken from the trial first).  */
static int
lease (rt_sandbox *sb, json_object *state, const struct rt_saved *saved, bool trial, int64_t *expires_ms,
       bool *renewed, rt_error **err)
{
  json_object *sbj = NULL, *meter = NULL;
  int64_t timeout_s = rt_json_i64 (state, "timeoutSeconds"), lease_us = timeout_s * 1000000, now = rt_epoch_ms ();
  int ret;

  json_object_object_get_ex (saved->meta, "sandbox", &sbj);
  json_object_object_get_ex (sbj, "meter", &meter);
  *expires_ms = rt_json_i64 (sbj, "expiresMs");
  *renewed = false;
  if (*expires_ms == 0 || *expires_ms > now)
    return 0;
  *renewed = true;
  if (trial)
    {
      ret = rt_trial_hold (sb->ctx, sb->id, rt_json_i64 (meter, "runningUs"), &lease_us, true, err);
      if (ret < 0)
        return ret;
    }
  *expires_ms = now + lease_us / 1000;
  return 0;
}

/* The monitor of @sb, started from its saved VM.  */
static int
spawn (rt_sandbox *sb, json_object *state, const struct rt_saved *saved, rt_error **err)
{
  cleanup_free char *disk_dir = rt_sandbox_disk_dir (sb->ctx, sb->id);
  cleanup_free char *egress_log = rt_egress_log_path (sb->ctx, sb->id);
  cleanup_free char *cmdline = rt_strdup_printf ("rt.hostname=%s", sb->id);
  struct rt_kernel_files k = { 0 };
  struct rt_image_disk image = { 0 };
  struct rt_saved_settings set = { 0 };
  struct rt_egress_rules rules = { 0 };
  json_object *net = NULL;
  const char *accel = NULL;
  int64_t expires_ms = 0, disk_mib = rt_json_i64 (state, "diskMiB");
  bool renewed = false;
  int ret;

  json_object_object_get_ex (state, "network", &net);
  if (disk_dir == NULL || egress_log == NULL || cmdline == NULL)
    return rt_error_oom (err);
  ret = rt_saved_settings_get (saved, &set, err);
  if (ret == 0)
    ret = rt_egress_rules_from_json (net, &rules, err);
  if (ret == 0)
    ret = rt_kernel_ensure (sb->ctx, &k, err);
  if (ret == 0)
    ret = rt_image_ensure_disk (sb->ctx, saved->image_id, &image, err);
  if (ret == 0)
    ret = rt_saved_check_base (saved, image.disk, err);
  if (ret == 0)
    ret = rt_context_accel (sb->ctx, &accel, err);
  if (ret == 0)
    ret = lease (sb, state, saved, set.trial, &expires_ms, &renewed, err);
  if (ret == 0)
    {
      struct rt_monitor_config mc = {
        .id = sb->id,
        .dir = sb->dir,
        .vm = { .dir = sb->dir, .disk_dir = disk_dir, .accel = accel, .vcpu = saved->vcpu,
                .memory_mib = saved->memory_mib, .vmlinux = k.vmlinux, .initramfs = k.initramfs,
                .disk = image.disk, .disk_mib = disk_mib > 4096 ? (unsigned) disk_mib : 0, .cmdline = cmdline,
                .channel = true },
        .env = set.env,
        .workdir = set.workdir,
        .state = state,
        .expires_ms = expires_ms,
        .timeout_s = (unsigned) rt_json_i64 (state, "timeoutSeconds"),
        .stop_on_timeout = set.stop_on_timeout,
        .net = rules,
        .egress_log = egress_log,
        .secret_env = set.secret_env,
        .saved = saved,
        .restore = RT_RESTORE_WAKE,
        .start_ms = rt_epoch_ms (),
        .idle_pause_s = (unsigned) rt_json_i64 (state, "idlePauseSeconds"),
        .auto_wake = rt_json_i64 (state, "autoWake") != 0,
      };
      mc.net.trial = set.trial;
      ret = rt_monitor_spawn (sb->ctx, &mc, err);
      /* Still paused: the new lease is not taken from the trial.  */
      if (ret < 0 && set.trial && renewed)
        {
          int64_t none = 0;
          rt_trial_hold (sb->ctx, sb->id, 0, &none, false, NULL);
        }
    }
  rt_saved_settings_clear (&set);
  rt_egress_rules_clear (&rules);
  rt_kernel_files_clear (&k);
  rt_image_disk_clear (&image);
  return ret;
}

int
rt_sandbox_lock_wake (rt_sandbox *sb, int *fd, rt_error **err)
{
  cleanup_free char *path = rt_strdup_printf ("%s/wake.lock", sb->dir);

  if (path == NULL)
    return rt_error_oom (err);
  *fd = open (path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (*fd < 0)
    return rt_error_set (err, ENOENT, "not_found", "no sandbox %s", sb->id);
  while (flock (*fd, LOCK_EX) < 0 && errno == EINTR)
    ;
  return 0;
}

int
rt_local_sandbox_wake (rt_sandbox *sb, rt_error **err)
{
  cleanup_free char *disk_dir = rt_sandbox_disk_dir (sb->ctx, sb->id);
  cleanup_free char *saved_dir = disk_dir ? rt_strdup_printf ("%s/saved", disk_dir) : NULL;
  cleanup_free char *layers = disk_dir ? rt_strdup_printf ("%s/saved/layers", disk_dir) : NULL;
  cleanup_json json_object *state = NULL;
  cleanup_saved struct rt_saved saved = { 0 };
  cleanup_close int lock = -1, store_lock = -1;
  int ret;

  if (saved_dir == NULL || layers == NULL)
    return rt_error_oom (err);
  /* One waker at a time: the second finds it running.  */
  ret = rt_sandbox_lock_wake (sb, &lock, err);
  if (ret == 0)
    ret = rt_sandbox_is_paused (sb, err);
  if (ret <= 0)
    return ret;
  /* Read under the state lock: an update of a paused sandbox rewrites it
     (sandbox/update.c).  */
  ret = rt_store_lock (sb->ctx, &store_lock, err);
  if (ret < 0)
    return ret;
  state = rt_sandbox_read_state (sb, err);
  close (steal_fd (&store_lock));
  if (state == NULL)
    return -1;
  ret = rt_saved_load (saved_dir, layers, &saved, err);
  if (ret < 0)
    return ret;
  json_object_object_add (state, "state", json_object_new_string ("resuming"));
  return spawn (sb, state, &saved, err);
}

int
rt_sandbox_end_paused (rt_sandbox *sb, const char *reason, rt_error **err)
{
  cleanup_free char *disk_dir = rt_sandbox_disk_dir (sb->ctx, sb->id);
  cleanup_json json_object *state = NULL;
  cleanup_close int lock = -1;
  char now[32];
  int ret;

  if (disk_dir == NULL)
    return rt_error_oom (err);
  if (rt_sandbox_lock_wake (sb, &lock, NULL) < 0)
    return 0;
  ret = rt_sandbox_is_paused (sb, err);
  if (ret <= 0)
    return ret;
  state = rt_sandbox_read_state (sb, err);
  if (state == NULL)
    return -1;
  rt_format_time (rt_epoch_ms (), now);
  json_object_object_add (state, "state", json_object_new_string ("stopped"));
  json_object_object_add (state, "stopReason", json_object_new_string (reason));
  json_object_object_add (state, "endedAt", json_object_new_string (now));
  json_object_object_del (state, "paused");
  ret = rt_store_write_record (sb->ctx, state, err);
  if (ret < 0)
    return ret;
  /* Its capture first: what is left of an end cut short is not revived
     as paused (records/reap.c).  */
  {
    cleanup_free char *meta = rt_strdup_printf ("%s/saved/meta.json", disk_dir);
    if (meta)
      unlink (meta);
  }
  rt_rm_rf (sb->dir, NULL);
  rt_rm_rf (disk_dir, NULL);
  return 0;
}
