/* uidpool.h - a uid (and the gid of the same number) of its own for each
 * QEMU, from a range the host reserves (the jail, jail.c).
 *
 * The range is RUNTIME_UID_RANGE=FIRST-LAST, else RT_UID_RANGE_DEFAULT;
 * it is refused when it holds uid 0, a user or a group of the host.  A uid
 * is taken (the lowest free one) by exclusive flocks on two files,
 * RT_UID_LOCK_DIR/<uid>, held by the claimer (the monitor), and
 * <uid>.qemu, handed to its QEMU alone: the uid is free again only when
 * both are gone, whatever killed them, and a QEMU that unlocks its own
 * file (an escaped one can: flock locks belong to the open file) frees
 * nothing while its monitor lives.  The lock dir is
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
  int lock_fd;      /* <uid>, the claimer's; -1 when not held */
  int qemu_lock_fd; /* <uid>.qemu, for QEMU; -1 when not held (or handed
                       over and closed here) */
};

/* Parses @spec ("FIRST-LAST", NULL for the default) into *first and
   *count; checks it against the host's users and groups.  */
int rt_uid_range_parse (const char *spec, uid_t *first, unsigned *count, rt_error **err);

/* Takes a free uid of ctx->uid_range for the caller; both lock fds are
   close-on-exec (the caller hands qemu_lock_fd to QEMU, then closes its
   own copy).  Errors:
   "startup_failed" when the range is exhausted or wrong.  */
int rt_uid_claim (rt_context *ctx, struct rt_uid_lease *lease, rt_error **err);

/* Gives the uid back (closes our hold on its lock; idempotent).  */
void rt_uid_release (struct rt_uid_lease *lease);

/* Takes @uid itself if both its locks are free: 0 (held in *lease), 1
   when it is in use, negative when it cannot be told.  */
int rt_uid_hold (uid_t uid, struct rt_uid_lease *lease);

/* 1 when either lock of @uid is held by a live process, 0 when free,
   negative when it cannot be told.  */
int rt_uid_in_use (uid_t uid);

#endif
