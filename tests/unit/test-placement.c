/* test-placement.c - where a new sandbox goes among many hosts
   (libruntime/cluster/placement.c): hosts without room, lost ones, a
   spare preferred, the retry order, determinism, and balance: place-sim.h's
   10,000 creates over 100 hosts from stale reports leave the most loaded
   host within 1.2 times the mean load.  */
#include <stdlib.h>
#include <string.h>

#include "cluster/placement.h"
#include "place-sim.h"
#include "tap.h"

static const struct rt_place_shape small = { 1, 512 };

static struct rt_node_report
node (unsigned vcpu, uint64_t mem, unsigned used_vcpu, uint64_t used_mem)
{
  return (struct rt_node_report){ vcpu, vcpu - used_vcpu, mem, mem - used_mem, 0, false };
}

static void
test_room (void)
{
  struct rt_node_report n[4] = { node (8, 8192, 8, 0), node (8, 8192, 0, 8000), node (8, 8192, 0, 0),
                                 node (8, 8192, 2, 1024) };
  size_t order[8];
  uint64_t rng = 1;

  n[2].lost = true;
  ok (rt_place (n, 0, &small, RT_PLACE_SAMPLE, &rng, order, 8) == 0, "no hosts: nowhere");
  ok (rt_place (n, 4, &small, RT_PLACE_SAMPLE, &rng, order, 8) == 1 && order[0] == 3,
      "only the host with room for both vCPU and memory, not a lost one");
  ok (rt_place (n, 4, &(struct rt_place_shape){ 64, 512 }, RT_PLACE_SAMPLE, &rng, order, 8) == 0,
      "a shape larger than every host: nowhere");
}

static void
test_rank (void)
{
  struct rt_node_report n[5];
  size_t order[8], got;
  uint64_t rng = 7;
  bool seen[5] = { false };

  for (int i = 0; i < 5; i++)
    n[i] = node (16, 32768, (unsigned) (10 - 2 * i), (uint64_t) (10 - 2 * i) * 1024);
  got = rt_place (n, 5, &small, 5, &rng, order, 8);
  ok (got == 5 && order[0] == 4 && order[4] == 0, "all drawn: the least loaded first, the most last");
  n[1].spares = 1;
  got = rt_place (n, 5, &small, 5, &rng, order, 8);
  ok (got == 5 && order[0] == 1, "a host with a warm spare of the shape comes first");
  got = rt_place (n, 5, &small, 2, &rng, order, 8);
  for (size_t i = 0; i < got; i++)
    seen[order[i]] = true;
  ok (got == 5 && seen[0] && seen[1] && seen[2] && seen[3] && seen[4], "every host with room is in the retry order once");
  ok (rt_place (n, 5, &small, 2, &rng, order, 3) == 3, "the order stops at max");
  {
    uint64_t a = 99, b = 99;
    size_t o1[8] = { 0 }, o2[8] = { 0 };
    rt_place (n, 5, &small, 2, &a, o1, 8);
    rt_place (n, 5, &small, 2, &b, o2, 8);
    ok (memcmp (o1, o2, sizeof o1) == 0, "the same seed draws the same hosts");
  }
}

int
main (void)
{
  double ratio;

  test_room ();
  test_rank ();
  ratio = place_sim (RT_PLACE_SAMPLE, 12345, NULL);
  ok (ratio <= 1.2, "10,000 creates over 100 hosts from stale reports: max/mean load %.3f <= 1.2", ratio);
  return tap_done ();
}
