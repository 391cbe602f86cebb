/* image.c - the public image, pool and snapshot functions, each calling
   its context's driver (public/driver.h); and the local removal of an
   image, which is the store's only once nothing else needs the image.
   (no header of its own: its functions are include/runtime.h's and
   public/driver.h's.)  */
#include <string.h>

#include "image/store.h"
#include "public/driver.h"
#include "records/list.h"
#include "remote/http.h"
#include "sandbox/pool.h"
#include "snapshot/store.h"
#include "template/template.h"

int
rt_snapshot_list_json (rt_context *ctx, char **json, rt_error **err)
{
  return rt_driver_of (ctx)->snapshot_list_json (ctx, json, err);
}

int
rt_snapshot_get_json (rt_context *ctx, const char *ref, char **json, rt_error **err)
{
  return rt_driver_of (ctx)->snapshot_get_json (ctx, ref, json, err);
}

int
rt_snapshot_remove (rt_context *ctx, const char *ref, rt_error **err)
{
  return rt_driver_of (ctx)->snapshot_remove (ctx, ref, err);
}

int
rt_image_build (rt_context *ctx, const rt_build_opts *opts, char **id, rt_error **err)
{
  return rt_driver_of (ctx)->image_build (ctx, opts, id, err);
}

int
rt_image_list_json (rt_context *ctx, char **json, rt_error **err)
{
  return rt_driver_of (ctx)->image_list_json (ctx, json, err);
}

int
rt_image_get_json (rt_context *ctx, const char *ref, char **json, rt_error **err)
{
  return rt_driver_of (ctx)->image_get_json (ctx, ref, json, err);
}

int
rt_image_remove (rt_context *ctx, const char *ref, rt_error **err)
{
  return rt_driver_of (ctx)->image_remove (ctx, ref, err);
}

int
rt_image_warm (rt_context *ctx, const char *ref, unsigned vcpu, unsigned memory_mib, char **json, rt_error **err)
{
  const struct rt_driver *d = rt_driver_of (ctx);

  if (d->image_warm == NULL)
    return rt_remote_unsupported (err, "image warm");
  return d->image_warm (ctx, ref, vcpu, memory_mib, json, err);
}

int
rt_image_export (rt_context *ctx, const char *ref, const char *path, rt_error **err)
{
  const struct rt_driver *d = rt_driver_of (ctx);

  if (d->image_export == NULL)
    return rt_remote_unsupported (err, "image export");
  return d->image_export (ctx, ref, path, err);
}

int
rt_image_import (rt_context *ctx, const char *path, char **id, rt_error **err)
{
  const struct rt_driver *d = rt_driver_of (ctx);

  if (d->image_import == NULL)
    return rt_remote_unsupported (err, "image import");
  return d->image_import (ctx, path, id, err);
}

int
rt_pool_set (rt_context *ctx, const char *ref, unsigned spares, unsigned vcpu, unsigned memory_mib, char **json,
             rt_error **err)
{
  const struct rt_driver *d = rt_driver_of (ctx);

  if (d->pool_set == NULL)
    return rt_remote_unsupported (err, "pool");
  return d->pool_set (ctx, ref, spares, vcpu, memory_mib, json, err);
}

int
rt_pool_list_json (rt_context *ctx, char **json, rt_error **err)
{
  const struct rt_driver *d = rt_driver_of (ctx);

  if (d->pool_list_json == NULL)
    return rt_remote_unsupported (err, "pool");
  return d->pool_list_json (ctx, json, err);
}

int
rt_pool_remove (rt_context *ctx, const char *ref, rt_error **err)
{
  const struct rt_driver *d = rt_driver_of (ctx);

  if (d->pool_remove == NULL)
    return rt_remote_unsupported (err, "pool");
  return d->pool_remove (ctx, ref, err);
}

/* Refuses to remove @id while a sandbox runs on it.  */
static int
check_unused (rt_context *ctx, const char *id, const char *ref, rt_error **err)
{
  cleanup_json json_object *live = NULL;
  int ret = rt_store_list_unscoped (ctx, false, &live, err);

  if (ret < 0)
    return ret;
  for (size_t i = 0; i < json_object_array_length (live); i++)
    {
      json_object *sb = json_object_array_get_idx (live, i);
      const char *uses = rt_json_str (sb, "imageId");
      if (uses && strcmp (uses, id) == 0)
        {
          rt_error_set (err, EBUSY, "image_in_use", "image '%s' is in use by sandbox %s", ref,
                        rt_json_str (sb, "id"));
          return rt_error_hint (err, "stop the sandboxes that use it first (runtime sandbox stop ID)");
        }
    }
  return 0;
}

/* Refuses to remove @id while a snapshot or a paused sandbox needs it:
   either continues from a disk made of its layers.  */
static int
check_unsaved (rt_context *ctx, const char *id, const char *ref, rt_error **err)
{
  cleanup_free char *who = NULL;
  int ret = rt_snapshot_image_in_use (ctx, id, &who, err);

  if (ret <= 0)
    return ret;
  if (strncmp (who, RT_SNAPSHOT_PREFIX, strlen (RT_SNAPSHOT_PREFIX)) == 0)
    {
      rt_error_set (err, EBUSY, "image_in_use", "image '%s' is needed by snapshot %s", ref, who);
      return rt_error_hint (err, "remove snapshot %s first (runtime snapshot rm %s)", who, who);
    }
  rt_error_set (err, EBUSY, "image_in_use", "image '%s' is needed by paused sandbox %s", ref, who);
  return rt_error_hint (err, "remove sandbox %s first (runtime sandbox rm %s)", who, who);
}

int
rt_local_image_remove (rt_context *ctx, const char *ref, rt_error **err)
{
  cleanup_close int lockfd = -1;
  char id[65];
  int ret = rt_image_removable (ctx, ref, id, &lockfd, err);

  /* All under the index's lock, as one removal.  */
  if (ret == 0)
    ret = check_unused (ctx, id, ref, err);
  if (ret == 0)
    ret = check_unsaved (ctx, id, ref, err);
  if (ret == 0)
    ret = rt_image_forget (ctx, id, err);
  if (ret < 0)
    return ret;
  close (steal_fd (&lockfd));
  /* The image is gone already: a template left behind is never found
     (its key names the image), so a failure here is not the caller's.  */
  rt_template_remove_image (ctx, id, NULL);
  rt_pool_forget_image (ctx, id);
  return 0;
}
