/* test-privs.c - the monitor's capability drop (vmm/privs.c), in a
   child: afterwards its /proc/self/status shows only the kept set (the
   bounding set too), and what needed a dropped capability fails.  */
#include <sched.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vmm/privs.h"
#include "tap.h"

static unsigned long long
status_field (const char *name)
{
  cleanup_free char *data = NULL;
  char key[32];
  const char *p;

  snprintf (key, sizeof key, "\n%s:", name);
  if (rt_read_file ("/proc/self/status", &data, NULL, NULL) < 0 || (p = strstr (data, key)) == NULL)
    return ~0ULL;
  return strtoull (p + strlen (key), NULL, 16);
}

/* In the child: a bit per check that failed.  */
static int
drop_and_check (void)
{
  rt_error *err = NULL;
  int bad = 0;

  if (rt_drop_privileges (RT_MONITOR_KEPT_CAPS, &err) < 0)
    return 1;
  if (status_field ("CapEff") != RT_MONITOR_KEPT_CAPS || status_field ("CapPrm") != RT_MONITOR_KEPT_CAPS)
    bad |= 2;
  if (status_field ("CapBnd") != RT_MONITOR_KEPT_CAPS)
    bad |= 4;
  if (status_field ("CapInh") != 0 || status_field ("CapAmb") != 0)
    bad |= 8;
  /* CAP_SYS_ADMIN is gone: no new namespace; CAP_SETUID: no other uid.  */
  if (unshare (CLONE_NEWNET) == 0 || setuid (1) == 0)
    bad |= 16;
  return bad;
}

int
main (void)
{
  int status = 0;
  pid_t pid;

  if (geteuid () != 0 || (status_field ("CapEff") & RT_MONITOR_KEPT_CAPS) != RT_MONITOR_KEPT_CAPS)
    {
      printf ("ok 1 # SKIP not root with the monitor's capabilities\n1..1\n");
      return 0;
    }
  pid = fork ();
  if (pid == 0)
    _exit (drop_and_check ());
  waitpid (pid, &status, 0);
  ok (WIFEXITED (status) && WEXITSTATUS (status) != 1, "the drop succeeds");
  ok (WIFEXITED (status) && !(WEXITSTATUS (status) & 2), "CapEff and CapPrm hold only the kept set");
  ok (WIFEXITED (status) && !(WEXITSTATUS (status) & 4), "CapBnd holds only the kept set");
  ok (WIFEXITED (status) && !(WEXITSTATUS (status) & 8), "CapInh and CapAmb are empty");
  ok (WIFEXITED (status) && !(WEXITSTATUS (status) & 16), "a new namespace and another uid are refused after it");
  return tap_done ();
}
