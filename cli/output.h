/* output.h - what a command prints besides its help: errors as text or
   JSON, progress on stderr, and the shapes of output many commands
   share.  */
#ifndef RT_CLI_OUTPUT_H
#define RT_CLI_OUTPUT_H

#include <json-c/json.h>
#include <stdbool.h>

#include "parse.h"
#include "runtime.h"

/* Global to the process, not the library: how errors are printed.  */
extern bool cli_json_errors;

/* Prints an error (text or JSON) on stderr; returns 1, the exit code.  */
int cli_error (const rt_error *err);
/* cli_error, then frees @err.  */
int cli_lib_fail (rt_error *err);
int cli_usage_error (const char *hint, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
/* An error with any code (text or JSON, as cli_error); returns 1.  */
int cli_fail (const char *code, const char *hint, const char *fmt, ...) __attribute__ ((format (printf, 3, 4)));
/* The string value of @key in the object @o, or NULL when absent or null.  */
const char *cli_jstr (json_object *o, const char *key);
/* True when the state name @name (NULL allowed) is @state's.  */
bool cli_state_is (const char *name, enum rt_sandbox_state state);
void cli_progress (void *data, const char *line);
/* A context with progress on stderr; prints the error and returns NULL.  */
rt_context *cli_context (void);

/* A command that shows one JSON value the library gives (@fetch, which
   may read the arguments): as it is with --json, else through @table.  */
int cli_show_json (struct cli_command *cmd, int argc, char **argv,
                   int (*fetch) (rt_context *ctx, struct cli_args *a, char **json, rt_error **err),
                   void (*table) (json_object *value));

/* A command that removes what its one argument names (@remove), then
   prints the name, or {"removed": NAME} with --json.  */
int cli_remove_named (struct cli_command *cmd, int argc, char **argv,
                      int (*remove) (rt_context *ctx, const char *name, rt_error **err));

#endif
