/* clock.h - the library's two clocks: wall time for what is shown and
   stored (epoch milliseconds, RFC 3339), and CLOCK_MONOTONIC for every
   duration and deadline.  Shared with the guest agent.  */
#ifndef RT_CLOCK_H
#define RT_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Milliseconds and microseconds of CLOCK_MONOTONIC.  */
uint64_t rt_now_ms (void);
uint64_t rt_now_us (void);

/* Milliseconds since the epoch (CLOCK_REALTIME).  */
int64_t rt_epoch_ms (void);
/* RFC 3339 UTC with milliseconds ("2026-12-01T19:52:00.123Z"), from epoch
   milliseconds.  */
void rt_format_time (int64_t epoch_ms, char out[32]);

/* @ms from now as pthread_cond_timedwait takes it (CLOCK_REALTIME, as
   condition variables use by default).  */
struct timespec rt_deadline_after (uint64_t ms);

#endif
