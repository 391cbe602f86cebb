/* sandbox.c - the public sandbox API: validation, names, and handles on
   sandboxes whose monitors do the work (monitor.c, monitor/client.c).  */
#include <openssl/evp.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "monitor/client.h"
#include "monitor/monitor.h"
#include "billing/price.h"
#include "net/intercept.h"
#include "net/secrets.h"
#include "billing/trial.h"
#include "sandbox/sandbox.h"
#include "sandbox/store.h"
#include "vmm/kernel.h"

#define STOP_WAIT_MS 30000


void
rt_sandbox_close (rt_sandbox *sb)
{
  if (sb == NULL)
    return;
  free (sb->dir);
  free (sb->sock);
  free (sb);
}

static inline void
cleanup_sandboxp (rt_sandbox **sb)
{
  rt_sandbox_close (*sb);
}
#define cleanup_sandbox __attribute__ ((cleanup (cleanup_sandboxp)))

static rt_sandbox *
handle_new (rt_context *ctx, const char *id)
{
  rt_sandbox *sb = calloc (1, sizeof (*sb));
  if (sb == NULL)
    return NULL;
  sb->ctx = ctx;
  snprintf (sb->id, sizeof (sb->id), "%s", id);
  sb->dir = rt_sandbox_dir (ctx, id);
  sb->sock = rt_strdup_printf ("%s/api.sock", sb->dir);
  if (sb->dir == NULL || sb->sock == NULL)
    {
      rt_sandbox_close (sb);
      return NULL;
    }
  return sb;
}

static int
check_config (const rt_sandbox_config *cfg, rt_error **err)
{
  size_t n = 0, bytes = 0;

  if (cfg->vcpu > RT_MAX_VCPU)
    return rt_error_set (err, EINVAL, "invalid_request", "--vcpu must be 1 to %d, not %u", RT_MAX_VCPU, cfg->vcpu);
  if (cfg->memory_mib && (cfg->memory_mib < RT_MIN_MEMORY_MIB || cfg->memory_mib > RT_MAX_MEMORY_MIB))
    return rt_error_set (err, EINVAL, "invalid_request", "--memory must be %d to %d MiB, not %u", RT_MIN_MEMORY_MIB,
                         RT_MAX_MEMORY_MIB, cfg->memory_mib);
  /* The image's file system is 4 GiB; a sandbox may grow it, not shrink.  */
  if (cfg->disk_mib && (cfg->disk_mib < RT_MIN_DISK_MIB || cfg->disk_mib > RT_MAX_DISK_MIB))
    return rt_error_set (err, EINVAL, "invalid_request", "--disk must be %d to %d MiB, not %u", RT_MIN_DISK_MIB,
                         RT_MAX_DISK_MIB, cfg->disk_mib);
  /* The same bound for paid and trial leases: not invalid_trial, since
     no funding allows more (the CLI refuses it as a usage error first).  */
  if (cfg->timeout_s && (cfg->timeout_s < RT_MIN_LEASE_S || cfg->timeout_s > RT_MAX_LEASE_S))
    {
      rt_error_set (err, EINVAL, "invalid_request", "--timeout must be %d to %d s, not %u", RT_MIN_LEASE_S,
                    RT_MAX_LEASE_S, cfg->timeout_s);
      return rt_error_hint (err, "a lease is at most 1 h, trial or paid; runtime sandbox extend renews it");
    }
  if (cfg->on_timeout && strcmp (cfg->on_timeout, "pause") != 0 && strcmp (cfg->on_timeout, "stop") != 0)
    return rt_error_set (err, EINVAL, "invalid_request", "--on-timeout must be pause or stop, not '%s'",
                         cfg->on_timeout);
  if (cfg->name && (*cfg->name == '\0' || strlen (cfg->name) > RT_MAX_NAME || strchr (cfg->name, '/')))
    return rt_error_set (err, EINVAL, "invalid_request", "a name is 1 to %d characters without '/'", RT_MAX_NAME);
  if (cfg->get_or_create && cfg->name == NULL)
    return rt_error_set (err, EINVAL, "usage", "--get-or-create needs --name");
  for (const char *const *l = cfg->labels; l && *l; l++, n++)
    if (strchr (*l, '=') == NULL || **l == '=')
      return rt_error_set (err, EINVAL, "invalid_request", "a label is key=value, not '%s'", *l);
  if (n > RT_MAX_LABELS)
    return rt_error_set (err, EINVAL, "invalid_request", "at most %d labels", RT_MAX_LABELS);
  n = 0;
  for (const char *const *e = cfg->env; e && *e; e++, n++)
    {
      const char *eq = strchr (*e, '=');
      if (eq == NULL || !rt_env_name_valid (*e, eq - *e))
        {
          rt_error_set (err, EINVAL, "invalid_env", "bad environment variable '%.*s'",
                        eq ? (int) (eq - *e) : (int) strlen (*e), *e);
          return rt_error_hint (err, "names are [A-Za-z_][A-Za-z0-9_]* and values follow '='");
        }
      bytes += strlen (*e);
    }
  if (n > RT_MAX_ENV || bytes > RT_MAX_ENV_BYTES)
    return rt_error_set (err, E2BIG, "env_too_large", "at most %d variables and %d KiB of environment", RT_MAX_ENV,
                         RT_MAX_ENV_BYTES / 1024);
  return 0;
}

/* The rules a config asks for, each entry checked and normalized.  */
static int
rules_of (bool internet, const char *const *allow, const char *const *deny, struct rt_egress_rules *r, rt_error **err)
{
  cleanup_json json_object *o = json_object_new_object ();
  json_object *a = json_object_new_array (), *d = json_object_new_array ();

  json_object_object_add (o, "internet", json_object_new_boolean (internet));
  json_object_object_add (o, "allow", a);
  json_object_object_add (o, "deny", d);
  for (const char *const *p = allow; p && *p; p++)
    json_object_array_add (a, json_object_new_string (*p));
  for (const char *const *p = deny; p && *p; p++)
    json_object_array_add (d, json_object_new_string (*p));
  return rt_egress_rules_from_json (o, r, err);
}

static int
make_id (char out[32], rt_error **err)
{
  unsigned char rnd[6];

  if (getrandom (rnd, sizeof (rnd), 0) != sizeof (rnd))
    return rt_error_set (err, errno, "internal", "getrandom: %s", strerror (errno));
  snprintf (out, 32, "sb-%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
  return 0;
}

static json_object *
initial_state (const char *id, const rt_sandbox_config *cfg, unsigned vcpu, unsigned mem, unsigned disk,
               unsigned timeout, const char *image, const struct rt_egress_rules *rules, int64_t now)
{
  json_object *s = json_object_new_object (), *labels = json_object_new_object (), *names = json_object_new_array ();
  char created[32];

  rt_format_time (now, created);
  for (const char *const *l = cfg->labels; l && *l; l++)
    {
      const char *eq = strchr (*l, '=');
      cleanup_free char *key = strndup (*l, eq - *l);
      if (key)
        json_object_object_add (labels, key, json_object_new_string (eq + 1));
    }
  /* Values stay in the monitor's memory only: never written, never shown.  */
  for (const char *const *e = cfg->env; e && *e; e++)
    json_object_array_add (names, json_object_new_string_len (*e, strchr (*e, '=') - *e));
  json_object_object_add (s, "id", json_object_new_string (id));
  json_object_object_add (s, "kind", json_object_new_string ("sandbox"));
  json_object_object_add (s, "name", cfg->name ? json_object_new_string (cfg->name) : NULL);
  json_object_object_add (s, "labels", labels);
  json_object_object_add (s, "state", json_object_new_string ("starting"));
  json_object_object_add (s, "funding", json_object_new_string ("paid"));
  json_object_object_add (s, "vcpu", json_object_new_int (vcpu));
  json_object_object_add (s, "memoryMiB", json_object_new_int (mem));
  json_object_object_add (s, "diskMiB", json_object_new_int (disk));
  json_object_object_add (s, "image", json_object_new_string (image));
  json_object_object_add (s, "timeoutSeconds", json_object_new_int (timeout));
  json_object_object_add (s, "onLeaseEnd", json_object_new_string (cfg->on_timeout ? cfg->on_timeout : "pause"));
  json_object_object_add (s, "createdAt", json_object_new_string (created));
  json_object_object_add (s, "expiresAt", NULL);
  json_object_object_add (s, "endedAt", NULL);
  json_object_object_add (s, "stopReason", NULL);
  json_object_object_add (s, "network", rt_egress_rules_to_json (rules));
  json_object_object_add (s, "envNames", names);
  json_object_object_add (s, "cpuSeconds", json_object_new_double (0));
  json_object_object_add (s, "chargedMicros", json_object_new_int64 (0));
  return s;
}

/* The live sandbox named @name, if any (under the state lock).  */
static int
find_live_name (rt_context *ctx, const char *name, char id[32], rt_error **err)
{
  cleanup_json json_object *arr = NULL;
  int ret = rt_store_list (ctx, false, &arr, err);

  if (ret < 0)
    return ret;
  for (size_t i = 0; i < json_object_array_length (arr); i++)
    {
      json_object *o = json_object_array_get_idx (arr, i);
      const char *n = rt_json_str (o, "name");
      if (n && strcmp (n, name) == 0)
        {
          snprintf (id, 32, "%s", rt_json_str (o, "id"));
          return 1;
        }
    }
  return 0;
}

static char **
strv_concat (char **a, char *const *b)
{
  size_t n = 0, m = 0;
  char **out;

  while (a && a[n])
    n++;
  while (b && b[m])
    m++;
  out = calloc (n + m + 1, sizeof (char *));
  if (out == NULL)
    return NULL;
  memcpy (out, a, n * sizeof (char *));
  if (m)
    memcpy (out + n, b, m * sizeof (char *));
  return out;
}

int
rt_sandbox_create (rt_context *ctx, const rt_sandbox_config *cfg, rt_sandbox **out, rt_error **err)
{
  return rt_sandbox_create_on (ctx, cfg, NULL, out, err);
}

int
rt_sandbox_create_on (rt_context *ctx, const rt_sandbox_config *cfg, const struct rt_image_disk *on,
                      rt_sandbox **out, rt_error **err)
{
  static const rt_sandbox_config defaults = { 0 };
  struct rt_kernel_files k = { 0 };
  struct rt_image_disk image = { 0 };
  cleanup_sandbox rt_sandbox *sb = NULL;
  cleanup_json json_object *state = NULL;
  cleanup_free char *cmdline = NULL, *owner = NULL;
  cleanup_free char **env = NULL;
  cleanup_strv char **secret_env = NULL;
  cleanup_close int lock = -1;
  cleanup_free char *egress_log = NULL;
  struct rt_egress_rules rules = { 0 };
  const char *accel;
  unsigned vcpu, mem, disk, timeout;
  char id[32];
  int64_t now;
  int ret;

  if (cfg == NULL)
    cfg = &defaults;
  ret = check_config (cfg, err);
  if (ret < 0)
    return ret;
  ret = rules_of (!cfg->no_internet, cfg->allow, cfg->deny, &rules, err);
  if (ret < 0)
    return ret;
  vcpu = cfg->vcpu ? cfg->vcpu : 2;
  mem = cfg->memory_mib ? cfg->memory_mib : 4096;
  disk = cfg->disk_mib ? cfg->disk_mib : 4096;
  timeout = cfg->timeout_s ? cfg->timeout_s : 1800;

  /* The kernel first: it fails faster than building a boot disk.  */
  ret = rt_kernel_ensure (ctx, &k, err);
  if (ret < 0)
    return ret;
  if (on)
    {
      image.id = strdup (on->id);
      image.disk = strdup (on->disk);
      image.workdir = strdup (on->workdir);
      image.env = calloc (1, sizeof (char *));
      ret = image.id && image.disk && image.workdir && image.env ? 0 : rt_error_oom (err);
    }
  else
    ret = rt_image_ensure_disk (ctx, cfg->image, &image, err);
  if (ret < 0)
    goto out;
  ret = rt_context_accel (ctx, &accel, err);
  if (ret < 0)
    goto out;

  /* Names are unique among live sandboxes: check and claim under the lock.  */
  ret = rt_store_lock (ctx, &lock, err);
  if (ret < 0)
    goto out;
  if (cfg->name)
    {
      ret = find_live_name (ctx, cfg->name, id, err);
      if (ret < 0)
        goto out;
      if (ret > 0)
        {
          if (cfg->get_or_create)
            {
              ret = rt_sandbox_open (ctx, id, out, err);
              goto out;
            }
          rt_error_set (err, EEXIST, "name_taken", "a live sandbox is already named '%s' (%s)", cfg->name, id);
          ret = rt_error_hint (err, "pick another --name, or add --get-or-create to use it");
          goto out;
        }
    }
  else
    rt_store_reap (ctx);
  ret = make_id (id, err);
  if (ret < 0)
    goto out;
  sb = handle_new (ctx, id);
  owner = sb ? rt_strdup_printf ("%s/owner", sb->dir) : NULL;
  if (owner == NULL)
    {
      ret = rt_error_oom (err);
      goto out;
    }
  if (mkdir (sb->dir, 0700) < 0)
    {
      ret = rt_error_set (err, errno, "internal", "cannot create '%s': %s", sb->dir, strerror (errno));
      goto out;
    }
  /* Who pays, decided and (for the trial) reserved before anything runs.  */
  {
    const char *funding = "paid";
    if (cfg->funding && strcmp (cfg->funding, "trial") != 0 && strcmp (cfg->funding, "paid") != 0)
      ret = rt_error_set (err, EINVAL, "invalid_request", "funding is trial or paid, not '%s'", cfg->funding);
    else
      ret = rt_trial_reserve (ctx, id, on ? "paid" : cfg->funding, vcpu, mem, &timeout, &funding, err);
    if (ret == 0 && strcmp (funding, "paid") == 0 && cfg->max_cost_micros > 0)
      {
        struct rt_rates rates;
        int64_t worst;
        ret = rt_rates_load (ctx, &rates, err);
        worst = rt_price_micros (&rates, (uint64_t) vcpu * timeout * 1000000, (uint64_t) mem * timeout * 1000);
        if (ret == 0 && worst > cfg->max_cost_micros)
          {
            rt_error_set (err, EDQUOT, "invalid_request",
                          "the first lease (%u s, %u vCPU busy, %u MiB) could cost $%" PRId64 ".%06" PRId64
                          ", more than --max-cost $%" PRId64 ".%06" PRId64,
                          timeout, vcpu, mem, worst / 1000000, worst % 1000000, cfg->max_cost_micros / 1000000,
                          cfg->max_cost_micros % 1000000);
            ret = rt_error_hint (err, "a shorter --timeout, fewer --vcpu or less --memory cost less");
          }
      }
    if (ret < 0)
      goto fail;
    rules.trial = strcmp (funding, "trial") == 0;
    now = rt_epoch_ms ();
    state = initial_state (id, cfg, vcpu, mem, disk, timeout, cfg->image ? cfg->image : "runtime", &rules, now);
    json_object_object_add (state, "funding", json_object_new_string (funding));
  }
  /* What `image rm` checks: the image itself, whatever its ref means later.  */
  json_object_object_add (state, "imageId", json_object_new_string (image.id));
  ret = rt_write_pidfile (owner, getpid (), err);
  if (ret == 0)
    ret = rt_store_write_state (sb->dir, state, err);
  close (steal_fd (&lock));
  if (ret < 0)
    goto fail;

  cmdline = rt_strdup_printf ("rt.hostname=%s", id);
  /* Secrets as placeholders, between the image's env and the caller's.  */
  {
    cleanup_free char **with_secrets = NULL, **with_ca = NULL;
    /* Tools that read these trust the egress CA, which stands in for the
       secrets' hosts (intercept.h); --env may still override them.  */
    static char *const ca_env[] = { "SSL_CERT_FILE=" RT_GUEST_CA_BUNDLE, "REQUESTS_CA_BUNDLE=" RT_GUEST_CA_BUNDLE,
                                    "NODE_EXTRA_CA_CERTS=" RT_GUEST_CA_FILE, NULL };
    static char *const none[] = { NULL };
    json_object *names;
    ret = on ? 0 : rt_secret_env (ctx, &secret_env, err);
    /* Made now, so that a broken data dir fails here and not in the boot.  */
    if (ret == 0 && secret_env && secret_env[0])
      ret = rt_egress_ca_ensure (ctx, NULL, err);
    if (ret < 0)
      goto fail;
    with_secrets = strv_concat (image.env, secret_env);
    with_ca = with_secrets ? strv_concat (with_secrets, secret_env && secret_env[0] ? ca_env : none) : NULL;
    env = with_ca ? strv_concat (with_ca, (char *const *) cfg->env) : NULL;
    /* Their names are shown, as for --env; never their values.  */
    if (secret_env && secret_env[0] && json_object_object_get_ex (state, "envNames", &names))
      {
        for (char **e = secret_env; *e; e++)
          json_object_array_add (names, json_object_new_string_len (*e, strchr (*e, '=') - *e));
        rt_store_write_state (sb->dir, state, NULL);
      }
  }
  egress_log = rt_egress_log_path (ctx, id);
  if (cmdline == NULL || env == NULL || egress_log == NULL)
    {
      ret = rt_error_oom (err);
      goto fail;
    }
  {
    cleanup_free char *records = rt_strdup_printf ("%s/sandboxes", ctx->data_dir);
    ret = records ? rt_mkdir_p (records, 0700, err) : rt_error_oom (err);
    if (ret < 0)
      goto fail;
  }
  {
    struct rt_monitor_config mc = {
      .id = id,
      .dir = sb->dir,
      .vm = { .dir = sb->dir, .accel = accel, .vcpu = vcpu, .memory_mib = mem, .vmlinux = k.vmlinux,
              .initramfs = k.initramfs, .disk = image.disk, .disk_mib = disk > 4096 ? disk : 0,
              .cmdline = cmdline, .channel = true },
      .env = env,
      .workdir = image.workdir,
      .state = state,
      .expires_ms = cfg->ephemeral ? 0 : now + (int64_t) timeout * 1000,
      .timeout_s = timeout,
      .stop_on_timeout = cfg->on_timeout && strcmp (cfg->on_timeout, "stop") == 0,
      .owner = cfg->ephemeral ? getpid () : 0,
      .no_wait = cfg->no_wait,
      .net = rules,
      .egress_log = egress_log,
      .secret_env = secret_env,
    };
    ret = rt_monitor_spawn (ctx, &mc, err);
  }
  if (ret < 0)
    goto fail;
  *out = steal_pointer (&sb);
  ret = 0;
  goto out;
fail:
  rt_rm_rf (sb->dir, NULL);
  if (egress_log)
    unlink (egress_log);
out:
  rt_egress_rules_clear (&rules);
  rt_kernel_files_clear (&k);
  rt_image_disk_clear (&image);
  return ret;
}

const char *
rt_sandbox_id (rt_sandbox *sb)
{
  return sb->id;
}

/* Fast path for ids: one stat and one small read, no directory scan.  */
static int
resolve (rt_context *ctx, const char *ref, json_object **out, rt_error **err)
{
  if (strncmp (ref, "sb-", 3) == 0 && strlen (ref) < 32 && strchr (ref, '/') == NULL)
    {
      cleanup_free char *dir = rt_sandbox_dir (ctx, ref);
      cleanup_free char *pidfile = dir ? rt_strdup_printf ("%s/monitor.pid", dir) : NULL;
      cleanup_free char *path = dir ? rt_strdup_printf ("%s/state.json", dir) : NULL;
      cleanup_free char *data = NULL;
      if (pidfile && rt_pidfile_alive (pidfile, NULL) == 1 && rt_read_file (path, &data, NULL, NULL) == 0)
        {
          *out = json_tokener_parse (data);
          if (*out)
            return 0;
        }
    }
  return rt_store_resolve (ctx, ref, out, err);
}

int
rt_sandbox_open (rt_context *ctx, const char *ref, rt_sandbox **out, rt_error **err)
{
  cleanup_json json_object *state = NULL;
  const char *st;
  int ret = resolve (ctx, ref, &state, err);

  if (ret < 0)
    return ret;
  st = rt_json_str (state, "state");
  if (st && (strcmp (st, "stopped") == 0 || strcmp (st, "stopping") == 0))
    {
      rt_error_set (err, ENOENT, "sandbox_not_ready", "sandbox %s is stopped", rt_json_str (state, "id"));
      return rt_error_hint (err, "runtime sandbox create starts a new one");
    }
  *out = handle_new (ctx, rt_json_str (state, "id"));
  if (*out == NULL)
    return rt_error_oom (err);
  return 0;
}

json_object *
rt_command_request (const char *const argv[], const rt_exec_opts *opts, rt_error **err)
{
  json_object *req, *arr;

  if (argv == NULL || argv[0] == NULL)
    {
      rt_error_set (err, EINVAL, "usage", "no command given");
      return NULL;
    }
  if (opts->stdin_len > RT_MAX_STDIN)
    {
      rt_error_set (err, E2BIG, "usage", "standard input is over 1 MiB");
      return NULL;
    }
  req = json_object_new_object ();
  arr = json_object_new_array ();
  for (const char *const *a = argv; *a; a++)
    json_object_array_add (arr, json_object_new_string (*a));
  json_object_object_add (req, "argv", arr);
  arr = json_object_new_array ();
  for (const char *const *e = opts->env; e && *e; e++)
    json_object_array_add (arr, json_object_new_string (*e));
  json_object_object_add (req, "env", arr);
  if (opts->cwd)
    json_object_object_add (req, "cwd", json_object_new_string (opts->cwd));
  if (opts->user)
    json_object_object_add (req, "user", json_object_new_string (opts->user));
  json_object_object_add (req, "timeoutMs", json_object_new_int64 (opts->timeout_ms));
  if (opts->stdin_len > 0)
    {
      char *b64 = malloc (4 * ((opts->stdin_len + 2) / 3) + 1);
      if (b64 == NULL)
        {
          json_object_put (req);
          rt_error_oom (err);
          return NULL;
        }
      EVP_EncodeBlock ((unsigned char *) b64, opts->stdin_data, opts->stdin_len);
      json_object_object_add (req, "stdin", json_object_new_string (b64));
      free (b64);
    }
  return req;
}

static const rt_exec_opts no_opts = { .cancel_fd = -1 };

/* A monitor that cannot be reached may just be booting (--no-wait): say
   that rather than "cannot reach".  */
static int
not_ready_yet (rt_sandbox *sb, int ret, rt_error **err)
{
  cleanup_json json_object *state = NULL;
  cleanup_free char *path = NULL;
  cleanup_free char *data = NULL;
  const char *st;

  if (ret >= 0 || *err == NULL || strcmp ((*err)->code, "sandbox_not_ready") != 0)
    return ret;
  path = rt_strdup_printf ("%s/state.json", sb->dir);
  if (path == NULL || rt_read_file (path, &data, NULL, NULL) < 0 || (state = json_tokener_parse (data)) == NULL)
    return ret;
  st = rt_json_str (state, "state");
  if (st == NULL || strcmp (st, "starting") != 0)
    return ret;
  rt_error_free (*err);
  *err = NULL;
  rt_error_set (err, EAGAIN, "sandbox_not_ready", "sandbox %s is still starting", sb->id);
  return rt_error_hint (err, "runtime sandbox get %s shows when it is running", sb->id);
}

int
rt_sandbox_exec (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, rt_exec_result *res,
                 rt_error **err)
{
  cleanup_json json_object *req = NULL;

  if (opts == NULL)
    opts = &no_opts;
  memset (res, 0, sizeof (*res));
  req = rt_command_request (argv, opts, err);
  if (req == NULL)
    return -EINVAL;
  return not_ready_yet (sb, rt_api_stream (sb->sock, sb->id, "exec", req, opts, res, NULL, err), err);
}

int
rt_sandbox_spawn (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, uint32_t *process, rt_error **err)
{
  cleanup_json json_object *req = NULL;
  cleanup_json json_object *reply = NULL;
  json_object *v;
  int ret;

  req = rt_command_request (argv, opts ? opts : &no_opts, err);
  if (req == NULL)
    return -EINVAL;
  ret = rt_api_call (sb->sock, sb->id, "spawn", req, &reply, err);
  if (ret < 0)
    return ret;
  if (!json_object_object_get_ex (reply, "process", &v))
    return rt_error_set (err, EIO, "internal", "the monitor did not name the process");
  *process = (uint32_t) json_object_get_int64 (v);
  return 0;
}

int
rt_sandbox_ps_json (rt_sandbox *sb, char **json, rt_error **err)
{
  cleanup_json json_object *reply = NULL;
  int ret = rt_api_call (sb->sock, sb->id, "ps", NULL, &reply, err);

  if (ret < 0)
    return ret;
  *json = strdup (json_object_to_json_string_ext (reply, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}

int
rt_sandbox_logs (rt_sandbox *sb, uint32_t process, bool follow, const rt_exec_opts *opts, rt_exec_result *res,
                 bool *exited, rt_error **err)
{
  cleanup_json json_object *req = json_object_new_object ();

  memset (res, 0, sizeof (*res));
  json_object_object_add (req, "process", json_object_new_int64 (process));
  json_object_object_add (req, "follow", json_object_new_boolean (follow));
  return rt_api_stream (sb->sock, sb->id, "logs", req, opts ? opts : &no_opts, res, exited, err);
}

int
rt_sandbox_kill (rt_sandbox *sb, uint32_t process, int signal, rt_error **err)
{
  cleanup_json json_object *req = json_object_new_object ();

  json_object_object_add (req, "process", json_object_new_int64 (process));
  json_object_object_add (req, "signal", json_object_new_int (signal));
  return rt_api_call (sb->sock, sb->id, "kill", req, NULL, err);
}

/* Files are read with the guest's own tools, as root; a two-line prelude
   turns "missing" and "a directory" into exit codes, not stderr to parse.  */

static int
append (char **buf, size_t *len, const char *data, size_t n)
{
  char *nb;

  /* Bounded: 16 MiB is far beyond any listing or error text.  */
  if (*len + n > 16 * 1024 * 1024 || (nb = realloc (*buf, *len + n + 1)) == NULL)
    return -1;
  memcpy (nb + *len, data, n);
  *len += n;
  nb[*len] = '\0';
  *buf = nb;
  return 0;
}

int
rt_capture_output (void *data, int stream, const char *buf, size_t len)
{
  struct rt_captured *c = data;

  if (stream == 2)
    return append (&c->err, &c->err_len, buf, len);
  if (c->pass)
    return c->pass->on_output ? c->pass->on_output (c->pass->data, 1, buf, len) : 0;
  return append (&c->out, &c->out_len, buf, len);
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

static int
file_error (int exit_code, const char *path, const char *stderr_text, rt_error **err)
{
  if (exit_code == EXIT_MISSING)
    return rt_error_set (err, ENOENT, "file_not_found", "no such file in the sandbox: %s", path);
  if (exit_code == EXIT_IS_DIR)
    {
      rt_error_set (err, EISDIR, "is_a_directory", "%s is a directory", path);
      return rt_error_hint (err, "runtime sandbox files lists it; runtime sandbox cp copies it whole");
    }
  return rt_error_set (err, EIO, "internal", "cannot read %s: %s", path,
                       stderr_text && *stderr_text ? stderr_text : "the guest's tool failed");
}

int
rt_sandbox_cat (rt_sandbox *sb, const char *path, const rt_exec_opts *opts, rt_error **err)
{
  const char *argv[] = { (char *) "sh", (char *) "-c",
                   (char *) "[ -d \"$1\" ] && exit 66; [ -e \"$1\" ] || exit 67; exec cat -- \"$1\"",
                   (char *) "sh", (char *) path, NULL };
  struct rt_captured c = { .pass = opts ? opts : &no_opts };
  rt_exec_opts o = { .user = "root", .cancel_fd = opts ? opts->cancel_fd : -1, .on_output = rt_capture_output, .data = &c };
  rt_exec_result res = { 0 };
  int ret = rt_check_guest_path (path, err);

  if (ret < 0)
    return ret;
  ret = rt_sandbox_exec (sb, argv, &o, &res, err);
  if (ret == 0 && res.exit_code != 0)
    ret = file_error (res.exit_code, path, c.err, err);
  free (c.err);
  return ret;
}

static int
by_path (const void *a, const void *b)
{
  json_object *x = *(json_object *const *) a, *y = *(json_object *const *) b;
  return strcmp (rt_json_str (x, "path"), rt_json_str (y, "path"));
}

int
rt_sandbox_files_json (rt_sandbox *sb, const char *path, unsigned depth, char **json, rt_error **err)
{
  char depth_s[16];
  const char *argv[] = { (char *) "sh", (char *) "-c",
                   (char *) "[ -e \"$1\" ] || [ -L \"$1\" ] || exit 67; "
                            "if [ -d \"$1\" ]; then exec find \"$1\" -mindepth 1 -maxdepth \"$2\" -printf '%y %s %p\\0'; "
                            "else exec find \"$1\" -maxdepth 0 -printf '%y %s %p\\0'; fi",
                   (char *) "sh", (char *) path, depth_s, NULL };
  struct rt_captured c = { 0 };
  cleanup_json json_object *arr = NULL;
  rt_exec_opts o = { .user = "root", .cancel_fd = -1, .on_output = rt_capture_output, .data = &c };
  rt_exec_result res = { 0 };
  int ret = rt_check_guest_path (path, err);

  if (ret < 0)
    return ret;
  snprintf (depth_s, sizeof (depth_s), "%u", depth ? depth : 1);
  ret = rt_sandbox_exec (sb, argv, &o, &res, err);
  if (ret == 0 && res.exit_code != 0)
    ret = file_error (res.exit_code, path, c.err, err);
  if (ret < 0)
    {
      free (c.out);
      free (c.err);
      return ret;
    }
  arr = json_object_new_array ();
  /* Records: "TYPE SIZE PATH\0" (find -printf); paths may hold spaces.  */
  for (char *p = c.out, *end = c.out + c.out_len; p && p < end;)
    {
      char *nul = memchr (p, '\0', end - p), *sp1, *sp2;
      if (nul == NULL)
        break;
      sp1 = strchr (p, ' ');
      sp2 = sp1 ? strchr (sp1 + 1, ' ') : NULL;
      if (sp1 && sp2 && sp2 < nul)
        {
          char type = *p == 'd' ? 'd' : *p == 'l' ? 'l' : '-';
          json_object *e = json_object_new_object ();
          json_object_object_add (e, "type", json_object_new_string_len (&type, 1));
          json_object_object_add (e, "size", json_object_new_int64 (strtoll (sp1 + 1, NULL, 10)));
          json_object_object_add (e, "path", json_object_new_string (sp2 + 1));
          json_object_array_add (arr, e);
        }
      p = nul + 1;
    }
  free (c.out);
  free (c.err);
  json_object_array_sort (arr, by_path);
  *json = strdup (json_object_to_json_string_ext (arr, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}

/* Waits until the monitor named by @pidfile has exited.  */
static int
wait_monitor_gone (rt_sandbox *sb, pid_t pid, rt_error **err)
{
  int pfd = pidfd_open (pid, 0);
  struct stat st;

  if (pfd >= 0)
    {
      struct pollfd p = { .fd = pfd, .events = POLLIN };
      int r = poll (&p, 1, STOP_WAIT_MS);
      close (pfd);
      if (r <= 0)
        {
          rt_error_set (err, ETIMEDOUT, "cleanup_failed", "sandbox %s did not confirm it stopped within 30 s", sb->id);
          return rt_error_hint (err, "its monitor is pid %d", (int) pid);
        }
    }
  /* The monitor removes its dir just before exiting; a crash may not.  */
  rt_store_reap (sb->ctx);
  if (stat (sb->dir, &st) == 0)
    return rt_error_set (err, EBUSY, "cleanup_failed", "could not remove '%s'", sb->dir);
  return 0;
}

/* The reaper calls every sandbox it finds dead host_stopped; one stopped on
   request during its boot was asked for.  */
static int
mark_requested (rt_sandbox *sb)
{
  cleanup_free char *path = rt_record_path (sb->ctx, sb->id);
  cleanup_free char *data = NULL;
  cleanup_json json_object *rec = NULL;

  if (path == NULL || rt_read_file (path, &data, NULL, NULL) < 0 || (rec = json_tokener_parse (data)) == NULL)
    return 0;
  json_object_object_add (rec, "stopReason", json_object_new_string ("requested"));
  rt_store_write_record (sb->ctx, rec, NULL);
  return 0;
}

int
rt_sandbox_stop (rt_sandbox *sb, rt_error **err)
{
  cleanup_free char *pidfile = rt_strdup_printf ("%s/monitor.pid", sb->dir);
  pid_t pid = 0;
  int ret;

  if (pidfile == NULL)
    return rt_error_oom (err);
  if (rt_pidfile_alive (pidfile, &pid) != 1)
    {
      rt_store_reap (sb->ctx);
      return 0;
    }
  ret = rt_api_call (sb->sock, sb->id, "stop", NULL, NULL, err);
  if (ret < 0 && access (sb->sock, F_OK) < 0 && rt_pidfile_alive (pidfile, NULL) == 1)
    {
      /* Still booting (--no-wait): no API yet, and no handlers either, so
         SIGTERM ends the monitor; its QEMU dies with it and the reaper
         writes the record.  */
      if (err)
        {
          rt_error_free (*err);
          *err = NULL;
        }
      kill (pid, SIGTERM);
      ret = wait_monitor_gone (sb, pid, err);
      return ret < 0 ? ret : mark_requested (sb);
    }
  if (ret < 0 && rt_pidfile_alive (pidfile, NULL) == 1)
    return ret;
  if (ret < 0 && err)
    {
      /* It died on its own meanwhile: that is stopped too.  */
      rt_error_free (*err);
      *err = NULL;
    }
  return wait_monitor_gone (sb, pid, err);
}

int
rt_sandbox_destroy (rt_sandbox *sb, rt_error **err)
{
  int ret;
  if (sb == NULL)
    return 0;
  ret = rt_sandbox_stop (sb, err);
  rt_sandbox_close (sb);
  return ret;
}

int
rt_sandbox_pause (rt_sandbox *sb, rt_error **err)
{
  return rt_api_call (sb->sock, sb->id, "pause", NULL, NULL, err);
}

int
rt_sandbox_wake (rt_sandbox *sb, rt_error **err)
{
  return rt_api_call (sb->sock, sb->id, "wake", NULL, NULL, err);
}

int
rt_sandbox_extend (rt_sandbox *sb, unsigned seconds, char **expires_at, rt_error **err)
{
  cleanup_json json_object *body = json_object_new_object ();
  cleanup_json json_object *reply = NULL;
  const char *end;
  int ret;

  json_object_object_add (body, "seconds", json_object_new_int64 (seconds));
  ret = rt_api_call (sb->sock, sb->id, "extend", body, &reply, err);
  if (ret < 0)
    return ret;
  end = rt_json_str (reply, "expiresAt");
  *expires_at = strdup (end ? end : "");
  return *expires_at ? 0 : rt_error_oom (err);
}

int
rt_sandbox_remove (rt_context *ctx, const char *ref, rt_error **err)
{
  cleanup_json json_object *state = NULL;
  cleanup_error rt_error *lookup = NULL;
  cleanup_free char *record = NULL, *log = NULL;
  const char *st, *id;

  if (rt_store_resolve (ctx, ref, &state, &lookup) < 0)
    {
      /* Idempotent: what is not there is removed already.  */
      if (strcmp (lookup->code, "not_found") == 0)
        return 0;
      return rt_error_set (err, lookup->status, lookup->code, "%s", lookup->msg);
    }
  id = rt_json_str (state, "id");
  st = rt_json_str (state, "state");
  if (st && strcmp (st, "stopped") != 0)
    {
      cleanup_sandbox rt_sandbox *sb = handle_new (ctx, id);
      int ret;
      if (sb == NULL)
        return rt_error_oom (err);
      ret = rt_sandbox_stop (sb, err);
      if (ret < 0)
        return ret;
    }
  record = rt_record_path (ctx, id);
  log = rt_egress_log_path (ctx, id);
  if (record == NULL || log == NULL)
    return rt_error_oom (err);
  if (unlink (log) < 0 && errno != ENOENT)
    return rt_error_set (err, errno, "internal", "cannot remove '%s': %s", log, strerror (errno));
  if (unlink (record) < 0 && errno != ENOENT)
    return rt_error_set (err, errno, "internal", "cannot remove '%s': %s", record, strerror (errno));
  return 0;
}

int
rt_sandbox_set_network (rt_sandbox *sb, bool internet, const char *const *allow, const char *const *deny, char **json,
                        rt_error **err)
{
  struct rt_egress_rules rules = { 0 };
  cleanup_json json_object *body = NULL, *reply = NULL;
  int ret = rules_of (internet, allow, deny, &rules, err);

  if (ret < 0)
    return ret;
  body = rt_egress_rules_to_json (&rules);
  rt_egress_rules_clear (&rules);
  if (body == NULL)
    return rt_error_oom (err);
  ret = rt_api_call (sb->sock, sb->id, "/network", body, &reply, err);
  if (ret < 0)
    return ret;
  if (json)
    {
      *json = strdup (json_object_to_json_string_ext (reply, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
      if (*json == NULL)
        return rt_error_oom (err);
    }
  return 0;
}

int
rt_sandbox_egress_log (rt_context *ctx, const char *ref, char **path, rt_error **err)
{
  cleanup_json json_object *state = NULL;
  int ret = resolve (ctx, ref, &state, err);

  if (ret < 0)
    return ret;
  *path = rt_egress_log_path (ctx, rt_json_str (state, "id"));
  return *path ? 0 : rt_error_oom (err);
}

int
rt_sandbox_get_json (rt_context *ctx, const char *ref, char **json, rt_error **err)
{
  cleanup_json json_object *state = NULL;
  int ret = resolve (ctx, ref, &state, err);

  if (ret < 0)
    return ret;
  *json = strdup (json_object_to_json_string_ext (state, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}

int
rt_sandbox_list_json (rt_context *ctx, bool all, char **json, rt_error **err)
{
  cleanup_json json_object *arr = NULL;
  int ret = rt_store_list (ctx, all, &arr, err);

  if (ret < 0)
    return ret;
  *json = strdup (json_object_to_json_string_ext (arr, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}

int
rt_sandbox_metrics_json (rt_sandbox *sb, char **json, rt_error **err)
{
  static const char *const argv[] = { "cat", "/proc/meminfo", NULL };
  cleanup_json json_object *reply = NULL;
  struct rt_captured c = { 0 };
  rt_exec_opts opts = { .timeout_ms = 10000, .cancel_fd = -1, .on_output = rt_capture_output, .data = &c };
  rt_exec_result res = { 0 };
  int ret = rt_api_call (sb->sock, sb->id, "/metrics", NULL, &reply, err);

  if (ret < 0)
    return ret;
  /* The guest's own view of its memory: shown, never billed.  */
  if (rt_sandbox_exec (sb, argv, &opts, &res, NULL) == 0 && res.exit_code == 0 && c.out)
    {
      const char *keys[][2] = { { "MemTotal:", "guestMemoryTotalMiB" }, { "MemAvailable:", "guestMemoryAvailableMiB" } };
      for (size_t i = 0; i < 2; i++)
        {
          const char *p = strstr (c.out, keys[i][0]);
          if (p)
            json_object_object_add (reply, keys[i][1], json_object_new_int64 (strtoll (p + strlen (keys[i][0]), NULL, 10) / 1024));
        }
    }
  free (c.out);
  free (c.err);
  *json = strdup (json_object_to_json_string_ext (reply, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}
