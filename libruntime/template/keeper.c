/* keeper.c - a template's keeper (template.h: rt_template_ram_fd).  */
#include "template/template.h"

int
rt_template_ram_fd (rt_context *ctx, const struct rt_template *t, int *fd, rt_error **err)
{
  (void) ctx;
  (void) t;
  *fd = -1;
  return rt_error_set (err, ENOSYS, "internal", "template keepers are not built yet");
}
