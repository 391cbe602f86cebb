/* replica.c - a `runtime serve --nats` replica's view of the hosts
   (cluster.h): their reports heard on NATS, the keeper thread that marks
   the silent ones lost and reconciles the ones that come back, and calls
   to a node (cluster/nats.h's request messages).  */
#include <errno.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/queue.h>
#include <unistd.h>

#include "cluster/node.h"
#include "cluster/placement.h"
#include "common/b64.h"
#include "common/cleanup.h"
#include "common/strutil.h"
#include "common/util.h"
#include "cluster/replica-internal.h"
#include "serve/server-internal.h"

/* How long a replica starting waits for JetStream.  */
#define CATALOG_WAIT_MS 30000
/* A pull waits this long for bytes before it is asked again.  */
#define PULL_WAIT_MS 20000

rt_catalog *
srv_cluster_catalog (struct srv_cluster *c)
{
  return c->cat;
}

rt_bus *
srv_cluster_bus (struct srv_cluster *c)
{
  return c->bus;
}

/* Under c->mu.  */
struct member *
srv_cluster_member (struct srv_cluster *c, const char *name, bool add)
{
  for (size_t i = 0; i < c->nmembers; i++)
    if (strcmp (c->members[i].name, name) == 0)
      return &c->members[i];
  if (!add || c->nmembers == SRV_CLUSTER_MAX_NODES)
    return NULL;
  struct member *m = &c->members[c->nmembers++];
  memset (m, 0, sizeof *m);
  snprintf (m->name, sizeof m->name, "%s", name);
  return m;
}

/* runtime.node.<name>.capacity: the report kept, the node seen.  */
static void
on_report (void *data, const struct rt_bus_msg *msg)
{
  struct srv_cluster *c = data;
  char name[RT_NODE_NAME_MAX + 1];
  const char *p = msg->subject + strlen ("runtime.node."), *dot = strchr (p, '.');
  json_object *o;
  struct member *m;

  if (dot == NULL || (size_t) (dot - p) > RT_NODE_NAME_MAX)
    return;
  snprintf (name, sizeof name, "%.*s", (int) (dot - p), p);
  if (!rt_node_name_valid (name))
    return;
  o = json_tokener_parse (msg->data ? (const char *) msg->data : "");
  /* A node speaks for itself only (the NATS permissions): a report
     naming another is not taken.  */
  if (o == NULL || !json_object_is_type (o, json_type_object) || rt_json_str (o, "name") == NULL
      || strcmp (rt_json_str (o, "name"), name) != 0)
    {
      json_object_put (o);
      return;
    }
  pthread_mutex_lock (&c->mu);
  m = srv_cluster_member (c, name, true);
  if (m)
    {
      json_object_put (m->report);
      m->report = o;
      m->seen_ms = rt_now_ms ();
      m->seen_epoch = rt_epoch_ms ();
      o = NULL;
    }
  pthread_mutex_unlock (&c->mu);
  json_object_put (o);
}

/* {NAME: VALUE or [VALUE…]} of @q.  */
static json_object *
pairs_of (struct evkeyvalq *q, bool headers)
{
  json_object *o = json_object_new_object ();
  struct evkeyval *kv;

  if (o == NULL)
    return NULL;
  TAILQ_FOREACH (kv, q, next)
  {
    json_object *have;
    /* The token stays here (nats.h); the rest is hop by hop or the
       replica's own.  */
    if (headers
        && (strcasecmp (kv->key, "Authorization") == 0 || strcasecmp (kv->key, "Idempotency-Key") == 0
            || strcasecmp (kv->key, "Host") == 0 || strcasecmp (kv->key, "Content-Length") == 0
            || strcasecmp (kv->key, "Connection") == 0 || strcasecmp (kv->key, "Transfer-Encoding") == 0
            || strcasecmp (kv->key, "x-request-id") == 0))
      continue;
    if (!headers && json_object_object_get_ex (o, kv->key, &have))
      {
        if (!json_object_is_type (have, json_type_array))
          {
            json_object *arr = json_object_new_array ();
            json_object_array_add (arr, json_object_get (have));
            json_object_object_add (o, kv->key, arr);
            have = arr;
          }
        json_object_array_add (have, json_object_new_string (kv->value));
        continue;
      }
    json_object_object_add (o, kv->key, json_object_new_string (kv->value));
  }
  return o;
}

/* The node's reply read (replica-answer.c): what it may make this replica
   say.  */
static int
parse_answer (const char *text, size_t len, struct srv_node_answer *a, rt_error **err)
{
  return srv_node_answer_read (text, len, a, err);
}

static int
call (struct srv_cluster *c, struct srv_req *r, const char *node, int method, const char *path, json_object *query,
      const void *body, size_t len, bool stream, bool patient, int timeout_ms, struct srv_node_answer *out,
      rt_error **err)
{
  cleanup_json json_object *m = json_object_new_object ();
  cleanup_free char *b64 = rt_b64_encode (body, len), *reply = NULL;
  char subject[RT_NODE_NAME_MAX + 32];
  json_object *q = query ? json_object_get (query) : pairs_of (&r->query, false);
  json_object *h = pairs_of (&r->headers, true);
  const char *text;
  size_t reply_len = 0;

  memset (out, 0, sizeof *out);
  if (m == NULL || b64 == NULL || q == NULL || h == NULL)
    {
      json_object_put (q);
      json_object_put (h);
      return rt_error_oom (err);
    }
  json_object_object_add (h, "x-request-id", json_object_new_string (r->request_id));
  json_object_object_add (m, "method", json_object_new_string (srv_method_name (method)));
  json_object_object_add (m, "path", json_object_new_string (path ? path : r->path));
  json_object_object_add (m, "query", q);
  json_object_object_add (m, "headers", h);
  json_object_object_add (m, "body", json_object_new_string (b64));
  json_object_object_add (m, "tenant", json_object_new_string (r->token.name));
  /* The token's limits go with its name: the hosts need no token store
     of their own (cluster/nats.h).  */
  json_object *lim = json_object_new_object ();
  json_object_object_add (lim, "maxSandboxes", json_object_new_int64 (r->token.max_sandboxes));
  json_object_object_add (lim, "maxVcpu", json_object_new_int64 (r->token.max_vcpu));
  json_object_object_add (lim, "rate", json_object_new_int64 (r->token.rate));
  json_object_object_add (lim, "maxSnapshots", json_object_new_int64 (r->token.max_snapshots));
  json_object_object_add (lim, "maxCostMicros", json_object_new_int64 (r->token.max_cost_micros));
  json_object_object_add (m, "limits", lim);
  json_object_object_add (m, "timeoutMs", json_object_new_int (timeout_ms));
  if (stream)
    json_object_object_add (m, "stream", json_object_new_boolean (true));
  text = json_object_to_json_string_ext (m, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  snprintf (subject, sizeof subject, "runtime.node.%s.api", node);
  /* The node gives up at timeout_ms; its answer may take a little more.
     Nobody subscribed, at once, is a node between two NATS servers (one
     of them just lost: it reconnects within a second or two) or a dead
     one; the request reached nobody, so asking again is safe.  */
  for (uint64_t until = rt_now_ms () + (patient ? SRV_RECONNECT_WAIT_MS : 0);;)
    {
      uint64_t t0 = rt_now_ms ();
      rt_error *e = NULL;

      if (rt_bus_request (c->bus, subject, text, strlen (text), timeout_ms + 2000, &reply, &reply_len, &e) == 0)
        break;
      if (rt_now_ms () - t0 > 1000 || rt_now_ms () >= until || strcmp (e->code, "node_unreachable") != 0)
        {
          *err = e;
          return -EIO;
        }
      rt_error_free (e);
      usleep (250 * 1000);
    }
  return parse_answer (reply, reply_len, out, err);
}

/* `node` added to a sandbox object (or each of a page's).  */
static void
add_node (json_object *o, const char *node)
{
  json_object *data;

  if (json_object_is_type (o, json_type_object) && json_object_object_get_ex (o, "data", &data)
      && json_object_is_type (data, json_type_array))
    return;
  if (json_object_is_type (o, json_type_object) && rt_json_str (o, "kind")
      && strcmp (rt_json_str (o, "kind"), "sandbox") == 0)
    json_object_object_add (o, "node", json_object_new_string (node));
}

int
srv_cluster_call (struct srv_cluster *c, struct srv_req *r, const char *node, int method, const char *path,
                  json_object *query, const void *body, size_t len, int timeout_ms, struct srv_node_answer *out,
                  rt_error **err)
{
  return call (c, r, node, method, path, query, body, len, false, true, timeout_ms, out, err);
}

int
srv_cluster_call_once (struct srv_cluster *c, struct srv_req *r, const char *node, int method, const void *body,
                       size_t len, int timeout_ms, struct srv_node_answer *out, rt_error **err)
{
  return call (c, r, node, method, NULL, NULL, body, len, false, false, timeout_ms, out, err);
}

int
srv_cluster_call_stream (struct srv_cluster *c, struct srv_req *r, const char *node, int timeout_ms,
                         struct srv_node_answer *out, rt_error **err)
{
  return call (c, r, node, r->method, NULL, NULL, r->body, r->body_len, true, true, timeout_ms, out, err);
}

/* A stream's bytes pulled from @node to @r's client until its end, the
   client's leaving, or the node's (cluster/nats.h).  */
static void
pull (struct srv_cluster *c, struct srv_req *r, const char *node, const char *sid)
{
  char subject[RT_NODE_NAME_MAX + 32], msg[96];
  uint64_t seq = 1, heard = rt_now_ms ();
  int quick = 0;

  snprintf (subject, sizeof subject, "runtime.node.%s.pull", node);
  while (!srv_gone (r))
    {
      cleanup_free char *reply = NULL;
      size_t len = 0;
      uint64_t t0 = rt_now_ms ();
      rt_error *e = NULL;
      char kind;

      snprintf (msg, sizeof msg, "{\"stream\":\"%s\",\"seq\":%llu}", sid, (unsigned long long) seq);
      if (rt_bus_request (c->bus, subject, msg, strlen (msg), PULL_WAIT_MS, &reply, &len, &e) < 0)
        {
          rt_error_free (e);
          /* Quiet for PULL_WAIT_MS is a stream with nothing to say; an
             answer refused at once, a node gone.  */
          /* The node drops a stream not pulled for 5 min: so long
             without an answer is a node hung or gone.  */
          if (rt_now_ms () - t0 >= PULL_WAIT_MS / 2 && rt_now_ms () - heard < 300000)
            continue;
          if (rt_now_ms () - t0 >= PULL_WAIT_MS / 2)
            break;
          if (++quick >= 3)
            break;
          usleep (200 * 1000);
          continue;
        }
      quick = 0;
      heard = rt_now_ms ();
      kind = len ? reply[0] : 'x';
      if (kind == 'x' || (len > 1 && srv_stream_write (r, reply + 1, len - 1) < 0))
        break;
      seq++;
      if (kind != 'd')
        break;
    }
  snprintf (msg, sizeof msg, "{\"stream\":\"%s\",\"close\":true}", sid);
  rt_bus_publish (c->bus, subject, msg, strlen (msg), NULL);
  srv_stream_end (r);
}

json_object *
srv_cluster_query (struct srv_req *r)
{
  return pairs_of (&r->query, false);
}

int
srv_cluster_relay (struct srv_cluster *c, struct srv_req *r, const char *node, int timeout_ms)
{
  int status;

  struct srv_node_answer a = { 0 };
  rt_error *err = NULL;
  json_object *o = NULL;

  if (srv_cluster_call_stream (c, r, node, timeout_ms, &a, &err) < 0)
    {
      if (strcmp (err->code, "node_unreachable") == 0)
        srv_reply_error (r, 503, "node_unreachable", "retry; a host silent for 10 s is marked lost", NULL,
                         "host '%s', which holds it, does not answer", node);
      else
        srv_reply_rt_error (r, err);
      if (strcmp (err->code, "bad_gateway") == 0)
        fprintf (stderr, "runtime serve: %s: host '%s': %s\n", r->request_id, node, err->msg);
      rt_error_free (err);
      return 0;
    }
  json_object_object_foreach (a.headers, k, v)
  {
    if (strcasecmp (k, "Content-Type") != 0 && strcasecmp (k, "Content-Length") != 0
        && strcasecmp (k, "x-request-id") != 0)
      srv_add_header (r, k, json_object_get_string (v));
  }
  srv_add_header (r, "Runtime-Node", node);
  if (a.stream[0])
    {
      if (srv_stream_start (r, a.status, a.ctype) == 0)
        pull (c, r, node, a.stream);
      status = a.status;
      srv_node_answer_clear (&a);
      return status;
    }
  if (strncmp (a.ctype, "application/json", 16) == 0 && a.len && (o = json_tokener_parse ((char *) a.body)) != NULL)
    {
      add_node (o, node);
      srv_reply_json (r, a.status, o);
    }
  else
    srv_reply_bytes (r, a.status, a.ctype, a.body, a.len);
  status = a.status;
  srv_node_answer_clear (&a);
  return status;
}

json_object *
srv_cluster_nodes (struct srv_cluster *c)
{
  json_object *arr = json_object_new_array ();
  char t[32];

  pthread_mutex_lock (&c->mu);
  for (size_t i = 0; arr && i < c->nmembers; i++)
    {
      struct member *m = &c->members[i];
      json_object *o = json_object_new_object ();
      json_object_object_add (o, "name", json_object_new_string (m->name));
      json_object_object_add (o, "state", json_object_new_string (m->lost ? "lost" : "up"));
      if (m->seen_epoch)
        {
          rt_format_time (m->seen_epoch, t);
          json_object_object_add (o, "lastSeenAt", json_object_new_string (t));
        }
      else
        json_object_object_add (o, "lastSeenAt", NULL);
      if (m->lost)
        {
          rt_format_time (m->lost_at, t);
          json_object_object_add (o, "lostAt", json_object_new_string (t));
        }
      json_object_object_add (o, "report", json_object_get (m->report));
      json_object_array_add (arr, o);
    }
  pthread_mutex_unlock (&c->mu);
  return arr;
}

size_t
srv_cluster_up (struct srv_cluster *c, char (*names)[65], size_t max)
{
  size_t n = 0;

  pthread_mutex_lock (&c->mu);
  for (size_t i = 0; i < c->nmembers && n < max; i++)
    if (!c->members[i].lost && c->members[i].seen_epoch)
      snprintf (names[n++], 65, "%s", c->members[i].name);
  pthread_mutex_unlock (&c->mu);
  return n;
}

static json_object *
path_get (json_object *o, const char *a, const char *b)
{
  json_object *v = NULL;

  if (json_object_object_get_ex (o, a, &v) && b && !json_object_object_get_ex (v, b, &v))
    v = NULL;
  return v;
}

/* The warm spares of the shape in report @o.  */
static unsigned
spares_of (json_object *o, unsigned vcpu, unsigned long mib, const char *image)
{
  json_object *arr = json_object_object_get (o, "spares");
  unsigned n = 0;

  for (size_t i = 0; json_object_is_type (arr, json_type_array) && i < json_object_array_length (arr); i++)
    {
      json_object *s = json_object_array_get_idx (arr, i);
      const char *im = rt_json_str (s, "image");
      if ((unsigned) rt_json_i64 (s, "vcpu") == vcpu && (unsigned long) rt_json_i64 (s, "memoryMiB") == mib
          && (image == NULL || (im && strcmp (im, image) == 0)))
        n += (unsigned) rt_json_i64 (s, "ready");
    }
  return n;
}

size_t
srv_cluster_place (struct srv_cluster *c, unsigned vcpu, unsigned long memory_mib, const char *image,
                   char (*names)[65], size_t max)
{
  struct rt_node_report reps[SRV_CLUSTER_MAX_NODES];
  char known[SRV_CLUSTER_MAX_NODES][RT_NODE_NAME_MAX + 1];
  size_t order[SRV_CLUSTER_MAX_NODES], n = 0, got;
  struct rt_place_shape shape = { vcpu, memory_mib };
  uint64_t rng;

  pthread_mutex_lock (&c->mu);
  for (size_t i = 0; i < c->nmembers; i++)
    {
      struct member *m = &c->members[i];
      if (m->lost || m->report == NULL)
        continue;
      unsigned total = (unsigned) json_object_get_int64 (path_get (m->report, "vcpus", "total")) * SRV_VCPU_OVERCOMMIT;
      unsigned used = (unsigned) json_object_get_int64 (path_get (m->report, "vcpus", "used"));
      reps[n] = (struct rt_node_report){
        .vcpu_total = total,
        .vcpu_free = used < total ? total - used : 0,
        .mem_total_mib = (uint64_t) json_object_get_int64 (path_get (m->report, "memory", "totalBytes")) >> 20,
        .mem_free_mib = (uint64_t) json_object_get_int64 (path_get (m->report, "memory", "freeBytes")) >> 20,
        .spares = spares_of (m->report, vcpu, memory_mib, image),
        .lost = false,
      };
      snprintf (known[n], sizeof known[n], "%s", m->name);
      n++;
    }
  rng = c->rng = c->rng * 6364136223846793005ull + 1442695040888963407ull;
  pthread_mutex_unlock (&c->mu);
  if (rng == 0)
    rng = 1;
  got = rt_place (reps, n, &shape, RT_PLACE_SAMPLE, &rng, order, n);
  for (size_t i = 0; i < got && i < max; i++)
    snprintf (names[i], 65, "%s", known[order[i]]);
  return got < max ? got : max;
}

/* The catalog, waiting up to CATALOG_WAIT_MS while JetStream is not
   ready (a leader being elected: servers just started, or one lost):
   a replica is nothing without it.  */
static int
open_catalog (struct srv_cluster *c, unsigned replicas, rt_error **err)
{
  uint64_t until = rt_now_ms () + CATALOG_WAIT_MS;
  bool said = false;

  for (;;)
    {
      rt_error *e = NULL;

      if (rt_catalog_open (c->bus, replicas, &c->cat, &e) == 0)
        return 0;
      if (strcmp (e->code, "cluster_unavailable") != 0 || rt_now_ms () >= until)
        {
          *err = e;
          return -EIO;
        }
      if (!said)
        fprintf (stderr, "runtime serve: waiting for the catalog (%s)\n", e->msg);
      said = true;
      rt_error_free (e);
      usleep (500 * 1000);
    }
}

int
srv_cluster_start (struct srv *s, const struct srv_cluster_opts *o, struct srv_cluster **out, rt_error **err)
{
  struct srv_cluster *c = calloc (1, sizeof *c);
  struct rt_seal_key key;
  struct rt_bus_opts bo = { .urls = o->nats,
                            .name = "runtime-serve",
                            .ca_file = o->ca_file,
                            .cert_file = o->cert_file,
                            .key_file = o->key_file,
                            .key = &key };
  int ret;

  if (c == NULL)
    return rt_error_oom (err);
  /* Only a holder of the key may speak to a node (cluster/seal.h).  */
  if (rt_seal_key_load (o->cluster_key, &key, err) < 0)
    {
      free (c);
      return err && *err && (*err)->hint
                 ? -EINVAL
                 : rt_error_hint (err, "give --cluster-key FILE (or RUNTIME_SERVE_CLUSTER_KEY), the nodes' own");
    }
  c->srv = s;
  pthread_mutex_init (&c->mu, NULL);
  pthread_cond_init (&c->cond, NULL);
  if (getrandom (&c->rng, sizeof c->rng, 0) != sizeof c->rng || c->rng == 0)
    c->rng = (uint64_t) rt_now_ms () | 1;
  *out = c;
  ret = rt_bus_connect (&bo, &c->bus, err);
  /* The bus keeps its own copy.  */
  OPENSSL_cleanse (&key, sizeof key);
  if (ret < 0 || open_catalog (c, o->replicas ? o->replicas : 3, err) < 0
      || rt_bus_subscribe (c->bus, "runtime.node.*.capacity", NULL, on_report, c, &c->reports, err) < 0)
    return -EIO;
  ret = pthread_create (&c->keeper, NULL, srv_cluster_keeper, c);
  if (ret != 0)
    return rt_error_set (err, ret, "internal", "cannot start the keeper of hosts: %s", strerror (ret));
  c->keeper_started = true;
  return 0;
}

void
srv_cluster_stop (struct srv_cluster *c)
{
  if (c == NULL)
    return;
  pthread_mutex_lock (&c->mu);
  c->stopping = true;
  pthread_cond_broadcast (&c->cond);
  pthread_mutex_unlock (&c->mu);
  if (c->keeper_started)
    pthread_join (c->keeper, NULL);
  rt_bus_unsubscribe (c->reports);
  rt_catalog_free (c->cat);
  rt_bus_free (c->bus);
  for (size_t i = 0; i < c->nmembers; i++)
    json_object_put (c->members[i].report);
  pthread_cond_destroy (&c->cond);
  pthread_mutex_destroy (&c->mu);
  free (c);
}

static int
replica_start (struct srv *s, const rt_serve_opts *opts, void **data, rt_error **err)
{
  struct srv_cluster_opts co = { .nats = opts->nats,
                                 .replicas = opts->replicas,
                                 .ca_file = opts->nats_ca,
                                 .cert_file = opts->nats_cert,
                                 .key_file = opts->nats_key,
                                 .cluster_key = opts->cluster_key };
  struct srv_cluster *c = NULL;
  int ret = srv_cluster_start (s, &co, &c, err);

  *data = c;
  return ret;
}

static void
replica_stop (void *data)
{
  srv_cluster_stop (data);
}

const struct srv_app srv_replica_app = {
  .banner = "a replica over the cluster's nodes (NATS)",
  .routes = srv_cluster_routes,
  .start = replica_start,
  .stop = replica_stop,
};
