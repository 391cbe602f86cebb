/* keeper.c - a template's keeper: rt_template_ram_fd is declared in
   template/template.h, so this file has no header of its own.  */
#include "template/template.h"

int
rt_template_ram_fd (rt_context *ctx, const struct rt_template *t, int *fd, rt_error **err)
{
  (void) ctx;
  (void) t;
  *fd = -1;
  return rt_error_set (err, ENOSYS, "internal", "template keepers are not built yet");
}
