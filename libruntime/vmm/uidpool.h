/* uidpool.h - a uid (and the gid of the same number) of its own for each
 * QEMU, from a range the host reserves (the jail, jail.c).
 *
 * The range is RUNTIME_UID_RANGE=FIRST-LAST, else RT_UID_RANGE_DEFAULT;
 * it is refused when it holds uid 0, a user or a group of the host.  A uid
 * is taken (the lowest free one) by an exclusive flock on RT_UID_LOCK_DIR/<uid>; the lock's file
 * description is held by the claimer and by its QEMU, so the uid is free
 * again exactly when both are gone, whatever killed them.  The lock dir is
 * machine-wide, whatever RUNTIME_STATE_DIR says: uids are.
 */
#ifndef RT_UIDPOOL_H
#define RT_UIDPOOL_H

#include <sys/types.h>

#include "core/context.h"

/* 0x70000000: above every allocator's range (systemd documents
   1879048192-2147483647 as unused), below 2^31.  */
#define RT_UID_RANGE_DEFAULT "1879048192-1879113727"
#define RT_UID_LOCK_DIR "/run/runtime-uids"

struct rt_uid_lease
{
  uid_t uid;   /* also the gid; 0 when nothing is held */
  int lock_fd; /* the flock'd lock file; -1 when nothing is held */
};

/* Parses @spec ("FIRST-LAST", NULL for the default) into *first and
   *count; checks it against the host's users and groups.  */
int rt_uid_range_parse (const char *spec, uid_t *first, unsigned *count, rt_error **err);

/* Takes a free uid of ctx->uid_range for the caller; the lease's lock_fd
   is close-on-exec (the caller hands a copy to QEMU).  Errors:
   "startup_failed" when the range is exhausted or wrong.  */
int rt_uid_claim (rt_context *ctx, struct rt_uid_lease *lease, rt_error **err);

/* Gives the uid back (closes our hold on its lock; idempotent).  */
void rt_uid_release (struct rt_uid_lease *lease);

/* 1 when @uid's lock is held by a live process, 0 when free, negative
   when it cannot be told.  */
int rt_uid_in_use (uid_t uid);

#endif
