/* list.c - what the state dirs and records say of sandboxes (store.h):
   looking one up, get and list as JSON, its egress log, removing its
   record.  */
#include <string.h>

#include "core/state.h"
#include "billing/ledger.h"
#include "sandbox/handle.h"
#include "sandbox/list.h"
#include "common/pidfile.h"
#include "records/store.h"
#include "records/list.h"
#include "records/view.h"

/* Fast path for ids: one stat and one small read, no directory scan.  */
int
rt_sandbox_resolve (rt_context *ctx, const char *ref, json_object **out, rt_error **err)
{
  if (strncmp (ref, "sb-", 3) == 0 && strlen (ref) < 32 && strchr (ref, '/') == NULL)
    {
      cleanup_free char *dir = rt_sandbox_dir (ctx, ref);
      cleanup_free char *pidfile = dir ? rt_strdup_printf ("%s/monitor.pid", dir) : NULL;
      cleanup_free char *path = dir ? rt_strdup_printf ("%s/state.json", dir) : NULL;
      cleanup_free char *data = NULL;
      if (pidfile && rt_pidfile_alive (pidfile, NULL) == 1 && rt_read_file (path, &data, NULL, NULL) == 0)
        {
          *out = json_tokener_parse (data);
          if (*out && rt_tenant_sees (ctx, rt_json_str (*out, "tenant")))
            return 0;
          json_object_put (*out);
          *out = NULL;
        }
    }
  return rt_store_resolve (ctx, ref, out, err);
}

int
rt_local_sandbox_egress_log (rt_context *ctx, const char *ref, char **path, rt_error **err)
{
  cleanup_json json_object *state = NULL;
  int ret = rt_sandbox_resolve (ctx, ref, &state, err);

  if (ret < 0)
    return ret;
  *path = rt_egress_log_path (ctx, rt_json_str (state, "id"));
  return *path ? 0 : rt_error_oom (err);
}

int
rt_local_sandbox_info (rt_context *ctx, const char *ref, enum rt_view who, json_object **out, rt_error **err)
{
  cleanup_json json_object *state = NULL;
  int ret = rt_sandbox_resolve (ctx, ref, &state, err);

  if (ret < 0)
    return ret;
  *out = rt_sandbox_view (state, who);
  return *out ? 0 : rt_error_oom (err);
}

int
rt_local_sandbox_list (rt_context *ctx, bool all, enum rt_view who, json_object **out, rt_error **err)
{
  cleanup_json json_object *arr = NULL, *views = json_object_new_array ();
  int ret = rt_store_list (ctx, all, &arr, err);

  if (ret < 0)
    return ret;
  for (size_t i = 0; views && i < json_object_array_length (arr); i++)
    {
      json_object *v = rt_sandbox_view (json_object_array_get_idx (arr, i), who);
      if (v == NULL || json_object_array_add (views, v) < 0)
        return rt_error_oom (err);
    }
  if (views == NULL)
    return rt_error_oom (err);
  *out = steal_pointer (&views);
  return 0;
}

/* True when the ledger has a sandbox with id @ref the context sees.  */
static bool
ledger_knows (rt_context *ctx, const char *ref)
{
  cleanup_json json_object *rows = NULL;

  if (strncmp (ref, "sb-", 3) != 0 || rt_ledger_fold (ctx, &rows, NULL) < 0)
    return false;
  if (ctx->tenant)
    rt_ledger_keep_tenant (rows, ctx->tenant);
  for (size_t i = 0; i < json_object_array_length (rows); i++)
    if (rt_json_str (json_object_array_get_idx (rows, i), "id")
        && strcmp (rt_json_str (json_object_array_get_idx (rows, i), "id"), ref) == 0)
      return true;
  return false;
}

int
rt_local_sandbox_remove (rt_context *ctx, const char *ref, rt_error **err)
{
  cleanup_json json_object *state = NULL;
  cleanup_error rt_error *lookup = NULL;
  cleanup_free char *record = NULL, *log = NULL;
  const char *st, *id;

  if (rt_store_resolve (ctx, ref, &state, &lookup) < 0)
    {
      /* Idempotent for what was (the ledger keeps every sandbox that
         ran, record or not); what never was is not_found.  */
      if (strcmp (lookup->code, "not_found") == 0 && ledger_knows (ctx, ref))
        return 0;
      int ret = rt_error_set (err, lookup->status, lookup->code, "%s", lookup->msg);
      return lookup->hint ? rt_error_hint (err, "%s", lookup->hint) : ret;
    }
  id = rt_json_str (state, "id");
  st = rt_json_str (state, "state");
  if (st && !rt_state_is (st, RT_SANDBOX_STOPPED))
    {
      cleanup_sandbox rt_sandbox *sb = rt_sandbox_handle_new (ctx, id);
      int ret;
      if (sb == NULL)
        return rt_error_oom (err);
      ret = rt_local_sandbox_stop (sb, err);
      if (ret < 0)
        return ret;
    }
  record = rt_record_path (ctx, id);
  log = rt_egress_log_path (ctx, id);
  if (record == NULL || log == NULL)
    return rt_error_oom (err);
  if (unlink (log) < 0 && errno != ENOENT)
    return rt_error_set (err, errno, "internal", "cannot remove '%s': %s", log, strerror (errno));
  if (unlink (record) < 0 && errno != ENOENT)
    return rt_error_set (err, errno, "internal", "cannot remove '%s': %s", record, strerror (errno));
  return 0;
}
