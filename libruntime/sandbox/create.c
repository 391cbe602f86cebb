/* create.c - rt_sandbox_create: the config checked, the image and its
   disk resolved, the name claimed, funding decided (a trial reserved),
   the environment with its secrets, and the monitor spawned, which boots
   the VM and reports it ready (monitor.h).  */
#include <inttypes.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "billing/price.h"
#include "billing/trial.h"
#include "monitor/monitor.h"
#include "net/intercept.h"
#include "net/secrets.h"
#include "sandbox/create.h"
#include "sandbox/handle.h"
#include "sandbox/pool.h"
#include "common/pidfile.h"
#include "records/store.h"
#include "records/list.h"
#include "records/reap.h"
#include "sandbox/wake.h"
#include "snapshot/store.h"
#include "template/make.h"
#include "vmm/kernel.h"

int
rt_sandbox_rules_of (bool internet, const char *const *allow, const char *const *deny, struct rt_egress_rules *r, rt_error **err)
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

int
rt_sandbox_make_id (char out[32], rt_error **err)
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

/* The live sandbox of the context's own tenant (or the host's own, untenanted)
   named @name, if any (under the state lock): names are unique per owner.  */
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
      if (n && strcmp (n, name) == 0 && rt_tenant_same (ctx, rt_json_str (o, "tenant")))
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

/* What a creation has made so far: released whatever happens; the
   sandbox's dir and egress log are removed by the caller on failure.  */
struct creation
{
  rt_context *ctx;
  const rt_sandbox_config *cfg;
  const struct rt_image_disk *on;
  struct rt_kernel_files k;
  struct rt_image_disk image;
  struct rt_egress_rules rules;
  const char *accel;
  unsigned vcpu, mem, disk, timeout;
  char id[32];
  int64_t now;
  rt_sandbox *sb;
  char *owner;       /* <dir>/owner: the creator's pidfile */
  json_object *state;
  char **env;        /* borrowed strings */
  char **secret_env;
  char *egress_log;
  char *disk_dir;    /* <data>/sandboxes/<id>: the VM makes and removes it */
  struct rt_template tmpl;
  bool has_tmpl;     /* tmpl fits: the sandbox starts from it */
  char spare_id[32]; /* a reserved spare (sandbox/pool.h), or "" */
  int64_t start_ms;  /* the call's start, for readyMs */
  /* A snapshot's child (snapshot/saved.h).  */
  const char *snapshot_dir;
  struct rt_saved saved;
  bool has_saved;
  struct rt_saved_settings set;
  const char *funding;  /* cfg's, or a snapshot's child's source's */
};

static void
creation_clear (struct creation *c)
{
  rt_egress_rules_clear (&c->rules);
  rt_kernel_files_clear (&c->k);
  rt_image_disk_clear (&c->image);
  rt_sandbox_close (c->sb);
  free (c->owner);
  json_object_put (c->state);
  free (c->env);
  cleanup_strvp (&c->secret_env);
  free (c->egress_log);
  free (c->disk_dir);
  rt_template_clear (&c->tmpl);
  rt_saved_clear (&c->saved);
  rt_saved_settings_clear (&c->set);
}
#define cleanup_creation __attribute__ ((cleanup (creation_clear)))

/* The config checked and completed with its defaults.  */
static int
validate (struct creation *c, rt_error **err)
{
  const rt_sandbox_config *cfg = c->cfg;
  int ret;

  /* rt_sandbox_create checked it already; the library's own creates (a
     build's, a fork's children) are checked here, by the same function.  */
  ret = rt_sandbox_config_check (cfg, NULL, err);
  if (ret < 0)
    return ret;
  ret = rt_sandbox_rules_of (!cfg->no_internet, cfg->allow, cfg->deny, &c->rules, err);
  if (ret < 0)
    return ret;
  c->vcpu = cfg->vcpu ? cfg->vcpu : 2;
  c->mem = cfg->memory_mib ? cfg->memory_mib : 4096;
  c->disk = cfg->disk_mib ? cfg->disk_mib : 4096;
  c->timeout = cfg->timeout_s ? cfg->timeout_s : 1800;
  return 0;
}

static const char *
saved_image_ref (const struct rt_saved *s)
{
  json_object *image = NULL, *ref = NULL;
  json_object_object_get_ex (s->meta, "image", &image);
  return json_object_object_get_ex (image, "ref", &ref) && ref ? json_object_get_string (ref) : s->image_id;
}

/* A snapshot's shape is its child's: a size given must be the same.  */
static int
same_shape (const char *what, unsigned given, unsigned saved, rt_error **err)
{
  if (given == 0 || given == saved)
    return 0;
  rt_error_set (err, EINVAL, "invalid_request", "the snapshot's %s is %u, not %u", what, saved, given);
  return rt_error_hint (err, "a sandbox continues from a snapshot with its shape: leave out --vcpu, --memory, --disk");
}

/* The snapshot a child continues from: its shape, image, settings and (unless
   given) rules.  */
static int
load_snapshot (struct creation *c, rt_error **err)
{
  const rt_sandbox_config *cfg = c->cfg;
  cleanup_free char *dir = NULL;
  json_object *sb = NULL, *state = NULL, *net = NULL;
  int ret = 0;

  if (c->snapshot_dir == NULL && cfg->snapshot == NULL)
    return 0;
  if (c->on)
    return rt_error_set (err, EINVAL, "invalid_request", "a build step cannot start from a snapshot");
  if (c->snapshot_dir == NULL)
    ret = rt_snapshot_resolve (c->ctx, cfg->snapshot, &dir, err);
  if (ret == 0)
    ret = rt_saved_load (c->snapshot_dir ? c->snapshot_dir : dir, NULL, &c->saved, err);
  if (ret == 0)
    ret = rt_saved_settings_get (&c->saved, &c->set, err);
  if (ret < 0)
    return ret;
  c->has_saved = true;
  json_object_object_get_ex (c->saved.meta, "sandbox", &sb);
  json_object_object_get_ex (sb, "state", &state);
  /* Paid by whoever paid for its source, unless told otherwise.  */
  if (cfg->funding == NULL)
    c->funding = rt_json_str (state, "funding");
  if (same_shape ("vCPU count", cfg->vcpu, c->saved.vcpu, err) < 0
      || same_shape ("memory (MiB)", cfg->memory_mib, c->saved.memory_mib, err) < 0
      || same_shape ("disk (MiB)", cfg->disk_mib, c->saved.disk_mib, err) < 0)
    return -1;
  c->vcpu = c->saved.vcpu;
  c->mem = c->saved.memory_mib;
  c->disk = c->saved.disk_mib ? c->saved.disk_mib : 4096;
  if (cfg->image)
    return rt_error_set (err, EINVAL, "invalid_request", "a sandbox continues from a snapshot with its image");
  /* Its source's rules, unless others are given.  */
  if (!cfg->no_internet && !cfg->allow && !cfg->deny && json_object_object_get_ex (state, "network", &net))
    {
      rt_egress_rules_clear (&c->rules);
      ret = rt_egress_rules_from_json (net, &c->rules, err);
    }
  return ret;
}

/* The kernel, the image's boot disk and the accelerator found.  */
static int
resolve_image (struct creation *c, rt_error **err)
{
  int ret;

  /* The kernel first: it fails faster than building a boot disk.  */
  ret = rt_kernel_ensure (c->ctx, &c->k, err);
  if (ret < 0)
    return ret;
  if (c->on)
    {
      c->image.id = strdup (c->on->id);
      c->image.disk = strdup (c->on->disk);
      c->image.workdir = strdup (c->on->workdir);
      c->image.env = calloc (1, sizeof (char *));
      ret = c->image.id && c->image.disk && c->image.workdir && c->image.env ? 0 : rt_error_oom (err);
    }
  else
    ret = rt_image_ensure_disk (c->ctx, c->has_saved ? c->saved.image_id : c->cfg->image, &c->image, err);
  if (ret < 0)
    return ret;
  return rt_context_accel (c->ctx, &c->accel, err);
}

/* Under the state lock: 1 when --get-or-create found the live sandbox
   of that name (opened into *out), name_taken without it, else 0 with
   the new sandbox's dir made.  */
static int
claim_name (struct creation *c, rt_sandbox **out, rt_error **err)
{
  const rt_sandbox_config *cfg = c->cfg;
  int ret;

  if (cfg->name)
    {
      ret = find_live_name (c->ctx, cfg->name, c->id, err);
      if (ret < 0)
        return ret;
      if (ret > 0)
        {
          if (cfg->get_or_create)
            {
              ret = rt_local_sandbox_open (c->ctx, c->id, out, err);
              return ret < 0 ? ret : 1;
            }
          rt_error_set (err, EEXIST, "name_taken", "a live sandbox is already named '%s' (%s)", cfg->name, c->id);
          return rt_error_hint (err, "pick another --name, or add --get-or-create to use it");
        }
    }
  else
    rt_store_reap (c->ctx);
  /* A reserved spare is the sandbox: its id and dir are made.  */
  if (c->spare_id[0])
    {
      memcpy (c->id, c->spare_id, sizeof c->id);
      c->sb = rt_sandbox_handle_new (c->ctx, c->id);
      c->owner = c->sb ? rt_strdup_printf ("%s/owner", c->sb->dir) : NULL;
      return c->owner ? 0 : rt_error_oom (err);
    }
  ret = rt_sandbox_make_id (c->id, err);
  if (ret < 0)
    return ret;
  c->sb = rt_sandbox_handle_new (c->ctx, c->id);
  c->owner = c->sb ? rt_strdup_printf ("%s/owner", c->sb->dir) : NULL;
  if (c->owner == NULL)
    return rt_error_oom (err);
  if (mkdir (c->sb->dir, 0700) < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", c->sb->dir, strerror (errno));
  /* At once: a creator killed from here on leaves a dir the reaper
     removes at its next pass, not a minute later.  */
  return rt_write_pidfile (c->owner, getpid (), err);
}

/* Who pays, decided and (for the trial) reserved before anything runs;
   the initial state says so.  */
static int
reserve_funding (struct creation *c, rt_error **err)
{
  const rt_sandbox_config *cfg = c->cfg;
  const char *funding = "paid", *why = NULL;
  int ret;

  if (cfg->funding && strcmp (cfg->funding, "trial") != 0 && strcmp (cfg->funding, "paid") != 0)
    ret = rt_error_set (err, EINVAL, "invalid_request", "funding is trial or paid, not '%s'", cfg->funding);
  else
    ret = rt_trial_reserve (c->ctx, c->id, c->on ? "paid" : c->funding, c->vcpu, c->mem, &c->timeout, &funding,
                            &why, err);
  if (ret == 0 && strcmp (funding, "paid") == 0 && cfg->max_cost_micros > 0)
    {
      struct rt_rates rates;
      int64_t worst;
      ret = rt_rates_load (c->ctx, &rates, err);
      worst = rt_price_micros (&rates, (uint64_t) c->vcpu * c->timeout * 1000000,
                               (uint64_t) c->mem * c->timeout * 1000);
      if (ret == 0 && worst > cfg->max_cost_micros)
        {
          rt_error_set (err, EDQUOT, "invalid_request",
                        "the first lease (%u s, %u vCPU busy, %u MiB) could cost $%" PRId64 ".%06" PRId64
                        ", more than --max-cost $%" PRId64 ".%06" PRId64,
                        c->timeout, c->vcpu, c->mem, worst / 1000000, worst % 1000000,
                        cfg->max_cost_micros / 1000000, cfg->max_cost_micros % 1000000);
          ret = rt_error_hint (err, "a shorter --timeout, fewer --vcpu or less --memory cost less");
        }
    }
  if (ret < 0)
    return ret;
  c->rules.trial = strcmp (funding, "trial") == 0;
  c->now = rt_epoch_ms ();
  c->state = initial_state (c->id, cfg, c->vcpu, c->mem, c->disk, c->timeout,
                            c->has_saved ? saved_image_ref (&c->saved) : cfg->image ? cfg->image : "runtime",
                            &c->rules, c->now);
  json_object_object_add (c->state, "funding", json_object_new_string (funding));
  /* Paid without being asked: say why (runtime sandbox get, create's line).  */
  if (why)
    json_object_object_add (c->state, "fundingReason", json_object_new_string (why));
  /* Whose it is: what every lookup of a tenant context filters on.  */
  if (c->ctx->tenant)
    json_object_object_add (c->state, "tenant", json_object_new_string (c->ctx->tenant));
  /* What `image rm` checks: the image itself, whatever its ref means later.  */
  json_object_object_add (c->state, "imageId", json_object_new_string (c->image.id));
  return 0;
}

/* Secrets as placeholders, between the image's env and the caller's.  */
static int
secrets_env (struct creation *c, rt_error **err)
{
  cleanup_free char **with_secrets = NULL, **with_ca = NULL;
  /* Tools that read these trust the egress CA, which stands in for the
     secrets' hosts (intercept.h); --env may still override them.  */
  static char *const ca_env[] = { "SSL_CERT_FILE=" RT_GUEST_CA_BUNDLE, "REQUESTS_CA_BUNDLE=" RT_GUEST_CA_BUNDLE,
                                  "NODE_EXTRA_CA_CERTS=" RT_GUEST_CA_FILE, NULL };
  static char *const none[] = { NULL };
  char **secret_env;
  json_object *names;
  int ret;

  /* A snapshot's child runs with its source's: its guest has them.  */
  if (c->has_saved)
    {
      c->secret_env = steal_pointer (&c->set.secret_env);
      c->env = strv_concat (c->set.env, (char *const *) c->cfg->env);
      return c->env ? 0 : rt_error_oom (err);
    }
  ret = c->on || c->secret_env ? 0 : rt_secret_env (c->ctx, &c->secret_env, err);
  secret_env = c->secret_env;
  /* Made now, so that a broken data dir fails here and not in the boot.  */
  if (ret == 0 && secret_env && secret_env[0])
    ret = rt_egress_ca_ensure (c->ctx, NULL, err);
  if (ret < 0)
    return ret;
  with_secrets = strv_concat (c->image.env, secret_env);
  with_ca = with_secrets ? strv_concat (with_secrets, secret_env && secret_env[0] ? ca_env : none) : NULL;
  c->env = with_ca ? strv_concat (with_ca, (char *const *) c->cfg->env) : NULL;
  /* Their names are shown, as for --env; never their values.  */
  if (secret_env && secret_env[0] && json_object_object_get_ex (c->state, "envNames", &names))
    {
      for (char **e = secret_env; *e; e++)
        json_object_array_add (names, json_object_new_string_len (*e, strchr (*e, '=') - *e));
      rt_store_write_state (c->sb->dir, c->state, NULL);
    }
  return 0;
}

/* Starts the monitor, which boots the VM and reports it ready (or, with
   --no-wait, started).  */
static int
spawn_monitor (struct creation *c, rt_error **err)
{
  const rt_sandbox_config *cfg = c->cfg;
  cleanup_free char *cmdline = rt_strdup_printf ("rt.hostname=%s", c->id);
  int ret;

  c->egress_log = rt_egress_log_path (c->ctx, c->id);
  c->disk_dir = rt_sandbox_disk_dir (c->ctx, c->id);
  if (cmdline == NULL || c->env == NULL || c->egress_log == NULL || c->disk_dir == NULL)
    return rt_error_oom (err);
  {
    cleanup_free char *records = rt_strdup_printf ("%s/sandboxes", c->ctx->data_dir);
    ret = records ? rt_mkdir_p (records, 0700, err) : rt_error_oom (err);
    if (ret < 0)
      return ret;
  }
  {
    struct rt_monitor_config mc = {
      .id = c->id,
      .dir = c->sb->dir,
      .vm = { .dir = c->sb->dir, .disk_dir = c->disk_dir, .accel = c->accel, .vcpu = c->vcpu, .memory_mib = c->mem, .vmlinux = c->k.vmlinux,
              .initramfs = c->k.initramfs, .disk = c->image.disk, .disk_mib = c->disk > 4096 ? c->disk : 0,
              .cmdline = cmdline, .channel = true },
      .env = c->env,
      .workdir = c->has_saved ? c->set.workdir : c->image.workdir,
      .state = c->state,
      .expires_ms = cfg->ephemeral ? 0 : c->now + (int64_t) c->timeout * 1000,
      .timeout_s = c->timeout,
      .stop_on_timeout = cfg->on_timeout && strcmp (cfg->on_timeout, "stop") == 0,
      .owner = cfg->ephemeral ? getpid () : 0,
      .no_wait = cfg->no_wait,
      .net = c->rules,
      .egress_log = c->egress_log,
      .secret_env = c->secret_env,
      .tmpl = c->has_tmpl ? &c->tmpl : NULL,
      .start_ms = c->start_ms,
      .saved = c->has_saved ? &c->saved : NULL,
      .restore = RT_RESTORE_CHILD,
      .idle_pause_s = cfg->idle_pause_s,
      .auto_wake = cfg->auto_wake,
    };
    return rt_monitor_spawn (c->ctx, &mc, err);
  }
}

/* What a template of this sandbox's image and shape is made of.  Only
   sandboxes of an image (not a build's steps) with the image's own disk
   size have templates.  */
static bool
template_inputs (const struct creation *c, struct rt_template_inputs *in)
{
  if (c->on || c->has_saved || c->disk > 4096 || !rt_templates_enabled (c->ctx))
    return false;
  *in = (struct rt_template_inputs){ .image_id = c->image.id, .disk = c->image.disk, .vcpu = c->vcpu,
                                     .memory_mib = c->mem, .disk_mib = c->disk, .vmlinux = c->k.vmlinux,
                                     .initramfs = c->k.initramfs, .accel = c->accel };
  return true;
}

/* The template to start from, unless --cold; a broken one is no error
   (the sandbox boots cold).  */
static void
find_template (struct creation *c, bool spares)
{
  struct rt_template_inputs in;

  if (c->cfg->cold || !template_inputs (c, &in))
    return;
  c->has_tmpl = rt_template_find (c->ctx, &in, &c->tmpl, NULL) > 0;
  /* A spare when there is one, but not for a sandbox with secrets (its
     egress CA goes in at boot: monitor.c) nor one that may turn out to
     exist already (--get-or-create).  */
  if (!spares || !c->has_tmpl || c->cfg->get_or_create || rt_secret_env (c->ctx, &c->secret_env, NULL) < 0
      || (c->secret_env && c->secret_env[0]))
    return;
  rt_pool_reserve (c->ctx, &in, c->tmpl.key, c->spare_id);
}

/* The reserved spare becomes the sandbox (monitor/spare.h).  */
static int
claim_spare (struct creation *c, rt_error **err)
{
  const rt_sandbox_config *cfg = c->cfg;
  cleanup_json json_object *claim = json_object_new_object ();
  json_object *env = json_object_new_array ();
  int ret;

  ret = secrets_env (c, err);
  if (ret < 0)
    return ret;
  if (claim == NULL || env == NULL || c->env == NULL)
    {
      json_object_put (env);
      return rt_error_oom (err);
    }
  for (char **e = c->env; *e; e++)
    json_object_array_add (env, json_object_new_string (*e));
  json_object_object_add (claim, "state", json_object_get (c->state));
  json_object_object_add (claim, "env", env);
  json_object_object_add (claim, "network", rt_egress_rules_to_json (&c->rules));
  json_object_object_add (claim, "expiresMs",
                          json_object_new_int64 (cfg->ephemeral ? 0 : c->now + (int64_t) c->timeout * 1000));
  json_object_object_add (claim, "timeoutSeconds", json_object_new_int64 (c->timeout));
  json_object_object_add (claim, "stopOnTimeout",
                          json_object_new_boolean (cfg->on_timeout && strcmp (cfg->on_timeout, "stop") == 0));
  json_object_object_add (claim, "owner", json_object_new_int64 (cfg->ephemeral ? getpid () : 0));
  json_object_object_add (claim, "startMs", json_object_new_int64 (c->start_ms));
  return rt_pool_claim (c->ctx, c->id, claim, err);
}

/* After a cold start of a shape that has no template: one is made in the
   background, for the next start (this one was not slowed by it).  */
static void
make_template_later (struct creation *c)
{
  struct rt_template_inputs in;

  if (c->has_tmpl || c->cfg->cold || !template_inputs (c, &in))
    return;
  rt_template_make_background (c->ctx, &in);
}

int
rt_local_sandbox_create (rt_context *ctx, const rt_sandbox_config *cfg, rt_sandbox **out, rt_error **err)
{
  return rt_sandbox_create_on (ctx, cfg, NULL, out, err);
}

/* A reserved spare of @c that will not be claimed stops: a spare that
   was reserved is never handed out again.  */
static void
drop_spare (struct creation *c)
{
  if (c->spare_id[0])
    rt_pool_release (c->ctx, c->spare_id);
  c->spare_id[0] = '\0';
}

/* Under the state lock (@lock), after the name: the sandbox's funding,
   then either the reserved spare claimed (its monitor writes the state,
   with the name, before the lock goes) or a new sandbox's state written
   and its monitor started.  *spare_failed: a claim failed (the caller
   starts again without a spare).  */
static int
start (struct creation *c, int *lock, bool *spare_failed, rt_error **err)
{
  int ret = reserve_funding (c, err);

  if (ret == 0 && c->spare_id[0])
    {
      ret = claim_spare (c, err);
      *spare_failed = ret < 0;
      close (steal_fd (lock));
      return ret;
    }
  if (ret == 0)
    {
      ret = rt_write_pidfile (c->owner, getpid (), err);
      if (ret == 0)
        ret = rt_store_write_state (c->sb->dir, c->state, err);
      close (steal_fd (lock));
    }
  if (ret == 0)
    ret = secrets_env (c, err);
  if (ret == 0)
    ret = spawn_monitor (c, err);
  return ret;
}

static int
create (rt_context *ctx, const rt_sandbox_config *cfg, const struct rt_image_disk *on, const char *snapshot_dir,
        bool spares, bool *spare_failed, rt_sandbox **out, rt_error **err)
{
  cleanup_creation struct creation c = { .ctx = ctx, .cfg = cfg, .on = on };
  cleanup_close int lock = -1;
  int ret;

  c.start_ms = rt_epoch_ms ();
  c.snapshot_dir = snapshot_dir;
  c.funding = cfg->funding;
  ret = validate (&c, err);
  if (ret == 0)
    ret = load_snapshot (&c, err);
  if (ret == 0)
    ret = resolve_image (&c, err);
  if (ret == 0 && c.has_saved)
    ret = rt_saved_check_base (&c.saved, c.image.disk, err);
  if (ret < 0)
    return ret;
  find_template (&c, spares);
  /* Names are unique among live sandboxes: check and claim under the lock.  */
  ret = rt_store_lock (ctx, &lock, err);
  if (ret == 0)
    ret = claim_name (&c, out, err);
  if (ret == 0)
    ret = start (&c, &lock, spare_failed, err);
  if (ret != 0)
    {
      bool spare = c.spare_id[0] != '\0';
      drop_spare (&c);
      if (ret > 0 || spare || c.sb == NULL)
        return ret < 0 ? ret : 0;
      rt_rm_rf (c.sb->dir, NULL);
      /* The monitor removed it, unless it was killed.  */
      if (c.disk_dir)
        rt_rm_rf (c.disk_dir, NULL);
      if (c.egress_log)
        unlink (c.egress_log);
      return ret;
    }
  /* Held by the caller now: a spare's monitor stops watching us.  */
  if (c.spare_id[0] && rt_pool_confirm (ctx, c.id, err) < 0)
    {
      drop_spare (&c);
      return -1;
    }
  make_template_later (&c);
  {
    struct rt_template_inputs in;
    if (template_inputs (&c, &in))
      rt_pool_fill_background (ctx, &in);
  }
  *out = steal_pointer (&c.sb);
  return 0;
}

int
rt_sandbox_create_on (rt_context *ctx, const rt_sandbox_config *cfg, const struct rt_image_disk *on,
                      rt_sandbox **out, rt_error **err)
{
  static const rt_sandbox_config defaults = { 0 };
  bool spare_failed = false;
  int ret = create (ctx, cfg ? cfg : &defaults, on, NULL, true, &spare_failed, out, err);

  /* A spare that could not be claimed (stopped under us, its agent not
     answering) is no reason to fail: start as if there were none.  */
  if (ret < 0 && spare_failed)
    {
      rt_error_free (*err);
      *err = NULL;
      ret = create (ctx, cfg ? cfg : &defaults, on, NULL, false, &spare_failed, out, err);
    }
  return ret;
}


int
rt_sandbox_create_from (rt_context *ctx, const rt_sandbox_config *cfg, const char *snapshot_dir, rt_sandbox **out,
                        rt_error **err)
{
  bool spare_failed = false;

  return create (ctx, cfg, NULL, snapshot_dir, false, &spare_failed, out, err);
}
