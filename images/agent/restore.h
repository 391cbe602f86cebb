/* restore.h - FREEZE and RESTORE (restore.c): a template is frozen before
   it is saved, a clone made unique and current before any user command.  */
#ifndef AGENT_RESTORE_H
#define AGENT_RESTORE_H

#include <stddef.h>
#include <stdint.h>

#include "agent.h"

/* sync, FIFREEZE on /; answers DONE.  */
void handle_freeze (struct agent *ag);
/* Checks the whole request first (a bad one changes nothing), then thaws,
   reseeds, sets clock, host name, machine id and boot id, forgets the
   gateway's MAC and kills everything but the agent; answers DONE.  */
void handle_restore (struct agent *ag, const uint8_t *p, size_t len);
/* A fresh /etc/machine-id (also at each cold boot).  Return: 0, or -1
   with errno.  */
int new_machine_id (void);

#endif
