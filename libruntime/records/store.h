/* store.h - where sandboxes are written down: the live state dir (owned by
   the monitor) and the records of ended sandboxes under the data dir.
   records/list.h finds them, records/reap.h cleans up after crashes.  */
#ifndef RT_RECORDS_STORE_H
#define RT_RECORDS_STORE_H

#include "core/context.h"

/* "<state>/<id>" and "<data>/sandboxes/<id>.json".  */
char *rt_sandbox_dir (rt_context *ctx, const char *id);
char *rt_record_path (rt_context *ctx, const char *id);
/* "<data>/sandboxes/<id>.egress.jsonl": kept with the record.  */
char *rt_egress_log_path (rt_context *ctx, const char *id);
/* <data>/sandboxes/<id>: the sandbox's disk (vmm/vm.c), off the state
   dir.  */
char *rt_sandbox_disk_dir (rt_context *ctx, const char *id);

int rt_store_write_state (const char *dir, json_object *state, rt_error **err);
int rt_store_write_record (rt_context *ctx, json_object *state, rt_error **err);
/* A state.json or record: the object in @path, NULL when the file is
   missing or holds no JSON object.  */
json_object *rt_record_read (const char *path);

/* Holds <state>/.lock: creators check names and make dirs under it.  */
int rt_store_lock (rt_context *ctx, int *fd, rt_error **err);

#endif
