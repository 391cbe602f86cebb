/* migrate.h - saving a stopped VM's device state and loading it into a new
   QEMU (QMP, migrate fd:), for templates and their clones.  Guest RAM is
   not in the stream: it lives in the template's memory file, shared by
   the template VM and mapped privately by each clone (x-ignore-shared;
   see "Starting from saved memory" in docs/ARCHITECTURE.md).  */
#ifndef RT_MIGRATE_H
#define RT_MIGRATE_H

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
   member in *reply (NULL allowed); an "error" reply is an error.  */
int rt_qmp_exec (struct rt_qmp *q, const char *json, json_object **reply, int timeout_ms, rt_error **err);
void rt_qmp_close (struct rt_qmp *q);

/* The VM stopped (QMP "stop"), its device state written to @fd (which
   QEMU gets by SCM_RIGHTS) with x-ignore-shared, waiting for "completed".
   The VM stays stopped.  */
int rt_vm_save_state (struct rt_qmp *q, int fd, int timeout_ms, rt_error **err);
/* In a QEMU started with -incoming defer: loads the device state from
   @fd (SCM_RIGHTS) with x-ignore-shared, waits for "completed"; with
   @resume, "cont".  */
int rt_vm_load_state (struct rt_qmp *q, int fd, bool resume, int timeout_ms, rt_error **err);

#endif
