/* store.h - where sandboxes are written down: the live state dir (owned by
   the monitor) and the records of ended sandboxes under the data dir.  */
#ifndef RT_STORE_H
#define RT_STORE_H

#include "core/context.h"

/* RFC 3339 UTC with milliseconds, from epoch milliseconds.  */
void rt_format_time (int64_t epoch_ms, char out[32]);
int64_t rt_epoch_ms (void);

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

/* "pid starttime" files naming a process uniquely.  */
int rt_write_pidfile (const char *path, pid_t pid, rt_error **err);
/* 1 when the process the file names is alive, 0 when dead, -1 when there
   is no (readable) file.  */
int rt_pidfile_alive (const char *path, pid_t *pid);

/* Turns the state dirs of dead monitors into host_stopped records and
   removes them: called by everything that looks at sandboxes, so a crash
   leaks nothing for longer than the next command.  */
void rt_store_reap (rt_context *ctx);

/* Every sandbox (live ones, and ended ones with @all) the context sees
   (a tenant's own: core/context.h), oldest first.  */
int rt_store_list (rt_context *ctx, bool all, json_object **out, rt_error **err);
/* rt_store_list of every tenant's: for what all sandboxes share (images
   in use, the trial).  */
int rt_store_list_unscoped (rt_context *ctx, bool all, json_object **out, rt_error **err);

/* The sandbox named by id or by a name exactly one live sandbox has (then
   one ended sandbox).  not_found otherwise.  */
int rt_store_resolve (rt_context *ctx, const char *ref, json_object **out, rt_error **err);

/* Holds <state>/.lock: creators check names and make dirs under it.  */
int rt_store_lock (rt_context *ctx, int *fd, rt_error **err);

#endif
