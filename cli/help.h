/* help.h - what a command's option table prints: its --help, and its
   section of runtime.1 (made at build time with --roff).  */
#ifndef RT_CLI_HELP_H
#define RT_CLI_HELP_H

#include "parse.h"

void cli_print_help (struct cli_command *cmd);
/* The command's section of runtime.1.  */
void cli_print_roff (struct cli_command *cmd);
/* A group's commands with their summaries, for `runtime GROUP --help`.  */
void cli_print_group_help (const char *group, struct cli_command *cmds);
/* Every command of a group, its section of runtime.1 each.  */
void cli_print_group_roff (const char *group, struct cli_command *cmds);

#endif
