/* secrets.h - egress secrets and usage in client mode
   (/v1/egress-secrets, /v1/usage; docs/API.md).  */
#ifndef RT_REMOTE_SECRETS_H
#define RT_REMOTE_SECRETS_H

#include "core/context.h"

int rt_remote_secret_set (rt_context *ctx, const char *name, const char *value, size_t len,
                          const rt_secret_opts *opts, char **placeholder, rt_error **err);
int rt_remote_secret_list_json (rt_context *ctx, char **json, rt_error **err);
int rt_remote_secret_remove (rt_context *ctx, const char *name, rt_error **err);
int rt_remote_usage_json (rt_context *ctx, char **json, rt_error **err);

#endif
