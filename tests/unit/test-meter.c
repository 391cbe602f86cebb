/* test-meter.c - the CPU meter (billing/meter.h) bills a QEMU that does its
   work in a thread not named "CPU n": a real child process, its main
   thread asleep, burns CPU in a thread it renamed (as a QEMU the guest
   broke into could), and the meter must bill at least the CPU the kernel
   says the child used.  Metered by vCPU thread names, it billed only the
   floor (0.05 vCPU).  */
#include <json-c/json.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "billing/meter.h"
#include "tap.h"

#define BURN_NS 300000000ull /* 0.3 s of CPU */

static uint64_t
thread_cpu_ns (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static void *
burn (void *arg)
{
  volatile uint64_t x = 0;
  uint64_t start;

  (void) arg;
  prctl (PR_SET_NAME, "io-worker", 0, 0, 0);
  start = thread_cpu_ns ();
  while (thread_cpu_ns () - start < BURN_NS)
    x++;
  return NULL;
}

/* The child: waits for "go" on @go, burns in its renamed thread, says
   "done" on @done, then sleeps until killed.  */
static void
child (int go, int done)
{
  pthread_t t;
  char c;

  if (read (go, &c, 1) != 1 || pthread_create (&t, NULL, burn, NULL) != 0)
    _exit (1);
  pthread_join (t, NULL);
  if (write (done, "d", 1) != 1)
    _exit (1);
  for (;;)
    pause ();
}

int
main (void)
{
  int go[2], done[2];
  struct rt_meter mt = { .vcpu = 1, .memory_mib = 256, .ledger_fd = -1 };
  struct rusage ru;
  uint64_t real_us;
  pid_t pid;
  char c;

  if (pipe (go) < 0 || pipe (done) < 0)
    return 1;
  pid = fork ();
  if (pid == 0)
    child (go[0], done[1]);
  mt.state = json_object_new_object ();
  rt_rates_default (&mt.rates);
  mt.pid = pid;
  rt_meter_resume (&mt);
  ok (write (go[1], "g", 1) == 1 && read (done[0], &c, 1) == 1, "the child burned CPU in a thread named io-worker");
  rt_meter_sample (&mt);
  kill (pid, SIGKILL);
  if (wait4 (pid, NULL, 0, &ru) != pid)
    return 1;
  real_us = ru.ru_utime.tv_sec * 1000000ull + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1000000ull
            + ru.ru_stime.tv_usec;
  /* The child's CPU before "go" (a fork, a read) is not metered: 20 ms of
     slack for it and the clock's granularity.  */
  ok (real_us >= BURN_NS / 1000, "the kernel counted the child's %.3f s of CPU", real_us / 1e6);
  ok (mt.cpu_us + 20000 >= real_us, "the meter measured %.3f s of it (the process, every thread)", mt.cpu_us / 1e6);
  ok (mt.billed_cpu_us + 20000 >= real_us, "and billed %.3f s, not the floor", mt.billed_cpu_us / 1e6);
  ok (mt.cpu_us <= real_us + 20000, "and no more than the child used");
  /* QEMU gone: a last sample adds nothing, and starts nothing over.  */
  {
    uint64_t before = mt.cpu_us;
    rt_meter_sample (&mt);
    ok (mt.cpu_us == before, "a sample after the process is gone adds nothing");
  }
  json_object_put (mt.state);
  return tap_done ();
}
