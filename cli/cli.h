/* cli.h - what every command group includes: its option tables and their
   parsing (parse.h), help (help.h), errors and shared output (output.h),
   cleanups, and the groups' entry points main.c calls.  */
#ifndef RT_CLI_H
#define RT_CLI_H

#include <json-c/json.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "help.h"
#include "output.h"
#include "parse.h"
#include "runtime.h"

static inline void
cli_args_freep (struct cli_args *a)
{
  cli_args_free (a);
}

static inline void
cli_context_freep (rt_context **ctx)
{
  rt_context_free (*ctx);
}

static inline void
cli_sandbox_closep (rt_sandbox **sb)
{
  rt_sandbox_close (*sb);
}

static inline void
cli_freep (void *p)
{
  free (*(void **) p);
}

static inline void
cli_jsonp (json_object **o)
{
  json_object_put (*o);
}

#define cleanup_cli_args __attribute__ ((cleanup (cli_args_freep)))
#define cleanup_context __attribute__ ((cleanup (cli_context_freep)))
#define cleanup_free __attribute__ ((cleanup (cli_freep)))
#define cleanup_sandbox __attribute__ ((cleanup (cli_sandbox_closep)))
#define cleanup_json __attribute__ ((cleanup (cli_jsonp)))

/* Blocks the signals that ask us to stop (INT, TERM, HUP) into @mask
   (cli/sandbox.c).  */
void cli_block_stop_signals (sigset_t *mask);

int cli_cmd_sandbox (int argc, char **argv);
int cli_cmd_image (int argc, char **argv);
int cli_cmd_usage (int argc, char **argv);
int cli_cmd_chat (int argc, char **argv);
int cli_cmd_secrets (int argc, char **argv);
int cli_cmd_serve (int argc, char **argv);
int cli_cmd_node (int argc, char **argv);
int cli_cmd_pool (int argc, char **argv);
int cli_cmd_snapshot (int argc, char **argv);
int cli_cmd_token (int argc, char **argv);
int cli_cmd_doctor (int argc, char **argv);

#endif
