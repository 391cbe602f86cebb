/* pidfile.c - "pid starttime" files.  */
#include <stdio.h>

#include "common/pidfile.h"
#include "common/util.h"

int
rt_write_pidfile (const char *path, pid_t pid, rt_error **err)
{
  char data[64];
  int len = snprintf (data, sizeof (data), "%d %llu\n", (int) pid, rt_proc_starttime (pid));
  return rt_write_file_atomic (path, data, len, 0600, err);
}

int
rt_pidfile_alive (const char *path, pid_t *pid)
{
  cleanup_free char *data = NULL;
  unsigned long long start = 0;
  int p = 0;

  if (rt_read_file (path, &data, NULL, NULL) < 0)
    return -1;
  if (sscanf (data, "%d %llu", &p, &start) != 2 || p <= 0)
    return -1;
  if (pid)
    *pid = p;
  return rt_proc_starttime (p) == start ? 1 : 0;
}
