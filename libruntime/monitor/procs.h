/* procs.h - spawned processes: commands nobody watches as they run (spawn),
 * their output kept (the latest LOG_MAX bytes) for logs and logs -f, their
 * exit for ps, and kill.
 */
#ifndef RT_MONITOR_PROCS_H
#define RT_MONITOR_PROCS_H

#include "monitor/monitor-internal.h"

/* Output of @p on @stream (1 stdout, 2 stderr): kept, and sent to its
   followers.  */
void mon_proc_output (struct mon_proc *p, int stream, const uint8_t *data, uint32_t len);
/* @p ended with @last (its exit or error line): kept, and its followers'
   streams end with it.  */
void mon_proc_exited (struct mon_proc *p, json_object *last);

/* Process @id, or NULL.  */
struct mon_proc *mon_proc_find (struct mon *m, int64_t id);

/* POST :spawn (an exec request, keepStdin and pty kept: proc-stdin.h) →
   the process {process, state, exitCode, command, droppedBytes, pty,
   stdinOpen, stdinOffset, …}.  */
void mon_handle_spawn (struct mon *m, struct evhttp_request *req, json_object *body);
/* POST :ps → every process, in start order.  */
void mon_handle_ps (struct mon *m, struct evhttp_request *req, json_object *body);
/* POST :logs {process, follow?} → NDJSON of its kept output, then its exit.  */
void mon_handle_logs (struct mon *m, struct evhttp_request *req, json_object *body);
/* POST :kill {process, signal?} → the process.  */
void mon_handle_kill (struct mon *m, struct evhttp_request *req, json_object *body);

/* The processes (id, command, kept output, exit, the window the guest
   has used) as a JSON array for a saved sandbox's meta.json; NULL when out
   of memory.  */
json_object *mon_procs_save (struct mon *m);
/* Those of a saved sandbox (@procs, mon_procs_save's) become this
   monitor's; the running ones get their execs back, on the same streams,
   with the window the guest has used, or (@reset: a snapshot's child,
   whose agent starts counting again) a whole one.  */
int mon_procs_load (struct mon *m, json_object *procs, bool reset, rt_error **err);
/* The streams of the processes this monitor follows (the RESTORE's
   "keep"), in *streams (free it), *n of them.  */
int mon_procs_streams (struct mon *m, uint32_t **streams, size_t *n, rt_error **err);

#endif
