/* state.c - rt_sandbox_state: the "state" of rt_sandbox_get_json's object
   as an enum, so that it answers alike on this machine and in client mode.
   No header of its own: declared in include/runtime/sandbox.h.  */
#include "sandbox/handle.h"

int
rt_sandbox_state (rt_sandbox *sb, enum rt_sandbox_state *state, rt_error **err)
{
  cleanup_free char *text = NULL;
  cleanup_json json_object *info = NULL;
  const char *name;
  int ret = rt_sandbox_get_json (sb->ctx, rt_sandbox_id (sb), &text, err);

  if (ret < 0)
    return ret;
  info = json_tokener_parse (text);
  if (info == NULL)
    return rt_error_set (err, EPROTO, "internal", "sandbox %s: its record is not a JSON object", rt_sandbox_id (sb));
  name = rt_json_str (info, "state");
  if (rt_sandbox_state_parse (name, state) < 0)
    return rt_error_set (err, EPROTO, "internal", "sandbox %s: unknown state '%s'", rt_sandbox_id (sb),
                         name ? name : "(none)");
  return 0;
}
