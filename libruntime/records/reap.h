/* reap.h - cleaning up after crashes.  */
#ifndef RT_RECORDS_REAP_H
#define RT_RECORDS_REAP_H

#include "core/context.h"

/* Turns the state dirs of dead monitors into host_stopped records and
   removes them, removes disks whose sandbox is gone, and control groups
   whose QEMU is: called by everything that looks at sandboxes, so a
   crash leaks nothing for longer than the next command.  */
void rt_store_reap (rt_context *ctx);

#endif
