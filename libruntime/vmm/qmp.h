/* qmp.h - QMP, QEMU's control protocol: a session for several commands
   (templates and clones, vmm/migrate.h) and one-shot commands (the
   monitor pauses and resumes VMs).  */
#ifndef RT_QMP_H
#define RT_QMP_H

#include "common/util.h"

/* A QMP connection kept open for several commands.  */
struct rt_qmp
{
  int fd;
  size_t fill;
  char buf[16384];
};

/* Connects to @sock (retrying while QEMU starts, up to @timeout_ms) and
   negotiates capabilities.  */
int rt_qmp_open (struct rt_qmp *q, const char *sock, int timeout_ms, rt_error **err);
/* Runs @json (one command object, no newline) and returns its "return"
   member in *reply (NULL allowed); an "error" reply is an error.  With
   @fd >= 0 the fd rides along (SCM_RIGHTS), as "getfd" wants.  */
int rt_qmp_exec (struct rt_qmp *q, const char *json, int fd, json_object **reply, int timeout_ms, rt_error **err);
void rt_qmp_close (struct rt_qmp *q);

/* Runs @command ("stop", "cont") on the QMP socket @sock.  */
int rt_qmp_command (const char *sock, const char *command, rt_error **err);

#endif
