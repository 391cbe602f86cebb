/* cluster-internal.h - a replica's view of the hosts as cluster.c and
   cluster-keeper.c share it (the rest of serve sees cluster.h).  */
#ifndef RT_SERVE_CLUSTER_INTERNAL_H
#define RT_SERVE_CLUSTER_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "cluster/node.h"
#include "cluster/replica.h"

struct member
{
  char name[RT_NODE_NAME_MAX + 1];
  uint64_t seen_ms;   /* CLOCK_MONOTONIC of its last report */
  int64_t seen_epoch; /* and that in epoch ms (0: never heard) */
  json_object *report;
  bool lost;        /* as the catalog says */
  int64_t lost_at;  /* epoch ms */
  uint64_t lost_ms; /* CLOCK_MONOTONIC when this replica took it as lost */
};

struct srv_cluster
{
  struct srv *srv;
  rt_bus *bus;
  rt_catalog *cat;
  rt_bus_sub *reports;
  pthread_mutex_t mu;
  pthread_cond_t cond;
  struct member members[SRV_CLUSTER_MAX_NODES];
  size_t nmembers;
  uint64_t rng;
  bool stopping, keeper_started;
  uint64_t last_tick;   /* the keeper's, CLOCK_MONOTONIC ms */
  uint64_t judge_after; /* no host judged silent before (a deaf spell) */
  pthread_t keeper;
};

/* The member named @name, added when @add and unknown (NULL when full);
   under c->mu.  */
struct member *srv_cluster_member (struct srv_cluster *c, const char *name, bool add);
/* cluster-routes.c: a catalog entry's sandbox is live; the sandbox as
   the catalog last knew it, ended (its host lost).  */
bool srv_cluster_live (json_object *entry);
json_object *srv_cluster_ended_info (json_object *entry);

/* cluster-lists.c: every item of @path's pages on every host up (@base
   its query), `node` added, with @dedupe one per id, sorted by createdAt,
   into @items; the first host up answering @path 200 into @node (false
   after answering 404); and the route handlers.  */
void srv_cluster_gather (struct srv_req *r, const char *path, json_object *base, bool dedupe, json_object *items);
bool srv_cluster_find_holder (struct srv_req *r, const char *path, char node[65]);
void srv_cluster_list (struct srv_req *r);
void srv_cluster_snapshot_list (struct srv_req *r);
void srv_cluster_held (struct srv_req *r);
void srv_cluster_usage (struct srv_req *r);

/* replica-snapshots.c: the snapshot @snap (a node's answer to :snapshot)
   recorded as made on @node for @r's tenant (snap.<id> {node, tenant,
   name, createdAt}; never over another record: "bad_gateway"); the
   holder of the tenant's snapshot @ref (id or name) into @node, its
   record's key into @key ("" when looked up), with @confirm only once
   the holder answered that it has it (<0 after answering the error); and
   GET and DELETE /v1/snapshots/{id}.  */
int srv_cluster_snapshot_record (struct srv_req *r, const char *node, json_object *snap, rt_error **err);
int srv_cluster_snapshot_holder (struct srv_req *r, const char *ref, bool confirm, char node[65], char key[64]);
void srv_cluster_snapshot_held (struct srv_req *r);

/* The keeper thread: silent hosts lost, returning ones reconciled.  */
void *srv_cluster_keeper (void *arg);

#endif
