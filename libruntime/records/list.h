/* list.h - every sandbox a context sees, and one sandbox by reference.  */
#ifndef RT_RECORDS_LIST_H
#define RT_RECORDS_LIST_H

#include "core/context.h"

/* Every sandbox (live ones, and ended ones with @all) the context sees
   (a tenant's own: core/context.h), oldest first; reaps first.  */
int rt_store_list (rt_context *ctx, bool all, json_object **out, rt_error **err);
/* rt_store_list of every tenant's: for what all sandboxes share (images
   in use, the trial).  */
int rt_store_list_unscoped (rt_context *ctx, bool all, json_object **out, rt_error **err);

/* The sandbox named by id or by a name exactly one live sandbox has (then
   one ended sandbox).  not_found otherwise.  */
int rt_store_resolve (rt_context *ctx, const char *ref, json_object **out, rt_error **err);

#endif
