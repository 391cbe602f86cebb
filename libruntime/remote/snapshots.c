/* snapshots.c - saved snapshots in client mode: the server's objects are
   rt_snapshot_get_json's.  */
#include "remote/http.h"
#include "remote/snapshots.h"

static char *
snapshot_path (const char *ref)
{
  cleanup_free char *esc = rt_remote_escape (ref);
  return esc ? rt_strdup_printf ("/v1/snapshots/%s", esc) : NULL;
}

int
rt_remote_snapshot_list_json (rt_context *ctx, char **json, rt_error **err)
{
  return rt_remote_list_text (ctx, "/v1/snapshots?limit=100", NULL, json, err);
}

int
rt_remote_snapshot_get_json (rt_context *ctx, const char *ref, char **json, rt_error **err)
{
  cleanup_free char *path = snapshot_path (ref);

  return path ? rt_remote_get_text (ctx, path, json, err) : rt_error_oom (err);
}

int
rt_remote_snapshot_remove (rt_context *ctx, const char *ref, rt_error **err)
{
  cleanup_free char *path = snapshot_path (ref);

  if (path == NULL)
    return rt_error_oom (err);
  return rt_remote_json (ctx, "DELETE", path, NULL, NULL, NULL, err);
}
