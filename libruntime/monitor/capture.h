/* capture.h - snapshot, fork and pause to disk (snapshot/saved.h): the
   agent quiesced (its channel at a frame boundary), the VM stopped and
   saved, then resumed (a snapshot, a fork's source) or ended (a pause:
   QEMU goes, the overlay and layers stay, the monitor exits and a later
   wake starts a new one from the saved VM).  */
#ifndef RT_MONITOR_CAPTURE_H
#define RT_MONITOR_CAPTURE_H

#include "monitor/monitor-internal.h"

/* Saves the sandbox under <disk dir>/saved and ends QEMU and the loop;
   state "paused".  On failure the sandbox runs on.  */
int mon_pause_to_disk (struct mon *m, rt_error **err);

/* POST :snapshot {id, name?, labels?} and :fork {id}.  */
void mon_handle_snapshot (struct mon *m, struct evhttp_request *req, json_object *body);
void mon_handle_fork (struct mon *m, struct evhttp_request *req, json_object *body);

#endif
