/* conn.h - the virtio-serial port and the connection's state.  */
#ifndef AGENT_CONN_H
#define AGENT_CONN_H

#include <stdint.h>

#include "agent.h"

void conn_drop (struct agent *ag);
void conn_check (struct agent *ag);
void conn_resync (struct agent *ag, int64_t now);
void process_input (struct agent *ag);
void chan_read (struct agent *ag);
void chan_flush (struct agent *ag);
/* Finds the port named RT_CHANNEL_NAME and opens it; -1 when absent.  */
int open_channel (void);

#endif
