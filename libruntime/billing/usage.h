/* usage.h - what was used and charged, folded from the ledger.  */
#ifndef RT_BILLING_USAGE_H
#define RT_BILLING_USAGE_H

#include "core/context.h"

/* The local driver (public/driver.h).  */
int rt_local_usage_json (rt_context *ctx, char **json, rt_error **err);

#endif
