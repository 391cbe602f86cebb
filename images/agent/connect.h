/* connect.h - CONNECT: a stream that is a TCP connection to a port of the
   guest's loopback (port forwarding, common/proto.h).  */
#ifndef AGENT_CONNECT_H
#define AGENT_CONNECT_H

#include <stddef.h>
#include <stdint.h>

#include "agent.h"

/* Opens @stream as a connection to 127.0.0.1:{"port"}; a refusal is
   answered ERROR.  */
void handle_connect (struct agent *ag, uint32_t stream, const uint8_t *p, size_t len);
/* The socket of @c became writable while connecting: connected, or
   refused (ERROR, and the stream is gone).  */
void connect_finish (struct agent *ag, struct cmd *c);

#endif
