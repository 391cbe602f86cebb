/* base.h - the default image "runtime", made from the base recipe on
   first use (image/base.c).  */
#ifndef RT_IMAGE_BASE_H
#define RT_IMAGE_BASE_H

#include "core/context.h"

/* The id @ref names (see rt_image_index_resolve), as a new string in
   *id_out.  When @ref names the default image and it is missing, or its
   latest was made by another recipe than the installed one, it is made
   first (a minute of debootstrap, once per cache).  image_not_found when
   @ref names nothing.  */
int rt_image_resolve (rt_context *ctx, const char *ref, char **id_out, rt_error **err);

/* The hosts of the apt sources of the base this host built (from its own
   apt configuration or RUNTIME_DEBIAN_MIRROR, images/base/build-rootfs.sh),
   recorded beside the base tar: what an apt build step may reach, whatever
   the image being built says.  A NULL-terminated vector in *hosts.  */
int rt_image_base_apt_hosts (rt_context *ctx, char ***hosts, rt_error **err);

#endif
