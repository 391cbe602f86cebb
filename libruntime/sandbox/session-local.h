/* session-local.h - the local rt_session (core/session.h): one
 * connection to the sandbox's session.sock per session, frames of
 * common/proto.h both ways (monitor/session.h has the protocol).  Reads
 * never block; a write waits only for the socket, which the monitor
 * empties at all times.
 */
#ifndef RT_SANDBOX_SESSION_LOCAL_H
#define RT_SANDBOX_SESSION_LOCAL_H

#include <json-c/json.h>

#include "core/session.h"

/* Opens a session: @type RT_FRAME_EXEC (@request the :exec body) or
   RT_FRAME_CONNECT ({"port":N}), and waits for the monitor to take it.
   Return: 0 and *@out, or <0 with @err set (the monitor's refusal:
   "sandbox_paused", "sandbox_not_ready", "too_many_sessions", …).  */
int rt_session_local_open (rt_sandbox *sb, uint8_t type, json_object *request, bool pty, rt_session **out,
                           rt_error **err);

/* The local driver's rt_sandbox_attach and rt_sandbox_connect
   (public/driver.h), session.c's.  */
int rt_local_sandbox_attach (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, rt_session **out,
                             rt_error **err);
int rt_local_sandbox_connect (rt_sandbox *sb, unsigned port, rt_session **out, rt_error **err);

#endif
