/* oneshot.h - the benchmark modes: rt.cmd and rt.rawbench.  */
#ifndef AGENT_ONESHOT_H
#define AGENT_ONESHOT_H

#include "agent.h"

void run_once (const char *b64, const char *proxy_url) __attribute__ ((noreturn));
void rawbench (const char *arg) __attribute__ ((noreturn));

#endif
