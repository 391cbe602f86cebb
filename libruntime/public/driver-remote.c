/* driver-remote.c - the remote driver: the server of RUNTIME_API_URL,
   over docs/API.md (public/driver.h).  What needs this machine (egress
   log, connections in, image warm, export and import, pools) has no
   entry.  (no header of its own: public/driver.h declares the table.)  */
#include "public/driver.h"
#include "remote/account.h"
#include "remote/attach.h"
#include "remote/exec.h"
#include "remote/files.h"
#include "remote/images.h"
#include "remote/sandboxes.h"
#include "remote/snapshots.h"
#include "remote/stdin.h"

static int
remote_stop (rt_sandbox *sb, rt_error **err)
{
  return rt_remote_sandbox_verb (sb, "stop", err);
}

static int
remote_pause (rt_sandbox *sb, rt_error **err)
{
  return rt_remote_sandbox_verb (sb, "pause", err);
}

static int
remote_wake (rt_sandbox *sb, rt_error **err)
{
  return rt_remote_sandbox_verb (sb, "wake", err);
}

/* The caller's own calls are not bounded; a session's are
   (remote/attach.c).  */
static int
remote_kill (rt_sandbox *sb, uint32_t process, int signal, rt_error **err)
{
  return rt_remote_sandbox_kill (sb, process, signal, NULL, err);
}

static int
remote_write (rt_sandbox *sb, uint32_t process, const void *data, size_t len, uint64_t offset, bool eof,
              uint64_t *accepted, rt_error **err)
{
  return rt_remote_sandbox_write (sb, process, data, len, offset, eof, NULL, accepted, err);
}

static int
remote_resize (rt_sandbox *sb, uint32_t process, unsigned cols, unsigned rows, rt_error **err)
{
  return rt_remote_sandbox_resize (sb, process, cols, rows, NULL, err);
}

const struct rt_driver rt_remote_driver = {
  .name = "remote",
  .sandbox_create = rt_remote_sandbox_create,
  .sandbox_open = rt_remote_sandbox_open,
  .sandbox_info = rt_remote_sandbox_info,
  .sandbox_list = rt_remote_sandbox_list,
  .sandbox_remove = rt_remote_sandbox_remove,
  .sandbox_stop = remote_stop,
  .sandbox_destroy = rt_remote_sandbox_destroy,
  .sandbox_pause = remote_pause,
  .sandbox_wake = remote_wake,
  .sandbox_extend = rt_remote_sandbox_extend,
  .sandbox_update = rt_remote_sandbox_update,
  .sandbox_set_network = rt_remote_sandbox_set_network,
  .sandbox_metrics_json = rt_remote_sandbox_metrics_json,
  .sandbox_snapshot = rt_remote_sandbox_snapshot,
  .sandbox_fork = rt_remote_sandbox_fork,
  .sandbox_exec = rt_remote_sandbox_exec,
  .sandbox_spawn = rt_remote_sandbox_spawn,
  .sandbox_ps_json = rt_remote_sandbox_ps_json,
  .sandbox_logs = rt_remote_sandbox_logs,
  .sandbox_kill = remote_kill,
  .sandbox_write = remote_write,
  .sandbox_resize = remote_resize,
  .sandbox_attach = rt_remote_sandbox_attach,
  .sandbox_cat = rt_remote_sandbox_cat,
  .sandbox_files_json = rt_remote_sandbox_files_json,
  .sandbox_copy_in = rt_remote_copy_in,
  .sandbox_copy_out = rt_remote_copy_out,
  .snapshot_list_json = rt_remote_snapshot_list_json,
  .snapshot_get_json = rt_remote_snapshot_get_json,
  .snapshot_remove = rt_remote_snapshot_remove,
  .image_build = rt_remote_image_build,
  .image_list_json = rt_remote_image_list_json,
  .image_get_json = rt_remote_image_get_json,
  .image_remove = rt_remote_image_remove,
  .secret_set = rt_remote_secret_set,
  .secret_list_json = rt_remote_secret_list_json,
  .secret_remove = rt_remote_secret_remove,
  .usage_json = rt_remote_usage_json,
  .node_list_json = rt_remote_node_list_json,
};
