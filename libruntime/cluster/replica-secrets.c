/* replica-secrets.c - egress secrets as a `runtime serve --nats` replica
   keeps them (cluster.h): a tenant's secrets in the catalog under
   secrets.<tenant> ({NAME: {body, createdAt, updatedAt, nodes}}), each
   value sent to a host only when a sandbox of that tenant is created
   there (srv_cluster_push_secrets), and again to those hosts when it
   changes or goes.  The catalog keeps a value sealed with the cluster key
   (body.sealedValue, cluster/seal.h's rt_seal_value), a host gets it
   opened (and sealed again on NATS by the bus).  A host keeps it as
   `runtime secrets set` would.
   (no header of its own: cluster.h declares these.)  */
#include <errno.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "common/strutil.h"
#include "common/util.h"
#include "net/secrets.h"
#include "cluster/replica.h"
#include "api/handlers.h"
#include "serve/server-internal.h"

#define SAVE_TRIES 5

/* The tenant's secrets and their revision (0: none yet); NULL after
   answering the error (with @answer).  */
static json_object *
load (struct srv_req *r, const char *key, uint64_t *rev, bool answer)
{
  cleanup_free char *value = NULL;
  rt_error *err = NULL;
  json_object *o;

  *rev = 0;
  if (rt_catalog_get (srv_cluster_catalog (srv_app_data (r)), key, &value, rev, &err) < 0)
    {
      bool none = strcmp (err->code, "not_found") == 0;
      if (!none && answer)
        srv_reply_rt_error (r, err);
      rt_error_free (err);
      return none ? json_object_new_object () : NULL;
    }
  o = json_tokener_parse (value);
  if (o == NULL || !json_object_is_type (o, json_type_object))
    {
      json_object_put (o);
      if (answer)
        srv_reply_error (r, 500, "internal", NULL, NULL, "the catalog's %s is not an object", key);
      return NULL;
    }
  return o;
}

/* @store under @key from revision @rev: 0, 1 on a conflict (reload and
   try again), <0 after answering the error (with @answer).  */
static int
save (struct srv_req *r, const char *key, json_object *store, uint64_t rev, bool answer)
{
  rt_catalog *cat = srv_cluster_catalog (srv_app_data (r));
  const char *text = json_object_to_json_string_ext (store, JSON_C_TO_STRING_PLAIN);
  rt_error *err = NULL;
  int ret = rev ? rt_catalog_update (cat, key, text, rev, NULL, &err) : rt_catalog_create (cat, key, text, NULL, &err);

  if (ret == 0)
    return 0;
  ret = strcmp (err->code, "conflict") == 0 ? 1 : -1;
  if (ret < 0 && answer)
    srv_reply_rt_error (r, err);
  rt_error_free (err);
  return ret;
}

static char *
key_of (struct srv_req *r)
{
  return rt_strdup_printf ("secrets.%s", r->token.name);
}

/* A secret as a list shows it: never its value.  */
static json_object *
info_of (const char *name, json_object *e)
{
  json_object *o = json_object_new_object (), *body = json_object_object_get (e, "body");

  json_object_object_add (o, "name", json_object_new_string (name));
  for (const char *const *k = (const char *const[]){ "hosts", "header", "format", "inUrl", "rules", NULL }; *k; k++)
    json_object_object_add (o, *k, json_object_get (json_object_object_get (body, *k)));
  json_object_object_add (o, "createdAt", json_object_get (json_object_object_get (e, "createdAt")));
  json_object_object_add (o, "updatedAt", json_object_get (json_object_object_get (e, "updatedAt")));
  return o;
}

/* What seals a value: its tenant and name (one cannot pass for
   another's).  */
static char *
label_of (struct srv_req *r, const char *name)
{
  return rt_strdup_printf ("secret:%s/%s", r->token.name, name);
}

/* @body as the catalog keeps it: its value sealed with the cluster key
   (sealedValue), so that no subscriber of the catalog's subjects, and no
   reader of the NATS servers' disks, without the key reads it.  NULL
   after answering the error.  */
static json_object *
sealed_body (struct srv_req *r, const char *name, json_object *body)
{
  cleanup_free char *label = label_of (r, name), *b64 = NULL;
  json_object *v = json_object_object_get (body, "value"), *o;
  rt_error *err = NULL;

  if (label == NULL || rt_bus_seal_value (srv_cluster_bus (srv_app_data (r)), label, json_object_get_string (v),
                                          (size_t) json_object_get_string_len (v), &b64, &err)
                           < 0)
    {
      if (err)
        srv_reply_rt_error (r, err);
      else
        srv_reply_error (r, 500, "internal", NULL, NULL, "out of memory");
      rt_error_free (err);
      return NULL;
    }
  /* In its place: the host gets the same JSON back (opened_body).  */
  o = json_object_new_object ();
  json_object_object_foreach (body, k, val)
  {
    if (strcmp (k, "value") == 0)
      json_object_object_add (o, "sealedValue", json_object_new_string (b64));
    else
      json_object_object_add (o, k, json_object_get (val));
  }
  return o;
}

/* The catalog's @body with its value opened, for a host (a new
   reference; one kept in the clear, from before, as it is).  */
static json_object *
opened_body (struct srv_req *r, const char *name, json_object *body)
{
  cleanup_free char *label = label_of (r, name), *value = NULL;
  const char *sealed = rt_json_str (body, "sealedValue");
  json_object *o;
  rt_error *err = NULL;
  size_t len = 0;

  if (sealed == NULL)
    return json_object_get (body);
  if (label == NULL
      || rt_bus_open_value (srv_cluster_bus (srv_app_data (r)), label, sealed, &value, &len, &err) < 0)
    {
      fprintf (stderr, "runtime serve: %s: secret %s: %s\n", r->request_id, name, err ? err->msg : "out of memory");
      rt_error_free (err);
      return NULL;
    }
  o = json_object_new_object ();
  json_object_object_foreach (body, k, val)
  {
    if (strcmp (k, "sealedValue") == 0)
      json_object_object_add (o, "value", json_object_new_string_len (value, (int) len));
    else
      json_object_object_add (o, k, json_object_get (val));
  }
  return o;
}

/* @method of the secret @name on host @node, as @r's tenant.  */
static int
to_host (struct srv_req *r, const char *node, int method, const char *name, json_object *body)
{
  cleanup_free char *path = rt_strdup_printf ("/v1/egress-secrets/%s", name);
  cleanup_json json_object *q = json_object_new_object ();
  const char *text = body ? json_object_to_json_string_ext (body, JSON_C_TO_STRING_PLAIN) : NULL;
  struct srv_node_answer a = { 0 };
  rt_error *err = NULL;
  int status;

  if (path == NULL
      || srv_cluster_call (srv_app_data (r), r, node, method, path, q, text, text ? strlen (text) : 0, 30000, &a, &err)
             < 0)
    {
      fprintf (stderr, "runtime serve: %s: secret %s on host '%s': %s\n", r->request_id, name, node,
               err ? err->msg : "out of memory");
      rt_error_free (err);
      return -1;
    }
  status = a.status;
  srv_node_answer_clear (&a);
  return status;
}

void
srv_cluster_secret_list (struct srv_req *r)
{
  cleanup_free char *key = key_of (r);
  cleanup_json json_object *store = NULL;
  json_object *out = json_object_new_object (), *arr = json_object_new_array ();
  uint64_t rev;

  json_object_object_add (out, "secrets", arr);
  if (key == NULL || (store = load (r, key, &rev, true)) == NULL)
    {
      json_object_put (out);
      return;
    }
  json_object_object_foreach (store, name, e)
  json_object_array_add (arr, info_of (name, e));
  srv_reply_json (r, 200, out);
}

void
srv_cluster_secret_put (struct srv_req *r)
{
  cleanup_json json_object *body = NULL, *hosts_j = NULL, *rules_j = NULL, *store = NULL, *stored = NULL;
  cleanup_strv char **hosts = NULL, **rules = NULL;
  cleanup_free char *key = key_of (r);
  const char *name = srv_param (r, "name");
  rt_error *err = NULL;
  rt_secret_opts opts;
  json_object *entry = NULL, *nodes;
  char now[32];
  uint64_t rev;
  int saved = 1;

  if (!srv_secret_parse (r, &body, &opts, &hosts, &rules))
    return;
  /* Checked here as a host would, so that no create fails on it later.  */
  if (rt_secret_check (name, rt_json_str (body, "value"),
                       json_object_get_string_len (json_object_object_get (body, "value")), &opts, &hosts_j, &rules_j,
                       &err)
      < 0)
    {
      srv_reply_rt_error (r, err);
      rt_error_free (err);
      return;
    }
  json_object_object_add (body, "hosts", json_object_get (hosts_j));
  if ((stored = sealed_body (r, name, body)) == NULL)
    return;
  rt_format_time (rt_epoch_ms (), now);
  for (int attempt = 0; key && saved == 1 && attempt < SAVE_TRIES; attempt++)
    {
      json_object *old;
      json_object_put (store);
      if ((store = load (r, key, &rev, true)) == NULL)
        return;
      entry = json_object_new_object ();
      old = json_object_object_get (store, name);
      json_object_object_add (entry, "body", json_object_get (stored));
      json_object_object_add (entry, "createdAt", old ? json_object_get (json_object_object_get (old, "createdAt"))
                                                      : json_object_new_string (now));
      json_object_object_add (entry, "updatedAt", json_object_new_string (now));
      nodes = old ? json_object_object_get (old, "nodes") : NULL;
      json_object_object_add (entry, "nodes", nodes ? json_object_get (nodes) : json_object_new_array ());
      json_object_object_add (store, name, entry);
      if ((saved = save (r, key, store, rev, true)) < 0)
        return;
    }
  if (saved != 0)
    return srv_reply_error (r, 409, "conflict", "retry", NULL, "the tenant's secrets kept changing");
  /* A new value goes at once to the hosts that had the old one.  */
  nodes = json_object_object_get (entry, "nodes");
  for (size_t i = 0; i < json_object_array_length (nodes); i++)
    to_host (r, json_object_get_string (json_object_array_get_idx (nodes, i)), EVHTTP_REQ_PUT, name, body);
  srv_reply_json (r, 200, info_of (name, entry));
}

void
srv_cluster_secret_delete (struct srv_req *r)
{
  cleanup_free char *key = key_of (r);
  cleanup_json json_object *store = NULL, *gone = NULL;
  const char *name = srv_param (r, "name");
  json_object *o, *nodes;
  uint64_t rev;
  int saved = 1;

  for (int attempt = 0; key && saved == 1 && attempt < SAVE_TRIES; attempt++)
    {
      json_object_put (store);
      if ((store = load (r, key, &rev, true)) == NULL)
        return;
      if (!json_object_object_get_ex (store, name, NULL))
        return srv_reply_error (r, 404, "not_found", "runtime secrets ls lists them", NULL, "no secret '%.80s'", name);
      json_object_put (gone);
      gone = json_object_get (json_object_object_get (store, name));
      json_object_object_del (store, name);
      if ((saved = save (r, key, store, rev, true)) < 0)
        return;
    }
  if (saved != 0)
    return srv_reply_error (r, 409, "conflict", "retry", NULL, "the tenant's secrets kept changing");
  nodes = json_object_object_get (gone, "nodes");
  for (size_t i = 0; i < json_object_array_length (nodes); i++)
    to_host (r, json_object_get_string (json_object_array_get_idx (nodes, i)), EVHTTP_REQ_DELETE, name, NULL);
  o = json_object_new_object ();
  json_object_object_add (o, "name", json_object_new_string (name));
  json_object_object_add (o, "deleted", json_object_new_boolean (true));
  srv_reply_json (r, 200, o);
}

static bool
has (json_object *arr, const char *s)
{
  for (size_t i = 0; i < json_object_array_length (arr); i++)
    if (strcmp (json_object_get_string (json_object_array_get_idx (arr, i)), s) == 0)
      return true;
  return false;
}

int
srv_cluster_push_secrets (struct srv_req *r, const char *node)
{
  cleanup_free char *key = key_of (r);
  cleanup_json json_object *store = NULL, *names = json_object_new_array ();
  int saved = 1;

  /* The host listed first, then sent the values: a removal or a change
     meanwhile then reaches it too.  */
  for (int attempt = 0; key && saved == 1 && attempt < SAVE_TRIES; attempt++)
    {
      uint64_t rev;

      json_object_put (store);
      json_object_put (names);
      names = json_object_new_array ();
      if ((store = load (r, key, &rev, false)) == NULL)
        return -1;
      json_object_object_foreach (store, name, e)
      {
        json_object *nodes = json_object_object_get (e, "nodes");
        if (!json_object_is_type (nodes, json_type_array) || has (nodes, node))
          continue;
        json_object_array_add (nodes, json_object_new_string (node));
        json_object_array_add (names, json_object_new_string (name));
      }
      if (json_object_array_length (names) == 0)
        return 0;
      if ((saved = save (r, key, store, rev, false)) < 0)
        return -1;
    }
  if (saved != 0)
    return -1;
  for (size_t i = 0; i < json_object_array_length (names); i++)
    {
      const char *name = json_object_get_string (json_object_array_get_idx (names, i));
      cleanup_json json_object *body
          = opened_body (r, name, json_object_object_get (json_object_object_get (store, name), "body"));
      int status = body ? to_host (r, node, EVHTTP_REQ_PUT, name, body) : -1;
      if (status < 200 || status >= 300)
        return -1;
    }
  return 0;
}
