/* TEMPORARY until the helpers' branches land (agentq, snapstore).  */
#include <openssl/evp.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "snapshot/store.h"
#include "vmm/guest-ops.h"

bool
rt_snapshot_id_valid (const char *id)
{
  if (strncmp (id, "snap-", 5) != 0 || strlen (id) != RT_SNAPSHOT_ID_LEN)
    return false;
  for (const char *p = id + 5; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
      return false;
  return true;
}

char *
rt_snapshots_root (rt_context *ctx, bool make, rt_error **err)
{
  char *p = rt_strdup_printf ("%s/snapshots", ctx->data_dir);
  if (p == NULL)
    return (rt_error_oom (err), NULL);
  if (make && rt_mkdir_p (p, 0700, err) < 0)
    {
      free (p);
      return NULL;
    }
  return p;
}

