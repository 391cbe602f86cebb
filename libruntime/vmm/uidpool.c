/* uidpool.c - a uid of its own for each QEMU (uidpool.h).  */
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <stdbool.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vmm/uidpool.h"

/* The first user or group of the host inside [first, first + count), or
   (uid_t) -1.  The whole databases are read once per claim: a few
   hundred lines.  */
static uid_t
first_taken (uid_t first, unsigned count, const char **what)
{
  uid_t found = (uid_t) -1;
  struct passwd *pw;
  struct group *gr;

  setpwent ();
  while (found == (uid_t) -1 && (pw = getpwent ()) != NULL)
    if (pw->pw_uid >= first && pw->pw_uid - first < count)
      {
        found = pw->pw_uid;
        *what = "user";
      }
  endpwent ();
  setgrent ();
  while (found == (uid_t) -1 && (gr = getgrent ()) != NULL)
    if (gr->gr_gid >= first && gr->gr_gid - first < count)
      {
        found = gr->gr_gid;
        *what = "group";
      }
  endgrent ();
  return found;
}

int
rt_uid_range_parse (const char *spec, uid_t *first, unsigned *count, rt_error **err)
{
  unsigned long long a, b;
  const char *what = NULL;
  uid_t taken;
  int end = 0;

  if (spec == NULL)
    spec = RT_UID_RANGE_DEFAULT;
  if (sscanf (spec, "%llu-%llu%n", &a, &b, &end) != 2 || spec[end] != '\0' || a == 0 || b < a
      || b >= 0x80000000ULL || b - a >= 1000000ULL)
    {
      rt_error_set (err, EINVAL, "startup_failed", "RUNTIME_UID_RANGE='%s' is not a range of uids", spec);
      return rt_error_hint (err, "FIRST-LAST, 0 < FIRST <= LAST < 2147483648, at most a million; default %s",
                            RT_UID_RANGE_DEFAULT);
    }
  taken = first_taken ((uid_t) a, (unsigned) (b - a + 1), &what);
  if (taken != (uid_t) -1)
    {
      rt_error_set (err, EEXIST, "startup_failed", "the sandbox uid range %llu-%llu holds the host's %s %u", a, b,
                    what, (unsigned) taken);
      return rt_error_hint (err, "set RUNTIME_UID_RANGE to ids no user or group of this host has (default %s)",
                            RT_UID_RANGE_DEFAULT);
    }
  *first = (uid_t) a;
  *count = (unsigned) (b - a + 1);
  return 0;
}

static int
open_lock (uid_t uid, const char *suffix, int flags)
{
  char path[80];

  snprintf (path, sizeof path, RT_UID_LOCK_DIR "/%u%s", (unsigned) uid, suffix);
  return open (path, flags | O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
}

/* 0 with @fd locked, 1 when another holds it, negative (errno set).  */
static int
lock_one (uid_t uid, const char *suffix, bool create, int *fd)
{
  *fd = open_lock (uid, suffix, create ? O_CREAT : 0);
  if (*fd < 0)
    return errno == ENOENT && !create ? 0 : -1;
  if (flock (*fd, LOCK_EX | LOCK_NB) == 0)
    return 0;
  if (errno != EWOULDBLOCK)
    return -1;
  close (*fd);
  *fd = -1;
  return 1;
}

static int
hold (uid_t uid, struct rt_uid_lease *lease, bool create)
{
  int ret;

  lease->uid = 0;
  lease->lock_fd = lease->qemu_lock_fd = -1;
  ret = lock_one (uid, "", create, &lease->lock_fd);
  if (ret == 0)
    ret = lock_one (uid, ".qemu", create, &lease->qemu_lock_fd);
  if (ret != 0)
    {
      int e = errno;
      rt_uid_release (lease);
      errno = e;
      return ret;
    }
  lease->uid = uid;
  return 0;
}

int
rt_uid_hold (uid_t uid, struct rt_uid_lease *lease)
{
  return hold (uid, lease, false);
}

int
rt_uid_in_use (uid_t uid)
{
  struct rt_uid_lease l;
  int ret = hold (uid, &l, false);

  rt_uid_release (&l);
  return ret;
}

int
rt_uid_claim (rt_context *ctx, struct rt_uid_lease *lease, rt_error **err)
{
  uid_t first;
  unsigned count;
  int ret;

  lease->uid = 0;
  lease->lock_fd = lease->qemu_lock_fd = -1;
  ret = rt_uid_range_parse (ctx->uid_range, &first, &count, err);
  if (ret < 0)
    return ret;
  if (mkdir (RT_UID_LOCK_DIR, 0700) < 0 && errno != EEXIST)
    return rt_error_set (err, errno, "startup_failed", "cannot create '%s': %s", RT_UID_LOCK_DIR, strerror (errno));
  /* The lowest free uid: the lock files stay as many as the most
     sandboxes ever live at once.  */
  for (unsigned i = 0; i < count; i++)
    {
      uid_t uid = first + i;

      ret = hold (uid, lease, true);
      if (ret == 0)
        return 0;
      if (ret < 0)
        return rt_error_set (err, errno, "startup_failed", "cannot lock uid %u in %s: %s", (unsigned) uid,
                             RT_UID_LOCK_DIR, strerror (errno));
    }
  rt_error_set (err, EAGAIN, "startup_failed", "every uid of the sandbox range %u-%u is taken by a live sandbox",
                (unsigned) first, (unsigned) (first + count - 1));
  return rt_error_hint (err, "stop a sandbox, or widen RUNTIME_UID_RANGE");
}

void
rt_uid_release (struct rt_uid_lease *lease)
{
  if (lease->qemu_lock_fd >= 0)
    close (lease->qemu_lock_fd);
  if (lease->lock_fd >= 0)
    close (lease->lock_fd);
  lease->lock_fd = lease->qemu_lock_fd = -1;
  lease->uid = 0;
}
