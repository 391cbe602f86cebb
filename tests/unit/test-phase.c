/* test-phase.c - the monitor's transition table (monitor/phase.h): every
   pair of phases, against the list the lifecycle is documented with, and
   the state names other processes read.  */
#include <string.h>

#include "monitor/phase.h"
#include "tap.h"

static const char *const names[] = { "STARTING", "SPARE", "RUNNING", "CAPTURING", "PAUSING", "PAUSED", "STOPPING", "STOPPED" };

/* phase.h's list, spelled out: what may follow each phase.  */
static const char *const allowed[] = {
  [MON_STARTING] = "SPARE RUNNING STOPPED PAUSED",
  [MON_SPARE] = "RUNNING STOPPING",
  [MON_RUNNING] = "CAPTURING PAUSING STOPPING",
  [MON_CAPTURING] = "RUNNING STOPPING",
  [MON_PAUSING] = "PAUSED RUNNING STOPPING",
  [MON_PAUSED] = "STOPPING",
  [MON_STOPPING] = "STOPPED",
  [MON_STOPPED] = "",
};

static bool
listed (const char *list, const char *name)
{
  size_t n = strlen (name);
  for (const char *p = list; (p = strstr (p, name)) != NULL; p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
      return true;
  return false;
}

int
main (void)
{
  static const char *const states[] = { "starting", "spare", "running", "running", "pausing", "paused", "stopping", "stopped" };

  for (int f = MON_STARTING; f <= MON_STOPPED; f++)
    for (int t = MON_STARTING; t <= MON_STOPPED; t++)
      ok (mon_phase_may_follow ((enum mon_phase) f, (enum mon_phase) t) == listed (allowed[f], names[t]),
          "%s -> %s %s", names[f], names[t], listed (allowed[f], names[t]) ? "allowed" : "refused");
  for (int p = MON_STARTING; p <= MON_STOPPED; p++)
    ok (strcmp (mon_phase_state ((enum mon_phase) p), states[p]) == 0, "%s shows as %s", names[p], states[p]);
  ok (mon_phase_state ((enum mon_phase) 8) == NULL && mon_phase_state ((enum mon_phase) -1) == NULL,
      "no name out of range");
  ok (!mon_phase_may_follow ((enum mon_phase) 8, MON_RUNNING) && !mon_phase_may_follow (MON_RUNNING, (enum mon_phase) 99),
      "nothing follows or precedes out of range");
  return tap_done ();
}
