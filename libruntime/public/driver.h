/* driver.h - the two implementations behind the public API.
 *
 * Every function of include/runtime.h that can run on this machine or on
 * a server (RUNTIME_API_URL) is defined once in public/: it checks its
 * arguments, then calls its context's driver.  The local driver
 * (driver-local.c) is sandbox/, image/, snapshot/, template/, build/,
 * net/ and billing/ (and the removal of an image, composed in
 * public/image.c); the remote one (driver-remote.c) is remote/, which
 * speaks docs/API.md.  The local driver never includes remote/; remote/
 * uses of the layers below it only what both ends share (the handle, a
 * command's JSON, the host's end of a copy, a build's plan), and both
 * answer in the same shapes.  A NULL entry is a call the driver cannot make
 * ("unsupported_remote" for what needs this machine).
 *
 * The layers above public/ (llm/, serve/, api/, cluster/) are its
 * clients, as the CLI is; those below never call it.
 */
#ifndef RT_PUBLIC_DRIVER_H
#define RT_PUBLIC_DRIVER_H

#include "core/context.h"
#include "records/view.h"

struct rt_driver
{
  const char *name; /* "local" or "remote" */

  /* Sandboxes: public/sandbox.c.  */
  int (*sandbox_create) (rt_context *ctx, const rt_sandbox_config *cfg, rt_sandbox **out, rt_error **err);
  int (*sandbox_open) (rt_context *ctx, const char *ref, rt_sandbox **out, rt_error **err);
  int (*sandbox_info) (rt_context *ctx, const char *ref, enum rt_view who, json_object **out, rt_error **err);
  int (*sandbox_list) (rt_context *ctx, bool all, enum rt_view who, json_object **out, rt_error **err);
  int (*sandbox_remove) (rt_context *ctx, const char *ref, rt_error **err);
  int (*sandbox_egress_log) (rt_context *ctx, const char *ref, char **path, rt_error **err);
  int (*sandbox_stop) (rt_sandbox *sb, rt_error **err);
  int (*sandbox_destroy) (rt_sandbox *sb, rt_error **err); /* frees @sb, also on error */
  int (*sandbox_pause) (rt_sandbox *sb, rt_error **err);
  int (*sandbox_wake) (rt_sandbox *sb, rt_error **err);
  int (*sandbox_extend) (rt_sandbox *sb, unsigned seconds, char **expires_at, rt_error **err);
  int (*sandbox_update) (rt_sandbox *sb, int idle_pause_s, int auto_wake, char **json, rt_error **err);
  int (*sandbox_set_network) (rt_sandbox *sb, bool internet, const char *const *allow, const char *const *deny,
                              char **json, rt_error **err);
  int (*sandbox_metrics_json) (rt_sandbox *sb, char **json, rt_error **err);
  int (*sandbox_snapshot) (rt_sandbox *sb, const char *name, const char *const *labels, char **json, rt_error **err);
  int (*sandbox_fork) (rt_sandbox *sb, unsigned count, const char *name, const char *const *labels, char ***ids,
                       rt_error **err);

  /* Commands and sessions: public/exec.c.  */
  int (*sandbox_exec) (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, rt_exec_result *res,
                       rt_error **err);
  int (*sandbox_spawn) (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, uint32_t *process,
                        rt_error **err);
  int (*sandbox_ps_json) (rt_sandbox *sb, char **json, rt_error **err);
  int (*sandbox_logs) (rt_sandbox *sb, uint32_t process, bool follow, const rt_exec_opts *opts, rt_exec_result *res,
                       bool *exited, rt_error **err);
  int (*sandbox_kill) (rt_sandbox *sb, uint32_t process, int signal, rt_error **err);
  int (*sandbox_write) (rt_sandbox *sb, uint32_t process, const void *data, size_t len, uint64_t offset, bool eof,
                        uint64_t *accepted, rt_error **err);
  int (*sandbox_resize) (rt_sandbox *sb, uint32_t process, unsigned cols, unsigned rows, rt_error **err);
  int (*sandbox_attach) (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, rt_session **out,
                         rt_error **err);
  int (*sandbox_connect) (rt_sandbox *sb, unsigned port, rt_session **out, rt_error **err);

  /* Files: public/files.c.  */
  int (*sandbox_cat) (rt_sandbox *sb, const char *path, const rt_exec_opts *opts, rt_error **err);
  int (*sandbox_files_json) (rt_sandbox *sb, const char *path, unsigned depth, char **json, rt_error **err);
  int (*sandbox_copy_in) (rt_sandbox *sb, const char *src, const char *dst, const rt_copy_opts *opts, const char *user,
                          rt_error **err);
  int (*sandbox_copy_out) (rt_sandbox *sb, const char *src, const char *dst, const rt_copy_opts *opts,
                           rt_copy_result *res, rt_error **err);

  /* Snapshots, images and pools: public/image.c.  */
  int (*snapshot_list_json) (rt_context *ctx, char **json, rt_error **err);
  int (*snapshot_get_json) (rt_context *ctx, const char *ref, char **json, rt_error **err);
  int (*snapshot_remove) (rt_context *ctx, const char *ref, rt_error **err);
  int (*image_build) (rt_context *ctx, const rt_build_opts *opts, char **id, rt_error **err);
  int (*image_list_json) (rt_context *ctx, char **json, rt_error **err);
  int (*image_get_json) (rt_context *ctx, const char *ref, char **json, rt_error **err);
  int (*image_remove) (rt_context *ctx, const char *ref, rt_error **err);
  int (*image_warm) (rt_context *ctx, const char *ref, unsigned vcpu, unsigned memory_mib, char **json,
                     rt_error **err);
  int (*image_export) (rt_context *ctx, const char *ref, const char *path, rt_error **err);
  int (*image_import) (rt_context *ctx, const char *path, char **id, rt_error **err);
  int (*pool_set) (rt_context *ctx, const char *ref, unsigned spares, unsigned vcpu, unsigned memory_mib, char **json,
                   rt_error **err);
  int (*pool_list_json) (rt_context *ctx, char **json, rt_error **err);
  int (*pool_remove) (rt_context *ctx, const char *ref, rt_error **err);

  /* Secrets, usage and nodes: public/account.c.  */
  int (*secret_set) (rt_context *ctx, const char *name, const char *value, size_t len, const rt_secret_opts *opts,
                     char **placeholder, rt_error **err);
  int (*secret_list_json) (rt_context *ctx, char **json, rt_error **err);
  int (*secret_remove) (rt_context *ctx, const char *name, rt_error **err);
  int (*usage_json) (rt_context *ctx, char **json, rt_error **err);
  int (*node_list_json) (rt_context *ctx, char **json, rt_error **err);
};

/* The local removal of an image (public/image.c): the store's, once no
   live sandbox, snapshot or paused sandbox needs it; then its templates
   and pools go.  */
int rt_local_image_remove (rt_context *ctx, const char *ref, rt_error **err);

extern const struct rt_driver rt_local_driver;
extern const struct rt_driver rt_remote_driver;

/* The objects of rt_sandbox_get_json and rt_sandbox_list_json (which
   give the host's view, RT_VIEW_HOST), for the layers above that answer
   with them: the API asks for a tenant's view (records/view.h), which a
   server gives its clients in any case.  */
int rt_sandbox_info (rt_context *ctx, const char *ref, enum rt_view who, json_object **out, rt_error **err);
int rt_sandbox_list (rt_context *ctx, bool all, enum rt_view who, json_object **out, rt_error **err);

/* The context's driver: the remote one in client mode.  */
const struct rt_driver *rt_driver_of (const rt_context *ctx);

/* For the layers above public/ that run only on this machine (the API
   server, a cluster node, the chat loop): 0 in a local context, else
   "unsupported_remote" naming @what.  */
int rt_local_only (const rt_context *ctx, const char *what, rt_error **err);

#endif
