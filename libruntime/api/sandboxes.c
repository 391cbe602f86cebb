/* sandboxes.c - the sandbox: create (within the token's limits), list,
   get (and wait for a state), delete, and its network (docs/API.md); its
   lifecycle verbs are sandbox-verbs.c's.
   (no header of its own: handlers.h declares its routes).  */
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "core/state.h"
#include "common/sys.h"
#include "common/util.h"
#include "api/body.h"
#include "public/driver.h"
#include "records/watch.h"
#include "api/handlers.h"

/* A sandbox as the API shows it: a tenant's view (records/view.h), which
   holds nothing only the host may see.  */
json_object *
srv_sandbox_info (rt_context *ctx, const char *ref, rt_error **err)
{
  json_object *o = NULL;

  return rt_sandbox_info (ctx, ref, RT_VIEW_TENANT, &o, err) < 0 ? NULL : o;
}

const struct srv_field srv_fields_create[] = {
  { "name", json_type_string },          { "labels", json_type_object },      { "env", json_type_object },
  { "funding", json_type_string },       { "vcpu", json_type_int },           { "memoryMiB", json_type_int },
  { "diskMiB", json_type_int },          { "timeoutSeconds", json_type_int }, { "onLeaseEnd", json_type_string },
  { "idlePauseSeconds", json_type_int }, { "autoWake", json_type_boolean },   { "maxCostMicros", json_type_int },
  { "getOrCreate", json_type_boolean },  { "network", json_type_object },     { "image", json_type_string },
  { "snapshot", json_type_string },      { "cold", json_type_boolean },       { NULL, 0 },
};

const struct srv_field srv_fields_network[] = {
  { "internet", json_type_boolean },
  { "allow", json_type_array },
  { "deny", json_type_array },
  { NULL, 0 },
};

static unsigned
uint_of (json_object *body, const char *key)
{
  int64_t v = rt_json_i64 (body, key);
  return v > 0 && v < (int64_t) UINT32_MAX ? (unsigned) v : 0;
}

/* A network object's fields ({internet, allow, deny}, each optional) into
   the library's; its wrong fields are issues at @prefix.field.  */
static void
network_parse (json_object *net, const char *prefix, bool *internet, char ***allow, char ***deny, json_object *issues)
{
  json_object *v;

  json_object_object_foreach (net, key, val)
  {
    const struct srv_field *f;
    cleanup_free char *path = rt_strdup_printf ("%s%s", prefix, key);
    for (f = srv_fields_network; f->name && strcmp (f->name, key) != 0; f++)
      ;
    if (f->name == NULL)
      srv_issue (issues, path ? path : key, "unknown field");
    else if (val && !json_object_is_type (val, f->type))
      srv_issue (issues, path ? path : key, f->type == json_type_boolean ? "must be a boolean" : "must be an array");
  }
  *internet = !(json_object_object_get_ex (net, "internet", &v) && json_object_is_type (v, json_type_boolean)
                && !json_object_get_boolean (v));
  if (json_object_object_get_ex (net, "allow", &v) && json_object_is_type (v, json_type_array))
    *allow = srv_strings_of (v, prefix[0] ? "network.allow" : "allow", 0, issues);
  if (json_object_object_get_ex (net, "deny", &v) && json_object_is_type (v, json_type_array))
    *deny = srv_strings_of (v, prefix[0] ? "network.deny" : "deny", 0, issues);
}

static bool
flag_of (json_object *body, const char *key)
{
  json_object *v;
  return json_object_object_get_ex (body, key, &v) && json_object_get_boolean (v);
}

/* The body's fields into @cfg (its strings stay @body's or the vectors');
   false after replying 400 with @issues (the top level's, from
   srv_body_json_into) and those of nested objects, all at once.  */
static bool
create_parse (struct srv_req *r, json_object *body, json_object *issues, rt_sandbox_config *cfg, char ***labels,
              char ***env, char ***allow, char ***deny)
{
  json_object *net;
  bool internet = true;

  *labels = srv_pairs_of (json_object_object_get (body, "labels"), "labels", issues);
  *env = srv_pairs_of (json_object_object_get (body, "env"), "env", issues);
  if (json_object_object_get_ex (body, "network", &net) && net && json_object_is_type (net, json_type_object))
    network_parse (net, "network.", &internet, allow, deny, issues);
  if (srv_reply_issues (r, issues))
    return false;
  cfg->no_internet = !internet;
  cfg->name = rt_json_str (body, "name");
  cfg->labels = (const char *const *) *labels;
  cfg->env = (const char *const *) *env;
  cfg->funding = rt_json_str (body, "funding");
  cfg->vcpu = uint_of (body, "vcpu");
  cfg->memory_mib = uint_of (body, "memoryMiB");
  cfg->disk_mib = uint_of (body, "diskMiB");
  cfg->timeout_s = uint_of (body, "timeoutSeconds");
  cfg->on_timeout = rt_json_str (body, "onLeaseEnd");
  cfg->idle_pause_s = uint_of (body, "idlePauseSeconds");
  cfg->auto_wake = flag_of (body, "autoWake");
  cfg->max_cost_micros = rt_json_i64 (body, "maxCostMicros");
  cfg->get_or_create = flag_of (body, "getOrCreate");
  cfg->image = rt_json_str (body, "image");
  cfg->snapshot = rt_json_str (body, "snapshot");
  cfg->cold = flag_of (body, "cold");
  cfg->allow = (const char *const *) *allow;
  cfg->deny = (const char *const *) *deny;
  return true;
}

/* The vCPUs a create will hold: its own, its snapshot's, or the default.  */
static unsigned
create_vcpu (rt_context *ctx, const rt_sandbox_config *cfg)
{
  cleanup_free char *text = NULL;
  cleanup_json json_object *snap = NULL;
  json_object *shape;

  if (cfg->vcpu)
    return cfg->vcpu;
  if (cfg->snapshot && rt_snapshot_get_json (ctx, cfg->snapshot, &text, NULL) == 0 && (snap = json_tokener_parse (text))
      && json_object_object_get_ex (snap, "shape", &shape))
    return (unsigned) rt_json_i64 (shape, "vcpu");
  return 2;
}

/* Not on its way from one state to another.  */
static bool
settled (const char *st)
{
  enum rt_sandbox_state s;

  if (rt_sandbox_state_parse (st, &s) < 0)
    return false;
  switch (s)
    {
    case RT_SANDBOX_STARTING:
    case RT_SANDBOX_PAUSING:
    case RT_SANDBOX_RESUMING:
    case RT_SANDBOX_STOPPING:
      return false;
    case RT_SANDBOX_RUNNING:
    case RT_SANDBOX_PAUSED:
    case RT_SANDBOX_STOPPED:
      break;
    }
  return true;
}

/* What a wait for @want (NULL: for a settled state) ends at: that state,
   or stopped, which nothing leaves.  */
static bool
arrived (const char *st, const char *want)
{
  enum rt_sandbox_state w;

  if (want == NULL)
    return settled (st);
  return rt_state_is (st, RT_SANDBOX_STOPPED) || (rt_sandbox_state_parse (want, &w) == 0 && rt_state_is (st, w));
}

/* The longest a wait goes without looking whether its client went.  */
#define WAIT_SLICE_MS 1000

json_object *
srv_sandbox_wait (struct srv_req *r, rt_context *ctx, const char *ref, const char *want, int timeout_s, rt_error **err)
{
  uint64_t end = rt_now_ms () + (uint64_t) timeout_s * 1000;
  struct rt_record_watch *w = NULL;
  json_object *info;

  for (;;)
    {
      const char *st;
      info = srv_sandbox_info (ctx, ref, err);
      if (info == NULL)
        break;
      st = rt_json_str (info, "state");
      if (arrived (st, want))
        break;
      if (rt_now_ms () >= end || srv_gone (r) || srv_stopping (r))
        break;
      /* Watched from now on, then looked at again: a change between the
         first look and the watch is not missed.  */
      if (w == NULL && rt_record_watch_open (ctx, rt_json_str (info, "id"), &w, NULL) == 0)
        {
          json_object_put (info);
          continue;
        }
      json_object_put (info);
      if (w)
        {
          uint64_t left = end - rt_now_ms ();
          rt_record_watch_wait (w, left < WAIT_SLICE_MS ? (int) left : WAIT_SLICE_MS);
        }
      else
        nanosleep (&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
    }
  rt_record_watch_close (w);
  return info;
}

/* The id of the live (not stopped) sandbox named @name, or NULL.  */
static char *
live_id (rt_context *ctx, const char *name)
{
  cleanup_json json_object *o = NULL;
  const char *st;

  if (name == NULL || rt_sandbox_info (ctx, name, RT_VIEW_TENANT, &o, NULL) < 0)
    return NULL;
  st = rt_json_str (o, "state");
  return st && !rt_state_is (st, RT_SANDBOX_STOPPED) && rt_json_str (o, "id") ? strdup (rt_json_str (o, "id")) : NULL;
}

/* The create's answer: @id as it is now, or once settled (Prefer: wait).  */
static void
reply_created (struct srv_req *r, rt_context *ctx, const char *id, int wait, bool get_or_create, bool reused)
{
  cleanup_error rt_error *err = NULL;
  json_object *info = wait > 0 ? srv_sandbox_wait (r, ctx, id, NULL, wait, &err) : srv_sandbox_info (ctx, id, &err);

  if (info == NULL)
    return srv_reply_rt_error (r, err);
  if (get_or_create)
    json_object_object_add (info, "reused", json_object_new_boolean (reused));
  srv_reply_json (r, reused ? 200 : 201, info);
}

/* rt_sandbox_config_check (include/runtime/sandbox.h) before anything
   is reserved, its field said as the body's key: false after answering.  */
static bool
config_ok (struct srv_req *r, const rt_sandbox_config *cfg)
{
  static const struct
  {
    const char *field, *key;
  } keys[] = {
    { "vcpu", "vcpu" },
    { "memory_mib", "memoryMiB" },
    { "disk_mib", "diskMiB" },
    { "timeout_s", "timeoutSeconds" },
    { "on_timeout", "onLeaseEnd" },
    { "name", "name" },
    { "get_or_create", "getOrCreate" },
    { "idle_pause_s", "idlePauseSeconds" },
    { "auto_wake", "autoWake" },
    { "labels", "labels" },
    { "env", "env" },
    { "funding", "funding" },
  };
  cleanup_error rt_error *err = NULL;
  cleanup_json json_object *issues = NULL;
  cleanup_free char *msg = NULL;
  const char *field = NULL, *key = NULL;

  if (rt_sandbox_config_check (cfg, &field, &err) == 0)
    return true;
  for (size_t i = 0; field && i < sizeof keys / sizeof keys[0]; i++)
    if (strcmp (keys[i].field, field) == 0)
      key = keys[i].key;
  if (key && strncmp (err->msg, field, strlen (field)) == 0)
    msg = rt_strdup_printf ("%s%s", key, err->msg + strlen (field));
  if (key == NULL || strcmp (err->code, "invalid_request") != 0)
    {
      srv_reply_error (r, 400, err->code, err->hint, NULL, "%s", msg ? msg : err->msg);
      return false;
    }
  issues = json_object_new_array ();
  srv_issue (issues, key, msg ? msg : err->msg);
  srv_reply_issues (r, issues);
  return false;
}

void
srv_sandbox_create (struct srv_req *r)
{
  cleanup_json json_object *issues = json_object_new_array ();
  cleanup_json json_object *body = srv_body_json_into (r, srv_fields_create, issues);
  cleanup_strv char **labels = NULL, **env = NULL, **allow = NULL, **deny = NULL;
  cleanup_error rt_error *err = NULL;
  cleanup_free char *before = NULL;
  rt_sandbox_config cfg = { 0 };
  rt_sandbox *sb = NULL;
  rt_context *ctx;
  int wait = srv_prefer_wait (r), ret;
  unsigned vcpu;
  bool reused;

  if (body == NULL || (ctx = srv_ctx (r)) == NULL || !create_parse (r, body, issues, &cfg, &labels, &env, &allow, &deny)
      || !config_ok (r, &cfg))
    return;
  /* Prefer: wait=N: the library answers once the monitor runs; the wait
     for the boot is ours, bounded.  */
  cfg.no_wait = wait >= 0;
  if (cfg.get_or_create && cfg.name)
    before = live_id (ctx, cfg.name);
  vcpu = create_vcpu (ctx, &cfg);
  /* Every create reserves, getOrCreate too: the sandbox it found may be
     gone by the time the library looks, and then it makes one.  At the
     limit, a getOrCreate whose sandbox is live answers it without
     creating.  */
  ret = before ? srv_quota_try (r, 1, vcpu) : srv_quota_reserve (r, 1, vcpu);
  if (ret < 0)
    return;
  if (ret > 0)
    {
      cleanup_free char *now = live_id (ctx, cfg.name);
      if (now)
        return reply_created (r, ctx, now, wait, true, true);
      if (srv_quota_reserve (r, 1, vcpu) < 0)
        return;
    }
  ret = rt_sandbox_create (ctx, &cfg, &sb, &err);
  srv_quota_release (r, 1, vcpu);
  if (ret < 0)
    return srv_reply_rt_error (r, err);
  reused = before && strcmp (before, rt_sandbox_id (sb)) == 0;
  reply_created (r, ctx, rt_sandbox_id (sb), wait, cfg.get_or_create, reused);
  rt_sandbox_close (sb);
}

static bool
has_label (json_object *o, const char *kv)
{
  const char *colon = strchr (kv, ':');
  json_object *labels, *v;
  cleanup_free char *key = colon ? strndup (kv, colon - kv) : strdup (kv);

  if (key == NULL || !json_object_object_get_ex (o, "labels", &labels) || labels == NULL)
    return false;
  if (!json_object_object_get_ex (labels, key, &v) || v == NULL)
    return false;
  return colon == NULL || strcmp (json_object_get_string (v), colon + 1) == 0;
}

static bool
keep (struct srv_req *r, json_object *o)
{
  const char *states[8], *labels[32], *name = srv_query (r, "name");
  size_t ns = srv_query_all (r, "state", states, 8), nl = srv_query_all (r, "label", labels, 32), i;
  const char *st = rt_json_str (o, "state");

  if (name && (rt_json_str (o, "name") == NULL || strcmp (rt_json_str (o, "name"), name) != 0))
    return false;
  for (i = 0; i < ns; i++)
    if (st && strcmp (st, states[i]) == 0)
      break;
  if (ns && i == ns)
    return false;
  for (i = 0; i < nl; i++)
    if (!has_label (o, labels[i]))
      return false;
  return true;
}

void
srv_sandbox_list (struct srv_req *r)
{
  const char *inc = srv_query (r, "includeStopped"), *state[1];
  cleanup_error rt_error *err = NULL;
  cleanup_json json_object *all = NULL;
  json_object *out;
  rt_context *ctx = srv_ctx (r);
  /* A state filter reaches every state it names, stopped ones too,
     without includeStopped (Runtime Cloud's list, docs/API.md).  */
  bool stopped = (inc && strcmp (inc, "true") == 0) || srv_query_all (r, "state", state, 1) > 0;

  if (ctx == NULL)
    return;
  if (rt_sandbox_list (ctx, stopped, RT_VIEW_TENANT, &all, &err) < 0)
    return srv_reply_rt_error (r, err);
  out = json_object_new_array ();
  for (size_t i = 0; all && i < json_object_array_length (all); i++)
    {
      json_object *o = json_object_array_get_idx (all, i);
      if (!keep (r, o))
        continue;
      json_object_array_add (out, json_object_get (o));
    }
  srv_reply_page (r, out);
}

void
srv_sandbox_get (struct srv_req *r)
{
  cleanup_error rt_error *err = NULL;
  const char *want = srv_query (r, "waitFor"), *t = srv_query (r, "timeoutSeconds");
  rt_context *ctx = srv_ctx (r);
  json_object *info;
  char *end = NULL;
  long timeout = 60;

  if (ctx == NULL)
    return;
  if (want && !rt_state_is (want, RT_SANDBOX_RUNNING) && !rt_state_is (want, RT_SANDBOX_PAUSED)
      && !rt_state_is (want, RT_SANDBOX_STOPPED))
    return srv_reply_error (r, 400, "invalid_request", "running, paused or stopped", NULL,
                            "waitFor must be running, paused or stopped, not '%s'", want);
  if (t && ((timeout = strtol (t, &end, 10)) < 0 || timeout > 120 || *end || end == t))
    return srv_reply_error (r, 400, "invalid_request", NULL, NULL, "timeoutSeconds must be 0 to 120");
  if (want)
    info = srv_sandbox_wait (r, ctx, srv_param (r, "id"), want, (int) timeout, &err);
  else
    info = srv_sandbox_info (ctx, srv_param (r, "id"), &err);
  if (info == NULL)
    return srv_reply_rt_error (r, err);
  srv_reply_json (r, 200, info);
}

/* Where a deleted sandbox's answer is kept, so that a repeat DELETE gets it
   again (docs/API.md) while the library forgets the sandbox, as
   `runtime sandbox rm` does (the CLI in client mode deletes through here):
   <data>/serve/deleted/<tenant>/<id>.  NULL for what is not an id.  */
static char *
deleted_path (rt_context *ctx, const char *id, bool dir)
{
  if (id == NULL || strlen (id) != 15 || strncmp (id, "sb-", 3) != 0 || strspn (id + 3, "0123456789abcdef") != 12)
    return NULL;
  return rt_strdup_printf ("%s/serve/deleted/%s%s%s", ctx->data_dir, ctx->tenant ? ctx->tenant : "-", dir ? "" : "/",
                           dir ? "" : id);
}

/* A DELETE of what is not there: the answer it got when it was.  */
static void
deleted_again (struct srv_req *r, rt_context *ctx, rt_error *err)
{
  cleanup_free char *path = deleted_path (ctx, srv_param (r, "id"), false), *text = NULL;
  json_object *o;

  if (strcmp (err->code, "not_found") == 0 && path && rt_read_file (path, &text, NULL, NULL) == 0
      && (o = json_tokener_parse (text)))
    return srv_reply_json (r, 200, o);
  /* Gone another way (run, the host's rm, an answer swept): done, as
     locally, when the ledger knows it for this tenant (rt_sandbox_remove).  */
  if (strcmp (err->code, "not_found") == 0 && rt_sandbox_remove (ctx, srv_param (r, "id"), NULL) == 0)
    {
      o = json_object_new_object ();
      json_object_object_add (o, "id", json_object_new_string (srv_param (r, "id")));
      json_object_object_add (o, "status", json_object_new_string ("deleted"));
      json_object_object_add (o, "state", json_object_new_string ("stopped"));
      return srv_reply_json (r, 200, o);
    }
  srv_reply_rt_error (r, err);
}

/* Keeps @o for repeats and forgets the sandbox.  */
static int
forget (rt_context *ctx, const char *id, json_object *o, rt_error **err)
{
  cleanup_free char *dir = deleted_path (ctx, id, true), *path = deleted_path (ctx, id, false);
  const char *text = json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

  if (dir == NULL || path == NULL)
    return rt_error_set (err, EINVAL, "internal", "'%s' is not a sandbox id", id ? id : "");
  if (rt_mkdir_p (dir, 0700, err) < 0 || rt_write_file_atomic (path, text, strlen (text), 0600, err) < 0)
    return -EIO;
  return rt_sandbox_remove (ctx, id, err);
}

void
srv_sandbox_delete (struct srv_req *r)
{
  cleanup_error rt_error *err = NULL;
  cleanup_json json_object *info = NULL;
  json_object *o, *v;
  rt_context *ctx = srv_ctx (r);
  rt_sandbox *sb = NULL;
  const char *st;

  if (ctx == NULL)
    return;
  info = srv_sandbox_info (ctx, srv_param (r, "id"), &err);
  if (info == NULL)
    return deleted_again (r, ctx, err);
  st = rt_json_str (info, "state");
  if (st && !rt_state_is (st, RT_SANDBOX_STOPPED))
    {
      /* Stopped, not forgotten: a repeat answers the same from the record.  */
      if (rt_sandbox_open (ctx, rt_json_str (info, "id"), &sb, &err) < 0
          && strcmp (err->code, "sandbox_stopped") != 0 && strcmp (err->code, "sandbox_not_ready") != 0)
        return srv_reply_rt_error (r, err);
      if (sb && rt_sandbox_destroy (sb, &err) < 0)
        return srv_reply_rt_error (r, err);
      json_object_put (info);
      info = srv_sandbox_info (ctx, srv_param (r, "id"), &err);
      if (info == NULL)
        return srv_reply_rt_error (r, err);
    }
  o = json_object_new_object ();
  for (const char *const *k = (const char *const[]){ "id", "kind", "name", "labels", NULL }; *k; k++)
    json_object_object_add (o, *k, json_object_object_get_ex (info, *k, &v) ? json_object_get (v) : NULL);
  json_object_object_add (o, "status", json_object_new_string ("deleted"));
  json_object_object_add (o, "state", json_object_new_string ("stopped"));
  v = json_object_object_get (info, "endedAt");
  json_object_object_add (o, "deletedAt", json_object_get (v));
  json_object_object_add (o, "endedAt", json_object_get (v));
  if (forget (ctx, rt_json_str (info, "id"), o, &err) < 0)
    {
      json_object_put (o);
      return srv_reply_rt_error (r, err);
    }
  srv_reply_json (r, 200, o);
}

/* The rule set's version and when it last changed: the library keeps only
   the rules, so the server counts their changes in <data>/serve/network/
   <id> ("VERSION EPOCH_MS", under flock).  A sandbox never changed is
   version 1 of its creation.  @bump: one more change, now.  */
static void
network_meta (rt_context *ctx, json_object *info, bool bump, int64_t *version, char updated[32])
{
  cleanup_free char *dir = rt_strdup_printf ("%s/serve/network", ctx->data_dir);
  cleanup_free char *path = dir ? rt_strdup_printf ("%s/%s", dir, rt_json_str (info, "id")) : NULL;
  cleanup_close int fd = -1;
  long long v = 1, ms = 0;
  char buf[64] = "";
  ssize_t n;

  snprintf (updated, 32, "%s", rt_json_str (info, "createdAt") ? rt_json_str (info, "createdAt") : "");
  *version = 1;
  if (path == NULL || (bump && rt_mkdir_p (dir, 0700, NULL) < 0))
    return;
  fd = open (path, (bump ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0 || flock (fd, bump ? LOCK_EX : LOCK_SH) < 0)
    return;
  n = pread (fd, buf, sizeof buf - 1, 0);
  if (n > 0 && sscanf (buf, "%lld %lld", &v, &ms) != 2)
    v = 1, ms = 0;
  if (bump)
    {
      v++;
      ms = rt_epoch_ms ();
      n = snprintf (buf, sizeof buf, "%lld %lld\n", v, ms);
      if (ftruncate (fd, 0) < 0 || pwrite (fd, buf, n, 0) != n)
        return;
    }
  *version = v;
  if (ms > 0)
    rt_format_time (ms, updated);
}

static json_object *
network_of (rt_context *ctx, json_object *info, bool bump)
{
  json_object *o = json_object_new_object (), *net = json_object_object_get (info, "network"), *v;
  const char *st = rt_json_str (info, "state");
  char updated[32];
  int64_t version;

  network_meta (ctx, info, bump, &version, updated);
  json_object_object_add (o, "sandboxId", json_object_new_string (rt_json_str (info, "id")));
  json_object_object_add (o, "version", json_object_new_int64 (version));
  json_object_object_add (
      o, "internet",
      json_object_new_boolean (!json_object_object_get_ex (net, "internet", &v) || json_object_get_boolean (v)));
  for (const char *const *k = (const char *const[]){ "allow", "deny", NULL }; *k; k++)
    json_object_object_add (
        o, *k, json_object_object_get_ex (net, *k, &v) && v ? json_object_get (v) : json_object_new_array ());
  /* A paused sandbox's rules take effect when it wakes.  */
  json_object_object_add (o, "enforced", json_object_new_boolean (st && rt_state_is (st, RT_SANDBOX_RUNNING)));
  json_object_object_add (o, "updatedAt", json_object_new_string (updated));
  return o;
}

void
srv_network_get (struct srv_req *r)
{
  cleanup_error rt_error *err = NULL;
  cleanup_json json_object *info = NULL;
  rt_context *ctx = srv_ctx (r);

  if (ctx == NULL)
    return;
  if ((info = srv_sandbox_info (ctx, srv_param (r, "id"), &err)) == NULL)
    return srv_reply_rt_error (r, err);
  srv_reply_json (r, 200, network_of (ctx, info, false));
}

void
srv_network_put (struct srv_req *r)
{
  cleanup_json json_object *body = srv_body_json (r, srv_fields_network);
  cleanup_json json_object *issues = json_object_new_array (), *info = NULL;
  cleanup_strv char **allow = NULL, **deny = NULL;
  cleanup_error rt_error *err = NULL;
  rt_sandbox *sb = NULL;
  rt_context *ctx;
  bool internet = true;
  int ret;

  if (body == NULL || (ctx = srv_ctx (r)) == NULL)
    return;
  if (!json_object_object_get_ex (body, "internet", NULL))
    srv_issue (issues, "internet", "required (the whole rule set is replaced)");
  network_parse (body, "", &internet, &allow, &deny, issues);
  if (srv_reply_issues (r, issues))
    return;
  if (rt_sandbox_open (ctx, srv_param (r, "id"), &sb, &err) < 0)
    return srv_reply_rt_error (r, err);
  ret = rt_sandbox_set_network (sb, internet, (const char *const *) allow, (const char *const *) deny, NULL, &err);
  if (ret == 0)
    info = srv_sandbox_info (ctx, rt_sandbox_id (sb), &err);
  rt_sandbox_close (sb);
  if (ret < 0 || info == NULL)
    return srv_reply_rt_error (r, err);
  srv_reply_json (r, 200, network_of (ctx, info, true));
}
