/* cluster-internal.h - a replica's view of the hosts as cluster.c and
   cluster-keeper.c share it (the rest of serve sees cluster.h).  */
#ifndef RT_SERVE_CLUSTER_INTERNAL_H
#define RT_SERVE_CLUSTER_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "cluster/node.h"
#include "serve/cluster.h"

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
  pthread_t keeper;
};

/* The member named @name, added when @add and unknown (NULL when full);
   under c->mu.  */
struct member *srv_cluster_member (struct srv_cluster *c, const char *name, bool add);
/* The keeper thread: silent hosts lost, returning ones reconciled.  */
void *srv_cluster_keeper (void *arg);

#endif
