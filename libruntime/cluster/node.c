/* node.c - `runtime node` (rt_node, runtime.h; subjects in node.h): the
   heartbeat loop on the caller's thread, catalog writes on a thread of
   their own (a JetStream write waits out a leader election, seconds, and
   heartbeats must not), pings on nats.c's.  */
#include <errno.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "public/driver.h"
#include "cluster/bus.h"
#include "cluster/catalog.h"
#include "cluster/node.h"
#include "cluster/report.h"
#include "common/cleanup.h"
#include "common/strutil.h"
#include "common/util.h"
#include "core/context.h"
#include "remote/http.h"
#include "cluster/nats.h"

#define PING_TIMEOUT_MS 500
#define DEFAULT_REPLICAS 3
/* A catalog not reached is tried again this often.  */
#define CATALOG_RETRY_MS 30000
/* serve's sweep of old files (serve/sweep.h), as runtime serve's.  */
#define SWEEP_MS (3600 * 1000)
/* A catalog entry that beat this recently is a node running.  */
#define NODE_FRESH_MS (5 * RT_NODE_HEARTBEAT_MS)

struct node
{
  rt_context *ctx;
  rt_bus *bus;
  rt_catalog *cat; /* NULL while not reached: the writer's after start */
  unsigned replicas;
  uint64_t catalog_retry_at;
  bool catalog_said;
  char name[RT_NODE_NAME_MAX + 1];
  char capacity_subject[RT_NODE_NAME_MAX + 32];
  char ping_subject[RT_NODE_NAME_MAX + 32];
  char api_subject[RT_NODE_NAME_MAX + 32];
  char host_subject[RT_NODE_NAME_MAX + 32];
  char pull_subject[RT_NODE_NAME_MAX + 32];
  char key[RT_NODE_NAME_MAX + 8];
  char instance[33];
  char started[32];
  const char *accel;

  pthread_mutex_t mu;
  pthread_cond_t cond;
  char *latest;  /* the last report, for pings */
  char *pending; /* the next catalog entry, for the writer */
  bool stopping;
  bool taken;   /* another run took node.<name> over: this one stops */
  uint64_t rev; /* the writer's: the entry's revision it wrote last */
};

bool
rt_node_name_valid (const char *name)
{
  size_t len = name ? strlen (name) : 0;

  if (len == 0 || len > RT_NODE_NAME_MAX)
    return false;
  for (size_t i = 0; i < len; i++)
    if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= '0' && name[i] <= '9')
          || name[i] == '_' || name[i] == '-'))
      return false;
  return true;
}

static int
pick_name (const char *asked, char out[RT_NODE_NAME_MAX + 1], rt_error **err)
{
  char host[256] = "";

  if (asked == NULL)
    {
      if (gethostname (host, sizeof host - 1) < 0)
        return rt_error_set (err, errno, "internal", "cannot read the host name: %s", strerror (errno));
      host[strcspn (host, ".")] = '\0';
      asked = host;
    }
  if (!rt_node_name_valid (asked))
    {
      rt_error_set (err, EINVAL, "usage", "'%.80s' is not a node name", asked);
      return rt_error_hint (err, "give --name: letters, digits, '_' and '-', at most %d", RT_NODE_NAME_MAX);
    }
  snprintf (out, RT_NODE_NAME_MAX + 1, "%s", asked);
  return 0;
}

/* What the host has: vCPUs online, MemTotal and MemAvailable.  */
static void
host_facts (struct rt_node_host *h)
{
  cleanup_file FILE *f = fopen ("/proc/meminfo", "re");
  char line[256];
  unsigned long long kb;
  long cpus = sysconf (_SC_NPROCESSORS_ONLN);

  h->vcpu_total = cpus > 0 ? (unsigned) cpus : 1;
  while (f && fgets (line, sizeof line, f))
    {
      if (sscanf (line, "MemTotal: %llu kB", &kb) == 1)
        h->mem_total = kb * 1024;
      else if (sscanf (line, "MemAvailable: %llu kB", &kb) == 1)
        h->mem_available = kb * 1024;
    }
}

/* The report now, as text, with what the catalog entry adds.  */
static int
build_report (struct node *n, uint64_t seq, char **out, rt_error **err)
{
  struct rt_node_host h = { n->name, n->accel, rt_version (), 0, 0, 0, rt_epoch_ms (), seq };
  cleanup_free char *sandboxes = NULL, *pools = NULL;
  cleanup_json json_object *sb = NULL, *pl = NULL, *r = NULL;

  host_facts (&h);
  if (rt_sandbox_list_json (n->ctx, false, &sandboxes, err) < 0)
    return -EIO;
  /* No pools is no spares, not a failure of the report.  */
  if (rt_pool_list_json (n->ctx, &pools, NULL) == 0)
    pl = json_tokener_parse (pools);
  sb = json_tokener_parse (sandboxes);
  if (rt_node_report_build (&h, sb, pl, &r, err) < 0)
    return -EIO;
  json_object_object_add (r, "state", json_object_new_string ("up"));
  json_object_object_add (r, "instance", json_object_new_string (n->instance));
  json_object_object_add (r, "startedAt", json_object_new_string (n->started));
  json_object_object_add (r, "beatMs", json_object_new_int64 (rt_epoch_ms ()));
  *out = strdup (json_object_to_json_string_ext (r, JSON_C_TO_STRING_PLAIN));
  return *out ? 0 : rt_error_oom (err);
}

static void
on_ping (void *data, const struct rt_bus_msg *m)
{
  struct node *n = data;
  cleanup_free char *answer = NULL;

  if (m->reply == NULL)
    return;
  pthread_mutex_lock (&n->mu);
  answer = n->latest ? strdup (n->latest) : NULL;
  pthread_mutex_unlock (&n->mu);
  if (answer == NULL)
    answer = rt_strdup_printf ("{\"name\":\"%s\",\"state\":\"up\"}", n->name);
  if (answer)
    rt_bus_publish (n->bus, m->reply, answer, strlen (answer), NULL);
}

/* {op "list"}: {sandboxes [{id, tenant, state}]}, every tenant's.  */
static json_object *
host_list (rt_context *ctx, rt_error **err)
{
  cleanup_free char *text = NULL;
  cleanup_json json_object *all = NULL;
  json_object *o = json_object_new_object (), *arr = json_object_new_array ();

  json_object_object_add (o, "sandboxes", arr);
  if (rt_sandbox_list_json (ctx, false, &text, err) < 0 || (all = json_tokener_parse (text)) == NULL)
    {
      json_object_put (o);
      return NULL;
    }
  for (size_t i = 0; json_object_is_type (all, json_type_array) && i < json_object_array_length (all); i++)
    {
      json_object *s = json_object_array_get_idx (all, i), *e = json_object_new_object ();
      for (const char *const *k = (const char *const[]){ "id", "tenant", "state", NULL }; *k; k++)
        json_object_object_add (e, *k, json_object_get (json_object_object_get (s, *k)));
      json_object_array_add (arr, e);
    }
  return o;
}

/* {op "stop", ids […]}: each stopped (its record kept, as `sandbox stop`
   does); {stopped […], failed [{id, error}]}.  */
static json_object *
host_stop (rt_context *ctx, json_object *ids)
{
  json_object *o = json_object_new_object (), *ok = json_object_new_array (), *bad = json_object_new_array ();

  json_object_object_add (o, "stopped", ok);
  json_object_object_add (o, "failed", bad);
  for (size_t i = 0; json_object_is_type (ids, json_type_array) && i < json_object_array_length (ids); i++)
    {
      const char *id = json_object_get_string (json_object_array_get_idx (ids, i));
      rt_sandbox *sb = NULL;
      rt_error *e = NULL;

      if (rt_sandbox_open (ctx, id, &sb, &e) == 0 && rt_sandbox_stop (sb, &e) == 0)
        {
          fprintf (stderr, "runtime node: stopped %s: the cluster's catalog does not give it to this host\n", id);
          json_object_array_add (ok, json_object_new_string (id));
        }
      else
        {
          json_object *f = json_object_new_object ();
          json_object_object_add (f, "id", json_object_new_string (id));
          json_object_object_add (f, "error", json_object_new_string (e ? e->msg : "?"));
          json_object_array_add (bad, f);
        }
      if (sb)
        rt_sandbox_close (sb);
      rt_error_free (e);
    }
  return o;
}

/* runtime.node.<name>.host: what a serve replica asks of the host as a
   whole when it reconciles it (cluster/replica.h); only what a holder of
   the cluster key sealed reaches it (cluster/bus.h).  */
static void
on_host (void *data, const struct rt_bus_msg *m)
{
  struct node *n = data;
  cleanup_json json_object *req = NULL, *answer = NULL;
  json_tokener *tok = json_tokener_new ();
  rt_context *ctx = NULL;
  rt_error *e = NULL;
  const char *op, *text;

  if (m->reply == NULL || tok == NULL)
    {
      if (tok)
        json_tokener_free (tok);
      return;
    }
  req = json_tokener_parse_ex (tok, m->data, (int) m->len);
  json_tokener_free (tok);
  op = rt_json_str (req, "op");
  if (rt_context_dup (n->ctx, &ctx, &e) < 0)
    answer = NULL;
  else if (op && strcmp (op, "list") == 0)
    answer = host_list (ctx, &e);
  else if (op && strcmp (op, "stop") == 0)
    answer = host_stop (ctx, json_object_object_get (req, "ids"));
  else
    rt_error_set (&e, EINVAL, "invalid_request", "unknown op");
  if (answer == NULL)
    {
      answer = json_object_new_object ();
      json_object_object_add (answer, "error", json_object_new_string (e ? e->msg : "out of memory"));
    }
  rt_error_free (e);
  rt_context_free (ctx);
  text = json_object_to_json_string_ext (answer, JSON_C_TO_STRING_PLAIN);
  rt_bus_publish (n->bus, m->reply, text, strlen (text), NULL);
}

/* Whether catalog entry @old is another run's that still reports: its
   instance is not ours, it says "up" and beat within NODE_FRESH_MS.  */
static bool
held_by_other (struct node *n, const char *old)
{
  cleanup_json json_object *o = old ? json_tokener_parse (old) : NULL;
  const char *inst = rt_json_str (o, "instance"), *state = rt_json_str (o, "state");
  int64_t age = rt_epoch_ms () - json_object_get_int64 (json_object_object_get (o, "beatMs"));

  /* A beat from the future (a clock ahead, a forged entry) holds the name
     no longer than a fresh one.  */
  return inst && strcmp (inst, n->instance) != 0 && state && strcmp (state, "up") == 0 && age < NODE_FRESH_MS
         && age > -NODE_FRESH_MS;
}

static int
name_taken (struct node *n, rt_error **err)
{
  rt_error_set (err, EEXIST, "name_taken", "node name '%s' is taken by a running node", n->name);
  return rt_error_hint (err, "give this host another --name (a node killed a moment ago frees it within %d s)",
                        NODE_FRESH_MS / 1000);
}

/* node.<name> claimed with @value by compare-and-set: made if absent,
   else taken over from the revision read if no other run holds it
   (held_by_other); whoever loses a race sees "conflict".  */
static int
claim_entry (struct node *n, const char *value, rt_error **err)
{
  cleanup_error rt_error *e = NULL;
  cleanup_free char *old = NULL;
  uint64_t rev = 0;

  if (rt_catalog_create (n->cat, n->key, value, &n->rev, &e) == 0)
    return 0;
  if (strcmp (e->code, "conflict") != 0)
    return rt_error_set (err, e->status, e->code, "%s", e->msg);
  rt_error_free (e), e = NULL;
  if (rt_catalog_get (n->cat, n->key, &old, &rev, &e) < 0 && strcmp (e->code, "not_found") != 0)
    return rt_error_set (err, e->status, e->code, "%s", e->msg);
  if (held_by_other (n, old))
    return name_taken (n, err);
  rt_error_free (e), e = NULL;
  if ((rev ? rt_catalog_update (n->cat, n->key, value, rev, &n->rev, &e)
           : rt_catalog_create (n->cat, n->key, value, &n->rev, &e))
      == 0)
    return 0;
  return strcmp (e->code, "conflict") == 0 ? name_taken (n, err) : rt_error_set (err, e->status, e->code, "%s", e->msg);
}

/* The name claimed in the catalog at start, when there is one (item of
   node.h): a second node of this name started at the same time loses.  */
static int
claim_name (struct node *n, rt_error **err)
{
  cleanup_free char *value = NULL;

  if (n->cat == NULL)
    return 0;
  value = rt_strdup_printf ("{\"name\":\"%s\",\"state\":\"up\",\"instance\":\"%s\",\"startedAt\":\"%s\","
                            "\"beatMs\":%lld}",
                            n->name, n->instance, n->started, (long long) rt_epoch_ms ());
  return value ? claim_entry (n, value, err) : rt_error_oom (err);
}

/* @value under node.<name>, from the revision this node wrote last.  An
   entry another run wrote meanwhile is that run's: this node has lost
   its name ("name_taken") and must stop serving.  */
static int
put_entry (struct node *n, const char *value, rt_error **err)
{
  for (int attempt = 0; attempt < 2; attempt++)
    {
      cleanup_error rt_error *e = NULL;
      cleanup_free char *old = NULL;
      cleanup_json json_object *o = NULL;
      uint64_t rev = 0;

      if (n->rev == 0)
        return claim_entry (n, value, err);
      if (rt_catalog_update (n->cat, n->key, value, n->rev, &n->rev, &e) == 0)
        return 0;
      if (strcmp (e->code, "conflict") != 0)
        return rt_error_set (err, e->status, e->code, "%s", e->msg);
      rt_error_free (e), e = NULL;
      if (rt_catalog_get (n->cat, n->key, &old, &rev, &e) < 0)
        {
          if (strcmp (e->code, "not_found") != 0)
            return rt_error_set (err, e->status, e->code, "%s", e->msg);
          /* Removed (an operator): made again.  */
          n->rev = 0;
          continue;
        }
      o = json_tokener_parse (old);
      /* Our own write whose answer was lost: from its revision.  */
      if (rt_json_str (o, "instance") && strcmp (rt_json_str (o, "instance"), n->instance) == 0)
        {
          n->rev = rev;
          continue;
        }
      return name_taken (n, err);
    }
  return rt_error_set (err, EAGAIN, "conflict", "'%s' keeps changing under this node", n->key);
}

/* The catalog, when this node may and can use it.  With the per-role
   credentials of docs/cluster/nats-auth.conf a node has no JetStream at
   all (the catalog is the serve replicas'): it then reports on NATS only.
   A catalog not reached for another reason (JetStream still electing) is
   tried again every CATALOG_RETRY_MS.  Return: <0 only for a catalog
   refused as configured ("usage": other replicas than asked).  */
static int
open_catalog (struct node *n, rt_error **err)
{
  cleanup_error rt_error *e = NULL;

  if (rt_catalog_open (n->bus, n->replicas, &n->cat, &e) == 0)
    {
      if (n->catalog_said)
        fprintf (stderr, "runtime node: the catalog reached: keeping %s there\n", n->key);
      return 0;
    }
  if (strcmp (e->code, "usage") == 0)
    {
      rt_error_set (err, e->status, e->code, "%s", e->msg);
      return e->hint ? rt_error_hint (err, "%s", e->hint) : -EINVAL;
    }
  if (!n->catalog_said)
    fprintf (stderr, "runtime node: no catalog (%s): reporting on NATS only, trying again every %d s\n", e->msg,
             CATALOG_RETRY_MS / 1000);
  n->catalog_said = true;
  n->catalog_retry_at = rt_now_ms () + CATALOG_RETRY_MS;
  return 0;
}

static void *
writer (void *arg)
{
  struct node *n = arg;
  bool failing = false;

  pthread_mutex_lock (&n->mu);
  while (!n->stopping)
    {
      char *value = n->pending;
      rt_error *e = NULL;

      if (value == NULL)
        {
          pthread_cond_wait (&n->cond, &n->mu);
          continue;
        }
      n->pending = NULL;
      pthread_mutex_unlock (&n->mu);
      if (n->cat == NULL && rt_now_ms () >= n->catalog_retry_at && open_catalog (n, &e) < 0)
        {
          fprintf (stderr, "runtime node: %s\n", e->msg);
          rt_error_free (e), e = NULL;
        }
      /* Said once per run of failures: a NATS server away costs a few.  */
      if (n->cat && put_entry (n, value, &e) < 0 && strcmp (e->code, "name_taken") != 0 && !failing)
        fprintf (stderr, "runtime node: cannot write %s in the catalog (will retry): %s\n", n->key, e->msg);
      failing = e != NULL;
      free (value);
      pthread_mutex_lock (&n->mu);
      if (e && strcmp (e->code, "name_taken") == 0)
        {
          n->taken = true;
          pthread_cond_broadcast (&n->cond);
        }
      rt_error_free (e);
    }
  pthread_mutex_unlock (&n->mu);
  return NULL;
}

/* A node of this name that answers its ping is up elsewhere.  */
static int
check_name_free (struct node *n, rt_error **err)
{
  cleanup_free char *reply = NULL;
  size_t len = 0;

  if (rt_bus_request (n->bus, n->ping_subject, "", 0, PING_TIMEOUT_MS, &reply, &len, NULL) == 0)
    {
      rt_error_set (err, EEXIST, "name_taken", "a node named '%s' is up in this cluster", n->name);
      return rt_error_hint (err, "give this host another --name");
    }
  return 0;
}

static int
node_init (struct node *n, rt_context *ctx, const rt_node_opts *o, rt_error **err)
{
  unsigned char raw[16];
  const char *accel = NULL;
  rt_error *e = NULL;

  n->ctx = ctx;
  if (pick_name (o->name, n->name, err) < 0)
    return -EINVAL;
  snprintf (n->capacity_subject, sizeof n->capacity_subject, "runtime.node.%s.capacity", n->name);
  snprintf (n->ping_subject, sizeof n->ping_subject, "runtime.node.%s.ping", n->name);
  snprintf (n->api_subject, sizeof n->api_subject, "runtime.node.%s.api", n->name);
  snprintf (n->host_subject, sizeof n->host_subject, "runtime.node.%s.host", n->name);
  snprintf (n->pull_subject, sizeof n->pull_subject, "runtime.node.%s.pull", n->name);
  snprintf (n->key, sizeof n->key, "node.%s", n->name);
  if (getrandom (raw, sizeof raw, 0) != sizeof raw)
    return rt_error_set (err, errno, "internal", "getrandom: %s", strerror (errno));
  for (size_t i = 0; i < sizeof raw; i++)
    snprintf (n->instance + 2 * i, 3, "%02x", raw[i]);
  rt_format_time (rt_epoch_ms (), n->started);
  /* Reported, not needed: a node whose probe fails still has sandboxes
     to answer for.  */
  if (rt_context_accel (ctx, &accel, &e) < 0)
    {
      fprintf (stderr, "runtime node: accelerator unknown: %s\n", e->msg);
      rt_error_free (e);
    }
  n->accel = accel;
  return 0;
}

static int
node_join (struct node *n, const rt_node_opts *o, rt_bus_sub **ping, rt_bus_sub **host, struct srv_nats **api,
           rt_error **err)
{
  cleanup_free char *conn_name = rt_strdup_printf ("runtime-node-%s", n->name);
  struct rt_seal_key key;
  struct rt_bus_opts bo = { .urls = o->nats,
                            .name = conn_name,
                            .ca_file = o->ca_file,
                            .cert_file = o->cert_file,
                            .key_file = o->key_file,
                            .key = &key };
  int ret;

  n->replicas = o->replicas ? o->replicas : DEFAULT_REPLICAS;

  if (conn_name == NULL)
    return rt_error_oom (err);
  /* Only what a holder of the key sealed is taken (cluster/seal.h): the
     tenant and limits a request names are then a replica's.  */
  if (rt_seal_key_load (o->cluster_key, &key, err) < 0)
    return err && *err && (*err)->hint
               ? -EINVAL
               : rt_error_hint (err, "give --cluster-key FILE (or RUNTIME_NODE_CLUSTER_KEY), the replicas' own");
  ret = rt_bus_connect (&bo, &n->bus, err);
  OPENSSL_cleanse (&key, sizeof key);
  if (ret < 0 || check_name_free (n, err) < 0 || open_catalog (n, err) < 0 || claim_name (n, err) < 0
      || rt_bus_subscribe (n->bus, n->ping_subject, NULL, on_ping, n, ping, err) < 0
      || rt_bus_subscribe (n->bus, n->host_subject, NULL, on_host, n, host, err) < 0
      || srv_nats_start (n->ctx, n->bus, n->api_subject, n->pull_subject, api, err) < 0)
    return -EIO;
  return 0;
}

/* Waits for SIGTERM or SIGINT until @deadline (CLOCK_MONOTONIC ms).
   Return: the signal, or 0 at the deadline.  */
static int
wait_signal (const sigset_t *set, uint64_t deadline)
{
  for (;;)
    {
      uint64_t now = rt_now_ms ();
      struct timespec ts;
      int sig;
      if (now >= deadline)
        return 0;
      ts.tv_sec = (time_t) ((deadline - now) / 1000);
      ts.tv_nsec = (long) ((deadline - now) % 1000) * 1000000L;
      sig = sigtimedwait (set, NULL, &ts);
      if (sig > 0)
        return sig;
      if (errno == EAGAIN)
        return 0;
    }
}

/* One heartbeat: the report published, kept for pings, handed to the
   writer.  */
static void
beat (struct node *n, uint64_t seq, bool *failing)
{
  cleanup_free char *report = NULL;
  rt_error *e = NULL;

  if (build_report (n, seq, &report, &e) == 0
      && rt_bus_publish (n->bus, n->capacity_subject, report, strlen (report), &e) == 0)
    {
      if (*failing)
        fprintf (stderr, "runtime node: reporting again\n");
      *failing = false;
    }
  else if (!*failing)
    {
      fprintf (stderr, "runtime node: cannot report (will retry): %s\n", e ? e->msg : "?");
      *failing = true;
    }
  rt_error_free (e);
  if (report == NULL)
    return;
  pthread_mutex_lock (&n->mu);
  free (n->latest);
  n->latest = strdup (report);
  free (n->pending);
  n->pending = steal_pointer (&report);
  pthread_cond_signal (&n->cond);
  pthread_mutex_unlock (&n->mu);
}

/* The catalog entry marked "stopped", from the last report.  */
static void
mark_stopped (struct node *n)
{
  cleanup_json json_object *r = n->latest ? json_tokener_parse (n->latest) : NULL;
  rt_error *e = NULL;

  if (r == NULL || n->cat == NULL)
    return;
  json_object_object_add (r, "state", json_object_new_string ("stopped"));
  if (put_entry (n, json_object_to_json_string_ext (r, JSON_C_TO_STRING_PLAIN), &e) < 0)
    fprintf (stderr, "runtime node: cannot mark %s stopped: %s\n", n->key, e->msg);
  rt_error_free (e);
}

/* Whether the writer found node.<name> taken over.  */
static bool
is_taken (struct node *n)
{
  pthread_mutex_lock (&n->mu);
  bool taken = n->taken;
  pthread_mutex_unlock (&n->mu);
  return taken;
}

static void
node_loop (struct node *n, const sigset_t *set, struct srv_nats *api)
{
  uint64_t next = rt_now_ms (), seq = 0, sweep = next + SWEEP_MS;
  bool failing = false;
  char url[256] = "";
  int sig = 0;

  /* The server reached, without credentials: the list given has them
     (this line goes to the journal).  */
  if (rt_bus_server_url (n->bus, url, sizeof url) < 0)
    snprintf (url, sizeof url, "(reconnecting)");
  fprintf (stderr, "runtime node: %s in the cluster (via %s), reporting every %d ms\n", n->name, url,
           RT_NODE_HEARTBEAT_MS);
  do
    {
      beat (n, ++seq, &failing);
      srv_nats_tick (api);
      if (rt_now_ms () >= sweep)
        {
          srv_nats_sweep (api);
          sweep = rt_now_ms () + SWEEP_MS;
        }
      next += RT_NODE_HEARTBEAT_MS;
      /* Late (a slow list): the next one now, not a burst to catch up.  */
      if (next < rt_now_ms ())
        next = rt_now_ms ();
    }
  while (!is_taken (n) && (sig = wait_signal (set, next)) == 0 && !is_taken (n));
  if (is_taken (n))
    fprintf (stderr,
             "runtime node: node name '%s' was taken over by another running node: stopping (sandboxes keep "
             "running)\n",
             n->name);
  else
    fprintf (stderr, "runtime node: %s, stopping (sandboxes keep running)\n", strsignal (sig));
}

int
rt_node (rt_context *ctx, const rt_node_opts *opts, rt_error **err)
{
  struct node n = { 0 };
  rt_bus_sub *ping = NULL, *host = NULL;
  struct srv_nats *api = NULL;
  sigset_t set, old, pending;
  pthread_t thread;
  bool started = false, idle;
  int ret;

  /* Its requests' contexts would be clients of a server again.  */
  if (rt_local_only (ctx, "runtime node", err) < 0)
    return -ENOTSUP;
  if (opts == NULL || opts->nats == NULL || *opts->nats == '\0')
    return rt_error_set (err, EINVAL, "usage", "no NATS URL given");
  /* Before any thread of nats.c exists, so that all of them inherit it:
     a signal is then only ever taken here.  */
  sigemptyset (&set);
  sigaddset (&set, SIGTERM);
  sigaddset (&set, SIGINT);
  pthread_sigmask (SIG_BLOCK, &set, &old);
  pthread_mutex_init (&n.mu, NULL);
  pthread_cond_init (&n.cond, NULL);
  ret = node_init (&n, ctx, opts, err);
  if (ret == 0)
    ret = node_join (&n, opts, &ping, &host, &api, err);
  if (ret == 0 && (ret = -pthread_create (&thread, NULL, writer, &n)) < 0)
    rt_error_set (err, -ret, "internal", "cannot start the catalog writer: %s", strerror (-ret));
  started = ret == 0;
  if (started)
    node_loop (&n, &set, api);
  /* API requests end first (their streams cut), then pings: their
     handler reads n.latest.  */
  idle = srv_nats_stop (api);
  rt_bus_unsubscribe (ping);
  rt_bus_unsubscribe (host);
  if (started)
    {
      pthread_mutex_lock (&n.mu);
      n.stopping = true;
      pthread_cond_signal (&n.cond);
      pthread_mutex_unlock (&n.mu);
      pthread_join (thread, NULL);
      /* A name taken over: the entry is the other run's.  */
      if (n.taken)
        ret = name_taken (&n, err);
      else
        mark_stopped (&n);
    }
  rt_catalog_free (n.cat);
  /* A handler still running replies on the bus: left to the exit.  */
  if (idle)
    rt_bus_free (n.bus);
  else
    fprintf (stderr, "runtime node: a request still runs; leaving it to the exit\n");
  free (n.latest);
  free (n.pending);
  pthread_cond_destroy (&n.cond);
  pthread_mutex_destroy (&n.mu);
  /* A second signal while stopping is taken here, not by the default
     action once unblocked.  */
  while (sigpending (&pending) == 0 && (sigismember (&pending, SIGTERM) || sigismember (&pending, SIGINT)))
    sigwaitinfo (&set, NULL);
  pthread_sigmask (SIG_SETMASK, &old, NULL);
  return ret < 0 ? ret : 0;
}
