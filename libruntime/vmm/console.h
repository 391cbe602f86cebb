/* console.h - the guest's serial console, kept as a capped log.
 *
 * QEMU writes the console into one end of a socket pair (its fd 4, see
 * qemu-args.c); whoever holds the other end (the channel's boot wait, then
 * the monitor's event loop) drains it into <dir>/console.log.  The log
 * keeps the latest output only: past RT_CONSOLE_PART bytes console.log
 * becomes console.log.1 (replacing the one before) and a new console.log
 * starts, so both together never hold more than 2 × RT_CONSOLE_PART,
 * whatever the guest prints.
 */
#ifndef RT_CONSOLE_H
#define RT_CONSOLE_H

#include <stddef.h>

#include "core/context.h"

#define RT_CONSOLE_PART (512 * 1024)

struct rt_console
{
  int sock;               /* our end, non-blocking; -1 once closed */
  int log_fd;
  size_t size;            /* bytes in console.log */
  char *path;
};

/* Makes the socket pair and creates <dir>/console.log (0600); *qemu_end is
   QEMU's end, for the caller to pass and then close.  */
int rt_console_open (struct rt_console *c, const char *dir, int *qemu_end, rt_error **err);
/* Moves what QEMU wrote so far into the log.  Return: 0 while QEMU may
   write more, 1 at its end (the socket is then closed).  */
int rt_console_drain (struct rt_console *c);
void rt_console_close (struct rt_console *c);

#endif
