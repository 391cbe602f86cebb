/* placement.h - where a new sandbox goes among many hosts (issue: `runtime
 * serve --nats`): a pure function of the hosts' latest capacity reports,
 * so that it is tested and measured without VMs (tests/unit/
 * test-placement.c, tests/bench/placement.c).
 *
 * As E2B's API does over Nomad: a few hosts with room for the shape are
 * drawn at random (the "power of d choices": as balanced as a full scan,
 * and replicas working from the same stale reports do not all pick the
 * one emptiest host), ranked by a host holding a warm spare of the shape
 * first, then by the load the sandbox would leave; the rest of the hosts
 * with room follow, so a refusal or a host that does not answer is
 * retried elsewhere.
 */
#ifndef RT_CLUSTER_PLACEMENT_H
#define RT_CLUSTER_PLACEMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One host's latest report, as the placing replica sees it.  */
struct rt_node_report
{
  unsigned vcpu_total, vcpu_free;
  uint64_t mem_total_mib, mem_free_mib;
  unsigned spares; /* warm spares of the shape being placed */
  bool lost;       /* missed its heartbeats: never placed on */
};

struct rt_place_shape
{
  unsigned vcpu;
  uint64_t memory_mib;
};

/* How many hosts are drawn (fewer when fewer have room).  */
#define RT_PLACE_SAMPLE 3

/* A xorshift64* state: the caller's (no global state); any non-zero
   seed.  */
uint64_t rt_place_random (uint64_t *state);

/* The load @n would carry with @shape added: the larger of its vCPU and
   memory fractions, in [0, 1] (more when it has no room).  */
double rt_place_load (const struct rt_node_report *n, const struct rt_place_shape *shape);

/* Fills @order with the indices of @nodes to try, best first: up to
   @sample drawn from those with room, ranked, then every other one with
   room, ranked.  Return: how many (0: no host has room).  */
size_t rt_place (const struct rt_node_report *nodes, size_t n, const struct rt_place_shape *shape, unsigned sample,
                 uint64_t *rng, size_t *order, size_t max);

#endif
