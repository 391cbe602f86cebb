/* account.c - egress secrets, usage and nodes in client mode.  A
   secret's value goes to the server once, in the PUT's body; no answer
   holds it.  */
#include <string.h>

#include "remote/http.h"
#include "remote/account.h"

static char *
secret_path (const char *name)
{
  cleanup_free char *esc = rt_remote_escape (name);
  return esc ? rt_strdup_printf ("/v1/egress-secrets/%s", esc) : NULL;
}

int
rt_remote_secret_set (rt_context *ctx, const char *name, const char *value, size_t len, const rt_secret_opts *opts,
                      char **placeholder, rt_error **err)
{
  cleanup_free char *path = secret_path (name);
  cleanup_json json_object *body = json_object_new_object (), *reply = NULL;
  json_object *list;
  const char *ph;
  int ret;

  if (path == NULL)
    return rt_error_oom (err);
  json_object_object_add (body, "value", json_object_new_string_len (value, (int) len));
  json_object_object_add (body, "hosts", rt_remote_strings (opts->hosts));
  if (opts->header)
    json_object_object_add (body, "header", json_object_new_string (opts->header));
  if (opts->format)
    json_object_object_add (body, "format", json_object_new_string (opts->format));
  if (opts->in_url)
    json_object_object_add (body, "inUrl", json_object_new_boolean (true));
  if (opts->rules && *opts->rules)
    json_object_object_add (body, "rules", rt_remote_strings (opts->rules));
  ret = rt_remote_json (ctx, "PUT", path, body, NULL, &reply, err);
  /* The body held the value: not left in freed memory.  */
  {
    json_object *v;
    if (json_object_object_get_ex (body, "value", &v))
      explicit_bzero ((char *) json_object_get_string (v), len);
  }
  if (ret < 0)
    return ret;
  ph = rt_json_str (reply, "placeholder");
  /* An answer that is the whole list: this secret's entry in it.  */
  if (ph == NULL && json_object_object_get_ex (reply, "secrets", &list))
    for (size_t i = 0; ph == NULL && i < json_object_array_length (list); i++)
      {
        json_object *e = json_object_array_get_idx (list, i);
        if (rt_json_str (e, "name") && strcmp (rt_json_str (e, "name"), name) == 0)
          ph = rt_json_str (e, "placeholder");
      }
  if (ph == NULL)
    return rt_error_set (err, EIO, "internal", "%s answered without the secret's placeholder", ctx->api_url);
  if (placeholder)
    {
      *placeholder = strdup (ph);
      if (*placeholder == NULL)
        return rt_error_oom (err);
    }
  return 0;
}

int
rt_remote_secret_list_json (rt_context *ctx, char **json, rt_error **err)
{
  return rt_remote_list_text (ctx, "/v1/egress-secrets", "secrets", json, err);
}

int
rt_remote_secret_remove (rt_context *ctx, const char *name, rt_error **err)
{
  cleanup_free char *path = secret_path (name);

  if (path == NULL)
    return rt_error_oom (err);
  return rt_remote_json (ctx, "DELETE", path, NULL, NULL, NULL, err);
}

int
rt_remote_usage_json (rt_context *ctx, char **json, rt_error **err)
{
  return rt_remote_get_text (ctx, "/v1/usage", json, err);
}

int
rt_remote_node_list_json (rt_context *ctx, char **json, rt_error **err)
{
  return rt_remote_list_text (ctx, "/v1/nodes?limit=100", NULL, json, err);
}
