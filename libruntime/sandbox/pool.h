/* pool.h - warm spares (monitor/spare.h): N paused clones per image and
 * shape, kept ready for creates of exactly that shape.
 *
 *   <data>/pools.json        [{"image", "imageId", "vcpu", "memoryMiB",
 *                              "spares"}]: what `runtime pool set` asked;
 *                              it survives a reboot, the spares do not
 *   <state>/sb-*             a spare is a sandbox dir whose state is
 *                              "spare" (never listed)
 *   <state>/.pool.lock       one filler at a time
 *
 * Spares are capped in the host memory they hold: RUNTIME_POOL_MAX_MIB,
 * default 10 % of the host's RAM, each counted as 64 MiB plus 1/64 of its
 * guest's memory (a paused spare's QEMU holds ≈40 MiB: its guest's pages
 * are the template's until it runs).  A create that finds none starts as it would have
 * (from the template or cold) and tops the pool up in the background.
 */
#ifndef RT_SANDBOX_POOL_H
#define RT_SANDBOX_POOL_H

#include "core/context.h"
#include "template/template.h"

/* Reserves a live spare of @in's template (its key @key) for this
   process (the spare stops if we die before we claim it): 1 with its id
   in @id, 0 when there is none.  */
int rt_pool_reserve (rt_context *ctx, const struct rt_template_inputs *in, const char *key, char id[32]);

/* Claims the reserved spare @id as the new sandbox (@claim: {state, env,
   network, expiresMs, timeoutSeconds, stopOnTimeout, owner, startMs});
   then rt_pool_confirm once the caller holds the handle.  */
int rt_pool_claim (rt_context *ctx, const char *id, json_object *claim, rt_error **err);
int rt_pool_confirm (rt_context *ctx, const char *id, rt_error **err);
/* Stops the spare @id, reserved but not to be claimed (a create that
   failed): a reserved spare is never handed out again.  */
void rt_pool_release (rt_context *ctx, const char *id);
/* Drops the pools of image @image_id and stops its spares (image rm).  */
void rt_pool_forget_image (rt_context *ctx, const char *image_id);

/* When @in's image and shape has a pool: tops it up in a detached
   process (templates first, then spares), at once.  */
void rt_pool_fill_background (rt_context *ctx, const struct rt_template_inputs *in);

/* The local driver (public/driver.h): these do what include/runtime.h
   says of their rt_ names, on this machine.  */
int rt_local_pool_set (rt_context *ctx, const char *ref, unsigned spares, unsigned vcpu, unsigned memory_mib,
                       char **json, rt_error **err);
int rt_local_pool_list_json (rt_context *ctx, char **json, rt_error **err);
int rt_local_pool_remove (rt_context *ctx, const char *ref, rt_error **err);

#endif
