/* list.h - looking sandboxes up by id or name.  */
#ifndef RT_SANDBOX_LIST_H
#define RT_SANDBOX_LIST_H

#include "core/context.h"

/* The state (live) or record (ended) of the sandbox @ref names, as
   rt_store_resolve, with a fast path for the id of a live one.  */
int rt_sandbox_resolve (rt_context *ctx, const char *ref, json_object **out, rt_error **err);

#endif
