/* sessions.c - POST, GET /v1/sandboxes/{id}/sessions and a session's
   revoke (DELETE, or POST :revoke as the withruntime SDK sends it): the
   routes of serve/sessions.h's table, for a token, never a session.
   (no header of its own: handlers.h declares its routes).  */
#include <string.h>

#include "api/body.h"
#include "api/handlers.h"
#include "common/util.h"
#include "serve/sessions.h"

const struct srv_field srv_fields_session[] = {
  { "ttlSeconds", json_type_int },
  { "origins", json_type_array },
  { "name", json_type_string },
  { NULL, 0 },
};

/* The id of the tenant's sandbox `{id}` names (its id or its name) into
   @out; false after answering 404.  */
static bool
sandbox_id (struct srv_req *r, char *out, size_t size)
{
  cleanup_error rt_error *err = NULL;
  cleanup_json json_object *info = NULL;
  rt_context *ctx = srv_ctx (r);
  const char *id;

  if (ctx == NULL)
    return false;
  info = srv_sandbox_info (ctx, srv_param (r, "id"), &err);
  if (info == NULL)
    {
      srv_reply_rt_error (r, err);
      return false;
    }
  id = rt_json_str (info, "id");
  if (id == NULL || strlen (id) >= size)
    {
      srv_reply_error (r, 500, "internal", NULL, NULL, "the sandbox has no id");
      return false;
    }
  snprintf (out, size, "%s", id);
  return true;
}

/* http(s)://Host of the request, as the client reached it, when its Host
   is a plain host[:port]; NULL otherwise.  */
static json_object *
api_url (struct srv_req *r, bool tls)
{
  const char *host = srv_header (r, "Host");
  size_t n = host ? strlen (host) : 0;
  cleanup_free char *url = NULL;

  if (n == 0 || n > 255
      || strspn (host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") != n)
    return NULL;
  url = rt_strdup_printf ("%s://%s", tls ? "https" : "http", host);
  return url ? json_object_new_string (url) : NULL;
}

/* The body's name and origins into @ss, its ttl in *ttl; false after
   answering 400 naming every wrong field.  */
static bool
session_body (struct srv_req *r, struct srv_session *ss, int64_t *ttl)
{
  cleanup_json json_object *body = srv_body_json (r, srv_fields_session);
  cleanup_json json_object *issues = json_object_new_array ();
  cleanup_strv char **origins = NULL;
  json_object *v;
  const char *name;

  if (body == NULL)
    return false;
  *ttl = SRV_SESSION_TTL_DEFAULT_S;
  if (json_object_object_get_ex (body, "ttlSeconds", &v) && v)
    {
      *ttl = json_object_get_int64 (v);
      if (*ttl < srv_sessions_min_ttl (r) || *ttl > SRV_SESSION_TTL_MAX_S)
        srv_issue (issues, "ttlSeconds", "60 to 86400");
    }
  origins = srv_strings_of (json_object_object_get (body, "origins"), "origins", SRV_SESSION_MAX_ORIGINS, issues);
  for (size_t i = 0; origins && origins[i]; i++)
    {
      char path[32];
      snprintf (path, sizeof path, "origins[%zu]", i);
      if (!srv_session_origin_valid (origins[i]))
        srv_issue (issues, path, "an exact origin: https://host[:port], or http://localhost[:port]");
      else
        snprintf (ss->origins[ss->norigins++], sizeof ss->origins[0], "%s", origins[i]);
    }
  name = rt_json_str (body, "name");
  if (name)
    {
      bool printable = strlen (name) >= 1 && strlen (name) <= SRV_SESSION_NAME_MAX;
      for (const unsigned char *c = (const unsigned char *) name; printable && *c; c++)
        printable = *c >= 0x20 && *c != 0x7f;
      if (!printable)
        srv_issue (issues, "name", "1 to 64 characters, no control characters");
      snprintf (ss->name, sizeof ss->name, "%s", name);
      ss->named = true;
    }
  return !srv_reply_issues (r, issues);
}

void
srv_session_create (struct srv_req *r)
{
  struct srv_session ss = { 0 };
  json_object *o;
  char token[48];
  int64_t ttl;
  int ret;

  /* The body first, before anything is looked up (docs/API.md).  */
  if (!session_body (r, &ss, &ttl) || !sandbox_id (r, ss.sandbox, sizeof ss.sandbox))
    return;
  snprintf (ss.tenant, sizeof ss.tenant, "%s", srv_token (r)->name);
  ss.created_ms = 0;
  ss.expires_ms = ttl * 1000;
  ret = srv_sessions_add (r, &ss, token);
  if (ret == -EMFILE)
    return srv_reply_error (r, 429, "quota_exceeded", "revoke one (POST …/sessions/{sessionId}:revoke)", NULL,
                            "sandbox %s has %d active sessions, the most it may", ss.sandbox,
                            SRV_SESSIONS_PER_SANDBOX);
  if (ret == -EDQUOT)
    return srv_reply_error (r, 429, "quota_exceeded", "revoke one (POST …/sessions/{sessionId}:revoke)", NULL,
                            "this token has %d active sessions, the most it may", SRV_SESSIONS_PER_TENANT);
  if (ret == -ENOSPC)
    return srv_reply_error (r, 503, "unavailable", "retry once sessions have ended", NULL,
                            "the server holds %d sessions, the most it keeps", SRV_SESSIONS_MAX);
  if (ret < 0)
    return srv_reply_error (r, 500, "internal", NULL, NULL, "no session could be made");
  o = srv_session_json (&ss);
  json_object_object_add (o, "token", json_object_new_string (token));
  explicit_bzero (token, sizeof token);
  json_object_object_add (o, "apiUrl", api_url (r, srv_tls (r)));
  /* A replay of the create answers it with `token: null` (docs/API.md).  */
  srv_reply_json_once (r, 201, o, "token");
}

void
srv_session_list (struct srv_req *r)
{
  char id[72];
  json_object *out;

  if (!sandbox_id (r, id, sizeof id))
    return;
  out = json_object_new_object ();
  json_object_object_add (out, "data", srv_sessions_list (r, srv_token (r)->name, id));
  srv_reply_json (r, 200, out);
}

static void
session_revoke (struct srv_req *r)
{
  cleanup_error rt_error *err = NULL;
  cleanup_json json_object *info = NULL;
  struct srv_session ss;
  rt_context *ctx = srv_ctx (r);
  const char *sandbox;

  if (ctx == NULL)
    return;
  /* A deleted sandbox's sessions are still the tenant's to end, by id.  */
  info = srv_sandbox_info (ctx, srv_param (r, "id"), &err);
  sandbox = info && rt_json_str (info, "id") ? rt_json_str (info, "id") : srv_param (r, "id");
  if (srv_sessions_revoke (r, srv_token (r)->name, sandbox, srv_param (r, "session"), &ss) != 1)
    return srv_reply_error (r, 404, "not_found", "GET …/sessions lists them", NULL, "no session '%s' of %s",
                            srv_param (r, "session"), srv_param (r, "id"));
  srv_reply_json (r, 200, srv_session_json (&ss));
}

void
srv_session_delete (struct srv_req *r)
{
  session_revoke (r);
}

void
srv_session_verb (struct srv_req *r)
{
  cleanup_json json_object *body = NULL;

  if (strcmp (srv_param (r, "verb"), "revoke") != 0)
    return srv_reply_error (r, 404, "not_found", "the verb is :revoke", NULL, "no verb :%s of a session",
                            srv_param (r, "verb"));
  if ((body = srv_body_json (r, srv_fields_none)) == NULL)
    return;
  session_revoke (r);
}
