/* loop.h - the agent's poll() loop.  */
#ifndef AGENT_LOOP_H
#define AGENT_LOOP_H

#include "agent.h"

void serve (struct agent *ag) __attribute__ ((noreturn));

#endif
