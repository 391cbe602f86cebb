/* lifecycle.h - a running sandbox's life: pause (QMP stop: no CPU, no
 * charge), wake (QMP cont; a lease that ended while paused starts again),
 * extend, and the lease timer that pauses or stops it at its end.
 */
#ifndef RT_MONITOR_LIFECYCLE_H
#define RT_MONITOR_LIFECYCLE_H

#include "monitor/monitor-internal.h"

/* The lease ends at @expires_ms (epoch ms): expiresAt and the timer.  */
void mon_set_expires (struct mon *m, int64_t expires_ms);
/* The lease timer's callback: stop (stop_on_timeout) or pause.  */
void mon_on_lease (evutil_socket_t fd, short what, void *arg);

/* Pauses the sandbox to disk (capture.h), @reason (lease_ended, idle,
   requested) shown as pauseReason; nothing when it is paused.  */
int mon_pause (struct mon *m, const char *reason, rt_error **err);

/* POST :stop, :pause, :wake → the state object.  */
void mon_handle_stop (struct mon *m, struct evhttp_request *req, json_object *body);
void mon_handle_pause (struct mon *m, struct evhttp_request *req, json_object *body);
void mon_handle_wake (struct mon *m, struct evhttp_request *req, json_object *body);
/* POST :extend {seconds} → the state object.  */
void mon_handle_extend (struct mon *m, struct evhttp_request *req, json_object *body);

#endif
