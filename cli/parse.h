/* parse.h - a command's option table and its arguments read against it:
   the table is also the help text; a slip gets a did-you-mean.  */
#ifndef RT_CLI_PARSE_H
#define RT_CLI_PARSE_H

#include <stdbool.h>
#include <stdint.h>

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
  char **owned; /* strings made from the arguments (env-file.c), freed with them */
  int nowned;
};

/* The table of a command with no options of its own.  */
extern const struct cli_opt cli_no_opts[];
/* --json and --help, which every command takes: after its own in help.  */
extern const struct cli_opt cli_implicit_opts[];

int cli_group_dispatch (const char *group, struct cli_command *cmds, int argc, char **argv);
/* A group that is one command (serve, usage, node): its section of
   runtime.1 for "--roff", else the command run.  */
int cli_run_single (struct cli_command *cmd, int argc, char **argv);
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
/* The index of option @name in @cmd's own table (its a->val, a->count,
   a->multi), or -1 when it has none of that name.  */
int cli_opt_index (struct cli_command *cmd, const char *name);
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

/* A size @v: a whole number of 1 << @plain_shift bytes (0: bytes, 20:
   MiB), or with K, M, G or T (powers of 1024, as cp --max-size; a
   trailing B or iB is allowed, B alone is bytes).  -1 for anything else
   (nothing printed).  */
int cli_parse_size (const char *v, int plain_shift, uint64_t *out);
/* A size option in whole MiB within [min, max] MiB (cli_parse_size, a
   plain number MiB: --memory 512, 512m, 4g); prints a usage error.  */
int cli_opt_mib (struct cli_command *cmd, struct cli_args *a, const char *name, unsigned long min, unsigned long max,
                 unsigned long *out);

/* Parses a dollar amount option (more than 0, at most a million) into
   microdollars; prints a usage error.  */
int cli_opt_usd (struct cli_command *cmd, struct cli_args *a, const char *name, int64_t *micros);

/* The closest name to @word in @names (NULL-terminated), or NULL.  */
const char *cli_suggest (const char *word, const char *const *names);
/* cli_begin, then cli_context: false when the command must return *code
   now (--help, a usage error, no context).  With cleanup_cli_args and
   cleanup_context a command then needs no exit path of its own.  */
bool cli_start (struct cli_command *cmd, int argc, char **argv, struct cli_args *a, rt_context **ctx, int *code);

#endif
