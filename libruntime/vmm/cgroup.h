/* cgroup.h - the limits of one QEMU's control group (the jail, jail.c).
 *
 * cgroup v2: one group with memory.max, pids.max and, when asked, cpu.max.
 * cgroup v1 (this project's CI hosts): a group in the memory and pids
 * hierarchies where they are writable.  A limit that cannot be set is
 * named in cg->missing, for the caller to say so; it does not fail the
 * start.  The group is named by the QEMU's uid (uidpool.h), unique among
 * live sandboxes, so a group left by a killed monitor is found and removed
 * by the next claimer of that uid or by rt_cgroup_sweep.
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
  char *missing; /* NULL, or "memory.max, pids.max": what could not be set */
};

/* The limits of a QEMU running a guest of @memory_mib and @vcpu: guest
   memory plus QEMU's own, measured; threads; a trial sandbox's CPU.  */
void rt_cgroup_limits_for (unsigned memory_mib, unsigned vcpu, bool trial, struct rt_cgroup_limits *limits);

/* Creates the group "runtime-<uid>" with @limits (a stale one of that
   name is removed first).  */
int rt_cgroup_create (uid_t uid, const struct rt_cgroup_limits *limits, struct rt_cgroup *cg, rt_error **err);

/* Closes the fds and removes the group (its processes must be gone);
   idempotent.  */
void rt_cgroup_destroy (struct rt_cgroup *cg);

/* Removes every "runtime-<uid>" group whose uid is free (uidpool.h).  */
void rt_cgroup_sweep (void);

#endif
