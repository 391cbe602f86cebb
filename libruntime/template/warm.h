/* warm.h - making the template of an image and shape now.  */
#ifndef RT_TEMPLATE_WARM_H
#define RT_TEMPLATE_WARM_H

#include "core/context.h"

/* The local driver (public/driver.h).  */
int rt_local_image_warm (rt_context *ctx, const char *ref, unsigned vcpu, unsigned memory_mib, char **json,
                         rt_error **err);

#endif
