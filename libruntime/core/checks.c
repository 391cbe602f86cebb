/* checks.c - argument checks, and an order, that the public functions
   and both drivers share.  */
#include <string.h>

#include "common/proto.h"
#include "core/checks.h"

/* The public limit is the wire's.  */
_Static_assert (RT_MAX_PTY_SIDE == RT_PTY_MAX_SIDE, "RT_MAX_PTY_SIDE (runtime.h) is RT_PTY_MAX_SIDE (proto.h)");

int
rt_pty_size_check (unsigned cols, unsigned rows, rt_error **err)
{
  if (rt_pty_size_ok (cols, rows))
    return 0;
  return rt_error_set (err, EINVAL, "usage", "a terminal's columns and rows must be 1 to %u", RT_PTY_MAX_SIDE);
}

int
rt_check_guest_path (const char *path, rt_error **err)
{
  if (path == NULL || path[0] != '/')
    {
      rt_error_set (err, EINVAL, "usage", "sandbox paths must be absolute, not '%s'", path ? path : "");
      return rt_error_hint (err, "for example /workspace/%s", path ? path : "file");
    }
  return 0;
}

int
rt_entry_by_path (const void *a, const void *b)
{
  json_object *x = *(json_object *const *) a, *y = *(json_object *const *) b;
  return strcmp (rt_json_str (x, "path"), rt_json_str (y, "path"));
}

int
rt_command_check (const char *const argv[], const rt_exec_opts *opts, enum rt_command_kind kind, rt_error **err)
{
  if (argv == NULL || argv[0] == NULL)
    return rt_error_set (err, EINVAL, "usage", "no command given");
  if (opts == NULL)
    return 0;
  /* Nothing would write to a kept stdin or end it, nor resize a pty:
     those are a background process's or a session's.  */
  if (kind == RT_COMMAND_EXEC && (opts->keep_stdin || opts->pty_cols || opts->pty_rows))
    return rt_error_set (err, EINVAL, "usage", "%s",
                         opts->keep_stdin ? "keep_stdin is for rt_sandbox_spawn, not exec"
                                          : "a pty is for rt_sandbox_spawn and rt_sandbox_attach, not exec");
  if (opts->stdin_len > RT_MAX_STDIN)
    return rt_error_set (err, E2BIG, "usage", "standard input is over 1 MiB");
  if ((opts->pty_cols || opts->pty_rows) && rt_pty_size_check (opts->pty_cols, opts->pty_rows, err) < 0)
    return -EINVAL;
  for (const char *const *e = opts->env; e && *e; e++)
    {
      const char *eq = strchr (*e, '=');
      if (eq == NULL || !rt_env_name_valid (*e, eq - *e))
        {
          cleanup_free char *shown = rt_text_escape (*e, false);
          rt_error_set (err, EINVAL, "invalid_env", "bad environment entry '%s'", shown ? shown : "?");
          return rt_error_hint (err, "names are [A-Za-z_][A-Za-z0-9_]*");
        }
    }
  if (opts->cwd && opts->cwd[0] != '/')
    return rt_error_set (err, EINVAL, "invalid_request", "the working directory must be an absolute path");
  if (opts->user && strcmp (opts->user, "runtime") != 0 && strcmp (opts->user, "root") != 0)
    return rt_error_set (err, EINVAL, "invalid_request", "user must be runtime or root");
  return 0;
}

/* The name of @cfg's wrong field, into *@field.  */
static void
mark (const char **field, const char *name)
{
  if (field)
    *field = name;
}

static int
check_sizes (const rt_sandbox_config *cfg, const char **field, rt_error **err)
{
  if (cfg->vcpu > RT_MAX_VCPU)
    {
      mark (field, "vcpu");
      return rt_error_set (err, EINVAL, "invalid_request", "vcpu must be 1 to %d, not %u", RT_MAX_VCPU, cfg->vcpu);
    }
  if (cfg->memory_mib && (cfg->memory_mib < RT_MIN_MEMORY_MIB || cfg->memory_mib > RT_MAX_MEMORY_MIB))
    {
      mark (field, "memory_mib");
      return rt_error_set (err, EINVAL, "invalid_request", "memory_mib must be %d to %d MiB, not %u", RT_MIN_MEMORY_MIB,
                           RT_MAX_MEMORY_MIB, cfg->memory_mib);
    }
  /* The image's file system is 4 GiB; a sandbox may grow it, not shrink.  */
  if (cfg->disk_mib && (cfg->disk_mib < RT_MIN_DISK_MIB || cfg->disk_mib > RT_MAX_DISK_MIB))
    {
      mark (field, "disk_mib");
      return rt_error_set (err, EINVAL, "invalid_request", "disk_mib must be %d to %d MiB, not %u", RT_MIN_DISK_MIB,
                           RT_MAX_DISK_MIB, cfg->disk_mib);
    }
  /* The same bound for paid and trial leases: not invalid_trial, since
     no funding allows more.  */
  if (cfg->timeout_s && (cfg->timeout_s < RT_MIN_LEASE_S || cfg->timeout_s > RT_MAX_LEASE_S))
    {
      rt_error_set (err, EINVAL, "invalid_request", "timeout_s must be %d to %d s, not %u", RT_MIN_LEASE_S,
                    RT_MAX_LEASE_S, cfg->timeout_s);
      rt_error_hint (err, "a lease is at most 1 h, trial or paid; extending the sandbox renews it");
      mark (field, "timeout_s");
      return -EINVAL;
    }
  if (cfg->idle_pause_s && (cfg->idle_pause_s < 10 || cfg->idle_pause_s > 86400))
    {
      mark (field, "idle_pause_s");
      return rt_error_set (err, EINVAL, "invalid_request", "idle_pause_s must be 0 or 10 to 86400 s, not %u",
                           cfg->idle_pause_s);
    }
  return 0;
}

/* Names are shown in tables and completed in shells: one word.  */
static int
check_name (const rt_sandbox_config *cfg, const char **field, rt_error **err)
{
  size_t len = cfg->name ? strlen (cfg->name) : 0;

  if (cfg->name == NULL)
    {
      if (cfg->get_or_create)
        {
      mark (field, "get_or_create");
      return rt_error_set (err, EINVAL, "usage", "get_or_create needs a name");
    }
      return 0;
    }
  for (size_t i = 0; i < len; i++)
    if ((unsigned char) cfg->name[i] <= ' ' || cfg->name[i] == 0x7f || cfg->name[i] == '/')
      {
        len = 0;
        break;
      }
  if (len == 0 || len > RT_MAX_NAME)
    {
      cleanup_free char *shown = rt_text_escape (cfg->name, false);
      rt_error_set (err, EINVAL, "invalid_request",
                    "name must be 1 to %d characters without a space, a control character or '/', not '%s'",
                    RT_MAX_NAME, shown ? shown : "?");
      mark (field, "name");
      return -EINVAL;
    }
  return 0;
}

static int
check_labels (const rt_sandbox_config *cfg, const char **field, rt_error **err)
{
  size_t n = 0;

  for (const char *const *l = cfg->labels; l && *l; l++, n++)
    {
      const char *eq = strchr (*l, '=');
      if (eq == NULL || eq == *l)
        {
          cleanup_free char *shown = rt_text_escape (*l, false);
          rt_error_set (err, EINVAL, "invalid_request", "labels must be key=value, not '%s'", shown ? shown : "?");
          rt_error_hint (err, "for example team=ml");
          mark (field, "labels");
      return -EINVAL;
        }
      for (const char *const *o = cfg->labels; o < l; o++)
        if (strncmp (*o, *l, eq - *l + 1) == 0)
          {
            cleanup_free char *key = strndup (*l, eq - *l);
            cleanup_free char *shown = key ? rt_text_escape (key, false) : NULL;
            rt_error_set (err, EINVAL, "invalid_request", "labels must have distinct keys: '%s' is given twice",
                          shown ? shown : "?");
            mark (field, "labels");
      return -EINVAL;
          }
    }
  if (n > RT_MAX_LABELS)
    {
      mark (field, "labels");
      return rt_error_set (err, EINVAL, "invalid_request", "labels must be at most %d, not %zu", RT_MAX_LABELS, n);
    }
  return 0;
}

static int
check_env (const rt_sandbox_config *cfg, const char **field, rt_error **err)
{
  size_t n = 0, bytes = 0;

  for (const char *const *e = cfg->env; e && *e; e++, n++)
    {
      const char *eq = strchr (*e, '=');
      if (eq == NULL || !rt_env_name_valid (*e, eq - *e))
        {
          cleanup_free char *name = strndup (*e, eq ? (size_t) (eq - *e) : strlen (*e));
          cleanup_free char *shown = name ? rt_text_escape (name, false) : NULL;
          rt_error_set (err, EINVAL, "invalid_env", "env must be NAME=VALUE with a portable name, not '%s'",
                        shown ? shown : "?");
          rt_error_hint (err, "names are [A-Za-z_][A-Za-z0-9_]* and values follow '='");
          mark (field, "env");
      return -EINVAL;
        }
      bytes += strlen (*e);
    }
  if (n > RT_MAX_ENV || bytes > RT_MAX_ENV_BYTES)
    {
      mark (field, "env");
      return rt_error_set (err, E2BIG, "env_too_large", "env must be at most %d variables and %d KiB, not %zu taking %zu bytes",
                           RT_MAX_ENV, RT_MAX_ENV_BYTES / 1024, n, bytes);
    }
  return 0;
}

int
rt_sandbox_config_check (const rt_sandbox_config *cfg, const char **field, rt_error **err)
{
  int ret;

  if (field)
    *field = NULL;
  if (cfg == NULL)
    return 0;
  if ((ret = check_sizes (cfg, field, err)) < 0 || (ret = check_name (cfg, field, err)) < 0
      || (ret = check_labels (cfg, field, err)) < 0 || (ret = check_env (cfg, field, err)) < 0)
    return ret;
  if (cfg->on_timeout && strcmp (cfg->on_timeout, "pause") != 0 && strcmp (cfg->on_timeout, "stop") != 0)
    {
      cleanup_free char *shown = rt_text_escape (cfg->on_timeout, false);
      rt_error_set (err, EINVAL, "invalid_request", "on_timeout must be pause or stop, not '%s'", shown ? shown : "?");
      mark (field, "on_timeout");
      return -EINVAL;
    }
  if (cfg->funding && strcmp (cfg->funding, "trial") != 0 && strcmp (cfg->funding, "paid") != 0)
    {
      cleanup_free char *shown = rt_text_escape (cfg->funding, false);
      rt_error_set (err, EINVAL, "invalid_request", "funding must be trial or paid, not '%s'", shown ? shown : "?");
      mark (field, "funding");
      return -EINVAL;
    }
  /* It ends with its creator: a pause would outlive it.  */
  if (cfg->ephemeral && (cfg->idle_pause_s || cfg->auto_wake))
    {
      rt_error_set (err, EINVAL, "invalid_request",
                    "ephemeral: a sandbox that ends with its creator does not pause (idle_pause_s and auto_wake must be off)");
      mark (field, "ephemeral");
      return -EINVAL;
    }
  return 0;
}
