/* requests.h - what the host asks: EXEC, STDIN, SIGNAL, WINDOW, RESIZE, HELLO,
   SHUTDOWN.  */
#ifndef AGENT_REQUESTS_H
#define AGENT_REQUESTS_H

#include <stdint.h>

#include "agent.h"

void handle_frame (struct agent *ag, const struct rt_frame_header *h, const uint8_t *p);

#endif
