/* handle.c - the rt_sandbox handle: opening a sandbox by id or name, and
   its verbs, each a request to its monitor (monitor/client.h).  */
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#include "core/state.h"
#include "core/checks.h"
#include "common/b64.h"
#include "common/proto.h"
#include "monitor/client.h"
#include "sandbox/create.h"
#include "sandbox/fork.h"
#include "sandbox/handle.h"
#include "sandbox/wake.h"
#include "sandbox/list.h"
#include "common/pidfile.h"
#include "records/store.h"
#include "records/reap.h"
#include "sandbox/update.h"

#define STOP_WAIT_MS 30000

int
rt_local_sandbox_open (rt_context *ctx, const char *ref, rt_sandbox **out, rt_error **err)
{
  cleanup_json json_object *state = NULL;
  const char *st;
  int ret = rt_sandbox_resolve (ctx, ref, &state, err);

  if (ret < 0)
    return ret;
  st = rt_json_str (state, "state");
  if (st && (rt_state_is (st, RT_SANDBOX_STOPPED) || rt_state_is (st, RT_SANDBOX_STOPPING)))
    {
      rt_error_set (err, ENOENT, "sandbox_stopped", "sandbox %s is stopped", rt_json_str (state, "id"));
      return rt_error_hint (err, "runtime sandbox create starts a new one");
    }
  *out = rt_sandbox_handle_new (ctx, rt_json_str (state, "id"));
  if (*out == NULL)
    return rt_error_oom (err);
  return 0;
}

/* A monitor that cannot be reached may just be booting (--no-wait), or
   gone with the sandbox paused to disk: say that rather than "cannot
   reach".  */
int
rt_sandbox_not_ready_yet (rt_sandbox *sb, int ret, rt_error **err)
{
  cleanup_json json_object *state = NULL;
  cleanup_free char *path = NULL;
  cleanup_free char *data = NULL;
  const char *st;

  if (ret >= 0 || *err == NULL || strcmp ((*err)->code, "sandbox_not_ready") != 0)
    return ret;
  path = rt_strdup_printf ("%s/state.json", sb->dir);
  if (path == NULL || rt_read_file (path, &data, NULL, NULL) < 0 || (state = json_tokener_parse (data)) == NULL)
    return ret;
  st = rt_json_str (state, "state");
  if (st == NULL || (!rt_state_is (st, RT_SANDBOX_STARTING) && !rt_state_is (st, RT_SANDBOX_PAUSED)))
    return ret;
  rt_error_free (*err);
  *err = NULL;
  if (rt_state_is (st, RT_SANDBOX_PAUSED))
    return rt_sandbox_paused_error (sb, err);
  rt_error_set (err, EAGAIN, "sandbox_not_ready", "sandbox %s is still starting", sb->id);
  return rt_error_hint (err, "runtime sandbox get %s shows when it is running", sb->id);
}

int
rt_local_sandbox_exec (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, rt_exec_result *res, rt_error **err)
{
  cleanup_json json_object *req = NULL;

  /* Nothing would write to a kept stdin or end it, nor resize a pty:
     those are a background process's or a session's.  */
  if (opts && (opts->keep_stdin || opts->pty_cols || opts->pty_rows))
    return rt_error_set (err, EINVAL, "usage", "%s",
                         opts->keep_stdin ? "keep_stdin is for rt_sandbox_spawn, not exec"
                                          : "a pty is for rt_sandbox_spawn and rt_sandbox_attach, not exec");
  if (opts == NULL)
    opts = &rt_no_exec_opts;
  memset (res, 0, sizeof (*res));
  if (rt_sandbox_auto_wake (sb, err) < 0)
    return -EAGAIN;
  req = rt_command_request (argv, opts, err);
  if (req == NULL)
    return -EINVAL;
  return rt_sandbox_not_ready_yet (sb, rt_api_stream (sb->sock, sb->id, "exec", req, opts, res, NULL, err), err);
}

int
rt_local_sandbox_spawn (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, uint32_t *process, rt_error **err)
{
  cleanup_json json_object *req = NULL;
  cleanup_json json_object *reply = NULL;
  json_object *v;
  int ret = rt_sandbox_auto_wake (sb, err);

  if (ret < 0)
    return ret;
  req = rt_command_request (argv, opts ? opts : &rt_no_exec_opts, err);
  if (req == NULL)
    return -EINVAL;
  ret = rt_sandbox_not_ready_yet (sb, rt_api_call (sb->sock, sb->id, "spawn", req, &reply, err), err);
  if (ret < 0)
    return ret;
  if (!json_object_object_get_ex (reply, "process", &v))
    return rt_error_set (err, EIO, "internal", "the monitor did not name the process");
  *process = (uint32_t) json_object_get_int64 (v);
  return 0;
}

int
rt_local_sandbox_ps_json (rt_sandbox *sb, char **json, rt_error **err)
{
  cleanup_json json_object *reply = NULL;
  int ret = rt_sandbox_auto_wake (sb, err);

  if (ret == 0)
    ret = rt_sandbox_not_ready_yet (sb, rt_api_call (sb->sock, sb->id, "ps", NULL, &reply, err), err);
  if (ret < 0)
    return ret;
  *json = strdup (json_object_to_json_string_ext (reply, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}

int
rt_local_sandbox_logs (rt_sandbox *sb, uint32_t process, bool follow, const rt_exec_opts *opts, rt_exec_result *res,
                 bool *exited, rt_error **err)
{
  cleanup_json json_object *req = json_object_new_object ();
  int ret;

  memset (res, 0, sizeof (*res));
  if (rt_sandbox_auto_wake (sb, err) < 0)
    return -EAGAIN;
  json_object_object_add (req, "process", json_object_new_int64 (process));
  json_object_object_add (req, "follow", json_object_new_boolean (follow));
  ret = rt_api_stream (sb->sock, sb->id, "logs", req, opts ? opts : &rt_no_exec_opts, res, exited, err);
  return rt_sandbox_not_ready_yet (sb, ret, err);
}

int
rt_sandbox_output (rt_sandbox *sb, uint32_t process, uint64_t cursor, bool follow,
                   int (*on_event) (void *data, json_object *ev), void *data, rt_error **err)
{
  cleanup_json json_object *req = json_object_new_object ();

  if (rt_sandbox_auto_wake (sb, err) < 0)
    return -EAGAIN;
  json_object_object_add (req, "process", json_object_new_int64 (process));
  json_object_object_add (req, "follow", json_object_new_boolean (follow));
  json_object_object_add (req, "cursor", json_object_new_int64 ((int64_t) cursor));
  return rt_sandbox_not_ready_yet (sb, rt_api_events (sb->sock, sb->id, "logs", req, on_event, data, err), err);
}

int
rt_local_sandbox_kill (rt_sandbox *sb, uint32_t process, int signal, rt_error **err)
{
  cleanup_json json_object *req = json_object_new_object ();

  if (rt_sandbox_auto_wake (sb, err) < 0)
    return -EAGAIN;
  json_object_object_add (req, "process", json_object_new_int64 (process));
  json_object_object_add (req, "signal", json_object_new_int (signal));
  return rt_sandbox_not_ready_yet (sb, rt_api_call (sb->sock, sb->id, "kill", req, NULL, err), err);
}

int
rt_local_sandbox_write (rt_sandbox *sb, uint32_t process, const void *data, size_t len, uint64_t offset, bool eof,
                  uint64_t *accepted, rt_error **err)
{
  cleanup_json json_object *req = json_object_new_object ();
  cleanup_json json_object *reply = NULL;
  json_object *v, *b64;
  int ret;

  if (req == NULL)
    return rt_error_oom (err);
  if (rt_sandbox_auto_wake (sb, err) < 0)
    return -EAGAIN;
  b64 = rt_b64_json (data, len);
  if (b64 == NULL)
    return rt_error_oom (err);
  json_object_object_add (req, "process", json_object_new_int64 (process));
  json_object_object_add (req, "data", b64);
  json_object_object_add (req, "offset", json_object_new_int64 ((int64_t) offset));
  json_object_object_add (req, "eof", json_object_new_boolean (eof));
  ret = rt_sandbox_not_ready_yet (sb, rt_api_call (sb->sock, sb->id, "write", req, &reply, err), err);
  if (ret < 0)
    return ret;
  if (!json_object_object_get_ex (reply, "offset", &v) || !json_object_is_type (v, json_type_int))
    return rt_error_set (err, EIO, "internal", "the monitor did not say how much it took");
  if (accepted)
    *accepted = (uint64_t) json_object_get_int64 (v);
  return 0;
}

int
rt_local_sandbox_resize (rt_sandbox *sb, uint32_t process, unsigned cols, unsigned rows, rt_error **err)
{
  cleanup_json json_object *req = json_object_new_object ();

  if (rt_sandbox_auto_wake (sb, err) < 0)
    return -EAGAIN;
  json_object_object_add (req, "process", json_object_new_int64 (process));
  json_object_object_add (req, "cols", json_object_new_int ((int) cols));
  json_object_object_add (req, "rows", json_object_new_int ((int) rows));
  return rt_sandbox_not_ready_yet (sb, rt_api_call (sb->sock, sb->id, "resize", req, NULL, err), err);
}

/* Waits until the monitor named by @pidfile has exited.  */
static int
wait_monitor_gone (rt_sandbox *sb, pid_t pid, rt_error **err)
{
  struct stat st;

  if (!rt_pid_exited_within (pid, STOP_WAIT_MS))
    {
      rt_error_set (err, ETIMEDOUT, "cleanup_failed", "sandbox %s did not confirm it stopped within 30 s", sb->id);
      return rt_error_hint (err, "its monitor is pid %d", (int) pid);
    }
  /* The monitor removes its dir just before exiting; a crash may not.  */
  rt_store_reap (sb->ctx);
  if (stat (sb->dir, &st) == 0)
    return rt_error_set (err, EBUSY, "cleanup_failed", "could not remove '%s'", sb->dir);
  return 0;
}

/* The reaper calls every sandbox it finds dead host_stopped; one stopped on
   request during its boot was asked for.  */
static int
mark_requested (rt_sandbox *sb)
{
  cleanup_free char *path = rt_record_path (sb->ctx, sb->id);
  cleanup_free char *data = NULL;
  cleanup_json json_object *rec = NULL;

  if (path == NULL || rt_read_file (path, &data, NULL, NULL) < 0 || (rec = json_tokener_parse (data)) == NULL)
    return 0;
  json_object_object_add (rec, "stopReason", json_object_new_string ("requested"));
  rt_store_write_record (sb->ctx, rec, NULL);
  return 0;
}

int
rt_local_sandbox_stop (rt_sandbox *sb, rt_error **err)
{
  cleanup_free char *pidfile = rt_strdup_printf ("%s/monitor.pid", sb->dir);
  pid_t pid = 0;
  int ret;

  if (pidfile == NULL)
    return rt_error_oom (err);
  if (rt_pidfile_alive (pidfile, &pid) != 1)
    {
      ret = rt_sandbox_end_paused (sb, "requested", err);
      rt_store_reap (sb->ctx);
      return ret;
    }
  ret = rt_api_call (sb->sock, sb->id, "stop", NULL, NULL, err);
  if (ret < 0 && access (sb->sock, F_OK) < 0 && rt_pidfile_alive (pidfile, NULL) == 1)
    {
      /* Still booting (--no-wait): no API yet, and no handlers either, so
         SIGTERM ends the monitor; its QEMU dies with it and the reaper
         writes the record.  */
      if (err)
        {
          rt_error_free (*err);
          *err = NULL;
        }
      kill (pid, SIGTERM);
      ret = wait_monitor_gone (sb, pid, err);
      return ret < 0 ? ret : mark_requested (sb);
    }
  if (ret < 0 && rt_pidfile_alive (pidfile, NULL) == 1)
    return ret;
  if (ret < 0 && err)
    {
      /* It died on its own meanwhile: that is stopped too.  */
      rt_error_free (*err);
      *err = NULL;
    }
  return wait_monitor_gone (sb, pid, err);
}

int
rt_local_sandbox_destroy (rt_sandbox *sb, rt_error **err)
{
  int ret;
  if (sb == NULL)
    return 0;
  ret = rt_local_sandbox_stop (sb, err);
  rt_sandbox_close (sb);
  return ret;
}

int
rt_local_sandbox_extend (rt_sandbox *sb, unsigned seconds, char **expires_at, rt_error **err)
{
  cleanup_json json_object *body = json_object_new_object ();
  cleanup_json json_object *reply = NULL;
  const char *end;
  int ret;

  json_object_object_add (body, "seconds", json_object_new_int64 (seconds));
  ret = rt_api_call (sb->sock, sb->id, "extend", body, &reply, err);
  if (ret < 0)
    return ret;
  end = rt_json_str (reply, "expiresAt");
  *expires_at = strdup (end ? end : "");
  return *expires_at ? 0 : rt_error_oom (err);
}

int
rt_local_sandbox_set_network (rt_sandbox *sb, bool internet, const char *const *allow, const char *const *deny, char **json,
                        rt_error **err)
{
  struct rt_egress_rules rules = { 0 };
  cleanup_json json_object *body = NULL, *reply = NULL;
  int ret = rt_sandbox_rules_of (internet, allow, deny, &rules, err);

  if (ret < 0)
    return ret;
  body = rt_egress_rules_to_json (&rules);
  rt_egress_rules_clear (&rules);
  if (body == NULL)
    return rt_error_oom (err);
  ret = rt_api_call (sb->sock, sb->id, "/network", body, &reply, err);
  if (ret < 0)
    return ret;
  if (json)
    {
      *json = strdup (json_object_to_json_string_ext (reply, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
      if (*json == NULL)
        return rt_error_oom (err);
    }
  return 0;
}

int
rt_local_sandbox_metrics_json (rt_sandbox *sb, char **json, rt_error **err)
{
  static const char *const argv[] = { "cat", "/proc/meminfo", NULL };
  cleanup_json json_object *reply = NULL;
  struct rt_captured c = { 0 };
  rt_exec_opts opts = { .timeout_ms = 10000, .cancel_fd = -1, .on_output = rt_capture_output, .data = &c };
  rt_exec_result res = { 0 };
  int ret = rt_api_call (sb->sock, sb->id, "/metrics", NULL, &reply, err);

  if (ret < 0)
    return ret;
  /* The guest's own view of its memory: shown, never billed.  */
  if (rt_local_sandbox_exec (sb, argv, &opts, &res, NULL) == 0 && res.exit_code == 0 && c.out)
    {
      const char *keys[][2] = { { "MemTotal:", "guestMemoryTotalMiB" }, { "MemAvailable:", "guestMemoryAvailableMiB" } };
      for (size_t i = 0; i < 2; i++)
        {
          const char *p = strstr (c.out, keys[i][0]);
          if (p)
            json_object_object_add (reply, keys[i][1], json_object_new_int64 (strtoll (p + strlen (keys[i][0]), NULL, 10) / 1024));
        }
    }
  free (c.out);
  free (c.err);
  *json = strdup (json_object_to_json_string_ext (reply, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}
