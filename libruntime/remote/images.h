/* images.h - images in client mode: recipe builds with their log
   followed, list, get, delete (/v1/images, docs/API.md).  */
#ifndef RT_REMOTE_IMAGES_H
#define RT_REMOTE_IMAGES_H

#include "core/context.h"

int rt_remote_image_build (rt_context *ctx, const rt_build_opts *opts, char **id, rt_error **err);
int rt_remote_image_list_json (rt_context *ctx, char **json, rt_error **err);
int rt_remote_image_get_json (rt_context *ctx, const char *ref, char **json, rt_error **err);
int rt_remote_image_remove (rt_context *ctx, const char *ref, rt_error **err);

#endif
