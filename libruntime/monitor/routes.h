/* routes.h - the monitor's HTTP API on api.sock: a table of (method, path
 * under /v1/sandboxes/{id}, handler), the request body parsed once.  The
 * routes are listed in monitor.h and routes.c.
 */
#ifndef RT_MONITOR_ROUTES_H
#define RT_MONITOR_ROUTES_H

#include "monitor/monitor-internal.h"

/* evhttp's callback for every request; @arg is the struct mon.  */
void mon_handle_request (struct evhttp_request *req, void *arg);

#endif
