/* commands.h - one running command: its pipes, stdin queue, output and
   exit.  */
#ifndef AGENT_COMMANDS_H
#define AGENT_COMMANDS_H

#include <stdint.h>

#include "agent.h"

enum read_result
{
  READ_DATA,
  READ_BLOCKED, /* window or queue full: try again later */
  READ_AGAIN,   /* pipe empty */
  READ_CLOSED,
};

/* The live command on @stream, or NULL.  */
struct cmd *cmd_find (struct agent *ag, uint32_t stream);
void cmd_free (struct agent *ag, struct cmd *c);
/* Signals the command's process group; closes a connection.  */
void cmd_kill (struct cmd *c, int sig);
/* A connection ends (its socket closed) with exit code @code: EXIT
   follows once its output is sent.  */
void cmd_sock_end (struct cmd *c, int code);
void cmd_orphan (struct cmd *c);
void cmd_fail (struct agent *ag, struct cmd *c, const char *code, const char *fmt, ...) RT_PRINTF (4, 5);
void cmd_write_stdin (struct agent *ag, struct cmd *c);
enum read_result cmd_read (struct agent *ag, struct cmd *c, int i);
void cmd_drain (struct agent *ag, struct cmd *c);
void cmd_send_exit (struct agent *ag, struct cmd *c);
/* Reaps every child that exited (SIGCHLD on ag->sigfd).  */
void reap (struct agent *ag);

#endif
