/* replica-routes.c - the API as a `runtime serve --nats` replica answers
   it (cluster.h): creates placed and recorded in the catalog, a sandbox's
   calls sent to its node, lists gathered from every node.
   (no header of its own: cluster.h declares the table.)  */
#include <errno.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cluster/node.h"
#include "common/cleanup.h"
#include "common/strutil.h"
#include "common/util.h"
#include "cluster/replica-internal.h"
#include "api/handlers.h"
#include "cluster/nats.h"
#include "serve/server-internal.h"

#define SB "/v1/sandboxes/{id}"
#define CREATE_TIMEOUT_MS 90000
#define CREATE_TRIES 3
/* An Idempotency-Key's create in progress on a replica that died is
   taken over after this: longer than any create lasts (CREATE_TRIES
   hosts of CREATE_TIMEOUT_MS each, and the secrets sent first).  */
#define IDEM_STALE_MS 400000
#define IDEM_WAIT_MS 120000

static struct srv_cluster *
cl (struct srv_req *r)
{
  return srv_app_data (r);
}

/* The catalog's entry of the sandbox `{id}`, the tenant's; NULL after
   answering 404.  */
static json_object *
entry_of (struct srv_req *r, char **key_out)
{
  const char *id = srv_param (r, "id");
  cleanup_free char *key = rt_strdup_printf ("sb.%s", id ? id : ""), *value = NULL;
  json_object *o = NULL;
  rt_error *err = NULL;

  if (key && rt_catalog_key_valid (key))
    {
      if (rt_catalog_get (srv_cluster_catalog (cl (r)), key, &value, NULL, &err) < 0
          && strcmp (err->code, "not_found") != 0)
        {
          srv_reply_rt_error (r, err);
          rt_error_free (err);
          return NULL;
        }
      rt_error_free (err);
      o = value ? json_tokener_parse (value) : NULL;
    }
  if (o == NULL || rt_json_str (o, "tenant") == NULL || strcmp (rt_json_str (o, "tenant"), r->token.name) != 0)
    {
      json_object_put (o);
      srv_reply_error (r, 404, "not_found", "runtime sandbox ls lists yours", NULL, "no sandbox '%.80s'",
                       id ? id : "");
      return NULL;
    }
  if (key_out)
    *key_out = steal_pointer (&key);
  return o;
}

bool
srv_cluster_live (json_object *entry)
{
  const char *st = rt_json_str (entry, "state");
  return st && strcmp (st, "live") == 0;
}

/* The sandbox as the catalog last knew it (its host lost).  */
json_object *
srv_cluster_ended_info (json_object *entry)
{
  json_object *info = json_object_object_get (entry, "info");
  json_object *o = json_object_is_type (info, json_type_object) ? json_object_get (info) : json_object_new_object ();

  json_object_object_add (o, "state", json_object_new_string ("stopped"));
  json_object_object_add (o, "stopReason", json_object_get (json_object_object_get (entry, "stopReason")));
  json_object_object_add (o, "endedAt", json_object_get (json_object_object_get (entry, "endedAt")));
  json_object_object_add (o, "node", json_object_get (json_object_object_get (entry, "node")));
  return o;
}

static void
cl_sandbox_get (struct srv_req *r)
{
  cleanup_json json_object *e = entry_of (r, NULL);

  if (e == NULL)
    return;
  if (!srv_cluster_live (e))
    return srv_reply_json (r, 200, srv_cluster_ended_info (e));
  srv_cluster_relay (cl (r), r, rt_json_str (e, "node"), SRV_NATS_MAX_DEADLINE_MS);
}

static void
cl_sandbox_delete (struct srv_req *r)
{
  cleanup_free char *key = NULL;
  cleanup_json json_object *e = entry_of (r, &key);
  json_object *o;
  int status;

  if (e == NULL)
    return;
  if (!srv_cluster_live (e))
    {
      o = srv_cluster_ended_info (e);
      json_object_object_add (o, "status", json_object_new_string ("deleted"));
      json_object_object_add (o, "deletedAt", json_object_get (json_object_object_get (e, "endedAt")));
      rt_catalog_delete (srv_cluster_catalog (cl (r)), key, NULL);
      return srv_reply_json (r, 200, o);
    }
  status = srv_cluster_relay (cl (r), r, rt_json_str (e, "node"), SRV_NATS_MAX_DEADLINE_MS);
  /* Gone from its host (or never there): forgotten here too.  */
  if ((status >= 200 && status < 300) || status == 404)
    rt_catalog_delete (srv_cluster_catalog (cl (r)), key, NULL);
}

/* Any other call of a sandbox: to its node.  */
static void
cl_sandbox_call (struct srv_req *r)
{
  cleanup_json json_object *e = entry_of (r, NULL);

  if (e == NULL)
    return;
  if (!srv_cluster_live (e))
    return srv_reply_error (r, 409, "sandbox_stopped", "create another", NULL, "sandbox '%s' ended: %s",
                            srv_param (r, "id"), rt_json_str (e, "stopReason") ? rt_json_str (e, "stopReason") : "");
  srv_cluster_relay (cl (r), r, rt_json_str (e, "node"), SRV_NATS_MAX_DEADLINE_MS);
}

static void
cl_nodes (struct srv_req *r)
{
  srv_reply_page (r, srv_cluster_nodes (cl (r)));
}

static void
cl_not_here (struct srv_req *r)
{
  srv_reply_error (r, 501, "not_supported", "build it on each host (runtime image build)",
                   NULL, "%s %s is not served across many hosts yet", srv_method (r), r->path);
}

/* Creates.  */

/* The Idempotency-Key's entry: claimed for this create (0, *key set), or
   answered from an earlier one (1).  */
static int
idem_claim (struct srv_req *r, const char *body_sha, char **key_out, json_object **entry)
{
  const char *key = srv_header (r, "Idempotency-Key");
  rt_catalog *cat = srv_cluster_catalog (cl (r));
  char sha[65];
  cleanup_free char *ck = NULL;
  uint64_t deadline = rt_now_ms () + IDEM_WAIT_MS;

  *entry = NULL;
  if (key == NULL)
    return 0;
  if (*key == '\0' || strlen (key) > 255)
    {
      srv_reply_error (r, 400, "invalid_request", "send 1 to 255 characters", NULL, "bad Idempotency-Key");
      return -1;
    }
  rt_sha256_hex (key, strlen (key), sha);
  ck = rt_strdup_printf ("idem.%s.%s", r->token.name, sha);
  if (ck == NULL || !rt_catalog_key_valid (ck))
    {
      srv_reply_error (r, 500, "internal", NULL, NULL, "cannot keep this Idempotency-Key");
      return -1;
    }
  for (;;)
    {
      cleanup_json json_object *mine = json_object_new_object (), *o = NULL;
      cleanup_free char *value = NULL;
      rt_error *err = NULL;
      uint64_t rev = 0;
      const char *text;

      json_object_object_add (mine, "state", json_object_new_string ("pending"));
      json_object_object_add (mine, "body", json_object_new_string (body_sha));
      json_object_object_add (mine, "at", json_object_new_int64 (rt_epoch_ms ()));
      text = json_object_to_json_string_ext (mine, JSON_C_TO_STRING_PLAIN);
      if (rt_catalog_create (cat, ck, text, NULL, &err) == 0)
        {
          *key_out = steal_pointer (&ck);
          return 0;
        }
      if (strcmp (err->code, "conflict") != 0)
        {
          srv_reply_rt_error (r, err);
          rt_error_free (err);
          return -1;
        }
      rt_error_free (err), err = NULL;
      if (rt_catalog_get (cat, ck, &value, &rev, NULL) < 0 || (o = json_tokener_parse (value)) == NULL)
        {
          if (rt_now_ms () > deadline || srv_gone (r))
            {
              srv_reply_error (r, 503, "cluster_unavailable", "retry", NULL, "the Idempotency-Key cannot be read");
              return -1;
            }
          usleep (200 * 1000);
          continue;
        }
      if (rt_json_str (o, "body") == NULL || strcmp (rt_json_str (o, "body"), body_sha) != 0)
        {
          srv_reply_error (r, 409, "idempotency_conflict", "use a new Idempotency-Key for a different request", NULL,
                           "this Idempotency-Key was used with another body");
          return -1;
        }
      if (rt_json_str (o, "state") && strcmp (rt_json_str (o, "state"), "done") == 0)
        {
          *entry = steal_pointer (&o);
          return 1;
        }
      /* Its replica died mid-create: this one goes on from it.  */
      if (rt_epoch_ms () - rt_json_i64 (o, "at") > IDEM_STALE_MS
          && rt_catalog_update (cat, ck, text, rev, NULL, NULL) == 0)
        {
          *key_out = steal_pointer (&ck);
          return 0;
        }
      if (rt_now_ms () > deadline || srv_gone (r))
        {
          srv_add_header (r, "Retry-After", "5");
          srv_reply_error (r, 409, "idempotency_in_progress", "retry later with the same key", NULL,
                           "a create with this Idempotency-Key is still in progress");
          return -1;
        }
      usleep (200 * 1000);
    }
}

static void
idem_done (struct srv_req *r, const char *key, const char *body_sha, int status, json_object *answer)
{
  rt_catalog *cat = srv_cluster_catalog (cl (r));
  cleanup_json json_object *o = json_object_new_object ();
  cleanup_free char *value = NULL;
  uint64_t rev = 0;

  if (key == NULL)
    return;
  /* A refusal is not kept: the same key may try again.  */
  if (status < 200 || status >= 300 || answer == NULL)
    {
      rt_catalog_delete (cat, key, NULL);
      return;
    }
  json_object_object_add (o, "state", json_object_new_string ("done"));
  json_object_object_add (o, "body", json_object_new_string (body_sha));
  json_object_object_add (o, "at", json_object_new_int64 (rt_epoch_ms ()));
  json_object_object_add (o, "status", json_object_new_int (status));
  json_object_object_add (o, "answer", json_object_get (answer));
  if (rt_catalog_get (cat, key, &value, &rev, NULL) == 0)
    rt_catalog_update (cat, key, json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN), rev, NULL, NULL);
}

/* getOrCreate by name: the tenant's sandbox of that name on any host.  */
static bool
get_by_name (struct srv_req *r, const char *name)
{
  cleanup_json json_object *items = json_object_new_array ();
  cleanup_json json_object *q = json_object_new_object ();

  json_object_object_add (q, "name", json_object_new_string (name));
  srv_cluster_gather (r, "/v1/sandboxes", q, false, items);
  if (json_object_array_length (items) == 0)
    return false;
  srv_reply_json (r, 200, json_object_get (json_object_array_get_idx (items, 0)));
  return true;
}

/* sb.<id> of a new sandbox on @node, @info its SandboxInfo (`node`
   added to it).  An entry already there is fine (a getOrCreate that found
   an existing one).  */
static int
put_entry (struct srv_req *r, const char *node, json_object *info, rt_error **err)
{
  cleanup_json json_object *entry = json_object_new_object ();
  cleanup_free char *key = rt_strdup_printf ("sb.%s", rt_json_str (info, "id"));
  rt_error *e = NULL;

  json_object_object_add (info, "node", json_object_new_string (node));
  json_object_object_add (entry, "node", json_object_new_string (node));
  json_object_object_add (entry, "tenant", json_object_new_string (r->token.name));
  json_object_object_add (entry, "state", json_object_new_string ("live"));
  json_object_object_add (entry, "info", json_object_get (info));
  if (key == NULL || !rt_catalog_key_valid (key))
    return rt_error_set (err, EINVAL, "bad_gateway", "host '%s' answered a sandbox id that is none", node);
  if (rt_catalog_create (srv_cluster_catalog (cl (r)), key,
                         json_object_to_json_string_ext (entry, JSON_C_TO_STRING_PLAIN), NULL, &e)
          < 0
      && strcmp (e->code, "conflict") != 0)
    {
      *err = e;
      return -EIO;
    }
  rt_error_free (e);
  return 0;
}

/* The new sandbox's catalog entry; <0 after answering the error (the
   sandbox then removed again: without its entry no call would find it,
   and a reconcile would stop it).  */
static int
record (struct srv_req *r, const char *node, json_object *answer)
{
  rt_error *err = NULL;
  int ret;

  /* A JetStream leader election takes a few seconds: the sandbox runs,
     worth waiting for.  */
  for (int attempt = 0; (ret = put_entry (r, node, answer, &err)) < 0 && attempt < 10; attempt++)
    {
      if (strcmp (err->code, "cluster_unavailable") != 0)
        break;
      rt_error_free (err), err = NULL;
      usleep (500 * 1000);
    }
  if (ret < 0)
    {
      struct srv_node_answer gone = { 0 };
      cleanup_free char *path = rt_strdup_printf ("/v1/sandboxes/%s", rt_json_str (answer, "id"));
      srv_cluster_call (cl (r), r, node, EVHTTP_REQ_DELETE, path, NULL, NULL, 0, 30000, &gone, NULL);
      srv_node_answer_clear (&gone);
      srv_reply_rt_error (r, err);
      rt_error_free (err);
      return -1;
    }
  srv_add_header (r, "Runtime-Node", node);
  return 0;
}

/* @r sent whole (no stream) to the host of its sandbox, @e the catalog's
   entry of it (NULL: answered), the answer into @a: the host's name, or
   NULL after answering the error.  */
static const char *
call_its_host (struct srv_req *r, json_object *e, int timeout_ms, struct srv_node_answer *a)
{
  rt_error *err = NULL;
  const char *node;

  if (e == NULL)
    return NULL;
  if (!srv_cluster_live (e))
    {
      srv_reply_error (r, 409, "sandbox_stopped", "create another", NULL, "sandbox '%s' ended", srv_param (r, "id"));
      return NULL;
    }
  node = rt_json_str (e, "node");
  if (srv_cluster_call (cl (r), r, node, EVHTTP_REQ_POST, NULL, NULL, r->body, r->body_len, timeout_ms, a, &err) < 0)
    {
      srv_reply_rt_error (r, err);
      rt_error_free (err);
      return NULL;
    }
  return node;
}

/* @node's answer @a (@o its JSON, or NULL) passed to @r's client, with
   the headers a node may set (replica-answer.c); @a cleared.  */
static void
pass_on (struct srv_req *r, const char *node, struct srv_node_answer *a, json_object *o)
{
  json_object_object_foreach (a->headers, k, v)
  {
    srv_add_header (r, k, json_object_get_string (v));
  }
  srv_add_header (r, "Runtime-Node", node);
  if (o)
    srv_reply_json (r, a->status, json_object_get (o));
  else
    srv_reply_bytes (r, a->status, a->ctype, a->body, a->len);
  srv_node_answer_clear (a);
}

/* :fork makes sandboxes on the parent's host: each recorded there.  */
static void
cl_sandbox_fork (struct srv_req *r)
{
  cleanup_json json_object *e = entry_of (r, NULL), *o = NULL;
  struct srv_node_answer a = { 0 };
  rt_error *err = NULL;
  const char *node = call_its_host (r, e, CREATE_TIMEOUT_MS, &a);
  json_object *list;

  if (node == NULL)
    return;
  o = a.len ? json_tokener_parse ((char *) a.body) : NULL;
  list = json_object_object_get (o, "sandboxes");
  for (size_t i = 0; a.status >= 200 && a.status < 300 && json_object_is_type (list, json_type_array)
                     && i < json_object_array_length (list);
       i++)
    {
      json_object *info = json_object_array_get_idx (list, i);
      if (rt_json_str (info, "id") && put_entry (r, node, info, &err) < 0)
        {
          fprintf (stderr, "runtime serve: %s: fork %s on '%s' not recorded: %s\n", r->request_id,
                   rt_json_str (info, "id"), node, err->msg);
          rt_error_free (err), err = NULL;
        }
    }
  pass_on (r, node, &a, o);
}

/* :snapshot: the snapshot made on the sandbox's host, and that host
   recorded as its holder (replica-snapshots.c); a snapshot that cannot
   be recorded is removed again (no call would find it).  */
static void
cl_sandbox_snapshot (struct srv_req *r)
{
  cleanup_json json_object *e = entry_of (r, NULL), *o = NULL;
  struct srv_node_answer a = { 0 };
  rt_error *err = NULL;
  const char *node = call_its_host (r, e, SRV_NATS_MAX_DEADLINE_MS, &a);

  if (node == NULL)
    return;
  o = a.status == 200 && a.len ? json_tokener_parse ((char *) a.body) : NULL;
  if (o && srv_cluster_snapshot_record (r, node, o, &err) < 0)
    {
      cleanup_free char *path = rt_strdup_printf ("/v1/snapshots/%s", rt_json_str (o, "id"));
      struct srv_node_answer gone = { 0 };
      fprintf (stderr, "runtime serve: %s: snapshot on '%s' not recorded: %s\n", r->request_id, node, err->msg);
      if (strcmp (err->code, "bad_gateway") != 0 && path)
        srv_cluster_call (cl (r), r, node, EVHTTP_REQ_DELETE, path, NULL, NULL, 0, 30000, &gone, NULL);
      srv_node_answer_clear (&gone);
      srv_node_answer_clear (&a);
      srv_reply_rt_error (r, err);
      rt_error_free (err);
      return;
    }
  pass_on (r, node, &a, o);
}

/* The create sent to @names in turn until one answers other than 5xx:
   into @a; how many were tried (the last one answered).  First each once;
   when none answered at all (every node between NATS servers, one of
   them just lost), the whole round again after a moment, until
   SRV_RECONNECT_WAIT_MS.  */
static size_t
create_on (struct srv_req *r, char (*names)[65], size_t n, struct srv_node_answer *a)
{
  uint64_t until = rt_now_ms () + SRV_RECONNECT_WAIT_MS;

  for (int round = 0;; round++)
    {
      bool answered = false;

      for (size_t i = 0; i < n; i++)
        {
          rt_error *err = NULL;

          srv_node_answer_clear (a);
          /* The tenant's secrets first: every sandbox made has them.  */
          if (srv_cluster_push_secrets (r, names[i]) < 0)
            {
              fprintf (stderr, "runtime serve: %s: host '%s' did not take the tenant's secrets%s\n", r->request_id,
                       names[i], i + 1 < n ? "; trying another" : "");
              continue;
            }
          if (srv_cluster_call_once (cl (r), r, names[i], EVHTTP_REQ_POST, r->body, r->body_len, CREATE_TIMEOUT_MS,
                                     a, &err)
              < 0)
            {
              answered |= strcmp (err->code, "node_unreachable") != 0;
              if (round == 0)
                fprintf (stderr, "runtime serve: %s: create on host '%s' failed: %s%s\n", r->request_id, names[i],
                         err->msg, i + 1 < n ? "; trying another" : "");
              rt_error_free (err);
              continue;
            }
          answered = true;
          if (a->status < 500)
            return i + 1;
          fprintf (stderr, "runtime serve: %s: host '%s' refused the create (%d)%s\n", r->request_id, names[i],
                   a->status, i + 1 < n ? "; trying another" : "");
        }
      if (answered || rt_now_ms () >= until || srv_gone (r))
        return n;
      usleep (250 * 1000);
    }
}

static void
cl_create (struct srv_req *r)
{
  cleanup_json json_object *body = NULL, *done = NULL;
  cleanup_free char *idem = NULL;
  char names[CREATE_TRIES][65], sha[65];
  struct srv_node_answer a = { 0 };
  json_object *answer = NULL;
  const char *image, *snap, *name;
  unsigned vcpu;
  unsigned long mib;
  size_t n;
  int claimed;

  body = r->body_len ? json_tokener_parse ((const char *) r->body) : json_object_new_object ();
  if (body == NULL || !json_object_is_type (body, json_type_object))
    return srv_reply_error (r, 400, "invalid_request", "send a JSON object", NULL, "the body is not a JSON object");
  vcpu = json_object_object_get (body, "vcpu") ? (unsigned) rt_json_i64 (body, "vcpu") : 2;
  mib = json_object_object_get (body, "memoryMiB") ? (unsigned long) rt_json_i64 (body, "memoryMiB") : 4096;
  image = rt_json_str (body, "image");
  snap = rt_json_str (body, "snapshot");
  name = rt_json_str (body, "name");
  rt_sha256_hex (r->body_len ? r->body : (const unsigned char *) "", r->body_len, sha);
  claimed = idem_claim (r, sha, &idem, &done);
  if (claimed < 0)
    return;
  if (claimed == 1)
    {
      json_object *ans = json_object_get (json_object_object_get (done, "answer"));
      srv_add_header (r, "Idempotency-Replayed", "true");
      if (json_object_is_type (ans, json_type_object))
        json_object_object_add (ans, "replayed", json_object_new_boolean (true));
      return srv_reply_json (r, (int) rt_json_i64 (done, "status"), ans);
    }
  if (name && json_object_get_boolean (json_object_object_get (body, "getOrCreate")) && get_by_name (r, name))
    return idem_done (r, idem, sha, 0, NULL);
  if (snap)
    {
      /* Its recorded holder, once it says it has it: only then are the
         tenant's secrets sent to it (create_on).  */
      char key[64];
      n = srv_cluster_snapshot_holder (r, snap, true, names[0], key) == 0 ? 1 : 0;
      if (n == 0)
        return idem_done (r, idem, sha, 0, NULL);
    }
  else
    n = srv_cluster_place (cl (r), vcpu, mib, image, names, CREATE_TRIES);
  if (n == 0)
    {
      idem_done (r, idem, sha, 0, NULL);
      return srv_reply_error (r, 503, "no_capacity", "retry later, or ask for a smaller shape", NULL,
                              "no host up has room for %u vCPUs and %lu MiB", vcpu, mib);
    }
  n = create_on (r, names, n, &a);
  if (a.status == 0)
    {
      idem_done (r, idem, sha, 0, NULL);
      return srv_reply_error (r, 503, "node_unreachable", "retry", NULL, "no host took the create");
    }
  answer = a.len ? json_tokener_parse ((char *) a.body) : NULL;
  if (a.status >= 200 && a.status < 300 && rt_json_str (answer, "id") && record (r, names[n - 1], answer) < 0)
    {
      srv_node_answer_clear (&a);
      json_object_put (answer);
      return idem_done (r, idem, sha, 0, NULL);
    }
  idem_done (r, idem, sha, a.status, answer);
  if (answer)
    srv_reply_json (r, a.status, answer);
  else
    srv_reply_bytes (r, a.status, a.ctype, a.body, a.len);
  srv_node_answer_clear (&a);
}

const struct srv_route srv_cluster_routes[] = {
  { EVHTTP_REQ_GET, "/v1/health", srv_health, SRV_INLINE | SRV_NO_AUTH },
  { EVHTTP_REQ_GET, "/v1/me", srv_me, SRV_INLINE },
  { EVHTTP_REQ_GET, "/v1/usage", srv_cluster_usage, 0 },
  { EVHTTP_REQ_GET, "/v1/nodes", cl_nodes, 0 },

  { EVHTTP_REQ_POST, "/v1/sandboxes", cl_create, SRV_OWN_IDEM },
  { EVHTTP_REQ_GET, "/v1/sandboxes", srv_cluster_list, 0 },
  { EVHTTP_REQ_GET, SB, cl_sandbox_get, 0 },
  { EVHTTP_REQ_DELETE, SB, cl_sandbox_delete, 0 },
  { EVHTTP_REQ_POST, SB ":fork", cl_sandbox_fork, 0 },
  { EVHTTP_REQ_POST, SB ":snapshot", cl_sandbox_snapshot, 0 },
  { EVHTTP_REQ_POST, SB ":{verb}", cl_sandbox_call, 0 },
  { EVHTTP_REQ_GET, SB "/network", cl_sandbox_call, 0 },
  { EVHTTP_REQ_PUT, SB "/network", cl_sandbox_call, 0 },
  { EVHTTP_REQ_GET, SB "/metrics", cl_sandbox_call, 0 },
  { EVHTTP_REQ_POST, SB "/processes", cl_sandbox_call, 0 },
  { EVHTTP_REQ_GET, SB "/processes", cl_sandbox_call, 0 },
  { EVHTTP_REQ_GET, SB "/processes/{pid}", cl_sandbox_call, 0 },
  { EVHTTP_REQ_GET, SB "/processes/{pid}/output", cl_sandbox_call, 0 },
  { EVHTTP_REQ_POST, SB "/processes/{pid}:{verb}", cl_sandbox_call, 0 },
  { EVHTTP_REQ_GET, SB "/files/content", cl_sandbox_call, 0 },
  { EVHTTP_REQ_PUT, SB "/files/content", cl_sandbox_call, 0 },
  { EVHTTP_REQ_GET, SB "/files/list", cl_sandbox_call, 0 },
  { EVHTTP_REQ_GET, SB "/files/stat", cl_sandbox_call, 0 },
  { EVHTTP_REQ_POST, SB "/files:{verb}", cl_sandbox_call, 0 },
  { EVHTTP_REQ_POST, SB "/uploads", cl_sandbox_call, 0 },
  { EVHTTP_REQ_PUT, SB "/uploads/{upload}", cl_sandbox_call, SRV_BIG_BODY },
  { EVHTTP_REQ_POST, SB "/uploads/{upload}:{verb}", cl_sandbox_call, 0 },
  { EVHTTP_REQ_GET, SB "/files/archive", cl_sandbox_call, 0 },
  { EVHTTP_REQ_PUT, SB "/files/archive", cl_sandbox_call, SRV_BIG_BODY },

  { EVHTTP_REQ_GET, "/v1/snapshots", srv_cluster_snapshot_list, 0 },
  { EVHTTP_REQ_GET, "/v1/snapshots/{id}", srv_cluster_snapshot_held, 0 },
  { EVHTTP_REQ_DELETE, "/v1/snapshots/{id}", srv_cluster_snapshot_held, 0 },

  { EVHTTP_REQ_POST, "/v1/images", cl_not_here, 0 },
  { EVHTTP_REQ_GET, "/v1/images", srv_cluster_snapshot_list, 0 },
  { EVHTTP_REQ_GET, "/v1/images/{id}", srv_cluster_held, 0 },
  { EVHTTP_REQ_GET, "/v1/images/{id}/logs", srv_cluster_held, 0 },
  { EVHTTP_REQ_POST, "/v1/images/{id}:{verb}", srv_cluster_held, 0 },

  { EVHTTP_REQ_GET, "/v1/egress-secrets", srv_cluster_secret_list, 0 },
  { EVHTTP_REQ_PUT, "/v1/egress-secrets/{name}", srv_cluster_secret_put, 0 },
  { EVHTTP_REQ_DELETE, "/v1/egress-secrets/{name}", srv_cluster_secret_delete, 0 },
  { 0, NULL, NULL, 0 },
};
