/* fork.h - snapshots and forks of a running sandbox (rt_sandbox_snapshot,
   rt_sandbox_fork), its settings (rt_sandbox_update), and waking a
   paused one on demand (auto-wake).  */
#ifndef RT_SANDBOX_FORK_H
#define RT_SANDBOX_FORK_H

#include "sandbox/handle.h"

/* When @sb is paused to disk and its autoWake is on, wakes it (the
   caller waits); else nothing.  Every verb that reaches the guest (exec,
   spawn, cp, cat, files, ps, logs) calls it first.  */
int rt_sandbox_auto_wake (rt_sandbox *sb, rt_error **err);

/* The local driver (public/driver.h): these do what include/runtime.h
   says of their rt_ names, on this machine.  */
int rt_local_sandbox_snapshot (rt_sandbox *sb, const char *name, const char *const *labels, char **json,
                               rt_error **err);
int rt_local_sandbox_fork (rt_sandbox *sb, unsigned count, const char *name, const char *const *labels, char ***ids,
                           rt_error **err);

#endif
