/* create.h - creating a sandbox: what image builds and the network verb
   use of it.  */
#ifndef RT_SANDBOX_CREATE_H
#define RT_SANDBOX_CREATE_H

#include "core/context.h"
#include "image/disk.h"
#include "net/egress.h"

/* rt_sandbox_create on the boot disk @on (image builds) instead of the
   disk of cfg->image; @on's env is not used.  */
int rt_sandbox_create_on (rt_context *ctx, const rt_sandbox_config *cfg, const struct rt_image_disk *on,
                          rt_sandbox **out, rt_error **err);

/* The rules a config asks for, each entry checked and normalized.  */
int rt_sandbox_rules_of (bool internet, const char *const *allow, const char *const *deny, struct rt_egress_rules *r,
                         rt_error **err);

/* A new sandbox id, "sb-" and 12 hex digits.  */
int rt_sandbox_make_id (char out[32], rt_error **err);

/* rt_sandbox_create of a child of the saved VM in @snapshot_dir (a
   fork's, which no ref names: sandbox/fork.c).  */
int rt_sandbox_create_from (rt_context *ctx, const rt_sandbox_config *cfg, const char *snapshot_dir, rt_sandbox **out,
                            rt_error **err);

/* The local driver (public/driver.h): these do what include/runtime.h
   says of their rt_ names, on this machine.  */
int rt_local_sandbox_create (rt_context *ctx, const rt_sandbox_config *cfg, rt_sandbox **out, rt_error **err);

#endif
