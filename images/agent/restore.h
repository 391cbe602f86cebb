/* restore.h - FREEZE, QUIESCE and RESTORE (restore.c): a template is
   frozen before it is saved, a sandbox quiesced before it is copied, a VM
   started from saved memory made current before any user command.  */
#ifndef AGENT_RESTORE_H
#define AGENT_RESTORE_H

#include <stddef.h>
#include <stdint.h>

#include "agent.h"

/* sync, FIFREEZE on /; answers DONE.  */
void handle_freeze (struct agent *ag);
/* Answers DONE (even when already quiesced), then sends no frame until
   a RESTORE: output stays in the pipes, exits wait, and frames other
   requests cause are queued (bounded, see send_frame).  */
void handle_quiesce (struct agent *ag);
/* Checks the whole request first (a bad one changes nothing, and its DONE
   goes out even while quiesced), ends a quiesce, then thaws, reseeds, sets
   the clock, the host name, machine id and boot id (not in "wake" mode),
   forgets the gateway's MAC, and kills everything but the agent ("clone")
   or the commands whose stream is not in "keep" ("child", "wake");
   answers DONE.  */
void handle_restore (struct agent *ag, const uint8_t *p, size_t len);
/* A fresh /etc/machine-id (also at each cold boot).  Return: 0, or -1
   with errno.  */
int new_machine_id (void);

#endif
