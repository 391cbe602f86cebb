/* replica-lists.c - what a `runtime serve --nats` replica gathers from
   every host (cluster.h): lists merged, a snapshot's or image's holder
   found, usage summed.  (no header of its own: cluster-internal.h
   declares these.)  */
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state.h"
#include "common/cleanup.h"
#include "common/strutil.h"
#include "common/util.h"
#include "cluster/replica-internal.h"
#include "cluster/nats.h"
#include "serve/server-internal.h"

#define LIST_PAGES 50

static struct srv_cluster *
cl (struct srv_req *r)
{
  return srv_app_data (r);
}

static int
by_created (const void *a, const void *b)
{
  json_object *x = *(json_object *const *) a, *y = *(json_object *const *) b;
  const char *cx = rt_json_str (x, "createdAt"), *cy = rt_json_str (y, "createdAt");
  int d = strcmp (cx ? cx : "", cy ? cy : "");
  const char *ix = rt_json_str (x, "id"), *iy = rt_json_str (y, "id");

  return d ? d : strcmp (ix ? ix : "", iy ? iy : "");
}

/* Every item of @path's pages on every node up, `node` added to each (with
   @dedupe, one per id), sorted by createdAt: into @items.  */
void
srv_cluster_gather (struct srv_req *r, const char *path, json_object *base, bool dedupe, json_object *items)
{
  char names[SRV_CLUSTER_MAX_NODES][65];
  size_t n = srv_cluster_up (cl (r), names, SRV_CLUSTER_MAX_NODES), count;
  json_object **all;

  for (size_t i = 0; i < n; i++)
    {
      cleanup_free char *cursor = NULL;
      for (int page = 0; page < LIST_PAGES; page++)
        {
          struct srv_node_answer a = { 0 };
          cleanup_json json_object *q = json_object_new_object (), *o = NULL;
          json_object *data, *next;
          rt_error *err = NULL;

          json_object_object_foreach (base, k, v)
          {
            if (strcmp (k, "cursor") != 0 && strcmp (k, "limit") != 0)
              json_object_object_add (q, k, json_object_get (v));
          }
          json_object_object_add (q, "limit", json_object_new_string ("100"));
          if (cursor)
            json_object_object_add (q, "cursor", json_object_new_string (cursor));
          if (srv_cluster_call (cl (r), r, names[i], EVHTTP_REQ_GET, path, q, NULL, 0, 30000, &a, &err) < 0)
            {
              fprintf (stderr, "runtime serve: %s: host '%s' left out: %s\n", r->request_id, names[i], err->msg);
              rt_error_free (err);
              break;
            }
          o = a.status == 200 && a.len ? json_tokener_parse ((char *) a.body) : NULL;
          srv_node_answer_clear (&a);
          data = json_object_object_get (o, "data");
          for (size_t j = 0; json_object_is_type (data, json_type_array) && j < json_object_array_length (data); j++)
            {
              json_object *it = json_object_array_get_idx (data, j);
              bool seen = false;
              for (size_t x = 0; dedupe && x < json_object_array_length (items); x++)
                seen |= rt_json_str (it, "id") && rt_json_str (json_object_array_get_idx (items, x), "id")
                        && strcmp (rt_json_str (it, "id"), rt_json_str (json_object_array_get_idx (items, x), "id"))
                               == 0;
              if (seen)
                continue;
              if (json_object_is_type (it, json_type_object) && rt_json_str (it, "kind")
                  && strcmp (rt_json_str (it, "kind"), "sandbox") == 0)
                json_object_object_add (it, "node", json_object_new_string (names[i]));
              json_object_array_add (items, json_object_get (it));
            }
          next = json_object_object_get (o, "nextCursor");
          /* A host whose cursor does not move would be asked for ever.  */
          if (!json_object_is_type (next, json_type_string)
              || (cursor && strcmp (cursor, json_object_get_string (next)) == 0))
            break;
          free (cursor);
          cursor = strdup (json_object_get_string (next));
          if (cursor == NULL)
            break;
        }
    }
  count = json_object_array_length (items);
  all = calloc (count ? count : 1, sizeof *all);
  if (all == NULL)
    return;
  for (size_t i = 0; i < count; i++)
    all[i] = json_object_get (json_object_array_get_idx (items, i));
  qsort (all, count, sizeof *all, by_created);
  for (size_t i = 0; i < count; i++)
    json_object_array_put_idx (items, i, all[i]);
  free (all);
}

/* The tenant's sandboxes ended with their host, when the list asks for
   stopped ones.  */
static void
add_ended (struct srv_req *r, json_object *items)
{
  const char *inc = srv_query (r, "includeStopped");
  const char *states[8];
  size_t ns = srv_query_all (r, "state", states, 8);
  bool want = inc && strcmp (inc, "true") == 0;
  char **keys = NULL;
  size_t n = 0;

  for (size_t i = 0; i < ns; i++)
    want |= rt_state_is (states[i], RT_SANDBOX_STOPPED);
  if (!want || rt_catalog_keys (srv_cluster_catalog (cl (r)), "sb.", &keys, &n, NULL) < 0)
    return;
  for (size_t i = 0; i < n; i++)
    {
      cleanup_free char *value = NULL;
      cleanup_json json_object *e = NULL;

      if (rt_catalog_get (srv_cluster_catalog (cl (r)), keys[i], &value, NULL, NULL) == 0
          && (e = json_tokener_parse (value)) && !srv_cluster_live (e) && rt_json_str (e, "tenant")
          && strcmp (rt_json_str (e, "tenant"), r->token.name) == 0)
        {
          /* Its host's own record of it (stopped by a reconcile) gives way
             to the catalog's: it ended host_lost.  */
          size_t at = json_object_array_length (items);
          for (size_t j = 0; j < json_object_array_length (items) && at == json_object_array_length (items); j++)
            if (rt_json_str (json_object_array_get_idx (items, j), "id")
                && strcmp (rt_json_str (json_object_array_get_idx (items, j), "id"), keys[i] + 3) == 0)
              at = j;
          if (at < json_object_array_length (items))
            json_object_array_put_idx (items, at, srv_cluster_ended_info (e));
          else
            json_object_array_add (items, srv_cluster_ended_info (e));
        }
      free (keys[i]);
    }
  free (keys);
}

/* @path's pages from every host up as one page of @r's (its cursor and
   limit); with @sandboxes, the catalog's ended ones added, else one item
   per id (a snapshot or image the same on two hosts).  */
static void
reply_gathered (struct srv_req *r, const char *path, bool sandboxes)
{
  json_object *items = json_object_new_array ();
  cleanup_json json_object *base = NULL;

  if (items == NULL || (base = srv_cluster_query (r)) == NULL)
    {
      json_object_put (items);
      return srv_reply_error (r, 500, "internal", NULL, NULL, "out of memory");
    }
  srv_cluster_gather (r, path, base, !sandboxes, items);
  if (sandboxes)
    add_ended (r, items);
  srv_reply_page (r, items);
}

void
srv_cluster_list (struct srv_req *r)
{
  reply_gathered (r, "/v1/sandboxes", true);
}

void
srv_cluster_snapshot_list (struct srv_req *r)
{
  reply_gathered (r, r->path, false);
}

/* A node's resource (an image) where it is: the first node up answering
   @path 200 (a host failing, 5xx, is not taken as the holder), or false
   after answering 404.  Snapshots have their holder recorded
   (replica-snapshots.c).  */
bool
srv_cluster_find_holder (struct srv_req *r, const char *path, char node[65])
{
  char names[SRV_CLUSTER_MAX_NODES][65];
  size_t n = srv_cluster_up (cl (r), names, SRV_CLUSTER_MAX_NODES);

  for (size_t i = 0; i < n; i++)
    {
      struct srv_node_answer a = { 0 };
      cleanup_json json_object *q = json_object_new_object ();
      rt_error *err = NULL;
      int status;

      if (srv_cluster_call (cl (r), r, names[i], EVHTTP_REQ_GET, path, q, NULL, 0, 30000, &a, &err) < 0)
        {
          rt_error_free (err);
          continue;
        }
      status = a.status;
      srv_node_answer_clear (&a);
      if (status == 200)
        {
          memcpy (node, names[i], 65);
          return true;
        }
    }
  srv_reply_error (r, 404, "not_found", NULL, NULL, "no %s on any host up", path);
  return false;
}

/* /v1/images/{id}…: to the node holding it.  */
void
srv_cluster_held (struct srv_req *r)
{
  const char *id = srv_param (r, "id");
  cleanup_free char *path = rt_strdup_printf ("/v1/images/%s", id ? id : "");
  char node[65];

  if (path == NULL)
    return srv_reply_error (r, 500, "internal", NULL, NULL, "out of memory");
  if (srv_cluster_find_holder (r, path, node))
    srv_cluster_relay (cl (r), r, node, SRV_NATS_MAX_DEADLINE_MS);
}

/* Numbers added, objects merged, arrays joined: usage over hosts.  */
static void
merge_sum (json_object *into, json_object *from)
{
  json_object_object_foreach (from, k, v)
  {
    json_object *have = json_object_object_get (into, k);
    if (have == NULL && !json_object_object_get_ex (into, k, NULL))
      json_object_object_add (into, k, json_object_get (v));
    else if (json_object_is_type (have, json_type_int) && json_object_is_type (v, json_type_int))
      json_object_object_add (into, k, json_object_new_int64 (json_object_get_int64 (have) + json_object_get_int64 (v)));
    else if (json_object_is_type (have, json_type_double) || json_object_is_type (v, json_type_double))
      {
        if ((json_object_is_type (have, json_type_double) || json_object_is_type (have, json_type_int))
            && (json_object_is_type (v, json_type_double) || json_object_is_type (v, json_type_int)))
          json_object_object_add (into, k,
                                  json_object_new_double (json_object_get_double (have) + json_object_get_double (v)));
      }
    else if (json_object_is_type (have, json_type_object) && json_object_is_type (v, json_type_object))
      merge_sum (have, v);
    else if (json_object_is_type (have, json_type_array) && json_object_is_type (v, json_type_array))
      for (size_t i = 0; i < json_object_array_length (v); i++)
        json_object_array_add (have, json_object_get (json_object_array_get_idx (v, i)));
  }
}

void
srv_cluster_usage (struct srv_req *r)
{
  char names[SRV_CLUSTER_MAX_NODES][65];
  size_t n = srv_cluster_up (cl (r), names, SRV_CLUSTER_MAX_NODES);
  json_object *sum = json_object_new_object ();

  for (size_t i = 0; sum && i < n; i++)
    {
      struct srv_node_answer a = { 0 };
      cleanup_json json_object *o = NULL;
      rt_error *err = NULL;

      if (srv_cluster_call (cl (r), r, names[i], r->method, NULL, NULL, NULL, 0, 30000, &a, &err) < 0)
        {
          rt_error_free (err);
          continue;
        }
      if (a.status == 200 && a.len && (o = json_tokener_parse ((char *) a.body)))
        merge_sum (sum, o);
      srv_node_answer_clear (&a);
    }
  srv_reply_json (r, 200, sum);
}

