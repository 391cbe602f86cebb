/* make.c - making a template (make.h).  */
#include "template/make.h"

int
rt_template_make (rt_context *ctx, const struct rt_template_inputs *in, int64_t *made_ms, rt_error **err)
{
  (void) ctx;
  (void) in;
  (void) made_ms;
  return rt_error_set (err, ENOSYS, "internal", "templates are not built yet");
}

void
rt_template_make_background (rt_context *ctx, const struct rt_template_inputs *in)
{
  (void) ctx;
  (void) in;
}
