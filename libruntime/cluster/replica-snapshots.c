/* replica-snapshots.c - where a `runtime serve --nats` replica sends the
   calls of a snapshot (cluster/replica.h): to the host the catalog says
   made it (snap.<id>, written when :snapshot answered), never to a host
   that only claims it.  A snapshot the catalog lacks (made before the
   holder was recorded) is looked for on every host up, and only a 200
   whose body is that snapshot, the asking tenant's, is taken: a host
   broken into that answers anything else for every id (a 5xx, another
   tenant's) gets neither the creates from it, with the tenant's secrets
   sent first, nor its DELETE.  (no header of its own: replica-internal.h
   declares these.)  */
#include <errno.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/strutil.h"
#include "common/util.h"
#include "cluster/nats.h"
#include "cluster/replica-internal.h"
#include "serve/server-internal.h"
#include "snapshot/store.h"

static struct srv_cluster *
cl (struct srv_req *r)
{
  return srv_app_data (r);
}

static bool
is_tenants (json_object *o, struct srv_req *r)
{
  const char *t = rt_json_str (o, "tenant");
  return t && strcmp (t, r->token.name) == 0;
}

int
srv_cluster_snapshot_record (struct srv_req *r, const char *node, json_object *snap, rt_error **err)
{
  const char *id = rt_json_str (snap, "id");
  cleanup_json json_object *o = json_object_new_object ();
  cleanup_free char *key = rt_strdup_printf ("snap.%s", id ? id : "");
  rt_error *e = NULL;
  int ret = -EIO;

  if (o == NULL || key == NULL)
    return rt_error_oom (err);
  if (!rt_snapshot_id_valid (id) || rt_json_str (snap, "kind") == NULL
      || strcmp (rt_json_str (snap, "kind"), "snapshot") != 0)
    return rt_error_set (err, EPROTO, "bad_gateway", "host '%s' answered a snapshot that is none", node);
  json_object_object_add (o, "node", json_object_new_string (node));
  json_object_object_add (o, "tenant", json_object_new_string (r->token.name));
  json_object_object_add (o, "name", json_object_get (json_object_object_get (snap, "name")));
  json_object_object_add (o, "createdAt", json_object_get (json_object_object_get (snap, "createdAt")));
  /* A JetStream leader election takes a few seconds (as a sandbox's
     record waits, replica-routes.c).  Created, never overwritten: a host
     answering another's snapshot id takes nothing over.  */
  for (int attempt = 0; attempt < 10; attempt++)
    {
      rt_error_free (e), e = NULL;
      ret = rt_catalog_create (srv_cluster_catalog (cl (r)), key,
                               json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN), NULL, &e);
      if (ret == 0 || strcmp (e->code, "cluster_unavailable") != 0)
        break;
      usleep (500 * 1000);
    }
  if (ret < 0 && strcmp (e->code, "conflict") == 0)
    {
      rt_error_free (e);
      return rt_error_set (err, EEXIST, "bad_gateway", "host '%s' answered the id of a snapshot already held: %s", node,
                           id);
    }
  if (ret < 0)
    *err = e;
  return ret < 0 ? -EIO : 0;
}

/* The catalog's record of the tenant's snapshot @ref (an id, else a
   name: the oldest of that name, as a host resolves it) into *out, its
   key into @key: 1; 0 when there is none, -1 when it is another
   tenant's.  */
static int
recorded (struct srv_req *r, const char *ref, json_object **out, char key[64])
{
  rt_catalog *cat = srv_cluster_catalog (cl (r));
  char **keys = NULL;
  size_t n = 0;

  *out = NULL;
  if (rt_snapshot_id_valid (ref))
    {
      cleanup_free char *value = NULL;
      snprintf (key, 64, "snap.%s", ref);
      if (rt_catalog_get (cat, key, &value, NULL, NULL) == 0)
        *out = json_tokener_parse (value);
      /* An id names one snapshot: another tenant's is none of this one
         (and no host is asked for it).  */
      if (*out && !is_tenants (*out, r))
        {
          json_object_put (*out), *out = NULL;
          return -1;
        }
      return *out != NULL;
    }
  if (rt_catalog_keys (cat, "snap.", &keys, &n, NULL) < 0)
    return 0;
  for (size_t i = 0; i < n; i++)
    {
      cleanup_free char *value = NULL;
      json_object *o = NULL;
      const char *at, *best;

      if (rt_catalog_get (cat, keys[i], &value, NULL, NULL) == 0 && (o = json_tokener_parse (value))
          && is_tenants (o, r) && rt_json_str (o, "name") && strcmp (rt_json_str (o, "name"), ref) == 0)
        {
          at = rt_json_str (o, "createdAt");
          best = *out ? rt_json_str (*out, "createdAt") : NULL;
          if (*out == NULL || (at && best && strcmp (at, best) < 0))
            {
              json_object_put (*out);
              *out = steal_pointer (&o);
              snprintf (key, 64, "%s", keys[i]);
            }
        }
      json_object_put (o);
      free (keys[i]);
    }
  free (keys);
  return *out != NULL;
}

/* Whether @node answers GET /v1/snapshots/@ref with 200 and the tenant's
   snapshot of that id or name; 0 no, 1 yes, -1 it did not answer.  */
static int
holds (struct srv_req *r, const char *node, const char *ref)
{
  cleanup_free char *path = rt_strdup_printf ("/v1/snapshots/%s", ref);
  cleanup_json json_object *q = json_object_new_object (), *o = NULL;
  struct srv_node_answer a = { 0 };
  rt_error *err = NULL;
  const char *id, *name;

  if (path == NULL || q == NULL)
    return -1;
  if (srv_cluster_call (cl (r), r, node, EVHTTP_REQ_GET, path, q, NULL, 0, 30000, &a, &err) < 0)
    {
      rt_error_free (err);
      return -1;
    }
  o = a.status == 200 && a.len && strncmp (a.ctype, "application/json", 16) == 0 ? json_tokener_parse ((char *) a.body)
                                                                                 : NULL;
  srv_node_answer_clear (&a);
  id = rt_json_str (o, "id");
  name = rt_json_str (o, "name");
  return rt_json_str (o, "kind") && strcmp (rt_json_str (o, "kind"), "snapshot") == 0 && is_tenants (o, r)
         && rt_snapshot_id_valid (id) && (strcmp (id, ref) == 0 || (name && strcmp (name, ref) == 0));
}

int
srv_cluster_snapshot_holder (struct srv_req *r, const char *ref, bool confirm, char node[65], char key[64])
{
  char names[SRV_CLUSTER_MAX_NODES][65];
  cleanup_json json_object *rec = NULL;
  int found, held;
  size_t n;

  key[0] = '\0';
  if (ref == NULL || *ref == '\0' || strchr (ref, '/'))
    {
      srv_reply_error (r, 404, "not_found", NULL, NULL, "no snapshot '%.80s'", ref ? ref : "");
      return -1;
    }
  found = recorded (r, ref, &rec, key);
  if (found < 0)
    {
      srv_reply_error (r, 404, "not_found", "runtime snapshot ls lists yours", NULL, "no snapshot '%.80s'", ref);
      return -1;
    }
  if (found > 0)
    {
      snprintf (node, 65, "%s", rt_json_str (rec, "node") ? rt_json_str (rec, "node") : "");
      if (!confirm || (held = holds (r, node, ref)) == 1)
        return 0;
      if (held < 0)
        srv_reply_error (r, 503, "node_unreachable", "retry; a host silent for 10 s is marked lost", NULL,
                         "host '%s', which holds snapshot '%.80s', does not answer", node, ref);
      else
        srv_reply_error (r, 404, "not_found", NULL, NULL, "snapshot '%.80s' is not on host '%s', which made it", ref,
                         node);
      return -1;
    }
  n = srv_cluster_up (cl (r), names, SRV_CLUSTER_MAX_NODES);
  for (size_t i = 0; i < n; i++)
    if (holds (r, names[i], ref) == 1)
      {
        memcpy (node, names[i], 65);
        return 0;
      }
  srv_reply_error (r, 404, "not_found", "runtime snapshot ls lists yours", NULL, "no snapshot '%.80s' on any host up",
                   ref);
  return -1;
}

/* GET and DELETE /v1/snapshots/{id}: to its holder; a DELETE done (or a
   snapshot gone from it) forgets the record.  */
void
srv_cluster_snapshot_held (struct srv_req *r)
{
  char node[65], key[64];
  int status;

  if (srv_cluster_snapshot_holder (r, srv_param (r, "id"), false, node, key) < 0)
    return;
  status = srv_cluster_relay (cl (r), r, node, SRV_NATS_MAX_DEADLINE_MS);
  if (r->method == EVHTTP_REQ_DELETE && key[0] && ((status >= 200 && status < 300) || status == 404))
    rt_catalog_delete (srv_cluster_catalog (cl (r)), key, NULL);
}
