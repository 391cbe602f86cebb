/* replica-keeper.c - the keeper thread of a `runtime serve --nats`
   replica (cluster.h): hosts silent for SRV_NODE_LOST_MS marked lost in
   the catalog and their sandboxes ended, hosts heard again reconciled.
   (no header of its own: cluster-internal.h declares the thread.)  */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/state.h"
#include "common/cleanup.h"
#include "common/strutil.h"
#include "common/util.h"
#include "cluster/replica-internal.h"

#define KEEP_TICK_MS 500
#define HOST_TIMEOUT_MS 60000
#define PING_TIMEOUT_MS 1000

static int64_t
now_epoch (void)
{
  return rt_epoch_ms ();
}

/* A request to node @name's host subject (cluster/node.h).  */
static int
host_call (struct srv_cluster *c, const char *name, const char *body, json_object **out, rt_error **err)
{
  char subject[RT_NODE_NAME_MAX + 32];
  cleanup_free char *reply = NULL;
  size_t len = 0;

  snprintf (subject, sizeof subject, "runtime.node.%s.host", name);
  if (rt_bus_request (c->bus, subject, body, strlen (body), HOST_TIMEOUT_MS, &reply, &len, err) < 0)
    return -EIO;
  *out = json_tokener_parse (reply);
  if (*out == NULL || !json_object_is_type (*out, json_type_object))
    return rt_error_set (err, EPROTO, "bad_gateway", "node '%s' answered no JSON object", name);
  return 0;
}

/* sb.<id> ended (@reason) unless it already is.  */
static void
end_entry (struct srv_cluster *c, const char *key, const char *node, const char *reason, int64_t at)
{
  for (int attempt = 0; attempt < 3; attempt++)
    {
      cleanup_free char *value = NULL;
      cleanup_json json_object *o = NULL;
      rt_error *e = NULL;
      uint64_t rev = 0;
      char t[32];
      json_object *info;

      if (rt_catalog_get (c->cat, key, &value, &rev, NULL) < 0 || (o = json_tokener_parse (value)) == NULL)
        return;
      if (node && (rt_json_str (o, "node") == NULL || strcmp (rt_json_str (o, "node"), node) != 0))
        return;
      if (rt_json_str (o, "state") && strcmp (rt_json_str (o, "state"), "live") != 0)
        return;
      rt_format_time (at, t);
      json_object_object_add (o, "state", json_object_new_string ("stopped"));
      json_object_object_add (o, "stopReason", json_object_new_string (reason));
      json_object_object_add (o, "endedAt", json_object_new_string (t));
      if ((info = json_object_object_get (o, "info")) && json_object_is_type (info, json_type_object))
        {
          json_object_object_add (info, "state", json_object_new_string ("stopped"));
          json_object_object_add (info, "stopReason", json_object_new_string (reason));
          json_object_object_add (info, "endedAt", json_object_new_string (t));
        }
      if (rt_catalog_update (c->cat, key, json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN), rev, NULL, &e)
          == 0)
        return;
      rt_error_free (e);
    }
}

/* Every live sandbox the catalog has on @node, not in @except (a JSON
   array of ids, or NULL), ended.  */
static void
end_all (struct srv_cluster *c, const char *node, json_object *except, const char *reason, int64_t at)
{
  char **keys = NULL;
  size_t n = 0;

  if (rt_catalog_keys (c->cat, "sb.", &keys, &n, NULL) < 0)
    return;
  for (size_t i = 0; i < n; i++)
    {
      bool keep = false;
      for (size_t j = 0; except && j < json_object_array_length (except); j++)
        keep |= strcmp (json_object_get_string (json_object_array_get_idx (except, j)), keys[i] + 3) == 0;
      if (!keep)
        end_entry (c, keys[i], node, reason, at);
      free (keys[i]);
    }
  free (keys);
}

/* What @name runs, against the catalog: stopped on it when the catalog
   has it ended, lacks it, or has it on another node; the catalog's live
   ones it lacks ended.  */
static void
reconcile (struct srv_cluster *c, const char *name)
{
  cleanup_json json_object *list = NULL, *ids = json_object_new_array (), *stop = json_object_new_object ();
  json_object *arr, *to_stop = json_object_new_array ();
  rt_error *e = NULL;

  json_object_object_add (stop, "op", json_object_new_string ("stop"));
  json_object_object_add (stop, "ids", to_stop);
  if (host_call (c, name, "{\"op\":\"list\"}", &list, &e) < 0)
    {
      fprintf (stderr, "runtime serve: cannot reconcile host '%s': %s\n", name, e->msg);
      rt_error_free (e);
      return;
    }
  arr = json_object_object_get (list, "sandboxes");
  for (size_t i = 0; json_object_is_type (arr, json_type_array) && i < json_object_array_length (arr); i++)
    {
      json_object *s = json_object_array_get_idx (arr, i);
      const char *id = rt_json_str (s, "id"), *st = rt_json_str (s, "state");
      cleanup_free char *key = id ? rt_strdup_printf ("sb.%s", id) : NULL, *value = NULL;
      cleanup_json json_object *o = NULL;

      if (key == NULL || !rt_catalog_key_valid (key) || (st && rt_state_is (st, RT_SANDBOX_STOPPED)))
        continue;
      json_object_array_add (ids, json_object_new_string (id));
      if (rt_catalog_get (c->cat, key, &value, NULL, NULL) == 0 && (o = json_tokener_parse (value))
          && rt_json_str (o, "node") && strcmp (rt_json_str (o, "node"), name) == 0 && rt_json_str (o, "state")
          && strcmp (rt_json_str (o, "state"), "live") == 0)
        continue;
      /* Never adopted: the catalog has not given it to anyone.  */
      json_object_array_add (to_stop, json_object_new_string (id));
    }
  end_all (c, name, ids, "host_lost", now_epoch ());
  if (json_object_array_length (to_stop))
    {
      cleanup_json json_object *answer = NULL;
      fprintf (stderr, "runtime serve: host '%s' is back: stopping %zu sandboxes the catalog does not give it\n",
               name, json_object_array_length (to_stop));
      if (host_call (c, name, json_object_to_json_string_ext (stop, JSON_C_TO_STRING_PLAIN), &answer, &e) < 0)
        {
          fprintf (stderr, "runtime serve: cannot stop them: %s\n", e->msg);
          rt_error_free (e);
        }
    }
}

/* host.<name> turned @to ("up" or "lost"), *lost_at the time the catalog
   has when it was so already.  Return: TURN_FROM_LOST or TURN_MADE when
   this replica made the change (and so does what follows it), TURN_ALREADY,
   or <0 when the catalog could not say (try again next round).  */
enum
{
  TURN_ALREADY = 0,
  TURN_MADE = 1,
  TURN_FROM_LOST = 2,
};

static int
host_turn (struct srv_cluster *c, const char *name, const char *to, int64_t *lost_at)
{
  cleanup_free char *key = rt_strdup_printf ("host.%s", name);
  bool lost = strcmp (to, "lost") == 0;

  for (int attempt = 0; key && attempt < 3; attempt++)
    {
      cleanup_free char *value = NULL;
      cleanup_json json_object *o = NULL, *n = json_object_new_object ();
      uint64_t rev = 0;
      rt_error *e = NULL;
      bool was_lost = false;
      int ret;

      if (rt_catalog_get (c->cat, key, &value, &rev, &e) < 0 && strcmp (e->code, "not_found") != 0)
        {
          rt_error_free (e);
          return -EIO;
        }
      rt_error_free (e), e = NULL;
      if (value && (o = json_tokener_parse (value)))
        {
          const char *st = rt_json_str (o, "state");
          if (st && strcmp (st, to) == 0)
            {
              *lost_at = rt_json_i64 (o, "lostAt");
              return TURN_ALREADY;
            }
          was_lost = st && strcmp (st, "lost") == 0;
        }
      json_object_object_add (n, "state", json_object_new_string (to));
      json_object_object_add (n, "since", json_object_new_int64 (now_epoch ()));
      if (lost)
        json_object_object_add (n, "lostAt", json_object_new_int64 (*lost_at));
      const char *text = json_object_to_json_string_ext (n, JSON_C_TO_STRING_PLAIN);
      ret = rev ? rt_catalog_update (c->cat, key, text, rev, NULL, &e) : rt_catalog_create (c->cat, key, text, NULL, &e);
      if (ret == 0)
        return was_lost ? TURN_FROM_LOST : TURN_MADE;
      bool conflict = strcmp (e->code, "conflict") == 0;
      rt_error_free (e);
      if (!conflict)
        return -EIO;
    }
  return -EAGAIN;
}

/* Whether host @name answers its ping: silent on the capacity subject is
   not dead when it still answers (its reports lost on the way).  */
static bool
answers (struct srv_cluster *c, const char *name)
{
  char subject[RT_NODE_NAME_MAX + 32];
  cleanup_free char *reply = NULL;
  size_t len = 0;

  snprintf (subject, sizeof subject, "runtime.node.%.64s.ping", name);
  return rt_bus_request (c->bus, subject, "", 0, PING_TIMEOUT_MS, &reply, &len, NULL) == 0;
}

/* Which members to judge this round (under c->mu): 1 silent, 2 lost but
   heard again, 3 first heard.  A replica that could not hear (its NATS
   connection down, or this thread late) judges nobody silent until every
   host had SRV_NODE_LOST_MS to be heard again.  */
static size_t
to_judge (struct srv_cluster *c, char (*names)[RT_NODE_NAME_MAX + 1], int *what, int64_t *seen)
{
  uint64_t now = rt_now_ms ();
  bool deaf = !rt_bus_connected (c->bus) || (c->last_tick && now > c->last_tick + 4 * KEEP_TICK_MS);
  size_t n = 0;

  c->last_tick = now;
  if (deaf)
    c->judge_after = now + SRV_NODE_LOST_MS;
  for (size_t i = 0; i < c->nmembers; i++)
    {
      struct member *m = &c->members[i];
      int w = 0;
      if (!m->lost && m->seen_ms + SRV_NODE_LOST_MS < now && now >= c->judge_after)
        w = 1;
      else if (m->lost && m->seen_ms > m->lost_ms)
        w = 2;
      else if (!m->lost && m->lost_ms == 0 && m->seen_epoch)
        w = 3;
      if (w)
        {
          snprintf (names[n], RT_NODE_NAME_MAX + 1, "%s", m->name);
          seen[n] = m->seen_epoch;
          what[n++] = w;
        }
    }
  return n;
}

/* One round: silent nodes lost, lost ones heard again back.  */
static void
keep (struct srv_cluster *c)
{
  char names[SRV_CLUSTER_MAX_NODES][RT_NODE_NAME_MAX + 1];
  int what[SRV_CLUSTER_MAX_NODES];
  int64_t seen[SRV_CLUSTER_MAX_NODES];
  size_t n;

  pthread_mutex_lock (&c->mu);
  n = to_judge (c, names, what, seen);
  pthread_mutex_unlock (&c->mu);
  for (size_t i = 0; i < n; i++)
    {
      /* Billed and ended from its last word, not from when it was judged.  */
      int64_t at = seen[i] ? seen[i] : now_epoch () - SRV_NODE_LOST_MS;
      bool silent = what[i] == 1;
      int turn;
      struct member *m;

      if (silent && answers (c, names[i]))
        continue;
      turn = host_turn (c, names[i], silent ? "lost" : "up", &at);
      if (turn < 0)
        continue;
      if (silent && turn == TURN_MADE)
        {
          fprintf (stderr, "runtime serve: host '%s' silent for %d s: lost, its sandboxes ended (host_lost)\n",
                   names[i], SRV_NODE_LOST_MS / 1000);
          end_all (c, names[i], NULL, "host_lost", at);
        }
      else if (!silent && turn == TURN_FROM_LOST)
        {
          fprintf (stderr, "runtime serve: host '%s' reports again: reconciling\n", names[i]);
          reconcile (c, names[i]);
        }
      pthread_mutex_lock (&c->mu);
      m = srv_cluster_member (c, names[i], false);
      if (m && silent)
        {
          m->lost = true;
          m->lost_at = at;
          m->lost_ms = rt_now_ms ();
        }
      else if (m)
        {
          m->lost = false;
          m->lost_ms = 1;
        }
      pthread_mutex_unlock (&c->mu);
    }
}

/* Hosts the catalog knows, taken as heard now: a replica just started
   gives them their beats before judging.  */
static void
load_hosts (struct srv_cluster *c)
{
  char **keys = NULL;
  size_t n = 0;

  if (rt_catalog_keys (c->cat, "host.", &keys, &n, NULL) < 0)
    return;
  for (size_t i = 0; i < n; i++)
    {
      cleanup_free char *value = NULL;
      cleanup_json json_object *o = NULL;
      const char *name = keys[i] + 5;

      if (rt_node_name_valid (name) && rt_catalog_get (c->cat, keys[i], &value, NULL, NULL) == 0
          && (o = json_tokener_parse (value)))
        {
          pthread_mutex_lock (&c->mu);
          struct member *m = srv_cluster_member (c, name, true);
          if (m)
            {
              m->lost = rt_json_str (o, "state") && strcmp (rt_json_str (o, "state"), "lost") == 0;
              m->lost_at = rt_json_i64 (o, "lostAt");
              m->seen_ms = rt_now_ms ();
              m->lost_ms = m->lost ? m->seen_ms : 1;
            }
          pthread_mutex_unlock (&c->mu);
        }
      free (keys[i]);
    }
  free (keys);
}

void *
srv_cluster_keeper (void *arg)
{
  struct srv_cluster *c = arg;

  load_hosts (c);
  pthread_mutex_lock (&c->mu);
  while (!c->stopping)
    {
      struct timespec ts = rt_deadline_after (KEEP_TICK_MS);
      pthread_cond_timedwait (&c->cond, &c->mu, &ts);
      if (c->stopping)
        break;
      pthread_mutex_unlock (&c->mu);
      keep (c);
      pthread_mutex_lock (&c->mu);
    }
  pthread_mutex_unlock (&c->mu);
  return NULL;
}

