/* cgroup.h - the limits of one QEMU's control group (the jail, jail.c).
 *
 * cgroup v2: one group, /sys/fs/cgroup/runtime/runtime-<uid>, with
 * memory.max (and memory.swap.max 0), pids.max and, when asked, cpu.max;
 * the controllers are enabled in the root's and runtime's
 * cgroup.subtree_control.  cgroup v1 (this project's CI hosts): a group
 * /sys/fs/cgroup/{memory,pids,cpu}/runtime/runtime-<uid> in each of those
 * hierarchies that is mounted and writable (memory.limit_in_bytes and
 * memory.memsw.limit_in_bytes when swap is accounted; pids.max;
 * cpu.cfs_quota_us).  A limit that cannot be set is named in cg->missing,
 * for the caller to say so; it does not fail the start.  The group is
 * named by the QEMU's uid (uidpool.h), unique among live sandboxes, so a
 * group left by a killed monitor is found and removed by the next claimer
 * of that uid or by rt_cgroup_sweep (the reaper, records/reap.c).
 */
#ifndef RT_CGROUP_H
#define RT_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/context.h"

#define RT_CGROUP_MAX_FDS 4

struct rt_cgroup_limits
{
  uint64_t memory_bytes; /* 0: none */
  unsigned pids;         /* 0: none */
  unsigned cpu_percent;  /* of one core; 0: none */
};

struct rt_cgroup
{
  char *paths[RT_CGROUP_MAX_FDS]; /* the group's directories */
  int procs_fds[RT_CGROUP_MAX_FDS]; /* their cgroup.procs, open for writing:
                                       QEMU writes "0" to each before exec */
  size_t n;
  char *missing; /* NULL, or what could not be set and why, e.g. "memory
                    limit (cgroup v1 memory not writable), CPU limit (…)" */
};

/* The limits of a QEMU running a guest of @memory_mib and @vcpu: guest
   memory plus QEMU's own, measured; threads; a trial sandbox's CPU (as
   many cores as its vCPUs; none for a paid one).  Figures in cgroup.c.  */
void rt_cgroup_limits_for (unsigned memory_mib, unsigned vcpu, bool trial, struct rt_cgroup_limits *limits);

/* Creates the group "runtime-<uid>" with @limits (a stale one of that
   name is removed first), and opens its cgroup.procs files.  Fails only
   for uid 0; a limit it cannot set goes in cg->missing.  */
int rt_cgroup_create (uid_t uid, const struct rt_cgroup_limits *limits, struct rt_cgroup *cg, rt_error **err);

/* Closes the fds and removes the group (its processes must be gone);
   idempotent.  */
void rt_cgroup_destroy (struct rt_cgroup *cg);

/* The host's control groups as the jail sees them: "v2" (unified), "v1"
   (a memory, pids or cpu hierarchy mounted) or "none".  */
const char *rt_cgroup_version (void);

/* Removes every "runtime-<uid>" group whose uid is free (uidpool.h) and
   which holds no process.  */
void rt_cgroup_sweep (void);

#endif
