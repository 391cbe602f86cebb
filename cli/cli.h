/* cli.h - what every command group shares: option tables, errors, JSON.  */
#ifndef RT_CLI_H
#define RT_CLI_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "runtime.h"

#define CLI_MAX_OPTS 32
#define CLI_MAX_POS 8

/* One option of a command; the table is also the help text.  */
struct cli_opt
{
  const char *name;    /* without the leading -- */
  const char *metavar; /* NULL for a flag */
  const char *help;
  const char *dflt;    /* shown in help, or NULL */
  bool repeat;         /* may be given many times */
};

struct cli_command
{
  const char *name;
  int (*run) (struct cli_command *cmd, int argc, char **argv);
  const char *summary;
  const char *usage;   /* after "runtime <group> <name> " */
  const char *example;
  const struct cli_opt *opts; /* NULL-name terminated; --json and --help are implicit */
  bool takes_command;  /* -- CMD… follows */
  int min_pos, max_pos;
  const char *group;
};

struct cli_args
{
  const char *val[CLI_MAX_OPTS]; /* last value of each option, or "" for a set flag */
  const char **multi[CLI_MAX_OPTS];
  int count[CLI_MAX_OPTS];
  char *pos[CLI_MAX_POS];
  int npos;
  char **rest; /* after -- */
  int nrest;
  bool json;
};

/* Global to the process, not the library: how errors are printed.  */
extern bool cli_json_errors;

int cli_group_dispatch (const char *group, struct cli_command *cmds, int argc, char **argv);
/* Parses argv (argv[0] is the command name).  On a usage error prints it
   and returns -1; after --help prints help and returns 1; else 0.  */
int cli_parse (struct cli_command *cmd, int argc, char **argv, struct cli_args *a);
void cli_args_free (struct cli_args *a);
/* Single-letter flags as `docker exec -it`: each word before "--" made of
   "-" and letters of @letters only ("-i", "-t", "-it") becomes one word
   per letter, @names[k] (say "--tty") for @letters[k].  Returns a new
   NULL-terminated argv sharing the other words (free it alone) with its
   count in *out_argc; NULL without memory.  */
char **cli_short_flags (int argc, char **argv, const char *letters, const char *const *names, int *out_argc);
const char *cli_opt (struct cli_command *cmd, struct cli_args *a, const char *name);
/* --@name, else the environment's @var when set and not empty (a unit's
   EnvironmentFile leaves a setting out as empty).  */
const char *cli_opt_or_env (struct cli_command *cmd, struct cli_args *a, const char *name, const char *var);
/* Every value of a repeatable option, NULL-terminated, or NULL; their
   number in *n when @n is not NULL.  */
const char **cli_opt_list (struct cli_command *cmd, struct cli_args *a, const char *name, int *n);
/* cli_parse for a command's start: false when it must return *code now
   (--help, a usage error), with @a freed.  */
bool cli_begin (struct cli_command *cmd, int argc, char **argv, struct cli_args *a, int *code);
/* Parses an unsigned option within [min, max]; prints a usage error.  */
int cli_opt_uint (struct cli_command *cmd, struct cli_args *a, const char *name, unsigned long min,
                  unsigned long max, unsigned long *out);

/* Parses a dollar amount option (more than 0, at most a million) into
   microdollars; prints a usage error.  */
int cli_opt_usd (struct cli_command *cmd, struct cli_args *a, const char *name, int64_t *micros);

/* Prints an error (text or JSON) on stderr; returns 1, the exit code.  */
int cli_error (const rt_error *err);
/* cli_error, then frees @err.  */
int cli_lib_fail (rt_error *err);
int cli_usage_error (const char *hint, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
/* An error with any code (text or JSON, as cli_error); returns 1.  */
int cli_fail (const char *code, const char *hint, const char *fmt, ...) __attribute__ ((format (printf, 3, 4)));
/* The string value of @key in the object @o, or NULL when absent or null.  */
const char *cli_jstr (json_object *o, const char *key);
/* The closest name to @word in @names (NULL-terminated), or NULL.  */
const char *cli_suggest (const char *word, const char *const *names);
void cli_print_help (struct cli_command *cmd);
/* The command's section of runtime.1.  */
void cli_print_roff (struct cli_command *cmd);
/* A group that is one command (serve, usage, node): its section of
   runtime.1 for "--roff", else the command run.  */
int cli_run_single (struct cli_command *cmd, int argc, char **argv);
void cli_progress (void *data, const char *line);
/* A context with progress on stderr; prints the error and returns NULL.  */
rt_context *cli_context (void);
/* cli_begin, then cli_context: false when the command must return *code
   now (--help, a usage error, no context).  With cleanup_cli_args and
   cleanup_context a command then needs no exit path of its own.  */
bool cli_start (struct cli_command *cmd, int argc, char **argv, struct cli_args *a, rt_context **ctx, int *code);

/* A command that shows one JSON value the library gives (@fetch, which
   may read the arguments): as it is with --json, else through @table.  */
int cli_show_json (struct cli_command *cmd, int argc, char **argv,
                   int (*fetch) (rt_context *ctx, struct cli_args *a, char **json, rt_error **err),
                   void (*table) (json_object *value));

/* A command that removes what its one argument names (@remove), then
   prints the name, or {"removed": NAME} with --json.  */
int cli_remove_named (struct cli_command *cmd, int argc, char **argv,
                      int (*remove) (rt_context *ctx, const char *name, rt_error **err));

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

#endif
