/* pidfile.h - "pid starttime" files, which name a process uniquely where
   a pid alone may be reused: monitors, QEMUs, owners, template keepers.  */
#ifndef RT_PIDFILE_H
#define RT_PIDFILE_H

#include <sys/types.h>

#include "runtime.h"

int rt_write_pidfile (const char *path, pid_t pid, rt_error **err);
/* 1 when the process the file names is alive, 0 when dead, -1 when there
   is no (readable) file.  */
int rt_pidfile_alive (const char *path, pid_t *pid);

#endif
