/* capture.c - snapshot, fork and pause to disk (capture.h).  */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "monitor/capture.h"
#include "monitor/channel.h"
#include "monitor/exec.h"
#include "monitor/procs.h"
#include "monitor/reply.h"
#include "monitor/session.h"
#include "net/intercept.h"
#include "net/proxy.h"
#include "common/pidfile.h"
#include "records/store.h"
#include "snapshot/store.h"
#include "vmm/qmp.h"

#define QMP_TIMEOUT_MS 20000

/* The VM runs again where it stopped; the agent sends again (RESTORE
   "wake": the clock and entropy refreshed, every command kept).  */
static void
resume (struct mon *m)
{
  cleanup_error rt_error *err = NULL;

  if (rt_qmp_command (m->qmp_sock, "cont", &err) < 0)
    {
      fprintf (stderr, "cannot resume after a capture: %s\n", err->msg);
      mon_stop (m, "host_stopped");
      return;
    }
  mon_chan_wake (m);
  rt_meter_resume (&m->meter);
}

/* What a monitor started from the capture needs that the VM does not hold:
   the sandbox's settings, its processes, its meter.  */
static json_object *
sandbox_json (struct mon *m)
{
  json_object *o = json_object_new_object (), *env = json_object_new_array (), *sec = json_object_new_array ();
  json_object *meter = json_object_new_object ();

  for (char **e = m->cfg->env; e && *e; e++)
    json_object_array_add (env, json_object_new_string (*e));
  for (char **e = m->cfg->secret_env; e && *e; e++)
    json_object_array_add (sec, json_object_new_string (*e));
  json_object_object_add (meter, "runningUs", json_object_new_int64 ((int64_t) m->meter.running_us));
  json_object_object_add (meter, "cpuUs", json_object_new_int64 ((int64_t) m->meter.cpu_us));
  json_object_object_add (meter, "billedCpuUs", json_object_new_int64 ((int64_t) m->meter.billed_cpu_us));
  json_object_object_add (o, "env", env);
  json_object_object_add (o, "secretEnv", sec);
  json_object_object_add (o, "workdir", m->cfg->workdir ? json_object_new_string (m->cfg->workdir) : NULL);
  json_object_object_add (o, "stopOnTimeout", json_object_new_boolean (m->cfg->stop_on_timeout));
  json_object_object_add (o, "expiresMs", json_object_new_int64 (m->expires_ms));
  json_object_object_add (o, "trial", json_object_new_boolean (m->trial));
  json_object_object_add (o, "meter", meter);
  json_object_object_add (o, "procs", mon_procs_save (m));
  json_object_object_add (o, "state", json_object_get (m->state));
  return o;
}

static json_object *
state_member (struct mon *m, const char *key)
{
  json_object *v = NULL;
  json_object_object_get_ex (m->state, key, &v);
  return json_object_get (v);
}

/* meta.json's description of the capture (snapshot/saved.h).  */
static json_object *
new_meta (struct mon *m, const char *id, const char *kind, json_object *body)
{
  json_object *meta = json_object_new_object (), *shape = json_object_new_object (), *image = json_object_new_object ();
  json_object *v;
  char now[32];

  rt_format_time (rt_epoch_ms (), now);
  json_object_object_add (meta, "id", json_object_new_string (id));
  json_object_object_add (meta, "kind", json_object_new_string (kind));
  json_object_object_add (meta, "name", body && json_object_object_get_ex (body, "name", &v) ? json_object_get (v) : NULL);
  json_object_object_add (meta, "labels", body && json_object_object_get_ex (body, "labels", &v) && v
                                              ? json_object_get (v)
                                              : json_object_new_object ());
  json_object_object_add (meta, "createdAt", json_object_new_string (now));
  json_object_object_add (meta, "sourceSandboxId", json_object_new_string (m->cfg->id));
  if (body && json_object_object_get_ex (body, "creatorPid", &v) && json_object_is_type (v, json_type_string))
    json_object_object_add (meta, "creatorPid", json_object_get (v));
  json_object_object_add (image, "id", state_member (m, "imageId"));
  json_object_object_add (image, "ref", state_member (m, "image"));
  json_object_object_add (meta, "image", image);
  json_object_object_add (shape, "vcpu", json_object_new_int (m->cfg->vm.vcpu));
  json_object_object_add (shape, "memoryMiB", json_object_new_int (m->cfg->vm.memory_mib));
  json_object_object_add (shape, "diskMiB", state_member (m, "diskMiB"));
  json_object_object_add (meta, "shape", shape);
  json_object_object_add (meta, "accel", json_object_new_string (m->cfg->vm.accel));
  json_object_object_add (meta, "base", rt_saved_base_json (m->cfg->vm.disk));
  return meta;
}

/* The layers as the fds the monitor holds (/proc/self/fd/N): their files
   may be gone or made again since the start (a fork's capture, a removed
   snapshot, a template made anew).  */
static int
layer_links (struct mon *m, char **layers, rt_error **err)
{
  for (size_t i = 0; i < RT_QEMU_MAX_LAYERS && m->layers[i]; i++)
    {
      if (m->layer_fds[i] < 0)
        return rt_error_set (err, ENOENT, "internal", "layer %zu of sandbox %s was not open", i, m->cfg->id);
      layers[i] = rt_strdup_printf ("/proc/self/fd/%d", m->layer_fds[i]);
      if (layers[i] == NULL)
        return rt_error_oom (err);
    }
  return 0;
}

/* Quiesced and stopped, the VM saved into @dir (made here; @once: a
   fork's, whose RAM is not compressed); the meta written last.  The VM
   stays stopped and the agent quiet.  */
static int
save (struct mon *m, const char *dir, json_object *meta, bool copy_overlay, bool once, rt_error **err)
{
  cleanup_free char *meta_path = rt_strdup_printf ("%s/meta.json", dir);
  cleanup_free char *pid_path = rt_strdup_printf ("%s/monitor.pid", dir);
  char *layers[RT_QEMU_MAX_LAYERS + 1] = { NULL };
  struct rt_qmp q = { .fd = -1 };
  uint64_t t0 = rt_now_ms ();
  const char *text;
  int ret;

  if (meta_path == NULL || meta == NULL)
    return rt_error_oom (err);
  if (mkdir (dir, 0700) < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", dir, strerror (errno));
  /* Whose capture it is: a sweep removes it once this monitor is gone
     (snapshot/store.h).  */
  if (pid_path && rt_write_pidfile (pid_path, getpid (), err) < 0)
    return -1;
  ret = mon_chan_quiesce (m, err);
  if (ret < 0)
    return ret;
  rt_meter_pause (&m->meter);
  ret = layer_links (m, layers, err);
  if (ret == 0)
    ret = rt_qmp_open (&q, m->qmp_sock, QMP_TIMEOUT_MS, err);
  if (ret == 0)
    ret = rt_saved_capture (&q, m->ram_fd, m->cfg->vm.memory_mib, layers, copy_overlay ? m->overlay_path : NULL,
                            dir, once, meta, err);
  for (size_t i = 0; i < RT_QEMU_MAX_LAYERS; i++)
    free (layers[i]);
  rt_qmp_close (&q);
  if (ret < 0)
    return ret;
  json_object_object_add (meta, "sandbox", sandbox_json (m));
  json_object_object_add (meta, "captureMs", json_object_new_int64 ((int64_t) (rt_now_ms () - t0)));
  json_object_object_add (meta, "storedBytes", json_object_new_int64 (rt_saved_stored_bytes (dir)));
  text = json_object_to_json_string_ext (meta, JSON_C_TO_STRING_PLAIN);
  ret = rt_write_file_atomic (meta_path, text, strlen (text), 0600, err);
  if (pid_path)
    unlink (pid_path);
  return ret;
}

/* A snapshot (or a fork's) at <data>/snapshots/<final>: captured in
   .tmp-<id>, renamed when whole; the sandbox runs on either way.  */
static int
snapshot (struct mon *m, const char *id, const char *final, json_object *body, json_object **out, rt_error **err)
{
  cleanup_free char *root = rt_snapshots_root (m->ctx, true, err);
  cleanup_free char *tmp = root ? rt_strdup_printf ("%s/.tmp-%s", root, id) : NULL;
  cleanup_free char *dst = root ? rt_strdup_printf ("%s/%s", root, final) : NULL;
  cleanup_json json_object *meta = new_meta (m, id, "snapshot", body);
  bool stopped;
  int ret;

  if (root == NULL)
    return -1;
  if (tmp == NULL || dst == NULL)
    return rt_error_oom (err);
  if (m->layers[RT_QEMU_MAX_LAYERS - 1])
    return rt_error_set (err, E2BIG, "invalid_request",
                         "sandbox %s descends from %d snapshots already: its disk cannot take another layer",
                         m->cfg->id, RT_QEMU_MAX_LAYERS);
  mon_enter (m, MON_CAPTURING);
  ret = save (m, tmp, meta, true, strcmp (final, id) != 0, err);
  stopped = mon_chan_quiesced (m);
  if (ret == 0 && rename (tmp, dst) < 0)
    ret = rt_error_set (err, errno, "internal", "cannot rename '%s': %s", tmp, strerror (errno));
  if (ret < 0)
    rt_rm_rf (tmp, NULL);
  if (stopped)
    resume (m);
  /* Unless the guest broke the channel or could not resume: stopped.  */
  if (m->phase == MON_CAPTURING)
    mon_enter (m, MON_RUNNING);
  if (ret == 0)
    *out = json_object_get (meta);
  return ret;
}

static const char *
body_id (json_object *body)
{
  json_object *v;
  const char *id = json_object_object_get_ex (body, "id", &v) && json_object_is_type (v, json_type_string)
                       ? json_object_get_string (v)
                       : NULL;
  return id && rt_snapshot_id_valid (id) ? id : NULL;
}

static bool
can_capture (struct mon *m, struct evhttp_request *req)
{
  if (m->phase != MON_RUNNING || m->ram_fd < 0)
    {
      mon_reply_error (req, 409, "sandbox_not_ready", NULL, "sandbox %s is not running", m->cfg->id);
      return false;
    }
  return true;
}

void
mon_handle_snapshot (struct mon *m, struct evhttp_request *req, json_object *body)
{
  cleanup_error rt_error *err = NULL;
  cleanup_json json_object *meta = NULL;
  const char *id = body_id (body);

  if (id == NULL)
    return mon_reply_error (req, 400, "invalid_request", NULL, "id must be a snapshot id (snap- and 12 hex digits)");
  if (!can_capture (m, req))
    return;
  if (snapshot (m, id, id, body, &meta, &err) < 0)
    return mon_reply_error (req, strcmp (err->code, "invalid_request") == 0 ? 400 : 409, err->code, err->hint,
                            "%s", err->msg);
  mon_reply_json (req, 200, meta);
}

void
mon_handle_fork (struct mon *m, struct evhttp_request *req, json_object *body)
{
  cleanup_error rt_error *err = NULL;
  cleanup_json json_object *meta = NULL, *reply = json_object_new_object ();
  cleanup_free char *final = NULL;
  const char *id = body_id (body);

  if (id == NULL)
    return mon_reply_error (req, 400, "invalid_request", NULL, "id must be a snapshot id (snap- and 12 hex digits)");
  if (!can_capture (m, req))
    return;
  final = rt_strdup_printf (".fork-%s", id);
  if (final == NULL || snapshot (m, id, final, body, &meta, &err) < 0)
    return mon_reply_error (req, 409, err ? err->code : "internal", err ? err->hint : NULL, "%s",
                            err ? err->msg : "out of memory");
  json_object_object_add (reply, "snapshot", json_object_new_string (final));
  mon_reply_json (req, 200, reply);
}

/* ---- pause to disk ------------------------------------------------------ */

/* Saved: QEMU, the network and the loop end; the disk, the saved VM and
   the state dir stay for the wake.  */
static void
end_paused (struct mon *m, const char *saved)
{
  json_object *p = json_object_new_object ();
  char now[32];

  m->paused_to_disk = true;
  mon_session_end_all (m, "sandbox_paused", "the sandbox paused to disk");
  rt_meter_record (&m->meter);
  rt_meter_stop (&m->meter);
  m->vm.keep_disk = true;
  rt_vm_kill (&m->vm);
  rt_proxy_free (m->proxy);
  m->proxy = NULL;
  rt_netns_close (&m->net);
  evtimer_del (m->ev_lease);
  if (m->ev_qemu)
    event_del (m->ev_qemu);
  if (m->ev_owner)
    event_del (m->ev_owner);
  mon_chan_close (m);
  rt_format_time (rt_epoch_ms (), now);
  json_object_object_add (p, "path", json_object_new_string (saved));
  json_object_object_add (p, "storedBytes", json_object_new_int64 (rt_saved_stored_bytes (saved)));
  json_object_object_add (m->state, "paused", p);
  mon_set_str (m, "pausedAt", now);
  mon_enter (m, MON_PAUSED);
  mon_save_state (m);
  mon_end_loop_soon (m);
}

int
mon_pause_to_disk (struct mon *m, rt_error **err)
{
  cleanup_free char *disk = rt_sandbox_disk_dir (m->ctx, m->cfg->id);
  cleanup_free char *saved = disk ? rt_strdup_printf ("%s/saved", disk) : NULL;
  cleanup_free char *tmp = disk ? rt_strdup_printf ("%s/saved.tmp", disk) : NULL;
  cleanup_free char *old = disk ? rt_strdup_printf ("%s/saved.old", disk) : NULL;
  cleanup_json json_object *meta = new_meta (m, m->cfg->id, "paused", NULL);
  int ret;

  if (saved == NULL || tmp == NULL || old == NULL)
    return rt_error_oom (err);
  if (m->cfg->owner > 0)
    return rt_error_set (err, EINVAL, "invalid_request", "sandbox %s ends with its command (run): it does not pause",
                         m->cfg->id);
  for (struct mon_exec *e = m->execs; e; e = e->next)
    if (e->req)
      return rt_error_set (err, EBUSY, "busy", "a command is running in sandbox %s", m->cfg->id);
  if (!mon_enter (m, MON_PAUSING))
    return rt_error_set (err, EAGAIN, "sandbox_not_ready", "sandbox %s is not running", m->cfg->id);
  rt_rm_rf (tmp, NULL);
  ret = save (m, tmp, meta, false, false, err);
  /* The previous wake's layers are linked into the new one: the old goes.  */
  if (ret == 0 && rename (saved, old) < 0 && errno != ENOENT)
    ret = rt_error_set (err, errno, "internal", "cannot rename '%s': %s", saved, strerror (errno));
  if (ret == 0 && rename (tmp, saved) < 0)
    ret = rt_error_set (err, errno, "internal", "cannot rename '%s': %s", tmp, strerror (errno));
  if (ret < 0)
    {
      rt_rm_rf (tmp, NULL);
      if (mon_chan_quiesced (m))
        resume (m);
      /* Unless the guest broke the channel or could not resume: stopped.  */
      if (m->phase == MON_PAUSING)
        mon_enter (m, MON_RUNNING);
      return ret;
    }
  rt_rm_rf (old, NULL);
  end_paused (m, saved);
  return 0;
}
