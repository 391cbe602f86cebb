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

json_object *
rt_guest_restore_request (const char *hostname, enum rt_restore_mode mode, const uint32_t *keep, size_t n_keep)
{
  static const char *const modes[] = { "clone", "child", "wake" };
  json_object *o = json_object_new_object ();
  uint8_t entropy[64];
  char b64[100];
  struct timespec ts;

  if (getrandom (entropy, sizeof entropy, 0) != sizeof entropy)
    return NULL;
  EVP_EncodeBlock ((unsigned char *) b64, entropy, sizeof entropy);
  clock_gettime (CLOCK_REALTIME, &ts);
  json_object_object_add (o, "entropy", json_object_new_string (b64));
  json_object_object_add (o, "timeMs", json_object_new_int64 ((int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000));
  json_object_object_add (o, "hostname", json_object_new_string (hostname));
  json_object_object_add (o, "mode", json_object_new_string (modes[mode]));
  if (keep)
    {
      json_object *a = json_object_new_array ();
      for (size_t i = 0; i < n_keep; i++)
        json_object_array_add (a, json_object_new_int64 (keep[i]));
      json_object_object_add (o, "keep", a);
    }
  return o;
}

int
rt_guest_restore_as (struct rt_channel *ch, const char *hostname, enum rt_restore_mode mode, const uint32_t *keep,
                     size_t n_keep, int timeout_ms, rt_error **err)
{
  (void) mode;
  (void) keep;
  (void) n_keep;
  return rt_guest_restore (ch, hostname, timeout_ms, err);
}
