/* meter.c - the CPU meter (see meter.h).  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "billing/meter.h"

/* CPU time of the whole QEMU process, in ns: every thread's, those that
   ended included (the kernel's process CPU clock, as /proc/<pid>/stat's
   utime + stime but to the nanosecond).  Not only the vCPU threads: a QEMU
   the guest broke into could do its work in a thread of another name, and
   that is the sandbox's CPU too.  It cannot start processes (QEMU's
   seccomp filter has spawn=deny, vmm/qemu-args.c), whose time this clock
   would miss.  0 once QEMU is gone.  */
static uint64_t
process_ns (const struct rt_meter *mt)
{
  clockid_t clock;
  struct timespec ts;

  if (clock_getcpuclockid (mt->pid, &clock) != 0 || clock_gettime (clock, &ts) < 0)
    return 0;
  return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

int64_t
rt_meter_charged_micros (const struct rt_meter *mt)
{
  /* The trial is free: its time is counted, not charged.  */
  if (mt->trial)
    return 0;
  return rt_price_micros (&mt->rates, mt->billed_cpu_us, (uint64_t) mt->memory_mib * (mt->running_us / 1000));
}

/* One record per sandbox per interval, cumulative: `usage` keeps the last
   of each sandbox, so a lost line costs at most one interval.  */
void
rt_meter_record (struct rt_meter *mt)
{
  struct rt_ledger_usage u = { .vcpu = mt->vcpu,
                               .memory_mib = mt->memory_mib,
                               .running_us = mt->running_us,
                               .cpu_us = mt->cpu_us,
                               .billed_cpu_us = mt->billed_cpu_us,
                               .micros = rt_meter_charged_micros (mt) };

  if (mt->ledger_fd >= 0)
    rt_ledger_write (mt->ledger_fd, mt->state, &u);
  mt->since_record = 0;
}

void
rt_meter_sample (struct rt_meter *mt)
{
  uint64_t now = rt_now_us (), cpu, d_cpu_us, d_wall_us;
  char secs[32];

  if (mt->pid <= 0 || mt->last_mono_us == 0)
    return;
  cpu = process_ns (mt);
  if (cpu == 0)
    cpu = mt->last_cpu_ns; /* QEMU gone: nothing more to add, and no restart from 0 */
  d_wall_us = now - mt->last_mono_us;
  d_cpu_us = cpu > mt->last_cpu_ns ? (cpu - mt->last_cpu_ns) / 1000 : 0;
  mt->last_mono_us = now;
  mt->last_cpu_ns = cpu;
  if (mt->paused)
    return;
  mt->running_us += d_wall_us;
  mt->cpu_us += d_cpu_us;
  mt->billed_cpu_us += rt_billed_cpu_us (&mt->rates, d_cpu_us, d_wall_us);
  mt->cpu_percent = d_wall_us ? 100.0 * d_cpu_us / d_wall_us / (mt->vcpu ? mt->vcpu : 1) : 0;
  snprintf (secs, sizeof secs, "%.3f", mt->cpu_us / 1e6);
  json_object_object_add (mt->state, "cpuSeconds", json_object_new_double_s (mt->cpu_us / 1e6, secs));
  /* Kept with the sandbox's state too: a paused one has no monitor to ask.  */
  snprintf (secs, sizeof secs, "%.3f", mt->running_us / 1e6);
  json_object_object_add (mt->state, "runningSeconds", json_object_new_double_s (mt->running_us / 1e6, secs));
  json_object_object_add (mt->state, "chargedMicros", json_object_new_int64 (rt_meter_charged_micros (mt)));
}

void
rt_meter_resume (struct rt_meter *mt)
{
  mt->paused = false;
  mt->last_mono_us = rt_now_us ();
  mt->last_cpu_ns = process_ns (mt);
}

void
rt_meter_pause (struct rt_meter *mt)
{
  rt_meter_sample (mt);
  mt->paused = true;
}

void
rt_meter_stop (struct rt_meter *mt)
{
  rt_meter_sample (mt);
  if (mt->ev)
    event_del (mt->ev);
}

static void
on_meter (evutil_socket_t fd, short what, void *arg)
{
  struct rt_meter *mt = arg;
  (void) fd;
  (void) what;

  rt_meter_sample (mt);
  if (++mt->since_record >= RT_LEDGER_INTERVAL_S)
    {
      rt_meter_record (mt);
      if (mt->on_record)
        mt->on_record (mt->arg);
    }
}

int
rt_meter_start (struct rt_meter *mt, struct event_base *base, pid_t pid, rt_error **err)
{
  struct timeval second = { 1, 0 };

  mt->ev = event_new (base, -1, EV_PERSIST, on_meter, mt);
  if (mt->ev == NULL)
    return rt_error_set (err, ENOMEM, "startup_failed", "cannot set up the event loop");
  mt->pid = pid;
  rt_meter_resume (mt);
  event_add (mt->ev, &second);
  return 0;
}
