/* secrets.h - what sandbox creation needs of the secrets store.  */
#ifndef RT_SECRETS_H
#define RT_SECRETS_H

#include <json-c/json.h>

#include "core/context.h"

/* Whether @name, @value (@len bytes) and @opts make a secret, as
   rt_secret_set_opts takes one: its hosts normalized (*hosts, a JSON
   array) and its rules (*rules); both the caller's to put.  Also what a
   `runtime serve --nats` replica checks before keeping one.  */
int rt_secret_check (const char *name, const char *value, size_t len, const rt_secret_opts *opts, json_object **hosts,
                     json_object **rules, rt_error **err);

/* "NAME=<placeholder>" for every secret, NULL-terminated (free each).  */
int rt_secret_env (rt_context *ctx, char ***env, rt_error **err);

/* What the egress proxy swaps on requests to one host (and scrubs from
   its answers).  */
struct rt_secret_binding
{
  char *placeholder;
  char *value;
  char *header;       /* --header, or NULL */
  char *header_value; /* --format with the value in it, or NULL */
  bool in_url;        /* --in-url: swapped in the request line too */
  char **rules;       /* --rule "METHOD:/path-glob", NULL-terminated; NULL: every request */
};

/* The secrets bound to @host among those in @given ("NAME=placeholder",
   the sandbox's rt_secret_env at create), read from the store now so that
   a new value applies at once.  */
int rt_secret_bindings (rt_context *ctx, char *const *given, const char *host, struct rt_secret_binding **out,
                        size_t *n, rt_error **err);
/* Wipes the values, then frees.  */
void rt_secret_bindings_free (struct rt_secret_binding *b, size_t n);

/* The local driver (public/driver.h): these do what include/runtime.h
   says of their rt_ names, on this machine.  */
int rt_local_secret_set_opts (rt_context *ctx, const char *name, const char *value, size_t len,
                              const rt_secret_opts *opts, char **placeholder, rt_error **err);
int rt_local_secret_list_json (rt_context *ctx, char **json, rt_error **err);
int rt_local_secret_remove (rt_context *ctx, const char *name, rt_error **err);

#endif
