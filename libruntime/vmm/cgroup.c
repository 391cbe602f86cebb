/* cgroup.c - the limits of one QEMU's control group (cgroup.h).
   Placeholder until the cgroup work lands: no group, every limit missing.  */
#include <string.h>

#include "vmm/cgroup.h"

void
rt_cgroup_limits_for (unsigned memory_mib, unsigned vcpu, bool trial, struct rt_cgroup_limits *limits)
{
  (void) vcpu;
  (void) trial;
  memset (limits, 0, sizeof (*limits));
  limits->memory_bytes = (uint64_t) memory_mib << 20;
}

int
rt_cgroup_create (uid_t uid, const struct rt_cgroup_limits *limits, struct rt_cgroup *cg, rt_error **err)
{
  (void) uid;
  (void) limits;
  (void) err;
  memset (cg, 0, sizeof (*cg));
  for (size_t i = 0; i < RT_CGROUP_MAX_FDS; i++)
    cg->procs_fds[i] = -1;
  cg->missing = strdup ("memory.max, pids.max");
  return 0;
}

void
rt_cgroup_destroy (struct rt_cgroup *cg)
{
  free (cg->missing);
  cg->missing = NULL;
}

void
rt_cgroup_sweep (void)
{
}
