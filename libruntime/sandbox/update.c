/* update.c - the idle pause and auto-wake settings, and auto-wake (see
   update.h).  */
#include <string.h>

#include "monitor/client.h"
#include "monitor/idle.h"
#include "sandbox/fork.h"
#include "records/store.h"
#include "sandbox/update.h"
#include "sandbox/wake.h"

int
rt_sandbox_paused_error (rt_sandbox *sb, rt_error **err)
{
  rt_error_set (err, EAGAIN, "sandbox_paused", "sandbox %s is paused", sb->id);
  rt_error_hint (err, "runtime sandbox wake %s (or turn on --auto-wake)", sb->id);
  return -EAGAIN;
}

static int
reply_json (json_object *o, char **json, rt_error **err)
{
  if (json == NULL)
    return 0;
  *json = strdup (json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}

/* Paused to disk: the settings in state.json, under the state lock so a
   wake or another update does not interleave.  1 when the sandbox turned
   out to have a monitor (its monitor takes the update).  */
static int
update_on_disk (rt_sandbox *sb, int idle, int wake, char **json, rt_error **err)
{
  cleanup_close int wake_lock = -1, lock = -1;
  cleanup_json json_object *state = NULL;
  /* Not under a wake, which rewrites the state from its own copy.  */
  int ret = rt_sandbox_lock_wake (sb, &wake_lock, NULL);

  if (ret < 0)
    return 1;
  ret = rt_store_lock (sb->ctx, &lock, err);
  if (ret < 0)
    return ret;
  if (rt_sandbox_is_paused (sb, NULL) != 1 || (state = rt_sandbox_read_state (sb, NULL)) == NULL)
    return 1;
  if (idle >= 0)
    json_object_object_add (state, "idlePauseSeconds", json_object_new_int64 (idle));
  if (wake >= 0)
    json_object_object_add (state, "autoWake", json_object_new_boolean (wake));
  ret = rt_store_write_state (sb->dir, state, err);
  if (ret < 0)
    return ret;
  return reply_json (state, json, err);
}

int
rt_local_sandbox_update (rt_sandbox *sb, int idle_pause_s, int auto_wake, char **json, rt_error **err)
{
  cleanup_json json_object *body = json_object_new_object ();
  cleanup_json json_object *reply = NULL;
  int idle, wake, ret;

  if (body == NULL)
    return rt_error_oom (err);
  if (auto_wake < -1 || auto_wake > 1)
    return rt_error_set (err, EINVAL, "invalid_request", "autoWake must be on (1), off (0) or kept (-1)");
  if (idle_pause_s != -1)
    json_object_object_add (body, "idlePauseSeconds", json_object_new_int64 (idle_pause_s));
  if (auto_wake != -1)
    json_object_object_add (body, "autoWake", json_object_new_boolean (auto_wake));
  /* The monitor checks it too; a paused sandbox has only this check.  */
  ret = mon_idle_parse_update (body, &idle, &wake, err);
  if (ret < 0)
    return ret;
  ret = update_on_disk (sb, idle, wake, json, err);
  if (ret <= 0)
    return ret;
  ret = rt_api_call (sb->sock, sb->id, "update", body, &reply, err);
  if (ret < 0)
    return ret;
  return reply_json (reply, json, err);
}

int
rt_sandbox_auto_wake (rt_sandbox *sb, rt_error **err)
{
  cleanup_json json_object *state = NULL;
  json_object *v;

  /* Without a state the verb itself says what is wrong.  */
  if (rt_sandbox_is_paused (sb, NULL) != 1 || (state = rt_sandbox_read_state (sb, NULL)) == NULL)
    return 0;
  if (json_object_object_get_ex (state, "autoWake", &v) && json_object_get_boolean (v))
    return rt_local_sandbox_wake (sb, err);
  return rt_sandbox_paused_error (sb, err);
}
