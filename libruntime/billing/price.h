/* price.h - what a sandbox costs: integer microdollars from exact integer
 * inputs, rounded once (docs/ARCHITECTURE.md, "Metering and billing").
 *
 * CPU: rate per vCPU-hour on the measured CPU time of an interval, but at
 * least the floor (0.05 vCPU by default) times the interval's running
 * time.  Memory: rate per GiB-hour while running.  Paused time costs
 * nothing.  The rates come from <data>/rates.json when it exists, for
 * self-hosters who charge back internally.
 */
#ifndef RT_PRICE_H
#define RT_PRICE_H

#include <stdint.h>

#include "core/context.h"

struct rt_rates
{
  int64_t cpu_micros_per_vcpu_hour;  /* 25000: $0.025 */
  int64_t mem_micros_per_gib_hour;   /* 7500: $0.0075 */
  int64_t floor_millivcpu;           /* 50: 0.05 vCPU */
};

void rt_rates_default (struct rt_rates *r);
/* The defaults, overridden by <data>/rates.json ({cpuMicrosPerVcpuHour,
   memMicrosPerGibHour, cpuFloorMilliVcpu}); invalid_request if it is bad.  */
int rt_rates_load (rt_context *ctx, struct rt_rates *r, rt_error **err);
/* The CPU time an interval is billed for: max(measured, floor × wall).  */
uint64_t rt_billed_cpu_us (const struct rt_rates *r, uint64_t measured_us, uint64_t wall_us);
/* The price of @cpu_us billed vCPU-microseconds and @mib_ms MiB-milliseconds
   of running memory, rounded to the nearest microdollar.  */
int64_t rt_price_micros (const struct rt_rates *r, uint64_t cpu_us, uint64_t mib_ms);

#endif
