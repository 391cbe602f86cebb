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

#endif
