/* state.c - rt_sandbox_state: the "state" of the sandbox's view as an
   enum, so that it answers alike on this machine and in client mode.
   (no header of its own: declared in include/runtime/sandbox.h.)  */
#include "public/driver.h"
#include "records/handle.h"

int
rt_sandbox_state (rt_sandbox *sb, enum rt_sandbox_state *state, rt_error **err)
{
  cleanup_json json_object *info = NULL;
  const char *name;
  int ret = rt_sandbox_info (sb->ctx, rt_sandbox_id (sb), RT_VIEW_TENANT, &info, err);

  if (ret < 0)
    return ret;
  name = rt_json_str (info, "state");
  if (rt_sandbox_state_parse (name, state) < 0)
    return rt_error_set (err, EPROTO, "internal", "sandbox %s: unknown state '%s'", rt_sandbox_id (sb),
                         name ? name : "(none)");
  return 0;
}
