/* store.c - the snapshots under <data>/snapshots (store.h).  STUB: the
   snapshot-store helper replaces it.  */
#include "snapshot/store.h"

int
rt_snapshot_list_json (rt_context *ctx, char **json, rt_error **err)
{
  (void) ctx;
  (void) json;
  return rt_error_set (err, ENOSYS, "internal", "not yet");
}

int
rt_snapshot_get_json (rt_context *ctx, const char *ref, char **json, rt_error **err)
{
  (void) ctx;
  (void) ref;
  (void) json;
  return rt_error_set (err, ENOSYS, "internal", "not yet");
}

int
rt_snapshot_remove (rt_context *ctx, const char *ref, rt_error **err)
{
  (void) ctx;
  (void) ref;
  return rt_error_set (err, ENOSYS, "internal", "not yet");
}
