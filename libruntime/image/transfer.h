/* transfer.h - images as portable archives: export and import.  */
#ifndef RT_IMAGE_TRANSFER_H
#define RT_IMAGE_TRANSFER_H

#include "core/context.h"

/* The local driver (public/driver.h).  */
int rt_local_image_export (rt_context *ctx, const char *ref, const char *path, rt_error **err);
int rt_local_image_import (rt_context *ctx, const char *path, char **id, rt_error **err);

#endif
