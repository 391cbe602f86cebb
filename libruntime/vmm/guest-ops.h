/* guest-ops.h - what a template maker and a clone ask of the agent over a
   connected channel, synchronously and bounded (vmm/channel.h): run a
   command, freeze, restore.  The guest is hostile: every frame is checked
   by the codec, replies by shape, and each call ends by its deadline,
   whatever the guest sends (frames it does not expect are skipped, at
   most RT_GUEST_OPS_MAX_SKIP of them).  */
#ifndef RT_GUEST_OPS_H
#define RT_GUEST_OPS_H

#include "vmm/channel.h"

#define RT_GUEST_OPS_MAX_SKIP 4096

/* Connects to the agent of a VM just restored from a template: unlike
   rt_channel_connect it does not wait for a HELLO (the agent may still
   believe the template's host is connected; its HELLO, if any, is skipped
   by the next call).  */
int rt_channel_attach (struct rt_channel *ch, const char *sock, int vm_pidfd, int timeout_ms, rt_error **err);

/* Runs @argv as root in / (stream 1, no stdin, output discarded) and
   waits for its exit; *exit_code is its status (128+signal if killed).  */
int rt_guest_run (struct rt_channel *ch, const char *const *argv, int timeout_ms, int *exit_code, rt_error **err);

/* FREEZE, then waits for DONE {"op":"freeze","ok":true}.  */
int rt_guest_freeze (struct rt_channel *ch, int timeout_ms, rt_error **err);

/* How a VM started from saved memory is restored (RESTORE's "mode").  */
enum rt_restore_mode
{
  RT_RESTORE_CLONE, /* "clone", a template's: unique (hostname, machine id,
                       boot id, entropy), every process killed, every
                       command forgotten */
  RT_RESTORE_CHILD, /* "child", a snapshot's or fork's: unique, processes
                       kept but the commands not in "keep" (killed) */
  RT_RESTORE_WAKE,  /* "wake", the same sandbox after a pause to disk or a
                       capture: entropy, clock, gateway; identity and
                       processes kept but the commands not in "keep" */
};

/* RESTORE's payload: {"entropy", "timeMs", "hostname", "mode", "keep"}
   with 64 fresh bytes of the host's getrandom() and the host's clock now;
   "keep" (@keep, @n_keep stream ids) only when @keep is not NULL (absent:
   every command is kept, but in "clone" mode).  NULL when out of memory.  */
json_object *rt_guest_restore_request (const char *hostname, enum rt_restore_mode mode, const uint32_t *keep,
                                       size_t n_keep);

/* RESTORE (rt_guest_restore_request), then waits for DONE
   {"op":"restore","ok":true}.  Errors: "startup_failed".  */
int rt_guest_restore_as (struct rt_channel *ch, const char *hostname, enum rt_restore_mode mode,
                         const uint32_t *keep, size_t n_keep, int timeout_ms, rt_error **err);

/* RESTORE with 64 fresh bytes of the host's getrandom(), the host's clock
   now, and @hostname; waits for DONE {"op":"restore","ok":true}.  Errors:
   "startup_failed".  */
int rt_guest_restore (struct rt_channel *ch, const char *hostname, int timeout_ms, rt_error **err);

/* QUIESCE (no payload) asks the agent to send nothing more after its DONE
   {"op":"quiesce","ok":true} until the next RESTORE: the channel is then
   at a frame boundary, and a copy of the guest's memory holds no frame
   half sent.  Commands keep running (their output waits in the guest).
   The monitor sends it and reads the DONE from its event loop
   (monitor/channel.c).  */

/* Checks a DONE payload (NULL: not a JSON object) against @op ("freeze",
   "restore", "quiesce").  Return: 0 when it is {"op":@op,"ok":true}, else
   negative with "startup_failed" carrying the guest's message, escaped and
   truncated.  */
int rt_guest_done_check (json_object *done, const char *op, rt_error **err);

#endif
