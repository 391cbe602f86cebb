/* scope.c - images of a tenant: scoped names (scope.h).  */
#include <string.h>

#include "image/scope.h"
#include "image/store.h"

/* True when @ref names the default image (or is empty: the default).  */
static bool
names_default (const char *ref)
{
  size_t n = strlen (RT_IMAGE_DEFAULT);

  return ref == NULL || *ref == '\0' || (strncmp (ref, RT_IMAGE_DEFAULT, n) == 0 && strchr (":@", ref[n]) != NULL);
}

int
rt_image_scoped_name (rt_context *ctx, const char *name, char **out, rt_error **err)
{
  if (ctx->tenant && names_default (name))
    {
      rt_error_set (err, EPERM, "permission_denied", "the image '%s' is the host's", RT_IMAGE_DEFAULT);
      return rt_error_hint (err, "pick another name");
    }
  *out = ctx->tenant ? rt_strdup_printf ("%s/%s", ctx->tenant, name) : strdup (name);
  return *out ? 0 : rt_error_oom (err);
}

bool
rt_image_name_visible (rt_context *ctx, const char *name)
{
  size_t n;

  if (ctx->tenant == NULL)
    return true;
  if (name == NULL)
    return false;
  n = strlen (ctx->tenant);
  return strcmp (name, RT_IMAGE_DEFAULT) == 0 || (strncmp (name, ctx->tenant, n) == 0 && name[n] == '/');
}

bool
rt_image_visible_name (const char *name, void *arg)
{
  return rt_image_name_visible (arg, name);
}

const char *
rt_image_shown_name (rt_context *ctx, const char *name)
{
  if (ctx->tenant && name && strcmp (name, RT_IMAGE_DEFAULT) != 0 && rt_image_name_visible (ctx, name))
    return name + strlen (ctx->tenant) + 1;
  return name;
}

const char *
rt_image_resolve_in (rt_context *ctx, json_object *index, const char *ref)
{
  json_object *img = NULL;
  const char *id, *version = NULL;

  if (ctx->tenant == NULL)
    return rt_image_index_resolve (index, ref);
  /* A '/' of its own would reach into another tenant's names.  */
  if (ref && strchr (ref, '/'))
    return NULL;
  if (!names_default (ref))
    {
      cleanup_free char *scoped = rt_strdup_printf ("%s/%s", ctx->tenant, ref);
      id = scoped ? rt_image_index_resolve (index, scoped) : NULL;
      if (id)
        return id;
    }
  /* An id or 4+ digits of one: among the tenant's, so that another's
     image that starts alike neither hides one nor is hinted at.  */
  if (rt_image_index_prefix (index, ref, &id, rt_image_visible_name, ctx) == 1)
    return id;
  /* The default image: only one the tenant sees.  */
  id = rt_image_index_resolve (index, ref);
  if (id == NULL || !rt_image_name_visible (ctx, rt_image_index_find (index, id, &img, &version)))
    return NULL;
  return id;
}
