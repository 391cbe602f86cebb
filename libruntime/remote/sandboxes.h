/* sandboxes.h - the sandbox functions of runtime.h in client mode:
   /v1/sandboxes and its verbs (docs/API.md).  Each answers as the local
   function it stands for.  */
#ifndef RT_REMOTE_SANDBOXES_H
#define RT_REMOTE_SANDBOXES_H

#include "core/context.h"
#include "records/view.h"

int rt_remote_sandbox_create (rt_context *ctx, const rt_sandbox_config *cfg, rt_sandbox **out, rt_error **err);
int rt_remote_sandbox_open (rt_context *ctx, const char *ref, rt_sandbox **out, rt_error **err);
int rt_remote_sandbox_info (rt_context *ctx, const char *ref, enum rt_view who, json_object **out, rt_error **err);
int rt_remote_sandbox_list (rt_context *ctx, bool all, enum rt_view who, json_object **out, rt_error **err);
int rt_remote_sandbox_remove (rt_context *ctx, const char *ref, rt_error **err);
/* :stop, :pause or :wake, answered once done.  */
int rt_remote_sandbox_verb (rt_sandbox *sb, const char *verb, rt_error **err);
/* The end of a handle (rt_sandbox_destroy): the sandbox is stopped, and
   its record kept, as locally; `sandbox run` calls it when its command
   ended, failed or was interrupted.  A `run` sandbox nobody stops (the
   client killed) stops at its lease's end (create_body).  */
int rt_remote_sandbox_destroy (rt_sandbox *sb, rt_error **err);
int rt_remote_sandbox_extend (rt_sandbox *sb, unsigned seconds, char **expires_at, rt_error **err);
int rt_remote_sandbox_update (rt_sandbox *sb, int idle_pause_s, int auto_wake, char **json, rt_error **err);
int rt_remote_sandbox_set_network (rt_sandbox *sb, bool internet, const char *const *allow, const char *const *deny,
                                   char **json, rt_error **err);
int rt_remote_sandbox_metrics_json (rt_sandbox *sb, char **json, rt_error **err);
int rt_remote_sandbox_snapshot (rt_sandbox *sb, const char *name, const char *const *labels, char **json,
                                rt_error **err);
int rt_remote_sandbox_fork (rt_sandbox *sb, unsigned count, const char *name, const char *const *labels, char ***ids,
                            rt_error **err);

/* "/v1/sandboxes/{id}" + @suffix, the id escaped; NULL when out of
   memory.  */
char *rt_remote_sandbox_path (const char *ref, const char *suffix);
/* "k=v" strings as the object {k: v}; NULL with @err set ("invalid_env"
   for @env, else "invalid_request") when one has no '='.  */
json_object *rt_remote_pairs (const char *const *pairs, bool env, rt_error **err);

#endif
