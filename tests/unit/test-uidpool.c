/* test-uidpool.c - a uid of its own per QEMU (vmm/uidpool.c): ranges that
   hold a host user or group or are not ranges are refused; claims are
   distinct, the range runs out with one clear error, a uid given back is
   free again.  Uses the top uids of the default range, which no test
   sandbox reaches (they take the lowest free one).  */
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "core/context.h"
#include "tap.h"
#include "vmm/uidpool.h"

static void
test_parse (void)
{
  static const char *const bad[] = { "0-10", "100-50", "abc", "5", "5-", "-5", "10-20x", "2147483000-2147483648",
                                     "1000-2000000", "65000-65535" };
  cleanup_error rt_error *err = NULL;
  uid_t first = 0;
  unsigned count = 0;

  ok (rt_uid_range_parse (NULL, &first, &count, &err) == 0 && first == 1879048192 && count == 65536,
      "the default range: 1879048192, 65536 uids");
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    {
      cleanup_error rt_error *e = NULL;
      int ret = rt_uid_range_parse (bad[i], &first, &count, &e);
      ok (ret < 0 && e && strcmp (e->code, "startup_failed") == 0, "'%s' refused: %s", bad[i], e ? e->msg : "");
    }
}

static void
test_claim (void)
{
  rt_context ctx = { .uid_range = (char *) "1879113725-1879113727" };
  struct rt_uid_lease l[4] = { 0 };
  cleanup_error rt_error *err = NULL;
  int ret = 0;

  for (int i = 0; i < 3 && ret == 0; i++)
    ret = rt_uid_claim (&ctx, &l[i], &err);
  ok (ret == 0 && l[0].uid && l[1].uid && l[2].uid && l[0].uid != l[1].uid && l[1].uid != l[2].uid
          && l[0].uid != l[2].uid,
      "three claims, three uids: %u %u %u", l[0].uid, l[1].uid, l[2].uid);
  ok (rt_uid_in_use (l[1].uid) == 1, "a claimed uid is in use");
  /* An escaped QEMU may unlock the lock it holds: the uid stays taken
     while its monitor holds the other.  */
  flock (l[2].qemu_lock_fd, LOCK_UN);
  ok (rt_uid_in_use (l[2].uid) == 1, "QEMU's lock given up: the uid is still in use");
  ret = rt_uid_claim (&ctx, &l[3], &err);
  ok (ret < 0 && err && strstr (err->msg, "taken"), "the fourth claim: %s", err ? err->msg : "(none)");
  ok (l[3].uid == 0 && l[3].lock_fd == -1 && l[3].qemu_lock_fd == -1, "a failed claim holds nothing");
  {
    /* The monitor gone (kill -9), its QEMU not yet: still in use.  */
    int qemu = dup (l[0].qemu_lock_fd);
    uid_t u = l[0].uid;
    rt_uid_release (&l[0]);
    ok (rt_uid_in_use (u) == 1, "the monitor's lock gone, QEMU's held: the uid is still in use");
    close (qemu);
    ok (rt_uid_in_use (u) == 0, "both gone: free");
    ok (rt_uid_claim (&ctx, &l[0], NULL) == 0 && l[0].uid == u, "and claimed again");
  }
  {
    uid_t given = l[1].uid;
    rt_uid_release (&l[1]);
    ok (rt_uid_in_use (given) == 0 && l[1].lock_fd == -1, "a released uid is free");
    ok (rt_uid_claim (&ctx, &l[1], NULL) == 0 && l[1].uid == given, "and is claimed again");
  }
  for (int i = 0; i < 3; i++)
    rt_uid_release (&l[i]);
  /* Nothing else takes these: their lock files go with the test.  */
  for (unsigned u = 1879113725; u <= 1879113727; u++)
    {
      char path[80];
      snprintf (path, sizeof path, RT_UID_LOCK_DIR "/%u", u);
      unlink (path);
      snprintf (path, sizeof path, RT_UID_LOCK_DIR "/%u.qemu", u);
      unlink (path);
    }
}

int
main (void)
{
  test_parse ();
  if (geteuid () == 0)
    test_claim ();
  else
    printf ("# SKIP claims: the lock dir is root's\n");
  return tap_done ();
}
