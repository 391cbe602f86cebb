/* test-price.c - the price arithmetic against the figures the product
   promises, the floor and the rounding; <data>/rates.json overriding the
   rates, and bad ones refused.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing/price.h"
#include "tap.h"

#define HOUR_US 3600000000ULL
#define HOUR_MS 3600000ULL

static char rates_path[512];

/* Loads @json as <data>/rates.json: 0, or the error's code and message
   in @why.  */
static int
load (rt_context *ctx, const char *json, struct rt_rates *r, char *why, size_t len)
{
  FILE *f = fopen (rates_path, "w");
  rt_error *err = NULL;
  int ret;

  fputs (json, f);
  fclose (f);
  ret = rt_rates_load (ctx, r, &err);
  snprintf (why, len, "%s: %s (%s)", err ? err->code : "", err ? err->msg : "", err && err->hint ? err->hint : "");
  rt_error_free (err);
  return ret;
}

static void
rates_file (void)
{
  char dir[] = "/tmp/rt-price.XXXXXX", why[1024];
  rt_context *ctx = NULL;
  rt_error *err = NULL;
  struct rt_rates r;

  if (mkdtemp (dir) == NULL)
    return;
  setenv ("RUNTIME_DATA_DIR", dir, 1);
  setenv ("RUNTIME_STATE_DIR", dir, 1);
  if (rt_context_new (&ctx, &err) < 0)
    return;
  snprintf (rates_path, sizeof rates_path, "%s/rates.json", dir);
  ok (rt_rates_load (ctx, &r, &err) == 0 && r.cpu_micros_per_vcpu_hour == 25000 && r.mem_micros_per_gib_hour == 7500
          && r.floor_millivcpu == 50,
      "no rates.json: the default rates");
  ok (load (ctx, "{\"cpuMicrosPerVcpuHour\": 50000, \"memMicrosPerGibHour\": 0}", &r, why, sizeof why) == 0
          && rt_price_micros (&r, rt_billed_cpu_us (&r, 2 * HOUR_US, HOUR_US), 4096 * HOUR_MS) == 100000
          && rt_price_micros (&r, rt_billed_cpu_us (&r, 0, HOUR_US), 4096 * HOUR_MS) == 2500,
      "rates.json doubles the CPU rate and frees memory: busy hour $0.10, idle hour $0.0025 (the floor kept)");
  ok (load (ctx, "{\"cpuFloorMilliVcpu\": 0}", &r, why, sizeof why) == 0
          && rt_price_micros (&r, rt_billed_cpu_us (&r, 0, HOUR_US), 4096 * HOUR_MS) == 30000,
      "rates.json without a floor: an idle hour is memory only ($0.03)");
  ok (load (ctx, "{\"cpuMicrosPerVcpuHour\": -1}", &r, why, sizeof why) < 0
          && strstr (why, "invalid_request: ") == why && strstr (why, "cpuMicrosPerVcpuHour must be a whole number")
          && strstr (why, "not -1"),
      "a negative rate is refused, naming it");
  printf ("# %s\n", why);
  ok (load (ctx, "{\"memMicrosPerGibHour\": 0.5}", &r, why, sizeof why) < 0 && strstr (why, "not 0.5"),
      "a fractional rate is refused");
  ok (load (ctx, "{\"memMicrosPerGibHour\": \"7500\"}", &r, why, sizeof why) < 0
          && strstr (why, "memMicrosPerGibHour must be"),
      "a rate as a string is refused");
  ok (load (ctx, "{\"cpuMicrosPerVCPUHour\": 1}", &r, why, sizeof why) < 0
          && strstr (why, "unknown rate 'cpuMicrosPerVCPUHour'") && strstr (why, "cpuMicrosPerVcpuHour"),
      "a misspelt rate is refused, with the right names");
  printf ("# %s\n", why);
  ok (load (ctx, "[25000]", &r, why, sizeof why) < 0 && strstr (why, "is not a JSON object"),
      "a rates.json that is not an object is refused");
  ok (load (ctx, "{\"cpuMicrosPerVcpuHour\": 1", &r, why, sizeof why) < 0 && strstr (why, "is not a JSON object"),
      "a rates.json cut short is refused");
  remove (rates_path);
  remove (dir);
  rt_context_free (ctx);
}

int
main (void)
{
  struct rt_rates r;

  rt_rates_default (&r);
  /* 2 vCPU / 4 GiB idle for an hour: the CPU floor and the memory.  */
  ok (rt_price_micros (&r, rt_billed_cpu_us (&r, 0, HOUR_US), 4096 * HOUR_MS) == 31250,
      "2 vCPU / 4 GiB idle hour = 31250 µ$ ($0.03125)");
  ok (rt_price_micros (&r, rt_billed_cpu_us (&r, 2 * HOUR_US, HOUR_US), 4096 * HOUR_MS) == 80000,
      "both vCPUs busy for an hour = 80000 µ$ ($0.08)");
  /* 1000 runs × 60 s × 20 CPU-s at 4 GiB, priced on the totals.  */
  ok (rt_price_micros (&r, 1000ULL * 20 * 1000000, 1000ULL * 4096 * 60 * 1000) == 638889,
      "1000 runs of 60 s, 20 CPU-s, 4 GiB = 638889 µ$ ($0.638889)");
  ok (rt_billed_cpu_us (&r, 1000, 1000000) == 50000, "the floor: 0.05 vCPU of a 1 s interval is 50 ms");
  ok (rt_billed_cpu_us (&r, 700000, 1000000) == 700000, "measured above the floor is billed as measured");
  ok (rt_billed_cpu_us (&r, 0, 0) == 0, "no running time, no floor");
  ok (rt_price_micros (&r, 0, 0) == 0, "nothing costs nothing");
  /* 1 vCPU-second = 25000/3600 = 6.94 µ$: rounds to 7; 0.5 s = 3.47 → 3.  */
  ok (rt_price_micros (&r, 1000000, 0) == 7, "one vCPU-second rounds up to 7 µ$");
  ok (rt_price_micros (&r, 500000, 0) == 3, "half a vCPU-second rounds down to 3 µ$");
  /* 1 GiB for 1 s = 7500/3600 = 2.083 µ$ → 2.  */
  ok (rt_price_micros (&r, 0, 1024 * 1000) == 2, "1 GiB-second rounds to 2 µ$");
  ok (rt_price_micros (&r, 36ULL * HOUR_US * 24 * 365, 65536ULL * HOUR_MS * 24 * 365) == 7884000000 + 4204800000,
      "a year of 36 busy vCPUs and 64 GiB does not overflow");
  r.cpu_micros_per_vcpu_hour = 100000;
  r.mem_micros_per_gib_hour = 0;
  r.floor_millivcpu = 0;
  ok (rt_price_micros (&r, rt_billed_cpu_us (&r, 0, HOUR_US), 4096 * HOUR_MS) == 0, "overridden rates: no floor, free memory");
  ok (rt_price_micros (&r, HOUR_US, 0) == 100000, "overridden rates: $0.10 per vCPU-hour");
  rates_file ();
  return tap_done ();
}
