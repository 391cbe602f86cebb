/* meter.h - the CPU meter of a running sandbox: the whole QEMU process,
 * every thread, as the host's scheduler counts it (the process CPU clock,
 * clock_getcpuclockid(3)), sampled every second, so what the guest says of
 * itself is never billed, nor can a QEMU the guest broke into hide its
 * work in threads not named "CPU n".  It
 * keeps the running time, the measured and billed CPU time (price.h), and
 * writes the sandbox's ledger records (ledger.h).
 */
#ifndef RT_METER_H
#define RT_METER_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "billing/ledger.h"
#include "billing/price.h"

struct rt_meter
{
  /* Set by the owner before rt_meter_start.  */
  unsigned vcpu, memory_mib;
  bool trial;                 /* free: counted, not charged */
  struct rt_rates rates;
  int ledger_fd;              /* rt_ledger_open's, or -1 for no records */
  json_object *state;         /* borrowed: cpuSeconds, chargedMicros kept here */
  void (*on_record) (void *arg); /* after each periodic record */
  void *arg;

  /* The meter's own.  */
  pid_t pid;                  /* QEMU */
  struct event *ev;
  bool paused;
  uint64_t last_cpu_ns, last_mono_us;
  uint64_t running_us, cpu_us, billed_cpu_us;
  double cpu_percent;         /* over the last sample, of all vCPUs (QEMU's own threads may add a little) */
  unsigned since_record;      /* samples since the last record */
};

/* Starts metering QEMU @pid: from now, once a second on @base, and a
   ledger record every RT_LEDGER_INTERVAL_S seconds (then on_record).  */
int rt_meter_start (struct rt_meter *mt, struct event_base *base, pid_t pid, rt_error **err);
/* Adds the time since the last sample, when the VM ran.  */
void rt_meter_sample (struct rt_meter *mt);
/* The last sample (the VM is paused); paused time is not counted.  */
void rt_meter_pause (struct rt_meter *mt);
/* Counts again from now (the VM runs again).  */
void rt_meter_resume (struct rt_meter *mt);
/* The last sample and no more (before QEMU goes).  */
void rt_meter_stop (struct rt_meter *mt);
/* What is charged so far, microdollars: 0 for a trial.  */
int64_t rt_meter_charged_micros (const struct rt_meter *mt);
/* Appends the sandbox's record to the ledger, its fields from mt->state
   and the meter; the next periodic record comes a full interval later.  */
void rt_meter_record (struct rt_meter *mt);

#endif
