/* place-sim.h - the simulation test-placement.c checks and
   tests/bench/placement.c times: 10,000 creates of 1 vCPU and 512 MiB
   over 100 hosts of 32, 64 and 128 vCPUs (4x overcommitted, 8 GiB a
   vCPU), placed by two replicas from capacity reports refreshed every 100
   creates (each knowing its own placements since); a host refuses what it
   has no room for and the next in the order is tried.  */
#ifndef RT_TESTS_PLACE_SIM_H
#define RT_TESTS_PLACE_SIM_H

#include <string.h>
#include <time.h>

#include "cluster/placement.h"

enum
{
  SIM_HOSTS = 100,
  SIM_CREATES = 10000,
  SIM_REFRESH = 100
};

static inline double
sim_now_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One run; @sample 0 picks a host with room at random.  Return the most
   loaded host's load over the mean; *per_create (or NULL) the seconds one
   placement took.  */
static inline double
place_sim (unsigned sample, uint64_t seed, double *per_create)
{
  static struct rt_node_report truth[SIM_HOSTS], view[2][SIM_HOSTS];
  static const struct rt_place_shape shape = { 1, 512 };
  size_t order[SIM_HOSTS];
  double max = 0, sum = 0, spent = 0;

  for (int i = 0; i < SIM_HOSTS; i++)
    {
      unsigned vcpu = i % 3 == 0 ? 32 : i % 3 == 1 ? 64 : 128;
      truth[i] = (struct rt_node_report){ vcpu * 4, vcpu * 4, (uint64_t) vcpu * 8192, (uint64_t) vcpu * 8192, 0,
                                          false };
    }
  for (int c = 0; c < SIM_CREATES; c++)
    {
      int r = c % 2;
      double t;
      size_t got;

      if (c % SIM_REFRESH == 0)
        for (int k = 0; k < 2; k++)
          memcpy (view[k], truth, sizeof truth);
      t = sim_now_s ();
      got = rt_place (view[r], SIM_HOSTS, &shape, sample ? sample : 1, &seed, order, SIM_HOSTS);
      if (sample == 0 && got > 1)
        order[0] = order[rt_place_random (&seed) % got]; /* a random host with room */
      spent += sim_now_s () - t;
      if (got == 0)
        return 99;
      for (size_t k = 0; k < got; k++)
        {
          struct rt_node_report *h = &truth[order[k]];
          if (h->vcpu_free < shape.vcpu || h->mem_free_mib < shape.memory_mib)
            continue;
          h->vcpu_free -= shape.vcpu;
          h->mem_free_mib -= shape.memory_mib;
          view[r][order[k]].vcpu_free -= shape.vcpu;
          view[r][order[k]].mem_free_mib -= shape.memory_mib;
          break;
        }
    }
  for (int i = 0; i < SIM_HOSTS; i++)
    {
      double l = rt_place_load (&truth[i], &(struct rt_place_shape){ 0, 0 });
      max = l > max ? l : max;
      sum += l;
    }
  if (per_create)
    *per_create = spent / SIM_CREATES;
  return max / (sum / SIM_HOSTS);
}

#endif
