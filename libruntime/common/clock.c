/* clock.c - wall and monotonic time.  */
#include <stdio.h>

#include "common/clock.h"

uint64_t
rt_now_us (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

uint64_t
rt_now_ms (void)
{
  return rt_now_us () / 1000;
}

int64_t
rt_epoch_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_REALTIME, &ts);
  return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec
rt_deadline_after (uint64_t ms)
{
  struct timespec ts;
  clock_gettime (CLOCK_REALTIME, &ts);
  ts.tv_sec += (time_t) (ms / 1000);
  ts.tv_nsec += (long) (ms % 1000) * 1000000L;
  if (ts.tv_nsec >= 1000000000L)
    {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
  return ts;
}

void
rt_format_time (int64_t epoch_ms, char out[32])
{
  time_t t = epoch_ms / 1000;
  struct tm tm;
  char base[24];

  gmtime_r (&t, &tm);
  strftime (base, sizeof (base), "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf (out, 32, "%s.%03dZ", base, (int) (epoch_ms % 1000));
}
