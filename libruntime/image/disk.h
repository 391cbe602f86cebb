/* disk.h - ext4 boot disks made of an image's layers (image/disk.c).
   rt_image_ensure_disk(), rt_image_disk_clear() and struct rt_image_disk,
   which the sandbox uses, are declared in core/context.h.  */
#ifndef RT_IMAGE_DISK_H
#define RT_IMAGE_DISK_H

#include "core/context.h"

/* An ext4 boot disk at @disk holding @layers (a JSON array of digests).  */
int rt_image_disk_for_layers (rt_context *ctx, json_object *layers, const char *disk, rt_error **err);

#endif
