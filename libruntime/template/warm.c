/* warm.c - rt_image_warm: the template of an image and shape, made now.
   Declared in include/runtime.h, so this file has no header of its own.  */
#include "template/make.h"

int
rt_image_warm (rt_context *ctx, const char *ref, unsigned vcpu, unsigned memory_mib, char **json, rt_error **err)
{
  (void) ctx;
  (void) ref;
  (void) vcpu;
  (void) memory_mib;
  if (json)
    *json = NULL;
  return rt_error_set (err, ENOSYS, "internal", "image warm is not built yet");
}
