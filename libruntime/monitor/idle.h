/* idle.h - the idle pause (a sandbox left alone pauses itself to disk)
 * and its settings, changed live by POST :update (monitor.h).
 *
 * Activity is any request on api.sock, any frame of an exec or spawned
 * process from the guest, and a command whose client still waits.  The
 * settings live in the state object (idlePauseSeconds, autoWake): a woken
 * sandbox's monitor is configured from state.json, and the library reads
 * autoWake there (sandbox/update.h).
 */
#ifndef RT_MONITOR_IDLE_H
#define RT_MONITOR_IDLE_H

#include "common/util.h"

/* Only the monitor's files see these (monitor-internal.h); the library
   calls mon_idle_parse_update for a paused sandbox (sandbox/update.c).  */
struct mon;
struct evhttp_request;
struct event;

/* m->idle: the settings as :update left them, and the timer; only idle.c
   touches it.  */
struct mon_idle
{
  unsigned pause_s;           /* idlePauseSeconds; 0: off */
  bool auto_wake;
  int64_t last_activity_us;   /* CLOCK_MONOTONIC */
  struct event *ev;
};

/* Idle pause: off, or 10 s to a day.  */
#define RT_IDLE_PAUSE_MIN_S 10
#define RT_IDLE_PAUSE_MAX_S 86400
/* Under this much CPU (of all vCPUs, the meter's last sample) is idle.  */
#define RT_IDLE_CPU_PERCENT 2.0

/* The body of :update, {idlePauseSeconds?, autoWake?}: *@idle the seconds
   or -1 when absent, *@wake 1, 0, or -1 when absent.  Return: 0, or <0
   with @err "invalid_request" (a bad value, or the unknown members
   named).  */
int mon_idle_parse_update (json_object *body, int *idle, int *wake, rt_error **err);

/* Takes the settings (the state's members when it has them, a claimed
   spare's; else the config's), shows them in the state and arms the
   timer when idle pause is on.  Call once the sandbox runs.  */
void mon_idle_start (struct mon *m);
/* Activity: the idle time starts again from now.  */
void mon_idle_touch (struct mon *m);

void mon_handle_update (struct mon *m, struct evhttp_request *req, json_object *body);

#endif
