/* restore.h - FREEZE, QUIESCE and RESTORE (restore.c): a template is
   frozen before it is saved, a sandbox quiesced before it is copied, a VM
   started from saved memory made current before any user command.  */
#ifndef AGENT_RESTORE_H
#define AGENT_RESTORE_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "agent.h"

#define ENTROPY_BYTES 64

/* RESTORE's "mode" (libruntime/vmm/guest-ops.h): what a VM started from
   saved memory keeps.  */
enum restore_mode
{
  MODE_CLONE, /* new identity; every process killed */
  MODE_CHILD, /* new identity; the commands in "keep" kept */
  MODE_WAKE,  /* same identity; the commands in "keep" kept */
};

struct restore_req
{
  uint8_t entropy[ENTROPY_BYTES];
  int64_t time_ms;
  const char *hostname;
  enum restore_mode mode;
  json_object *keep; /* NULL: none given (every command kept), or clone mode */
};

/* Checks a RESTORE payload (NULL: not a JSON object) into @r, whose
   strings and "keep" point into @o.  Return: NULL, or what is wrong.  */
const char *restore_parse (json_object *o, struct restore_req *r);

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
