/* image.h - the image store, for the build (build.c): manifests, layers,
   adding versions, boot disks of a layer list.  */
#ifndef RT_IMAGE_H
#define RT_IMAGE_H

#include "core/context.h"

/* An image name: 1-63 of [a-z0-9._-].  */
bool rt_image_name_valid (const char *name);
/* The stored manifest of @ref (no default image is built here).  */
int rt_image_manifest (rt_context *ctx, const char *ref, json_object **manifest, rt_error **err);
/* The stored file of layer @digest, or NULL.  */
char *rt_image_layer_path (rt_context *ctx, const char *digest);
/* Stores a raw tar (an overlayfs upper dir) as a compressed layer.  */
int rt_image_layer_from_tar (rt_context *ctx, const char *raw_tar, char digest[65], rt_error **err);
/* Adds a version of @name (tagged latest and @tag) whose manifest holds
   @fields (layers, env, workdir, …); its id in *id_out.  */
int rt_image_add (rt_context *ctx, const char *name, const char *tag, json_object *fields, char **id_out,
                  rt_error **err);
/* An ext4 boot disk at @disk holding @layers (a JSON array of digests).  */
int rt_image_disk_for_layers (rt_context *ctx, json_object *layers, const char *disk, rt_error **err);

#endif
