/* account.h - what a token has besides sandboxes and images, in client
   mode: egress secrets, usage, and a cluster's nodes (/v1/egress-secrets,
   /v1/usage, /v1/nodes; docs/API.md).  */
#ifndef RT_REMOTE_ACCOUNT_H
#define RT_REMOTE_ACCOUNT_H

#include "core/context.h"

int rt_remote_secret_set (rt_context *ctx, const char *name, const char *value, size_t len,
                          const rt_secret_opts *opts, char **placeholder, rt_error **err);
int rt_remote_secret_list_json (rt_context *ctx, char **json, rt_error **err);
int rt_remote_secret_remove (rt_context *ctx, const char *name, rt_error **err);
int rt_remote_usage_json (rt_context *ctx, char **json, rt_error **err);
int rt_remote_node_list_json (rt_context *ctx, char **json, rt_error **err);

#endif
