/* agent.c - the guest agent's helpers every file of it calls: closing an
   fd, sleeping, console messages, powering off.  Kept apart from main
   (main.c) so that the unit tests link the agent's sources as they are.  */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/reboot.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

void
close_fd (int *fd)
{
  if (*fd >= 0)
    close (*fd);
  *fd = -1;
}

void
sleep_ms (int ms)
{
  struct timespec ts = { ms / 1000, (long) (ms % 1000) * 1000000L };

  while (nanosleep (&ts, &ts) < 0 && errno == EINTR)
    ;
}

/* Console messages: fd 2 is /dev/console once boot_early() ran.  */
void RT_PRINTF (1, 2)
agent_log (const char *fmt, ...)
{
  char buf[512];
  va_list ap;
  int n;

  n = snprintf (buf, sizeof buf, AGENT_NAME ": ");
  va_start (ap, fmt);
  vsnprintf (buf + n, sizeof buf - n - 1, fmt, ap);
  va_end (ap);
  n = strlen (buf);
  buf[n++] = '\n';
  rt_write_all (2, buf, n);
}

void __attribute__ ((noreturn))
power_off (void)
{
  /* Not init (a unit test on the host links this file): it would be the
     host that powered off.  */
  if (getpid () != 1)
    abort ();
  sync ();
  reboot (RB_POWER_OFF);
  /* Still here: exiting would panic the kernel, so wait to be killed.  */
  agent_log ("power off failed: %s", strerror (errno));
  for (;;)
    pause ();
}
