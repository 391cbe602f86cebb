/* disk.h - ext4 boot disks made of an image's layers (image/disk.c): what
   a sandbox boots from.  */
#ifndef RT_IMAGE_DISK_H
#define RT_IMAGE_DISK_H

#include "core/context.h"

/* An image and its boot disk.  */
struct rt_image_disk
{
  char *id;      /* image id (sha256 of the manifest) */
  char *disk;    /* ext4 boot disk, shared read-only by its sandboxes */
  char **env;    /* NULL-terminated "K=V" from the manifest */
  char *workdir; /* default cwd */
};
/* Resolves @ref (NULL: "runtime"), building the default image on first use,
   and derives its boot disk if not cached.  image_not_found when unknown.  */
int rt_image_ensure_disk (rt_context *ctx, const char *ref, struct rt_image_disk *out, rt_error **err);
void rt_image_disk_clear (struct rt_image_disk *d);

/* An ext4 boot disk at @disk holding @layers (a JSON array of digests);
   @name is what the progress line calls it.  */
int rt_image_disk_for_layers (rt_context *ctx, json_object *layers, const char *name, const char *disk,
                              rt_error **err);

#endif
