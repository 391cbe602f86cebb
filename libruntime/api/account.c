/* account.c - who is asking (/v1/me), what it used (/v1/usage), and a
   health check for supervisors and tests.
   (no header of its own: handlers.h declares its routes).  */
#include "api/handlers.h"

void
srv_me (struct srv_req *r)
{
  const struct rt_token_info *t = srv_token (r);
  json_object *o = json_object_new_object (), *lim = json_object_new_object ();

  json_object_object_add (o, "principalId", json_object_new_string (t->name));
  json_object_object_add (o, "kind", json_object_new_string ("token"));
  json_object_object_add (o, "name", json_object_new_string (t->name));
  json_object_object_add (lim, "maxSandboxes", t->max_sandboxes ? json_object_new_int (t->max_sandboxes) : NULL);
  json_object_object_add (lim, "maxVcpu", t->max_vcpu ? json_object_new_int (t->max_vcpu) : NULL);
  json_object_object_add (lim, "maxCostMicros", t->max_cost_micros ? json_object_new_int64 (t->max_cost_micros) : NULL);
  json_object_object_add (lim, "maxSnapshots",
                          json_object_new_int (t->max_snapshots ? t->max_snapshots : RT_TOKEN_DEFAULT_SNAPSHOTS));
  json_object_object_add (lim, "ratePerSecond", json_object_new_int (t->rate ? t->rate : RT_TOKEN_DEFAULT_RATE));
  json_object_object_add (o, "limits", lim);
  srv_reply_json (r, 200, o);
}

void
srv_usage (struct srv_req *r)
{
  cleanup_error rt_error *err = NULL;
  cleanup_free char *text = NULL;
  rt_context *ctx = srv_ctx (r);

  if (ctx == NULL)
    return;
  if (rt_usage_json (ctx, &text, &err) < 0)
    return srv_reply_rt_error (r, err);
  srv_reply_json_text (r, 200, text);
}

void
srv_health (struct srv_req *r)
{
  json_object *o = json_object_new_object ();

  json_object_object_add (o, "ok", json_object_new_boolean (true));
  json_object_object_add (o, "version", json_object_new_string (rt_version ()));
  srv_reply_json (r, 200, o);
}
