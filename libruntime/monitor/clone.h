/* clone.h - a sandbox started from a template (template/template.h): its
   QEMU maps the template's RAM copy-on-write and loads its device state,
   then the agent makes the clone unique (RESTORE) before any command.  */
#ifndef RT_MONITOR_CLONE_H
#define RT_MONITOR_CLONE_H

#include "monitor/monitor-internal.h"
#include "vmm/channel.h"

/* Starts QEMU as a clone of m->cfg->tmpl with @vm's devices (the tap,
   the console, the namespace) and loads the template's device state; the
   VM runs on return, with @resume (else it stays paused: a spare).  On failure nothing of the clone is left (QEMU, its
   uid, its disk dir): the caller may boot cold instead.  */
int mon_clone_start (struct mon *m, const struct rt_vm_config *vm, bool resume, rt_error **err);

/* Connects to the clone's agent and has it make the clone unique and
   current (rt_guest_restore) with the sandbox's id as its hostname.  */
int mon_clone_restore (struct mon *m, struct rt_channel *ch, rt_error **err);

#endif
