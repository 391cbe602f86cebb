/* account.c - the public secret, usage and node functions, each calling
   its context's driver (public/driver.h).  A secret is checked where it
   is stored (net/secrets.h: this machine's store, or the server's).
   (no header of its own: its functions are include/runtime.h's.)  */
#include "public/driver.h"

int
rt_secret_set_opts (rt_context *ctx, const char *name, const char *value, size_t len, const rt_secret_opts *opts,
                    char **placeholder, rt_error **err)
{
  return rt_driver_of (ctx)->secret_set (ctx, name, value, len, opts, placeholder, err);
}

int
rt_secret_set (rt_context *ctx, const char *name, const char *value, size_t len, const char *const *hosts,
               const char *header, const char *format, char **placeholder, rt_error **err)
{
  rt_secret_opts opts = { .hosts = hosts, .header = header, .format = format };

  return rt_secret_set_opts (ctx, name, value, len, &opts, placeholder, err);
}

int
rt_secret_list_json (rt_context *ctx, char **json, rt_error **err)
{
  return rt_driver_of (ctx)->secret_list_json (ctx, json, err);
}

int
rt_secret_remove (rt_context *ctx, const char *name, rt_error **err)
{
  return rt_driver_of (ctx)->secret_remove (ctx, name, err);
}

int
rt_usage_json (rt_context *ctx, char **json, rt_error **err)
{
  return rt_driver_of (ctx)->usage_json (ctx, json, err);
}

int
rt_node_list_json (rt_context *ctx, char **json, rt_error **err)
{
  return rt_driver_of (ctx)->node_list_json (ctx, json, err);
}
