/* scope.h - images of a tenant (core/context.h): one index, its names
 * scoped.
 *
 * A tenant context's image "NAME" is "<tenant>/NAME" in <data>/images/
 * index.json and in its manifest ('/' is in no name a caller can give, so
 * nobody else's can be it).  A tenant sees its own images and the default
 * image (RT_IMAGE_DEFAULT), which it may use but not remove
 * ("permission_denied"); anything else answers image_not_found, by name
 * or by id.  The host's view sees every image, a tenant's by its scoped
 * name.
 */
#ifndef RT_IMAGE_SCOPE_H
#define RT_IMAGE_SCOPE_H

#include "core/context.h"

/* The name @name is stored under: "<tenant>/@name" in a tenant context.
   Errors: "permission_denied" (a tenant naming the default image).  */
int rt_image_scoped_name (rt_context *ctx, const char *name, char **out, rt_error **err);
/* True when the context sees the image stored as @name.  */
bool rt_image_name_visible (rt_context *ctx, const char *name);
/* @name as the context calls it: without its "<tenant>/" for the tenant.  */
const char *rt_image_shown_name (rt_context *ctx, const char *name);
/* rt_image_index_resolve as the context sees the index: a tenant's names
   first, then the default image or an id of one it sees.  NULL when none
   (or not this tenant's).  */
const char *rt_image_resolve_in (rt_context *ctx, json_object *index, const char *ref);

/* rt_image_name_visible as a @keep of rt_image_index_prefix (@arg the
   context).  */
bool rt_image_visible_name (const char *name, void *arg);

#endif
