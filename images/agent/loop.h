/* loop.h - the agent's poll() loop.  */
#ifndef AGENT_LOOP_H
#define AGENT_LOOP_H

#include "agent.h"

void serve (struct agent *ag) __attribute__ ((noreturn));
/* One turn of the loop: buffered work, then poll() for at most
   @max_wait_ms (-1: as long as nothing is due) and what it reports.  The
   host-run tests drive the agent with it.  */
void serve_step (struct agent *ag, int max_wait_ms);

#endif
