/* store.h - the snapshots under <data>/snapshots (snapshot/saved.h for
 * what one holds).
 *
 *   <data>/snapshots/<id>/           a complete snapshot: id "snap-" and
 *                                    12 hex digits
 *   <data>/snapshots/.tmp-<id>/      one being captured by a monitor:
 *                                    renamed to <id> when complete, so a
 *                                    dir named by an id is whole
 *   <data>/snapshots/.fork-<id>/     a fork's, captured for its children
 *                                    and removed once they run; its
 *                                    meta.json's "creatorPid" (pid and
 *                                    start time, as a pid file) says
 *                                    whose it is
 *   <data>/snapshots/.lock           flock: names are checked and taken
 *                                    under it
 */
#ifndef RT_SNAPSHOT_STORE_H
#define RT_SNAPSHOT_STORE_H

#include "core/context.h"

#define RT_SNAPSHOT_PREFIX "snap-"
#define RT_SNAPSHOT_ID_LEN 17 /* "snap-" + 12 hex digits */

/* A new snapshot id into @id.  */
int rt_snapshot_make_id (char id[RT_SNAPSHOT_ID_LEN + 1], rt_error **err);

/* True when @id has the shape of a snapshot id (no path can hide in
   it).  */
bool rt_snapshot_id_valid (const char *id);

/* "<data>/snapshots" (made 0700 when @make).  */
char *rt_snapshots_root (rt_context *ctx, bool make, rt_error **err);

/* The complete snapshot named @ref (an id, or a name one snapshot has):
   its dir in *dir.  Errors: "not_found".  */
int rt_snapshot_resolve (rt_context *ctx, const char *ref, char **dir, rt_error **err);

/* Holds <data>/snapshots/.lock in *fd.  */
int rt_snapshot_lock (rt_context *ctx, int *fd, rt_error **err);

/* Under the lock: "name_taken" when a snapshot of the context's own tenant
   (the host's: untenanted) has @name.  */
int rt_snapshot_name_free (rt_context *ctx, const char *name, rt_error **err);

/* Removes the .tmp-* dirs no monitor writes any more (their
   "monitor.pid" names a dead process, or they are over an hour old) and
   the .fork-* dirs whose creator is gone.  */
void rt_snapshot_sweep (rt_context *ctx);

/* 1 when a snapshot (or a paused sandbox) needs @image_id, with its id in
   *who (free it); 0 when none.  */
int rt_snapshot_image_in_use (rt_context *ctx, const char *image_id, char **who, rt_error **err);

/* The local driver (public/driver.h): these do what include/runtime.h
   says of their rt_ names, on this machine.  */
int rt_local_snapshot_list_json (rt_context *ctx, char **json, rt_error **err);
int rt_local_snapshot_get_json (rt_context *ctx, const char *ref, char **json, rt_error **err);
int rt_local_snapshot_remove (rt_context *ctx, const char *ref, rt_error **err);

#endif
