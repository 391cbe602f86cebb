/* sandboxes.c - the sandbox: create, list, get, delete, its lifecycle
   verbs, network, metrics, and snapshots (docs/API.md).
   (no header of its own: handlers.h declares its routes).  */
#include <string.h>

#include "common/util.h"
#include "serve/handlers.h"

/* A sandbox as the API shows it: the library's object without what only
   the host may see.  */
static json_object *
sandbox_info (rt_context *ctx, const char *ref, rt_error **err)
{
  cleanup_free char *text = NULL;
  json_object *o, *paused;

  if (rt_sandbox_get_json (ctx, ref, &text, err) < 0)
    return NULL;
  o = json_tokener_parse (text);
  if (o == NULL)
    {
      rt_error_set (err, EIO, "internal", "the sandbox's state could not be read");
      return NULL;
    }
  json_object_object_del (o, "jail");
  json_object_object_del (o, "tenant");
  if (json_object_object_get_ex (o, "paused", &paused) && json_object_is_type (paused, json_type_object))
    json_object_object_del (paused, "path");
  return o;
}

/* "k=v" strings of a JSON object of strings; NULL (and an issue) when a
   value is not a string.  */
static char **
pairs_of (json_object *obj, const char *field, json_object *issues)
{
  size_t n = obj ? json_object_object_length (obj) : 0, i = 0;
  char **v = calloc (n + 1, sizeof (*v));

  if (v == NULL || obj == NULL)
    return v;
  json_object_object_foreach (obj, key, val)
  {
    if (!json_object_is_type (val, json_type_string))
      {
        json_object *o = json_object_new_object ();
        char *path = rt_strdup_printf ("%s.%s", field, key);
        json_object_object_add (o, "path", json_object_new_string (path ? path : field));
        json_object_object_add (o, "message", json_object_new_string ("must be a string"));
        json_object_array_add (issues, o);
        free (path);
        continue;
      }
    v[i++] = rt_strdup_printf ("%s=%s", key, json_object_get_string (val));
  }
  return v;
}

static char **
strings_of (json_object *arr)
{
  size_t n = arr && json_object_is_type (arr, json_type_array) ? json_object_array_length (arr) : 0;
  char **v = calloc (n + 1, sizeof (*v));

  for (size_t i = 0; v && i < n; i++)
    v[i] = strdup (json_object_get_string (json_object_array_get_idx (arr, i)));
  return v;
}

static const struct srv_field create_fields[] = {
  { "name", json_type_string },         { "labels", json_type_object },     { "env", json_type_object },
  { "funding", json_type_string },      { "vcpu", json_type_int },          { "memoryMiB", json_type_int },
  { "diskMiB", json_type_int },         { "timeoutSeconds", json_type_int }, { "onLeaseEnd", json_type_string },
  { "idlePauseSeconds", json_type_int }, { "autoWake", json_type_boolean }, { "maxCostMicros", json_type_int },
  { "getOrCreate", json_type_boolean }, { "network", json_type_object },    { "image", json_type_string },
  { "snapshot", json_type_string },     { "cold", json_type_boolean },      { NULL, 0 },
};

static const struct srv_field network_fields[] = {
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

void
srv_sandbox_create (struct srv_req *r)
{
  cleanup_json json_object *body = srv_body_json (r, create_fields);
  cleanup_json json_object *issues = json_object_new_array ();
  cleanup_strv char **labels = NULL, **env = NULL, **allow = NULL, **deny = NULL;
  cleanup_error rt_error *err = NULL;
  rt_sandbox_config cfg = { 0 };
  json_object *net = NULL, *v;
  rt_sandbox *sb = NULL;
  rt_context *ctx;
  bool reused = false;
  json_object *info;

  if (body == NULL || (ctx = srv_ctx (r)) == NULL)
    return;
  labels = pairs_of (json_object_object_get_ex (body, "labels", &v) ? v : NULL, "labels", issues);
  env = pairs_of (json_object_object_get_ex (body, "env", &v) ? v : NULL, "env", issues);
  if (json_object_object_get_ex (body, "network", &net) && net)
    {
      json_object *nb = json_object_new_object ();
      json_object_object_foreach (net, key, val)
      {
        const struct srv_field *f;
        for (f = network_fields; f->name && strcmp (f->name, key) != 0; f++)
          ;
        if (f->name == NULL)
          {
            json_object *o = json_object_new_object ();
            char *path = rt_strdup_printf ("network.%s", key);
            json_object_object_add (o, "path", json_object_new_string (path ? path : "network"));
            json_object_object_add (o, "message", json_object_new_string ("unknown field"));
            json_object_array_add (issues, o);
            free (path);
          }
        (void) val;
      }
      json_object_put (nb);
      if (json_object_object_get_ex (net, "internet", &v) && v && !json_object_get_boolean (v))
        cfg.no_internet = true;
      allow = json_object_object_get_ex (net, "allow", &v) && v ? strings_of (v) : NULL;
      deny = json_object_object_get_ex (net, "deny", &v) && v ? strings_of (v) : NULL;
    }
  if (json_object_array_length (issues) > 0)
    {
      json_object *details = json_object_new_object ();
      json_object_object_add (details, "issues", json_object_get (issues));
      return srv_reply_error (r, 400, "invalid_request", "see details.issues", details, "wrong fields: %s",
                              rt_json_str (json_object_array_get_idx (issues, 0), "path"));
    }
  cfg.name = rt_json_str (body, "name");
  cfg.labels = (const char *const *) labels;
  cfg.env = (const char *const *) env;
  cfg.funding = rt_json_str (body, "funding");
  cfg.vcpu = uint_of (body, "vcpu");
  cfg.memory_mib = uint_of (body, "memoryMiB");
  cfg.disk_mib = uint_of (body, "diskMiB");
  cfg.timeout_s = uint_of (body, "timeoutSeconds");
  cfg.on_timeout = rt_json_str (body, "onLeaseEnd");
  cfg.idle_pause_s = uint_of (body, "idlePauseSeconds");
  cfg.auto_wake = json_object_object_get_ex (body, "autoWake", &v) && json_object_get_boolean (v);
  cfg.max_cost_micros = rt_json_i64 (body, "maxCostMicros");
  cfg.get_or_create = json_object_object_get_ex (body, "getOrCreate", &v) && json_object_get_boolean (v);
  cfg.image = rt_json_str (body, "image");
  cfg.snapshot = rt_json_str (body, "snapshot");
  cfg.cold = json_object_object_get_ex (body, "cold", &v) && json_object_get_boolean (v);
  cfg.allow = (const char *const *) allow;
  cfg.deny = (const char *const *) deny;
  cfg.no_wait = srv_prefer_wait (r) == 0;
  if (cfg.get_or_create && cfg.name)
    {
      cleanup_free char *text = NULL;
      reused = rt_sandbox_get_json (ctx, cfg.name, &text, NULL) == 0 && strstr (text, "\"state\":\"stopped\"") == NULL;
    }
  if (rt_sandbox_create (ctx, &cfg, &sb, &err) < 0)
    return srv_reply_rt_error (r, err);
  info = sandbox_info (ctx, rt_sandbox_id (sb), &err);
  rt_sandbox_close (sb);
  if (info == NULL)
    return srv_reply_rt_error (r, err);
  if (cfg.get_or_create)
    json_object_object_add (info, "reused", json_object_new_boolean (reused));
  srv_reply_json (r, reused ? 200 : 201, info);
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
  const char *inc = srv_query (r, "includeStopped");
  cleanup_error rt_error *err = NULL;
  cleanup_free char *text = NULL;
  cleanup_json json_object *all = NULL;
  json_object *out;
  rt_context *ctx = srv_ctx (r);

  if (ctx == NULL)
    return;
  if (rt_sandbox_list_json (ctx, inc && strcmp (inc, "true") == 0, &text, &err) < 0)
    return srv_reply_rt_error (r, err);
  all = json_tokener_parse (text);
  out = json_object_new_array ();
  for (size_t i = 0; all && i < json_object_array_length (all); i++)
    {
      json_object *o = json_object_array_get_idx (all, i), *paused;
      if (!keep (r, o))
        continue;
      json_object_object_del (o, "jail");
      json_object_object_del (o, "tenant");
      if (json_object_object_get_ex (o, "paused", &paused) && json_object_is_type (paused, json_type_object))
        json_object_object_del (paused, "path");
      json_object_array_add (out, json_object_get (o));
    }
  srv_reply_page (r, out);
}

void
srv_sandbox_get (struct srv_req *r)
{
  cleanup_error rt_error *err = NULL;
  rt_context *ctx = srv_ctx (r);
  json_object *info;

  if (ctx == NULL)
    return;
  info = sandbox_info (ctx, srv_param (r, "id"), &err);
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
  info = sandbox_info (ctx, srv_param (r, "id"), &err);
  if (info == NULL)
    return deleted_again (r, ctx, err);
  st = rt_json_str (info, "state");
  if (st && strcmp (st, "stopped") != 0)
    {
      if (rt_sandbox_open (ctx, rt_json_str (info, "id"), &sb, &err) < 0 && strcmp (err->code, "sandbox_not_ready") != 0)
        return srv_reply_rt_error (r, err);
      if (sb && rt_sandbox_destroy (sb, &err) < 0)
        return srv_reply_rt_error (r, err);
      json_object_put (info);
      info = sandbox_info (ctx, srv_param (r, "id"), &err);
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

SRV_NOT_YET (srv_sandbox_verb)
SRV_NOT_YET (srv_network_get)
SRV_NOT_YET (srv_network_put)
SRV_NOT_YET (srv_metrics)
SRV_NOT_YET (srv_snapshot_list)
SRV_NOT_YET (srv_snapshot_get)
SRV_NOT_YET (srv_snapshot_delete)
