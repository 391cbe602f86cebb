/* sandbox.c - the public sandbox functions: a sandbox made, found, listed,
   stopped, paused, changed, snapshotted and forked.  Each checks its
   arguments, then calls its context's driver (public/driver.h).
   (no header of its own: its functions are include/runtime.h's.)  */
#include <string.h>

#include "public/driver.h"
#include "records/handle.h"
#include "remote/http.h"

static const struct rt_driver *
of (rt_sandbox *sb)
{
  return rt_driver_of (sb->ctx);
}

int
rt_sandbox_create (rt_context *ctx, const rt_sandbox_config *cfg, rt_sandbox **out, rt_error **err)
{
  int ret = rt_sandbox_config_check (cfg, NULL, err);

  if (ret < 0)
    return ret;
  return rt_driver_of (ctx)->sandbox_create (ctx, cfg, out, err);
}

int
rt_sandbox_open (rt_context *ctx, const char *ref, rt_sandbox **out, rt_error **err)
{
  return rt_driver_of (ctx)->sandbox_open (ctx, ref, out, err);
}

int
rt_sandbox_info (rt_context *ctx, const char *ref, enum rt_view who, json_object **out, rt_error **err)
{
  return rt_driver_of (ctx)->sandbox_info (ctx, ref, who, out, err);
}

int
rt_sandbox_list (rt_context *ctx, bool all, enum rt_view who, json_object **out, rt_error **err)
{
  return rt_driver_of (ctx)->sandbox_list (ctx, all, who, out, err);
}

/* An object as the library hands JSON out: plain, slashes unescaped.  */
static int
text_of (json_object *o, char **json, rt_error **err)
{
  *json = strdup (json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}

int
rt_sandbox_get_json (rt_context *ctx, const char *ref, char **json, rt_error **err)
{
  cleanup_json json_object *o = NULL;
  int ret = rt_sandbox_info (ctx, ref, RT_VIEW_HOST, &o, err);

  return ret < 0 ? ret : text_of (o, json, err);
}

int
rt_sandbox_list_json (rt_context *ctx, bool all, char **json, rt_error **err)
{
  cleanup_json json_object *o = NULL;
  int ret = rt_sandbox_list (ctx, all, RT_VIEW_HOST, &o, err);

  return ret < 0 ? ret : text_of (o, json, err);
}

int
rt_sandbox_remove (rt_context *ctx, const char *ref, rt_error **err)
{
  return rt_driver_of (ctx)->sandbox_remove (ctx, ref, err);
}

int
rt_sandbox_egress_log (rt_context *ctx, const char *ref, char **path, rt_error **err)
{
  const struct rt_driver *d = rt_driver_of (ctx);

  if (d->sandbox_egress_log == NULL)
    return rt_remote_unsupported (err, "the egress log (a file on the server)");
  return d->sandbox_egress_log (ctx, ref, path, err);
}

int
rt_sandbox_stop (rt_sandbox *sb, rt_error **err)
{
  return of (sb)->sandbox_stop (sb, err);
}

int
rt_sandbox_destroy (rt_sandbox *sb, rt_error **err)
{
  if (sb == NULL)
    return 0;
  return of (sb)->sandbox_destroy (sb, err);
}

int
rt_sandbox_pause (rt_sandbox *sb, rt_error **err)
{
  return of (sb)->sandbox_pause (sb, err);
}

int
rt_sandbox_wake (rt_sandbox *sb, rt_error **err)
{
  return of (sb)->sandbox_wake (sb, err);
}

int
rt_sandbox_extend (rt_sandbox *sb, unsigned seconds, char **expires_at, rt_error **err)
{
  return of (sb)->sandbox_extend (sb, seconds, expires_at, err);
}

int
rt_sandbox_update (rt_sandbox *sb, int idle_pause_s, int auto_wake, char **json, rt_error **err)
{
  return of (sb)->sandbox_update (sb, idle_pause_s, auto_wake, json, err);
}

int
rt_sandbox_set_network (rt_sandbox *sb, bool internet, const char *const *allow, const char *const *deny, char **json,
                        rt_error **err)
{
  return of (sb)->sandbox_set_network (sb, internet, allow, deny, json, err);
}

int
rt_sandbox_metrics_json (rt_sandbox *sb, char **json, rt_error **err)
{
  return of (sb)->sandbox_metrics_json (sb, json, err);
}

int
rt_sandbox_snapshot (rt_sandbox *sb, const char *name, const char *const *labels, char **json, rt_error **err)
{
  return of (sb)->sandbox_snapshot (sb, name, labels, json, err);
}

int
rt_sandbox_fork (rt_sandbox *sb, unsigned count, const char *name, const char *const *labels, char ***ids,
                 rt_error **err)
{
  /* The children's name and labels, as any sandbox's, before the source
     is captured for them.  */
  rt_sandbox_config children = { .name = name, .labels = labels };
  int ret = rt_sandbox_config_check (&children, NULL, err);

  if (ret < 0)
    return ret;
  return of (sb)->sandbox_fork (sb, count, name, labels, ids, err);
}
