/* watch.h - waiting for a sandbox's state to change, without polling:
   inotify on its state dir (its monitor replaces state.json by a rename)
   and on the records dir (its record appears when it ends).  */
#ifndef RT_RECORDS_WATCH_H
#define RT_RECORDS_WATCH_H

#include "core/context.h"

struct rt_record_watch;

/* Watches sandbox @id from now on: a change after this call is never
   missed by rt_record_watch_wait.  */
int rt_record_watch_open (rt_context *ctx, const char *id, struct rt_record_watch **out, rt_error **err);
/* 1 once something of the sandbox changed since the last call (or the
   open), 0 after @timeout_ms without a change.  */
int rt_record_watch_wait (struct rt_record_watch *w, int timeout_ms);
void rt_record_watch_close (struct rt_record_watch *w);

#endif
