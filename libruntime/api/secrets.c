/* secrets.c - egress secrets: set, list (never a value), remove, each
   token's own (the library's store follows the context's tenant).
   (no header of its own: handlers.h declares its routes).  */
#include <string.h>

#include "common/util.h"
#include "api/body.h"
#include "api/handlers.h"

/* The library's list, parsed; NULL after replying the error.  */
static json_object *
secrets_of (struct srv_req *r, rt_context *ctx)
{
  cleanup_error rt_error *err = NULL;
  cleanup_free char *text = NULL;
  json_object *all;

  if (rt_secret_list_json (ctx, &text, &err) < 0)
    {
      srv_reply_rt_error (r, err);
      return NULL;
    }
  all = json_tokener_parse (text);
  if (all == NULL)
    srv_reply_error (r, 500, "internal", NULL, NULL, "the secret store could not be read");
  return all;
}

void
srv_secret_list (struct srv_req *r)
{
  rt_context *ctx = srv_ctx (r);
  json_object *all, *out;

  if (ctx == NULL || (all = secrets_of (r, ctx)) == NULL)
    return;
  out = json_object_new_object ();
  json_object_object_add (out, "secrets", all);
  srv_reply_json (r, 200, out);
}

const struct srv_field srv_fields_secret[] = {
  { "value", json_type_string },
  { "hosts", json_type_array },
  { "header", json_type_string },
  { "format", json_type_string },
  { "inUrl", json_type_boolean },
  { "rules", json_type_array },
  { NULL, 0 },
};

bool
srv_secret_parse (struct srv_req *r, json_object **body_out, rt_secret_opts *opts, char ***hosts_out,
                  char ***rules_out)
{
  cleanup_json json_object *body = srv_body_json (r, srv_fields_secret);
  cleanup_json json_object *issues = json_object_new_array ();
  cleanup_strv char **hosts = NULL, **rules = NULL;
  json_object *v;

  if (body == NULL)
    return false;
  if (rt_json_str (body, "value") == NULL)
    srv_issue (issues, "value", "required");
  if (!json_object_object_get_ex (body, "hosts", &v) || v == NULL)
    srv_issue (issues, "hosts", "required: 1 to 16 host names");
  hosts = srv_strings_of (v, "hosts", RT_MAX_SECRET_HOSTS, issues);
  rules = srv_strings_of (json_object_object_get (body, "rules"), "rules", RT_MAX_SECRET_RULES, issues);
  if (srv_reply_issues (r, issues))
    return false;
  *opts = (rt_secret_opts){ 0 };
  opts->hosts = (const char *const *) hosts;
  opts->header = rt_json_str (body, "header");
  opts->format = rt_json_str (body, "format");
  opts->in_url = json_object_get_boolean (json_object_object_get (body, "inUrl"));
  opts->rules = (const char *const *) rules;
  *hosts_out = steal_pointer (&hosts);
  *rules_out = steal_pointer (&rules);
  *body_out = steal_pointer (&body);
  return true;
}

void
srv_secret_put (struct srv_req *r)
{
  cleanup_json json_object *body = NULL, *all = NULL;
  cleanup_strv char **hosts = NULL, **rules = NULL;
  cleanup_error rt_error *err = NULL;
  cleanup_free char *ph = NULL;
  const char *name = srv_param (r, "name"), *value;
  rt_secret_opts opts;
  rt_context *ctx;

  if ((ctx = srv_ctx (r)) == NULL || !srv_secret_parse (r, &body, &opts, &hosts, &rules))
    return;
  value = rt_json_str (body, "value");
  /* Its JSON length: a NUL inside ("\u0000") is the library's to refuse,
     not a place to cut the value silently.  */
  if (rt_secret_set_opts (ctx, name, value, json_object_get_string_len (json_object_object_get (body, "value")), &opts,
                          &ph, &err)
      < 0)
    return srv_reply_rt_error (r, err);
  if ((all = secrets_of (r, ctx)) == NULL)
    return;
  for (size_t i = 0; i < json_object_array_length (all); i++)
    if (strcmp (rt_json_str (json_object_array_get_idx (all, i), "name"), name) == 0)
      return srv_reply_json (r, 200, json_object_get (json_object_array_get_idx (all, i)));
  srv_reply_error (r, 500, "internal", NULL, NULL, "secret %s was set but is not in the store", name);
}

void
srv_secret_delete (struct srv_req *r)
{
  cleanup_error rt_error *err = NULL;
  rt_context *ctx = srv_ctx (r);
  json_object *o;

  if (ctx == NULL)
    return;
  if (rt_secret_remove (ctx, srv_param (r, "name"), &err) < 0)
    return srv_reply_rt_error (r, err);
  o = json_object_new_object ();
  json_object_object_add (o, "name", json_object_new_string (srv_param (r, "name")));
  json_object_object_add (o, "deleted", json_object_new_boolean (true));
  srv_reply_json (r, 200, o);
}
