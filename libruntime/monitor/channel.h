/* channel.h - the monitor's end of the agent channel: frames queued out
 * (written as the socket takes them), frames read in and handed to the
 * frame table (frames.h), and the QUIESCE that holds the guest's end still for a
 * capture (capture.h).  The wire format is common/proto.h's.
 *
 * Its state is struct mon's `chan`; only channel.c touches it.
 */
#ifndef RT_MONITOR_CHANNEL_H
#define RT_MONITOR_CHANNEL_H

#include <event2/util.h>

#include "common/proto.h"
#include "common/util.h"

struct event;
struct evbuffer;
struct mon;
struct mon_exec;
struct rt_channel;

struct mon_chan
{
  int fd;                          /* non-blocking; -1 before the agent
                                      answered and once closed */
  struct rt_frame_reader *reader;
  struct evbuffer *out;            /* frames waiting for the guest to read */
  struct event *ev_read, *ev_write;
  bool quiesced;                   /* QUIESCE sent: the agent sends nothing
                                      until RESTORE, and no credit goes to it */
};
#define MON_CHAN_INIT { .fd = -1 }

/* The channel @ch (connected, the agent greeted) becomes the monitor's;
   what is left of @ch is closed.  */
void mon_chan_take (struct mon *m, struct rt_channel *ch);
/* Its queue and events on m->base; it is read from mon_chan_read_start.  */
int mon_chan_watch (struct mon *m, rt_error **err);
void mon_chan_read_start (struct mon *m);
/* Closes it (the sandbox stops or is paused to disk): nothing more is
   read, and frames queued from here go nowhere.  */
void mon_chan_close (struct mon *m);
/* The channel as vmm/channel.h's, for guest-ops' own requests while the
   event loop does not read it (a spare's claim).  Its fd stays
   non-blocking (guest-ops polls) and the monitor's: do not close it.  */
void mon_chan_borrow (struct mon *m, struct rt_channel *ch);

/* Queues one frame; nothing once the channel is closed.  */
void mon_chan_queue (struct mon *m, uint8_t type, uint32_t stream, const void *payload, size_t len);
void mon_chan_queue_json (struct mon *m, uint8_t type, uint32_t stream, json_object *obj);
/* SIGNAL {"signal": @sig} to the command of @stream.  */
void mon_chan_signal (struct mon *m, uint32_t stream, int sig);

/* Bytes queued that the guest has not read yet.  */
size_t mon_chan_waiting (struct mon *m);
/* True while more than CHAN_OUT_MAX waits for the guest to read.  */
bool mon_chan_full (struct mon *m);
/* True while frames queued now reach the agent in time: the channel open
   and not quiesced.  */
bool mon_chan_sending (struct mon *m);
/* Owes @bytes of @e's output window back to the guest: added to the one
   WINDOW frame per stream that waits while the guest does not read.  */
void mon_chan_credit (struct mon *m, struct mon_exec *e, uint32_t bytes);

/* The channel fd's event callbacks.  */
void mon_on_chan_read (evutil_socket_t fd, short what, void *arg);
void mon_on_chan_write (evutil_socket_t fd, short what, void *arg);

/* QUIESCE, after everything queued before it; then the channel is read
   here, its frames handled as usual, until the agent's DONE: from there
   it sends nothing until RESTORE, so the channel is at a frame boundary,
   and no credit goes out (what the guest counts as unacknowledged stays
   what the monitor counts, for the capture).  On failure the agent sends
   again, or the sandbox stopped (the guest broke the protocol).  */
int mon_chan_quiesce (struct mon *m, rt_error **err);
/* QUIESCE sent, and the agent not yet told to send again.  */
bool mon_chan_quiesced (struct mon *m);
/* RESTORE "wake" (the clock and entropy refreshed, every command kept),
   then as mon_chan_quiet_end.  */
void mon_chan_wake (struct mon *m);
/* The agent sends again (after a RESTORE, or a QUIESCE that failed): the
   credit held back while it was quiesced goes out, and processes' stdin.  */
void mon_chan_quiet_end (struct mon *m);

#endif
