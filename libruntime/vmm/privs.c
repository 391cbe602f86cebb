/* privs.c - giving up capabilities (privs.h).  */
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vmm/privs.h"

int
rt_drop_privileges (uint64_t keep, rt_error **err)
{
  struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
  struct __user_cap_data_struct data[2];
  unsigned last = rt_cap_last ();
  uint64_t have;

  /* What we do not have cannot be kept (capset would refuse it).  */
  if (syscall (SYS_capget, &hdr, data) < 0)
    return rt_error_set (err, errno, "startup_failed", "cannot read capabilities: %s", strerror (errno));
  have = data[0].permitted | (uint64_t) data[1].permitted << 32;
  keep &= have;
  /* The bounding set first: dropping from it needs CAP_SETPCAP, which
     goes with the rest below.  A later exec can then never get back what
     is gone, whatever the file's capabilities.  */
  for (unsigned cap = 0; cap <= last; cap++)
    if (!(keep & (UINT64_C (1) << cap)) && prctl (PR_CAPBSET_READ, cap, 0, 0, 0) == 1
        && prctl (PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
      return rt_error_set (err, errno, "startup_failed", "cannot drop capability %u from the bounding set: %s", cap,
                           strerror (errno));
  if (prctl (PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
    return rt_error_set (err, errno, "startup_failed", "cannot clear the ambient capabilities: %s", strerror (errno));
  memset (data, 0, sizeof data);
  for (int i = 0; i < 2; i++)
    data[i].effective = data[i].permitted = (uint32_t) (keep >> (32 * i));
  if (syscall (SYS_capset, &hdr, data) < 0)
    return rt_error_set (err, errno, "startup_failed", "cannot drop capabilities: %s", strerror (errno));
  /* Read back: what the kernel holds is what counts.  */
  memset (data, 0, sizeof data);
  if (syscall (SYS_capget, &hdr, data) < 0)
    return rt_error_set (err, errno, "startup_failed", "cannot read capabilities back: %s", strerror (errno));
  for (int i = 0; i < 2; i++)
    if ((data[i].effective | data[i].permitted | data[i].inheritable) & ~(uint32_t) (keep >> (32 * i)))
      return rt_error_set (err, EPERM, "startup_failed", "capabilities were not dropped");
  return 0;
}
