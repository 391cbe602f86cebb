/* state.c - the names of enum rt_sandbox_state, as a sandbox's JSON spells
   its "state" (include/runtime/sandbox.h), and comparisons through them.  */
#include <string.h>

#include "common/util.h"
#include "core/state.h"

/* By value: enum rt_sandbox_state's values are its indices.  */
static const char *const state_names[] = {
  [RT_SANDBOX_STARTING] = "starting", [RT_SANDBOX_RUNNING] = "running",   [RT_SANDBOX_PAUSING] = "pausing",
  [RT_SANDBOX_PAUSED] = "paused",     [RT_SANDBOX_RESUMING] = "resuming", [RT_SANDBOX_STOPPING] = "stopping",
  [RT_SANDBOX_STOPPED] = "stopped",
};

#define N_STATES (sizeof (state_names) / sizeof (state_names[0]))

const char *
rt_sandbox_state_name (enum rt_sandbox_state state)
{
  /* Through unsigned: a negative value is out of range too.  */
  return (unsigned) state < N_STATES ? state_names[state] : NULL;
}

int
rt_sandbox_state_parse (const char *name, enum rt_sandbox_state *state)
{
  for (size_t i = 0; name && i < N_STATES; i++)
    if (strcmp (name, state_names[i]) == 0)
      {
        if (state)
          *state = (enum rt_sandbox_state) i;
        return 0;
      }
  return -1;
}

bool
rt_state_is (const char *name, enum rt_sandbox_state state)
{
  enum rt_sandbox_state s;

  return rt_sandbox_state_parse (name, &s) == 0 && s == state;
}
