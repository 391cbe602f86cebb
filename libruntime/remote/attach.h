/* attach.h - rt_sandbox_attach in client mode: an rt_session
   (core/session.h) made of a process of `runtime serve` with its stdin
   open (docs/API.md: POST …/processes with stdinMode "pipe" and a pty,
   :write with offsets, :resize, :signal, the output followed by cursor).  */
#ifndef RT_REMOTE_ATTACH_H
#define RT_REMOTE_ATTACH_H

#include "core/context.h"

int rt_remote_sandbox_attach (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, rt_session **out,
                              rt_error **err);

#endif
