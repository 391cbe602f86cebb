/* workers.h - worker threads for the route handlers: made on demand up
   to SRV_MAX_WORKERS, idle ones end after a while; a handler that returns
   without an answer is answered 500, an open stream ended.  */
#ifndef RT_SERVE_WORKERS_H
#define RT_SERVE_WORKERS_H

#include "serve/server-internal.h"

/* Runs the request's route: on the loop for SRV_INLINE ones, else queued
   for a worker (503 when SRV_MAX_WORKERS are queued or running).  Loop
   thread.  */
void srv_run_route (struct srv_req *r);
/* Ends the idle worker threads and waits for them (none is running a
   request).  */
void srv_workers_end (struct srv *s);

/* A background round (the sweep, the spend watch): @fn (@s) on a detached
   thread of its own, unless the round @running flags still goes or the
   server stops; counted in s->workers, so a stopping server waits for it.
   @fn ends with srv_round_done (@s, @running).  Any thread.  */
void srv_round_start (struct srv *s, bool *running, void *(*fn) (void *));
void srv_round_done (struct srv *s, bool *running);

#endif
