/* clone.h - a sandbox started from saved memory: a template's clone
   (template/template.h), a snapshot's child or a woken sandbox
   (snapshot/saved.h).  Its QEMU gets its own memfd holding a copy of the
   saved RAM and loads the saved device state; then the agent makes it
   unique, or current (RESTORE, vmm/guest-ops.h), before any command.  */
#ifndef RT_MONITOR_CLONE_H
#define RT_MONITOR_CLONE_H

#include "monitor/monitor-internal.h"
#include "vmm/channel.h"

/* Starts QEMU from m->cfg->saved, else m->cfg->tmpl, with @vm's devices
   (the tap, the console, the namespace) and loads the device state; the
   VM runs on return, with @resume (else it stays paused: a spare).  On
   failure nothing of it is left (QEMU, its uid, its disk dir): the
   caller may boot a template's clone cold instead.  */
int mon_clone_start (struct mon *m, const struct rt_vm_config *vm, bool resume, rt_error **err);

/* Connects to the agent and sends RESTORE: for a clone "clone" mode with
   the sandbox's id as its hostname; with m->cfg->saved, its
   m->cfg->restore mode, keeping the processes the monitor knows.  */
int mon_clone_restore (struct mon *m, struct rt_channel *ch, rt_error **err);

#endif
