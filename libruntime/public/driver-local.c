/* driver-local.c - the local driver: this machine's sandboxes, images and
   stores.  (no header of its own: public/driver.h declares the table.)  */
#include "billing/usage.h"
#include "build/build.h"
#include "image/store.h"
#include "image/transfer.h"
#include "net/secrets.h"
#include "public/driver.h"
#include "sandbox/copy.h"
#include "sandbox/create.h"
#include "sandbox/files.h"
#include "sandbox/fork.h"
#include "sandbox/handle.h"
#include "sandbox/list.h"
#include "sandbox/pool.h"
#include "sandbox/session-local.h"
#include "sandbox/update.h"
#include "sandbox/wake.h"
#include "snapshot/store.h"
#include "template/warm.h"

/* Only a replica of a cluster has nodes.  */
static int
local_node_list_json (rt_context *ctx, char **json, rt_error **err)
{
  (void) ctx;
  (void) json;
  rt_error_set (err, EINVAL, "usage", "this machine is not a cluster: runtime node ls asks a runtime serve --nats");
  return rt_error_hint (err, "set RUNTIME_API_URL and RUNTIME_API_KEY to a replica of the cluster");
}

const struct rt_driver rt_local_driver = {
  .name = "local",
  .sandbox_create = rt_local_sandbox_create,
  .sandbox_open = rt_local_sandbox_open,
  .sandbox_info = rt_local_sandbox_info,
  .sandbox_list = rt_local_sandbox_list,
  .sandbox_remove = rt_local_sandbox_remove,
  .sandbox_egress_log = rt_local_sandbox_egress_log,
  .sandbox_stop = rt_local_sandbox_stop,
  .sandbox_destroy = rt_local_sandbox_destroy,
  .sandbox_pause = rt_local_sandbox_pause,
  .sandbox_wake = rt_local_sandbox_wake,
  .sandbox_extend = rt_local_sandbox_extend,
  .sandbox_update = rt_local_sandbox_update,
  .sandbox_set_network = rt_local_sandbox_set_network,
  .sandbox_metrics_json = rt_local_sandbox_metrics_json,
  .sandbox_snapshot = rt_local_sandbox_snapshot,
  .sandbox_fork = rt_local_sandbox_fork,
  .sandbox_exec = rt_local_sandbox_exec,
  .sandbox_spawn = rt_local_sandbox_spawn,
  .sandbox_ps_json = rt_local_sandbox_ps_json,
  .sandbox_logs = rt_local_sandbox_logs,
  .sandbox_kill = rt_local_sandbox_kill,
  .sandbox_write = rt_local_sandbox_write,
  .sandbox_resize = rt_local_sandbox_resize,
  .sandbox_attach = rt_local_sandbox_attach,
  .sandbox_connect = rt_local_sandbox_connect,
  .sandbox_cat = rt_local_sandbox_cat,
  .sandbox_files_json = rt_local_sandbox_files_json,
  .sandbox_copy_in = rt_local_sandbox_copy_in,
  .sandbox_copy_out = rt_local_sandbox_copy_out,
  .snapshot_list_json = rt_local_snapshot_list_json,
  .snapshot_get_json = rt_local_snapshot_get_json,
  .snapshot_remove = rt_local_snapshot_remove,
  .image_build = rt_local_image_build,
  .image_list_json = rt_local_image_list_json,
  .image_get_json = rt_local_image_get_json,
  .image_remove = rt_local_image_remove,
  .image_warm = rt_local_image_warm,
  .image_export = rt_local_image_export,
  .image_import = rt_local_image_import,
  .pool_set = rt_local_pool_set,
  .pool_list_json = rt_local_pool_list_json,
  .pool_remove = rt_local_pool_remove,
  .secret_set = rt_local_secret_set_opts,
  .secret_list_json = rt_local_secret_list_json,
  .secret_remove = rt_local_secret_remove,
  .usage_json = rt_local_usage_json,
  .node_list_json = local_node_list_json,
};
