/* meter.c - the CPU meter (see meter.h).  */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "billing/meter.h"

static bool
read_schedstat (pid_t pid, pid_t tid, uint64_t *ns)
{
  char file[64], stat[128] = "";
  FILE *f;
  bool ok;

  snprintf (file, sizeof file, "/proc/%d/task/%d/schedstat", (int) pid, (int) tid);
  if ((f = fopen (file, "re")) == NULL)
    return false;
  ok = fgets (stat, sizeof stat, f) != NULL;
  fclose (f);
  if (ok)
    *ns += strtoull (stat, NULL, 10);
  return ok;
}

/* CPU time of QEMU's vCPU threads ("CPU n/TCG", "CPU n/KVM"), in ns.  The
   threads are looked for until all are found, then only read.  */
static uint64_t
vcpu_ns (struct rt_meter *mt)
{
  pid_t pid = mt->pid;
  char path[64];
  cleanup_dir DIR *d = NULL;
  struct dirent *de;
  uint64_t total = 0;
  bool all = mt->n_vcpu_tids > 0 && mt->n_vcpu_tids >= mt->vcpu;

  for (unsigned i = 0; all && i < mt->n_vcpu_tids; i++)
    all = read_schedstat (pid, mt->vcpu_tids[i], &total);
  if (all)
    return total;
  total = 0;
  mt->n_vcpu_tids = 0;
  snprintf (path, sizeof path, "/proc/%d/task", (int) pid);
  d = opendir (path);
  while (d && (de = readdir (d)))
    {
      char file[320], comm[32] = "";
      FILE *f;
      if (de->d_name[0] == '.')
        continue;
      snprintf (file, sizeof file, "/proc/%d/task/%s/comm", (int) pid, de->d_name);
      if ((f = fopen (file, "re")) == NULL)
        continue;
      if (fgets (comm, sizeof comm, f) == NULL)
        comm[0] = '\0';
      fclose (f);
      if (strncmp (comm, "CPU ", 4) != 0 || !read_schedstat (pid, atoi (de->d_name), &total))
        continue;
      if (mt->n_vcpu_tids < sizeof mt->vcpu_tids / sizeof mt->vcpu_tids[0])
        mt->vcpu_tids[mt->n_vcpu_tids++] = atoi (de->d_name);
    }
  return total;
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
  cpu = vcpu_ns (mt);
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
  mt->last_cpu_ns = vcpu_ns (mt);
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
