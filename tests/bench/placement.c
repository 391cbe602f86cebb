/* placement.c - the placement function of libruntime/cluster/placement.c
   alone, no VMs: 10,000 creates of a 1 vCPU, 512 MiB sandbox over 100
   simulated hosts (32, 64 and 128 vCPUs, 4x overcommitted, 8 GiB a vCPU),
   placed by two replicas from capacity reports refreshed every 100
   creates (each replica knows its own placements since).  For each way of
   choosing: the balance (the most loaded host's load over the mean) and
   the time per create, the median of 5 runs, against a full scan for the
   least loaded host measured in the same run.
   Run: build/tests/bench-placement  */
#include <stdio.h>
#include <stdlib.h>

#include "../unit/place-sim.h"

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

int
main (void)
{
  static const struct
  {
    const char *name;
    unsigned sample;
  } ways[] = { { "full scan, least loaded (baseline)", SIM_HOSTS }, { "draw 3, least loaded (runtime)", RT_PLACE_SAMPLE },
               { "random host with room", 0 } };
  enum
  {
    RUNS = 5
  };
  double base_us = 0;

  printf ("%d creates over %d hosts, reports every %d creates, 2 replicas; median of %d runs\n\n", SIM_CREATES, SIM_HOSTS,
          SIM_REFRESH, (int) RUNS);
  printf ("| placement | max/mean load | µs per create | time vs baseline |\n|---|---|---|---|\n");
  for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++)
    {
      double bal[RUNS], us[RUNS];
      for (int r = 0; r < RUNS; r++)
        {
          double per = 0;
          bal[r] = place_sim (ways[w].sample, 1000 + r, &per);
          us[r] = per * 1e6;
        }
      qsort (bal, RUNS, sizeof *bal, cmp_double);
      qsort (us, RUNS, sizeof *us, cmp_double);
      if (w == 0)
        base_us = us[RUNS / 2];
      printf ("| %s | %.3f | %.2f | %.2fx |\n", ways[w].name, bal[RUNS / 2], us[RUNS / 2], us[RUNS / 2] / base_us);
    }
  return 0;
}
