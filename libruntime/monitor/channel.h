/* channel.h - the monitor's end of the agent channel: frames queued out
 * (written as the socket takes them), frames read in and handed to the
 * execs (exec.h).  The wire format is common/proto.h's.
 */
#ifndef RT_MONITOR_CHANNEL_H
#define RT_MONITOR_CHANNEL_H

#include "monitor/monitor-internal.h"

/* Queues one frame; nothing once the channel is closed.  */
void mon_chan_queue (struct mon *m, uint8_t type, uint32_t stream, const void *payload, size_t len);
void mon_chan_queue_json (struct mon *m, uint8_t type, uint32_t stream, json_object *obj);
/* SIGNAL {"signal": @sig} to the command of @stream.  */
void mon_chan_signal (struct mon *m, uint32_t stream, int sig);

/* True while more than CHAN_OUT_MAX waits for the guest to read.  */
bool mon_chan_full (struct mon *m);
/* Owes @bytes of @e's output window back to the guest: added to the one
   WINDOW frame per stream that waits while the guest does not read.  */
void mon_chan_credit (struct mon *m, struct mon_exec *e, uint32_t bytes);

/* The channel fd's event callbacks.  */
void mon_on_chan_read (evutil_socket_t fd, short what, void *arg);
void mon_on_chan_write (evutil_socket_t fd, short what, void *arg);

/* The agent sends again (after a RESTORE, or a QUIESCE that failed): the
   credit held back while it was quiesced goes out.  */
void mon_chan_quiet_end (struct mon *m);

#endif
