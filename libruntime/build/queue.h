/* queue.h - the machine's image builds in turn, fairly between tenants.
 *
 * Each build boots a VM, so they run one at a time; which goes next is
 * this queue's choice, not a lock's: the tenants with builds waiting take
 * turns (round-robin, in the order they first queued), and a tenant's own
 * builds go in the order they came (FIFO).  So one tenant with builds
 * queued for hours delays another's by at most one of its builds.  A
 * tenant has at most RT_BUILD_QUEUE_PER_TENANT builds queued or running.
 * A plain data structure: the caller locks (api/images.c).
 */
#ifndef RT_BUILD_QUEUE_H
#define RT_BUILD_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#define RT_BUILD_QUEUE_PER_TENANT 4

struct rt_build_queue_tenant
{
  char name[33];                            /* "" for the host's own builds */
  uint64_t ids[RT_BUILD_QUEUE_PER_TENANT];  /* waiting, first first */
  unsigned queued, running;
};

/* Zeroed: an empty queue.  */
struct rt_build_queue
{
  struct rt_build_queue_tenant *t; /* in turn order; those with nothing left removed */
  size_t n, cap;
  size_t next;                     /* the tenant whose turn comes next */
};

/* Queues build @id of @tenant (NULL: the host's).
   Return: 0; -EBUSY when the tenant has RT_BUILD_QUEUE_PER_TENANT builds
   queued or running; -ENOMEM.  */
int rt_build_queue_push (struct rt_build_queue *q, const char *tenant, uint64_t id);
/* The build whose turn it is, now counted as running: 1 and *@id (and its
   tenant in *@tenant, valid until the next call), 0 when none waits.  */
int rt_build_queue_pop (struct rt_build_queue *q, uint64_t *id, const char **tenant);
/* A running build of @tenant ended.  */
void rt_build_queue_done (struct rt_build_queue *q, const char *tenant);
/* Build @id of @tenant, still waiting, leaves the queue (its thread could
   not start).  */
void rt_build_queue_cancel (struct rt_build_queue *q, const char *tenant, uint64_t id);
void rt_build_queue_free (struct rt_build_queue *q);

#endif
