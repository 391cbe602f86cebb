/* sandboxes.c - sandboxes in client mode: create, open, get, list, remove
   and the lifecycle verbs as calls to /v1/sandboxes (docs/API.md).  The
   server's SandboxInfo is the library's own object, so it is handed on as
   it came.  */
#include <string.h>

#include "core/state.h"
#include "remote/http.h"
#include "remote/sandboxes.h"
#include "sandbox/handle.h"

char *
rt_remote_sandbox_path (const char *ref, const char *suffix)
{
  cleanup_free char *esc = rt_remote_escape (ref);
  return esc ? rt_strdup_printf ("/v1/sandboxes/%s%s", esc, suffix ? suffix : "") : NULL;
}

json_object *
rt_remote_pairs (const char *const *pairs, bool env, rt_error **err)
{
  cleanup_json json_object *o = json_object_new_object ();

  for (const char *const *p = pairs; p && *p; p++)
    {
      const char *eq = strchr (*p, '=');
      cleanup_free char *key = eq ? strndup (*p, eq - *p) : NULL;

      if (eq == NULL || eq == *p)
        {
          if (!env)
            rt_error_set (err, EINVAL, "invalid_request", "a label is key=value, not '%s'", *p);
          else
            {
              rt_error_set (err, EINVAL, "invalid_env", "bad environment variable '%s'", *p);
              rt_error_hint (err, "names are [A-Za-z_][A-Za-z0-9_]* and values follow '='");
            }
          return NULL;
        }
      if (key == NULL)
        {
          rt_error_oom (err);
          return NULL;
        }
      json_object_object_add (o, key, json_object_new_string (eq + 1));
    }
  return steal_pointer (&o);
}

static void
add_str (json_object *o, const char *key, const char *v)
{
  if (v)
    json_object_object_add (o, key, json_object_new_string (v));
}

static void
add_uint (json_object *o, const char *key, unsigned v)
{
  if (v)
    json_object_object_add (o, key, json_object_new_int64 (v));
}

/* The body of POST /v1/sandboxes: only what @cfg sets, so that the
   server's defaults are the library's.  */
static json_object *
create_body (const rt_sandbox_config *cfg, rt_error **err)
{
  cleanup_json json_object *b = json_object_new_object ();
  json_object *labels = rt_remote_pairs (cfg->labels, false, err), *env;

  if (labels == NULL)
    return NULL;
  json_object_object_add (b, "labels", labels);
  if ((env = rt_remote_pairs (cfg->env, true, err)) == NULL)
    return NULL;
  json_object_object_add (b, "env", env);
  add_str (b, "name", cfg->name);
  add_str (b, "funding", cfg->funding);
  add_str (b, "image", cfg->image);
  add_str (b, "snapshot", cfg->snapshot);
  add_uint (b, "vcpu", cfg->vcpu);
  add_uint (b, "memoryMiB", cfg->memory_mib);
  add_uint (b, "diskMiB", cfg->disk_mib);
  add_uint (b, "timeoutSeconds", cfg->timeout_s);
  add_uint (b, "idlePauseSeconds", cfg->idle_pause_s);
  /* Nobody may come back for a `run` sandbox the client could not delete
     (a kill -9): its lease end stops it rather than keeps it.  */
  add_str (b, "onLeaseEnd", cfg->on_timeout ? cfg->on_timeout : cfg->ephemeral ? "stop" : NULL);
  if (cfg->auto_wake)
    json_object_object_add (b, "autoWake", json_object_new_boolean (true));
  if (cfg->max_cost_micros > 0)
    json_object_object_add (b, "maxCostMicros", json_object_new_int64 (cfg->max_cost_micros));
  if (cfg->get_or_create)
    json_object_object_add (b, "getOrCreate", json_object_new_boolean (true));
  if (cfg->cold)
    json_object_object_add (b, "cold", json_object_new_boolean (true));
  if (cfg->no_internet || (cfg->allow && *cfg->allow) || (cfg->deny && *cfg->deny))
    {
      json_object *n = json_object_new_object ();
      json_object_object_add (n, "internet", json_object_new_boolean (!cfg->no_internet));
      json_object_object_add (n, "allow", rt_remote_strings (cfg->allow));
      json_object_object_add (n, "deny", rt_remote_strings (cfg->deny));
      json_object_object_add (b, "network", n);
    }
  return steal_pointer (&b);
}

static int
handle_for (rt_context *ctx, json_object *info, rt_sandbox **out, rt_error **err)
{
  const char *id = rt_json_str (info, "id");

  if (id == NULL || strlen (id) >= sizeof ((*out)->id))
    return rt_error_set (err, EIO, "internal", "%s answered without a sandbox id", ctx->api_url);
  *out = rt_sandbox_handle_new (ctx, id);
  return *out ? 0 : rt_error_oom (err);
}

int
rt_remote_sandbox_create (rt_context *ctx, const rt_sandbox_config *cfg, rt_sandbox **out, rt_error **err)
{
  static const rt_sandbox_config defaults = { 0 };
  cleanup_json json_object *body = NULL, *info = NULL;
  int ret;

  if (cfg == NULL)
    cfg = &defaults;
  body = create_body (cfg, err);
  if (body == NULL)
    return -EINVAL;
  ret = rt_remote_json (ctx, "POST", "/v1/sandboxes", body, cfg->no_wait ? "wait=0" : NULL, &info, err);
  if (ret == 0)
    ret = handle_for (ctx, info, out, err);
  return ret;
}

int
rt_remote_sandbox_open (rt_context *ctx, const char *ref, rt_sandbox **out, rt_error **err)
{
  cleanup_free char *path = rt_remote_sandbox_path (ref, NULL);
  cleanup_json json_object *info = NULL;
  const char *st;
  int ret;

  if (path == NULL)
    return rt_error_oom (err);
  ret = rt_remote_json (ctx, "GET", path, NULL, NULL, &info, err);
  if (ret < 0)
    return ret;
  st = rt_json_str (info, "state");
  if (st && (rt_state_is (st, RT_SANDBOX_STOPPED) || rt_state_is (st, RT_SANDBOX_STOPPING)))
    {
      rt_error_set (err, ENOENT, "sandbox_stopped", "sandbox %s is stopped", rt_json_str (info, "id"));
      return rt_error_hint (err, "runtime sandbox create starts a new one");
    }
  return handle_for (ctx, info, out, err);
}

int
rt_remote_sandbox_info (rt_context *ctx, const char *ref, enum rt_view who, json_object **out, rt_error **err)
{
  /* The server gives its clients a tenant's view whatever is asked.  */
  (void) who;
  cleanup_free char *path = rt_remote_sandbox_path (ref, NULL);

  return path ? rt_remote_json (ctx, "GET", path, NULL, NULL, out, err) : rt_error_oom (err);
}

int
rt_remote_sandbox_list (rt_context *ctx, bool all, enum rt_view who, json_object **out, rt_error **err)
{
  (void) who;
  return rt_remote_list (ctx, all ? "/v1/sandboxes?includeStopped=true&limit=100" : "/v1/sandboxes?limit=100", NULL,
                         out, err);
}

int
rt_remote_sandbox_remove (rt_context *ctx, const char *ref, rt_error **err)
{
  cleanup_free char *path = rt_remote_sandbox_path (ref, NULL);
  rt_error *e = NULL;
  int ret;

  if (path == NULL)
    return rt_error_oom (err);
  ret = rt_remote_json (ctx, "DELETE", path, NULL, NULL, NULL, &e);
  /* As locally: the server answers a repeat of a delete as the first
     (200), and not_found only for what never was.  */
  if (ret < 0 && err && *err == NULL)
    *err = steal_pointer (&e);
  rt_error_free (e);
  return ret;
}

int
rt_remote_sandbox_verb (rt_sandbox *sb, const char *verb, rt_error **err)
{
  cleanup_free char *suffix = rt_strdup_printf (":%s", verb);
  cleanup_free char *path = suffix ? rt_remote_sandbox_path (sb->id, suffix) : NULL;
  rt_error *e = NULL;
  int ret;

  if (path == NULL)
    return rt_error_oom (err);
  /* Without Prefer: wait the server answers once the change is done, as
     the local verbs return.  */
  ret = rt_remote_json (sb->ctx, "POST", path, NULL, NULL, NULL, &e);
  /* Waking a running sandbox is not an error here (rt_sandbox_wake).  */
  if (ret < 0 && strcmp (verb, "wake") == 0 && strcmp (e->code, "not_paused") == 0)
    ret = 0;
  else if (ret < 0 && err && *err == NULL)
    *err = steal_pointer (&e);
  rt_error_free (e);
  return ret;
}

int
rt_remote_sandbox_destroy (rt_sandbox *sb, rt_error **err)
{
  /* Stopped, its record kept, as a local `sandbox run` leaves it (a DELETE
     would forget it: remote/sandboxes.h).  */
  int ret = rt_remote_sandbox_verb (sb, "stop", err);
  rt_sandbox_close (sb);
  return ret;
}

/* POST {id}:@verb with @body; the answer's text in *json when asked.  */
static int
verb_json (rt_sandbox *sb, const char *verb, json_object *body, json_object **reply, rt_error **err)
{
  cleanup_free char *path = rt_remote_sandbox_path (sb->id, verb);

  if (path == NULL)
    return rt_error_oom (err);
  return rt_remote_json (sb->ctx, "POST", path, body, NULL, reply, err);
}

int
rt_remote_sandbox_extend (rt_sandbox *sb, unsigned seconds, char **expires_at, rt_error **err)
{
  cleanup_json json_object *body = json_object_new_object (), *info = NULL;
  const char *end;
  int ret;

  json_object_object_add (body, "seconds", json_object_new_int64 (seconds));
  ret = verb_json (sb, ":extend", body, &info, err);
  if (ret < 0)
    return ret;
  end = rt_json_str (info, "expiresAt");
  *expires_at = strdup (end ? end : "");
  return *expires_at ? 0 : rt_error_oom (err);
}

int
rt_remote_sandbox_update (rt_sandbox *sb, int idle_pause_s, int auto_wake, char **json, rt_error **err)
{
  cleanup_json json_object *body = json_object_new_object (), *info = NULL;
  int ret;

  if (idle_pause_s >= 0)
    json_object_object_add (body, "idlePauseSeconds", json_object_new_int (idle_pause_s));
  if (auto_wake >= 0)
    json_object_object_add (body, "autoWake", json_object_new_boolean (auto_wake));
  ret = verb_json (sb, ":update", body, &info, err);
  if (ret < 0 || json == NULL)
    return ret;
  return rt_remote_text (info, json, err);
}

int
rt_remote_sandbox_set_network (rt_sandbox *sb, bool internet, const char *const *allow, const char *const *deny,
                               char **json, rt_error **err)
{
  cleanup_free char *path = rt_remote_sandbox_path (sb->id, "/network");
  cleanup_json json_object *body = json_object_new_object (), *reply = NULL, *local = NULL;
  json_object *v;
  int ret;

  if (path == NULL)
    return rt_error_oom (err);
  json_object_object_add (body, "internet", json_object_new_boolean (internet));
  json_object_object_add (body, "allow", rt_remote_strings (allow));
  json_object_object_add (body, "deny", rt_remote_strings (deny));
  ret = rt_remote_json (sb->ctx, "PUT", path, body, NULL, &reply, err);
  if (ret < 0 || json == NULL)
    return ret;
  /* The local answer's shape: {internet, allow, deny, closed}.  */
  local = json_object_new_object ();
  for (const char *const *k = (const char *const[]){ "internet", "allow", "deny", "closed", NULL }; *k; k++)
    if (json_object_object_get_ex (reply, *k, &v))
      json_object_object_add (local, *k, json_object_get (v));
  if (!json_object_object_get_ex (local, "closed", NULL))
    json_object_object_add (local, "closed", json_object_new_int (0));
  return rt_remote_text (local, json, err);
}

int
rt_remote_sandbox_metrics_json (rt_sandbox *sb, char **json, rt_error **err)
{
  cleanup_free char *path = rt_remote_sandbox_path (sb->id, "/metrics");

  return path ? rt_remote_get_text (sb->ctx, path, json, err) : rt_error_oom (err);
}

/* {name?, labels?} of :snapshot and :fork.  */
static json_object *
named_body (const char *name, const char *const *labels, rt_error **err)
{
  cleanup_json json_object *body = json_object_new_object ();
  json_object *l = NULL;

  add_str (body, "name", name);
  if (labels && *labels)
    {
      if ((l = rt_remote_pairs (labels, false, err)) == NULL)
        return NULL;
      json_object_object_add (body, "labels", l);
    }
  return steal_pointer (&body);
}

int
rt_remote_sandbox_snapshot (rt_sandbox *sb, const char *name, const char *const *labels, char **json, rt_error **err)
{
  cleanup_json json_object *body = named_body (name, labels, err), *reply = NULL;
  int ret;

  if (body == NULL)
    return -EINVAL;
  ret = verb_json (sb, ":snapshot", body, &reply, err);
  return ret < 0 ? ret : rt_remote_text (reply, json, err);
}

int
rt_remote_sandbox_fork (rt_sandbox *sb, unsigned count, const char *name, const char *const *labels, char ***ids,
                        rt_error **err)
{
  cleanup_json json_object *body = named_body (name, labels, err), *reply = NULL;
  json_object *list;
  size_t n;
  char **out;
  int ret;

  if (body == NULL)
    return -EINVAL;
  json_object_object_add (body, "count", json_object_new_int64 (count));
  ret = verb_json (sb, ":fork", body, &reply, err);
  if (ret < 0)
    return ret;
  if (!json_object_object_get_ex (reply, "sandboxes", &list) || !json_object_is_type (list, json_type_array))
    return rt_error_set (err, EIO, "internal", "%s answered :fork without sandboxes", sb->ctx->api_url);
  n = json_object_array_length (list);
  out = calloc (n + 1, sizeof (*out));
  if (out == NULL)
    return rt_error_oom (err);
  for (size_t i = 0; i < n; i++)
    {
      const char *id = rt_json_str (json_object_array_get_idx (list, i), "id");
      if ((out[i] = strdup (id ? id : "")) == NULL)
        {
          for (size_t j = 0; j < i; j++)
            free (out[j]);
          free (out);
          return rt_error_oom (err);
        }
    }
  *ids = out;
  return 0;
}
