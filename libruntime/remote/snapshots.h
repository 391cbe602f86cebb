/* snapshots.h - saved snapshots in client mode (/v1/snapshots,
   docs/API.md); :snapshot and :fork are in remote/sandboxes.h.  */
#ifndef RT_REMOTE_SNAPSHOTS_H
#define RT_REMOTE_SNAPSHOTS_H

#include "core/context.h"

int rt_remote_snapshot_list_json (rt_context *ctx, char **json, rt_error **err);
int rt_remote_snapshot_get_json (rt_context *ctx, const char *ref, char **json, rt_error **err);
int rt_remote_snapshot_remove (rt_context *ctx, const char *ref, rt_error **err);

#endif
