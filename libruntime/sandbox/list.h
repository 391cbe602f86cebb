/* list.h - looking sandboxes up by id or name.  */
#ifndef RT_SANDBOX_LIST_H
#define RT_SANDBOX_LIST_H

#include "core/context.h"
#include "records/view.h"

/* The state (live) or record (ended) of the sandbox @ref names, as
   rt_store_resolve, with a fast path for the id of a live one.  */
int rt_sandbox_resolve (rt_context *ctx, const char *ref, json_object **out, rt_error **err);

/* The local driver (public/driver.h): these do what include/runtime.h
   says of their rt_ names, on this machine.  */
int rt_local_sandbox_egress_log (rt_context *ctx, const char *ref, char **path, rt_error **err);
/* rt_sandbox_get_json and rt_sandbox_list_json's objects, in @who's view
   (records/view.h).  */
int rt_local_sandbox_info (rt_context *ctx, const char *ref, enum rt_view who, json_object **out, rt_error **err);
int rt_local_sandbox_list (rt_context *ctx, bool all, enum rt_view who, json_object **out, rt_error **err);
int rt_local_sandbox_remove (rt_context *ctx, const char *ref, rt_error **err);

#endif
