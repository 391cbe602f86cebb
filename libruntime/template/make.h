/* make.h - making a template (template.h): boot the image with its RAM in
   a shared memfd, warm it (the agent runs python3 once, so its files are
   in the guest's page cache), freeze its file system, save its device
   state, write RAM, state and disks to a temporary dir, rename it to its
   key.  A VM that fails or is killed at any step leaves nothing: the
   temporary dir, its QEMU, namespace, uid and cgroup all go.  */
#ifndef RT_TEMPLATE_MAKE_H
#define RT_TEMPLATE_MAKE_H

#include "template/template.h"

/* Makes @in's template now (image warm, image build --warm); 0 also when
   it exists already.  *made_ms (NULL allowed) is how long it took.  */
int rt_template_make (rt_context *ctx, const struct rt_template_inputs *in, int64_t *made_ms, rt_error **err);

/* The same in a detached process (after the first cold start of a
   shape): returns at once; does nothing when templates are off, the
   template exists, or another process is making it.  */
void rt_template_make_background (rt_context *ctx, const struct rt_template_inputs *in);

#endif
