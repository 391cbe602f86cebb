/* frames.h - the agent channel's frame table: which handler takes a frame
 * the guest sent, as routes.c's table is for api.sock.  channel.c reads
 * the frames and hands each to mon_frame_dispatch; the table, in frames.c,
 * is the one place that names the handlers (exec.h, session.h), by the
 * frame's type and by what follows its stream: a command or a process
 * (exec.c), or a session.sock client (session.c).
 */
#ifndef RT_MONITOR_FRAMES_H
#define RT_MONITOR_FRAMES_H

#include "monitor/monitor-internal.h"

/* Hands @h and its @payload to the handler its type and stream have.  A
   frame of no stream the monitor follows, or of one that ended, is
   dropped; any other is activity (idle.h), and one of a type the table
   does not list is dropped after that.  */
void mon_frame_dispatch (struct mon *m, const struct rt_frame_header *h, const uint8_t *payload);

#endif
