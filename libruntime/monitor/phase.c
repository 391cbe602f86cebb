/* phase.c - the monitor's phases and their transitions (see phase.h).  */
#include "monitor/monitor-internal.h"
#include "monitor/phase.h"

#define TO(p) (1u << (p))

static const struct
{
  const char *label; /* in monitor.log */
  const char *state; /* "state" in state.json and the record */
  unsigned next;     /* the phases that may follow, TO (…) each */
} phases[] = {
  [MON_STARTING] = { "starting", "starting", TO (MON_SPARE) | TO (MON_RUNNING) | TO (MON_STOPPED) | TO (MON_PAUSED) },
  [MON_SPARE] = { "spare", "spare", TO (MON_RUNNING) | TO (MON_STOPPING) },
  [MON_RUNNING] = { "running", "running", TO (MON_CAPTURING) | TO (MON_PAUSING) | TO (MON_STOPPING) },
  [MON_CAPTURING] = { "capturing", "running", TO (MON_RUNNING) | TO (MON_STOPPING) },
  [MON_PAUSING] = { "pausing", "pausing", TO (MON_PAUSED) | TO (MON_RUNNING) | TO (MON_STOPPING) },
  [MON_PAUSED] = { "paused", "paused", TO (MON_STOPPING) },
  [MON_STOPPING] = { "stopping", "stopping", TO (MON_STOPPED) },
  [MON_STOPPED] = { "stopped", "stopped", 0 },
};

bool
mon_phase_may_follow (enum mon_phase from, enum mon_phase to)
{
  return (unsigned) from <= MON_STOPPED && (unsigned) to <= MON_STOPPED && (phases[from].next & TO (to)) != 0;
}

const char *
mon_phase_state (enum mon_phase p)
{
  return (unsigned) p <= MON_STOPPED ? phases[p].state : NULL;
}

bool
mon_enter (struct mon *m, enum mon_phase p)
{
  if (!mon_phase_may_follow (m->phase, p))
    {
      fprintf (stderr, "monitor bug: %s may not follow %s; it stays %s\n", phases[p].label,
               phases[m->phase].label, phases[m->phase].label);
      return false;
    }
  m->phase = p;
  mon_set_str (m, "state", phases[p].state);
  return true;
}

bool
mon_stopping (const struct mon *m)
{
  return m->phase == MON_STOPPING || m->phase == MON_STOPPED;
}
