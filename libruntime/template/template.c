/* template.c - where templates live, their keys and lookup (template.h).  */
#include <string.h>

#include "template/template.h"

bool
rt_templates_enabled (rt_context *ctx)
{
  return !ctx->templates_off;
}

int
rt_template_find (rt_context *ctx, const struct rt_template_inputs *in, struct rt_template *out, rt_error **err)
{
  (void) ctx;
  (void) in;
  (void) err;
  memset (out, 0, sizeof (*out));
  return 0;
}

void
rt_template_clear (struct rt_template *t)
{
  free (t->dir);
  free (t->ram);
  free (t->state);
  free (t->disk);
  free (t->clone_disk);
  free (t->cmdline);
  memset (t, 0, sizeof (*t));
}

int
rt_template_remove_image (rt_context *ctx, const char *image_id, rt_error **err)
{
  (void) ctx;
  (void) image_id;
  (void) err;
  return 0;
}
