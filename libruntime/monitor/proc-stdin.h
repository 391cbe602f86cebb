/* proc-stdin.h - a spawned process's stdin (spawn with keepStdin) and its
 * pty: bytes written with offsets (:write), held (at most STDIN_PENDING_MAX
 * not yet sent) and sent to the guest within its stdin window, the end of
 * input, and :resize.
 */
#ifndef RT_MONITOR_PROC_STDIN_H
#define RT_MONITOR_PROC_STDIN_H

#include "monitor/monitor-internal.h"

/* Accepted bytes a process holds before the guest takes them, and all of
   a monitor's processes together.  */
#define STDIN_PENDING_MAX (1024 * 1024)
#define STDIN_PENDING_TOTAL (8 * 1024 * 1024)

/* {cols, rows} in @o (an API body, a session's RESIZE, a saved pty) into
   *@cols, *@rows when both are integers rt_pty_size_ok takes; else false.  */
bool mon_pty_size (json_object *o, unsigned *cols, unsigned *rows);
/* A process just spawned by @body (checked by mon_exec_start): its pty and
   whether its stdin stays open, from @offset (the inline stdin it got).  */
void mon_proc_stdin_init (struct mon_proc *p, json_object *body, uint64_t offset);
/* It ended: what it holds is dropped.  */
void mon_proc_stdin_end (struct mon_proc *p);
/* pty ({cols, rows} or null), stdinOpen, stdinOffset onto @o.  */
void mon_proc_stdin_json (const struct mon_proc *p, json_object *o);
/* Sends what the processes hold while their window and the channel have
   room (not while the guest is quiesced).  */
void mon_procs_stdin_pump (struct mon *m);
/* For a saved sandbox's meta: the stdin state of @p, whose guest has
   @inflight bytes of it not yet taken; NULL when none to keep.  */
json_object *mon_proc_stdin_save (const struct mon_proc *p, uint32_t inflight);
/* The other way: @o (mon_proc_stdin_save's, or NULL) into @p; the bytes
   in flight in *@inflight.  */
void mon_proc_stdin_load (struct mon_proc *p, json_object *o, uint32_t *inflight);

/* POST :write {process, data (base64), offset, eof?} → {process, offset
   (the accepted end), stdinOpen}.  */
void mon_handle_write (struct mon *m, struct evhttp_request *req, json_object *body);
/* POST :resize {process, cols, rows} → the process.  */
void mon_handle_resize (struct mon *m, struct evhttp_request *req, json_object *body);

#endif
