/* test-placement.c - where a new sandbox goes among many hosts
   (libruntime/cluster/placement.c): hosts without room, lost ones, a
   spare preferred, the retry order, determinism, and balance: 10,000
   creates over 100 hosts of three sizes, placed from reports refreshed
   only every 100 creates by two replicas that each know only their own
   placements since, leave the most loaded host within 1.2 times the mean
   load.  */
#include <stdlib.h>
#include <string.h>

#include "cluster/placement.h"
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

/* 10,000 creates over 100 hosts of 32, 64 and 128 vCPUs, two replicas,
   reports refreshed every 100 creates.  Return: max/mean load.  */
static double
simulate (unsigned sample)
{
  enum { HOSTS = 100, CREATES = 10000, REFRESH = 100 };
  static struct rt_node_report truth[HOSTS], view[2][HOSTS];
  uint64_t rng = 12345;
  size_t order[HOSTS];
  double max = 0, sum = 0;

  for (int i = 0; i < HOSTS; i++)
    {
      unsigned vcpu = i % 3 == 0 ? 32 : i % 3 == 1 ? 64 : 128;
      truth[i] = node (vcpu * 4, (uint64_t) vcpu * 8192, 0, 0); /* 4x overcommitted vCPUs */
    }
  for (int c = 0; c < CREATES; c++)
    {
      int r = c % 2;
      if (c % REFRESH == 0)
        for (int k = 0; k < 2; k++)
          memcpy (view[k], truth, sizeof truth);
      if (rt_place (view[r], HOSTS, &small, sample, &rng, order, HOSTS) == 0)
        return 99;
      /* The host itself refuses what it has no room for: the next one.  */
      for (size_t k = 0; k < HOSTS; k++)
        {
          struct rt_node_report *t = &truth[order[k]];
          if (t->vcpu_free < small.vcpu || t->mem_free_mib < small.memory_mib)
            continue;
          t->vcpu_free -= small.vcpu;
          t->mem_free_mib -= small.memory_mib;
          view[r][order[k]].vcpu_free -= small.vcpu;
          view[r][order[k]].mem_free_mib -= small.memory_mib;
          break;
        }
    }
  for (int i = 0; i < HOSTS; i++)
    {
      double l = rt_place_load (&truth[i], &(struct rt_place_shape){ 0, 0 });
      max = l > max ? l : max;
      sum += l;
    }
  return max / (sum / HOSTS);
}

int
main (void)
{
  double ratio;

  test_room ();
  test_rank ();
  ratio = simulate (RT_PLACE_SAMPLE);
  ok (ratio <= 1.2, "10,000 creates over 100 hosts from stale reports: max/mean load %.3f <= 1.2", ratio);
  return tap_done ();
}
