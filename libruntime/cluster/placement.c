/* placement.c - where a new sandbox goes (see placement.h).  */
#include <stdlib.h>

#include "cluster/placement.h"

uint64_t
rt_place_random (uint64_t *state)
{
  uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ull;

  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545f4914f6cdd1dull;
}

static bool
has_room (const struct rt_node_report *n, const struct rt_place_shape *shape)
{
  return !n->lost && n->vcpu_free >= shape->vcpu && n->mem_free_mib >= shape->memory_mib;
}

double
rt_place_load (const struct rt_node_report *n, const struct rt_place_shape *shape)
{
  double cpu = n->vcpu_total ? (double) (n->vcpu_total - n->vcpu_free + shape->vcpu) / n->vcpu_total : 2.0;
  double mem = n->mem_total_mib ? (double) (n->mem_total_mib - n->mem_free_mib + shape->memory_mib) / n->mem_total_mib
                                : 2.0;
  return cpu > mem ? cpu : mem;
}

/* A host's rank, lower first: a spare of the shape (it starts from
   saved memory) before any without, then the lower load.  */
struct ranked
{
  double key;
  size_t index;
};

static double
rank_key (const struct rt_node_report *n, const struct rt_place_shape *shape)
{
  return (n->spares > 0 ? 0.0 : 16.0) + rt_place_load (n, shape);
}

static int
cmp_ranked (const void *a, const void *b)
{
  const struct ranked *x = a, *y = b;
  return x->key < y->key ? -1 : x->key > y->key ? 1 : (x->index > y->index) - (x->index < y->index);
}

size_t
rt_place (const struct rt_node_report *nodes, size_t n, const struct rt_place_shape *shape, unsigned sample,
          uint64_t *rng, size_t *order, size_t max)
{
  struct ranked *room = malloc ((n ? n : 1) * sizeof *room);
  size_t nroom = 0, out = 0, drawn;

  if (room == NULL)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (has_room (&nodes[i], shape))
      room[nroom++] = (struct ranked){ rank_key (&nodes[i], shape), i };
  /* A partial Fisher-Yates shuffle: the first @drawn are a uniform draw.  */
  drawn = sample < nroom ? sample : nroom;
  for (size_t i = 0; i < drawn; i++)
    {
      size_t j = i + rt_place_random (rng) % (nroom - i);
      struct ranked t = room[i];
      room[i] = room[j];
      room[j] = t;
    }
  qsort (room, drawn, sizeof *room, cmp_ranked);
  qsort (room + drawn, nroom - drawn, sizeof *room, cmp_ranked);
  for (size_t i = 0; i < nroom && out < max; i++)
    order[out++] = room[i].index;
  free (room);
  return out;
}
