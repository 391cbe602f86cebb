/* spare.h - a spare: a clone of a template (clone.h) made ahead of time,
 * paused, with no rules but "nothing out", no lease, no meter, and state
 * "spare" (hidden from lists).  A create of exactly its image and shape
 * reserves it (POST :reserve {"claimer": pid}: one reservation at a time;
 * the spare stops if the claimer dies first), then claims it
 * (POST :claim with the new sandbox's state, env, rules, lease and owner):
 * the rules apply, QEMU resumes, the agent makes the clone unique
 * (RESTORE), the meter and the lease start, and it answers as a running
 * sandbox.  The claimer confirms (POST :claimed) once it holds the
 * handle; a claimer that dies before that stops the sandbox.
 */
#ifndef RT_MONITOR_SPARE_H
#define RT_MONITOR_SPARE_H

#include "monitor/monitor.h"

struct evhttp_request;
struct event;
struct mon;

/* m->spare: its reservation and claim; only spare.c touches it.  Whether
   the monitor is a spare is its phase (MON_SPARE, phase.h).  */
struct mon_spare
{
  int claimer_pidfd;                  /* the reserving or claiming process, or -1 */
  struct event *ev_claimer;
  bool claimed;                       /* :claim done, :claimed not yet */
  struct rt_monitor_config claim_cfg; /* cfg once claimed (m->cfg points here) */
  char **claim_env;
};
#define MON_SPARE_INIT { .claimer_pidfd = -1 }

void mon_handle_reserve (struct mon *m, struct evhttp_request *req, json_object *body);
void mon_handle_claim (struct mon *m, struct evhttp_request *req, json_object *body);
void mon_handle_claimed (struct mon *m, struct evhttp_request *req, json_object *body);

#endif
