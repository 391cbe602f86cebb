/* context.c - directories, options and progress: everything the library
   would otherwise keep in globals.  */
#include <stdarg.h>
#include <string.h>

#include "config.h"
#include "core/context.h"

const char *
rt_version (void)
{
  return RT_VERSION;
}

/* $env, else the root default (for root, or @as_root), else $xdg/runtime
   (or ~/fallback/runtime).  */
static char *
pick_dir_as (const char *env, const char *root_default, const char *xdg, const char *home_fallback, bool as_root)
{
  const char *v = getenv (env);
  const char *home;

  if (v && *v)
    return strdup (v);
  if (as_root || geteuid () == 0)
    return strdup (root_default);
  v = getenv (xdg);
  if (v && *v)
    return rt_strdup_printf ("%s/runtime", v);
  home = getenv ("HOME");
  return rt_strdup_printf ("%s/%s/runtime", home ? home : "/tmp", home_fallback);
}

static char *
pick_dir (const char *env, const char *root_default, const char *xdg, const char *home_fallback)
{
  return pick_dir_as (env, root_default, xdg, home_fallback, false);
}

int
rt_context_host_dirs (rt_context *ctx, rt_error **err)
{
  char *dirs[3] = { pick_dir_as ("RUNTIME_STATE_DIR", "/run/runtime", NULL, NULL, true),
                    pick_dir_as ("RUNTIME_DATA_DIR", "/var/lib/runtime", NULL, NULL, true),
                    pick_dir_as ("RUNTIME_CACHE_DIR", "/var/cache/runtime", NULL, NULL, true) };

  if (dirs[0] == NULL || dirs[1] == NULL || dirs[2] == NULL)
    {
      for (int i = 0; i < 3; i++)
        free (dirs[i]);
      return rt_error_oom (err);
    }
  free (ctx->state_dir);
  free (ctx->data_dir);
  free (ctx->cache_dir);
  ctx->state_dir = dirs[0];
  ctx->data_dir = dirs[1];
  ctx->cache_dir = dirs[2];
  return 0;
}

static char *
env_dup (const char *name)
{
  const char *v = getenv (name);
  return v && *v ? strdup (v) : NULL;
}

int
rt_context_from_env (rt_context **out, rt_error **err)
{
  rt_context *ctx = calloc (1, sizeof (*ctx));
  const char *v;

  if (ctx == NULL)
    return rt_error_oom (err);
  ctx->state_dir = pick_dir ("RUNTIME_STATE_DIR", "/run/runtime", "XDG_RUNTIME_DIR", ".cache/run");
  ctx->data_dir = pick_dir ("RUNTIME_DATA_DIR", "/var/lib/runtime", "XDG_DATA_HOME", ".local/share");
  ctx->cache_dir = pick_dir ("RUNTIME_CACHE_DIR", "/var/cache/runtime", "XDG_CACHE_HOME", ".cache");
  v = getenv ("RUNTIME_LIBEXEC_DIR");
  ctx->libexec_dir = strdup (v && *v ? v : RT_LIBEXECDIR);
  v = getenv ("RUNTIME_AGENT");
  ctx->agent = v && *v ? strdup (v) : rt_strdup_printf ("%s/runtime-agent", ctx->libexec_dir);
  ctx->kernel_deb = env_dup ("RUNTIME_KERNEL");
  ctx->accel_env = env_dup ("RUNTIME_ACCEL");
  ctx->uid_range = env_dup ("RUNTIME_UID_RANGE");
  /* Read here: the monitor clears its environment before it starts QEMU.  */
  v = getenv ("RUNTIME_UNSAFE_NO_JAIL");
  ctx->unsafe_no_jail = v && strcmp (v, "1") == 0;
  v = getenv ("RUNTIME_TEMPLATES");
  ctx->templates_off = v && strcmp (v, "off") == 0;
  v = getenv ("RUNTIME_TEMPLATE_KEEP_S");
  ctx->template_keep_s = v && *v ? (unsigned) strtoul (v, NULL, 10) : 300;
  ctx->api_url = env_dup ("RUNTIME_API_URL");
  ctx->api_key = env_dup ("RUNTIME_API_KEY");
  /* "http://host:8430/" and "http://host:8430" name the same server.  */
  for (size_t n = ctx->api_url ? strlen (ctx->api_url) : 0; n > 0 && ctx->api_url[n - 1] == '/'; n--)
    ctx->api_url[n - 1] = '\0';
  v = getenv ("RUNTIME_QEMU");
  ctx->qemu = rt_find_program (v && *v ? v : "qemu-system-x86_64");
  if (ctx->state_dir == NULL || ctx->data_dir == NULL || ctx->cache_dir == NULL || ctx->libexec_dir == NULL
      || ctx->agent == NULL)
    {
      rt_context_free (ctx);
      return rt_error_oom (err);
    }
  *out = ctx;
  return 0;
}

static bool
dup_str (char **to, const char *from)
{
  *to = from ? strdup (from) : NULL;
  return from == NULL || *to != NULL;
}

int
rt_context_dup (const rt_context *from, rt_context **out, rt_error **err)
{
  rt_context *ctx = calloc (1, sizeof (*ctx));

  if (ctx == NULL)
    return rt_error_oom (err);
  *ctx = *from;
  /* Every string is the copy's own.  */
  if (!dup_str (&ctx->state_dir, from->state_dir) | !dup_str (&ctx->data_dir, from->data_dir)
      | !dup_str (&ctx->cache_dir, from->cache_dir) | !dup_str (&ctx->libexec_dir, from->libexec_dir)
      | !dup_str (&ctx->agent, from->agent) | !dup_str (&ctx->qemu, from->qemu)
      | !dup_str (&ctx->kernel_deb, from->kernel_deb) | !dup_str (&ctx->uid_range, from->uid_range)
      | !dup_str (&ctx->accel_env, from->accel_env) | !dup_str (&ctx->tenant, from->tenant)
      | !dup_str (&ctx->api_url, from->api_url) | !dup_str (&ctx->api_key, from->api_key))
    {
      rt_context_free (ctx);
      return rt_error_oom (err);
    }
  *out = ctx;
  return 0;
}

void
rt_context_free (rt_context *ctx)
{
  if (ctx == NULL)
    return;
  free (ctx->state_dir);
  free (ctx->data_dir);
  free (ctx->cache_dir);
  free (ctx->libexec_dir);
  free (ctx->agent);
  free (ctx->qemu);
  free (ctx->kernel_deb);
  free (ctx->uid_range);
  free (ctx->accel_env);
  free (ctx->tenant);
  free (ctx->api_url);
  if (ctx->api_key)
    explicit_bzero (ctx->api_key, strlen (ctx->api_key));
  free (ctx->api_key);
  free (ctx);
}

void
rt_context_set_progress (rt_context *ctx, rt_progress_fn fn, void *data)
{
  ctx->progress = fn;
  ctx->progress_data = data;
}

void
rt_progress (rt_context *ctx, const char *fmt, ...)
{
  va_list ap;
  char *line = NULL;

  if (ctx->progress == NULL)
    return;
  va_start (ap, fmt);
  if (vasprintf (&line, fmt, ap) < 0)
    line = NULL;
  va_end (ap);
  if (line)
    ctx->progress (ctx->progress_data, line);
  free (line);
}

bool
rt_tenant_name_ok (const char *name)
{
  size_t n;

  if (name == NULL || !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= '0' && name[0] <= '9')))
    return false;
  n = strspn (name, "abcdefghijklmnopqrstuvwxyz0123456789_-");
  return name[n] == '\0' && n <= 32;
}

int
rt_context_set_tenant (rt_context *ctx, const char *tenant, rt_error **err)
{
  char *copy = NULL;

  if (tenant && !rt_tenant_name_ok (tenant))
    return rt_error_set (err, EINVAL, "invalid_request",
                         "a tenant name is 1 to 32 of a-z, 0-9, '_' and '-', starting with a letter or digit");
  if (tenant && (copy = strdup (tenant)) == NULL)
    return rt_error_oom (err);
  free (ctx->tenant);
  ctx->tenant = copy;
  return 0;
}

bool
rt_tenant_sees (const rt_context *ctx, const char *owner)
{
  return ctx->tenant == NULL || (owner && strcmp (owner, ctx->tenant) == 0);
}

bool
rt_tenant_same (const rt_context *ctx, const char *owner)
{
  if (ctx->tenant == NULL || owner == NULL)
    return ctx->tenant == NULL && owner == NULL;
  return strcmp (ctx->tenant, owner) == 0;
}

int
rt_tenant_refuse (const rt_context *ctx, const char *what, rt_error **err)
{
  if (ctx->tenant == NULL)
    return 0;
  rt_error_set (err, EPERM, "permission_denied", "%s is the host's, not a token's", what);
  return rt_error_hint (err, "run it on the host, without RUNTIME_API_URL");
}

void
rt_tenant_adopt (rt_context *ctx, json_object *state)
{
  const char *t = rt_json_str (state, "tenant");

  free (ctx->tenant);
  ctx->tenant = t && rt_tenant_name_ok (t) ? strdup (t) : NULL;
}
