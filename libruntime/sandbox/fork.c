/* fork.c - snapshots and forks of a sandbox, and its idle pause and
   auto-wake settings (fork.h).  STUB.  */
#include "sandbox/fork.h"

int
rt_sandbox_snapshot (rt_sandbox *sb, const char *name, const char *const *labels, char **json, rt_error **err)
{
  (void) sb;
  (void) name;
  (void) labels;
  (void) json;
  return rt_error_set (err, ENOSYS, "internal", "not yet");
}

int
rt_sandbox_fork (rt_sandbox *sb, unsigned count, const char *name, const char *const *labels, char ***ids,
                 rt_error **err)
{
  (void) sb;
  (void) count;
  (void) name;
  (void) labels;
  (void) ids;
  return rt_error_set (err, ENOSYS, "internal", "not yet");
}
