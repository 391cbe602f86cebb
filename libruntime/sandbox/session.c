/* session.c - the local driver's rt_sandbox_attach and
   rt_sandbox_connect: a session on the sandbox's session.sock
   (session-local.c).  (no header of its own: session-local.h declares
   them.)  */
#include <errno.h>

#include "runtime.h"

#include "common/proto.h"
#include "core/context.h"
#include "sandbox/fork.h"
#include "sandbox/handle.h"
#include "sandbox/session-local.h"
#include "core/session.h"

int
rt_local_sandbox_attach (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, rt_session **out,
                   rt_error **err)
{
  cleanup_json json_object *req = NULL;
  rt_exec_opts o;

  *out = NULL;
  opts = opts ? opts : &rt_no_exec_opts;
  o = *opts;
  /* Its stdin is the session's.  */
  o.stdin_data = NULL;
  o.stdin_len = 0;
  o.keep_stdin = false;
  req = rt_command_request (argv, &o, err);
  if (req == NULL)
    return -EINVAL;
  if (rt_sandbox_auto_wake (sb, err) < 0)
    return -EAGAIN;
  return rt_session_local_open (sb, RT_FRAME_EXEC, req, o.pty_cols > 0, out, err);
}

int
rt_local_sandbox_connect (rt_sandbox *sb, unsigned port, rt_session **out, rt_error **err)
{
  cleanup_json json_object *req = NULL;

  *out = NULL;
  if (rt_sandbox_auto_wake (sb, err) < 0)
    return -EAGAIN;
  req = json_object_new_object ();
  json_object_object_add (req, "port", json_object_new_int64 (port));
  return rt_session_local_open (sb, RT_FRAME_CONNECT, req, false, out, err);
}
