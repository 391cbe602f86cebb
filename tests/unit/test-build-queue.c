/* test-build-queue.c - the machine's image builds in turn (build/queue.h):
   tenants take turns, each tenant's builds go in order, a tenant has at
   most RT_BUILD_QUEUE_PER_TENANT queued or running, and one that queued
   many builds first delays a later tenant by one build, not all of them
   (the flock it replaces woke its waiters in no order at all).  */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "build/queue.h"
#include "tap.h"

/* The next @n builds to run, as "tenant:id" words, each ended at once.  */
static const char *
run (struct rt_build_queue *q, int n)
{
  static char out[256];
  size_t len = 0;

  out[0] = '\0';
  for (int i = 0; i < n; i++)
    {
      uint64_t id;
      const char *tenant;
      char name[40];
      if (rt_build_queue_pop (q, &id, &tenant) != 1)
        break;
      snprintf (name, sizeof name, "%s", tenant);
      len += snprintf (out + len, sizeof out - len, "%s%s:%llu", len ? " " : "", *name ? name : "host",
                       (unsigned long long) id);
      rt_build_queue_done (q, name);
    }
  return out;
}

int
main (void)
{
  struct rt_build_queue q = { 0 };
  uint64_t id;
  const char *tenant;

  ok (rt_build_queue_pop (&q, &id, &tenant) == 0, "an empty queue has nothing to run");
  for (uint64_t i = 1; i <= 4; i++)
    rt_build_queue_push (&q, "alice", i);
  ok (rt_build_queue_push (&q, "alice", 5) == -EBUSY, "a fifth build of one tenant is refused");
  ok (rt_build_queue_push (&q, "bob", 6) == 0 && rt_build_queue_push (&q, "carol", 7) == 0
          && rt_build_queue_push (&q, "carol", 8) == 0 && rt_build_queue_push (&q, NULL, 9) == 0,
      "other tenants queue behind her");
  {
    const char *got = run (&q, 20);
    ok (strcmp (got, "alice:1 bob:6 carol:7 host:9 alice:2 carol:8 alice:3 alice:4") == 0,
        "turns go round the tenants, each in its order (%s)", got);
  }
  ok (rt_build_queue_pop (&q, &id, &tenant) == 0 && q.n == 0, "and the queue is empty, no tenant left in it");

  /* Running builds count against the share until they end.  */
  for (uint64_t i = 10; i <= 13; i++)
    rt_build_queue_push (&q, "alice", i);
  ok (rt_build_queue_pop (&q, &id, &tenant) == 1 && id == 10, "alice's first runs");
  ok (rt_build_queue_push (&q, "alice", 14) == -EBUSY, "running and queued, she still has her 4");
  rt_build_queue_done (&q, "alice");
  ok (rt_build_queue_push (&q, "alice", 14) == 0, "once it ended, she may queue one more");
  /* A newcomer waits for one of hers, not for all four.  */
  rt_build_queue_push (&q, "dave", 15);
  {
    const char *got = run (&q, 2);
    ok (strcmp (got, "alice:11 dave:15") == 0, "a tenant coming later runs after one of hers (%s)", got);
  }
  rt_build_queue_cancel (&q, "alice", 13);
  {
    const char *got = run (&q, 20);
    ok (strcmp (got, "alice:12 alice:14") == 0, "a cancelled build leaves its place (%s)", got);
  }
  rt_build_queue_cancel (&q, "nobody", 1);
  rt_build_queue_done (&q, "nobody");
  ok (q.n == 0, "cancelling or ending what is not there changes nothing");
  /* Many tenants: the table grows.  */
  for (int i = 0; i < 40; i++)
    {
      char name[16];
      snprintf (name, sizeof name, "t%d", i);
      rt_build_queue_push (&q, name, 100 + i);
    }
  ok (q.n == 40 && rt_build_queue_pop (&q, &id, &tenant) == 1 && id == 100 && strcmp (tenant, "t0") == 0,
      "40 tenants queue, the first first");
  rt_build_queue_free (&q);
  return tap_done ();
}
