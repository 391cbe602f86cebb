/* migrate.h - saving a stopped VM's device state and loading it into a new
   QEMU (QMP, migrate fd:), for templates and their clones.  Guest RAM is
   not in the stream: it lives in the template's memory file, shared by
   the template VM and mapped privately by each clone (x-ignore-shared;
   see "Templates and clones" in docs/ARCHITECTURE.md).  */
#ifndef RT_MIGRATE_H
#define RT_MIGRATE_H

#include "vmm/qmp.h"

/* Stops the VM and writes its device state to @fd (handed to QEMU by
   SCM_RIGHTS) with x-ignore-shared, waiting for "completed".  The VM
   stays stopped.  */
int rt_vm_save_state (struct rt_qmp *q, int fd, int timeout_ms, rt_error **err);
/* In a QEMU started with -incoming defer: loads the device state from
   @fd with x-ignore-shared and waits for "completed"; then, with @resume,
   "cont".  */
int rt_vm_load_state (struct rt_qmp *q, int fd, bool resume, int timeout_ms, rt_error **err);

#endif
