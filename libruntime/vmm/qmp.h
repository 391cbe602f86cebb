/* qmp.h - a synchronous QMP command (the monitor pauses and resumes VMs).  */
#ifndef RT_QMP_H
#define RT_QMP_H

#include "common/util.h"

/* Runs @command ("stop", "cont") on the QMP socket @sock.  */
int rt_qmp_command (const char *sock, const char *command, rt_error **err);

#endif
