/* sandbox.h - the one header of cli/sandbox*.c, the files of `runtime
   sandbox …`: helpers (sandbox.c), the path of a command that `run` and
   `exec` share (sandbox-exec.c), and each command the group table in
   sandbox.c lists, with its option table.  */
#ifndef RT_CLI_SANDBOX_H
#define RT_CLI_SANDBOX_H

#include <json-c/json.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "cli.h"

#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/* sandbox.c: helpers.  */
bool cli_has_opt (struct cli_command *cmd, struct cli_args *a, const char *name);
/* One of @names, or a usage error naming the likeliest one.  */
int cli_check_choice (const char *opt, const char *v, const char *const *names);
/* K=V with a portable name; @limits: also the caps of a sandbox's own env.  */
int cli_check_env (const char **env, int n);
/* rt_sandbox_config_check of @cfg, its error said in flags; -1 after it.  */
int cli_config_check (const rt_sandbox_config *cfg);
/* Parses a library JSON answer; prints an error when it is not JSON.  */
json_object *cli_parse_json (const char *text);
void cli_print_json (json_object *o);
/* Prints the library's object for @ref as is.  */
int cli_print_get_json (rt_context *ctx, const char *ref);
/* cli_start, then open a.pos[0].  False when the command must return *code now.  */
bool cli_open_target (struct cli_command *cmd, int argc, char **argv, struct cli_args *a, rt_context **ctx,
                      rt_sandbox **sb, int *code);
/* A command that shows one JSON value a live sandbox gives.  */
int cli_show_target_json (struct cli_command *cmd, int argc, char **argv,
                          int (*fetch) (rt_sandbox *sb, struct cli_command *cmd, struct cli_args *a, char **json,
                                        rt_error **err),
                          void (*table) (json_object *value));
/* env-file.c: every --env-file FILE (docker's format) read into the
   --env list, ahead of the --env values (the last of a name wins);
   -1 after printing the error (file_not_found, or FILE:LINE).  */
int cli_read_env_files (struct cli_command *cmd, struct cli_args *a);
/* Its entry in an option table, next to --env.  */
#define CLI_ENV_FILE_OPT                                                                                   \
  { "env-file", "FILE", "--env for each KEY=VALUE line of FILE (docker's format: # comments, blank lines)", \
    NULL, true }

/* sandbox-exec.c: running a command, for `run` and `exec`.  */
struct capture
{
  char *buf;
  size_t len, cap;
  bool truncated;
};

struct output
{
  bool json;
  bool lost; /* a write to our stdout or stderr failed */
  struct capture out, err;
};

/* Output callback: to our stdout and stderr, or captured for --json.  */
int cli_on_output (void *data, int stream, const char *buf, size_t len);

/* One command to run: everything checked and read before any sandbox is
   touched.  */
struct job
{
  const char *const *argv;
  const char *shell[6];
  const char *cwd;
  const char *user;
  const char **env;
  unsigned long timeout_s; /* 0: none (24 h) */
  char *input;
  size_t input_len;
  int sfd;
  struct output o;
  bool attach;           /* set before cli_job_prepare: stdin is streamed, not read here */
  bool tty, interactive; /* -t, -i */
  const char **tty_env;  /* env with TERM added (sandbox-tty.c) */
  char *term_var;
};

/* Reads and checks the command's options and stdin; -1 after printing a
   usage error.  */
int cli_job_prepare (struct cli_command *cmd, struct cli_args *a, bool with_env, struct job *j);
/* Runs the job; returns the exit code `run` and `exec` end with.  */
int cli_job_run (rt_sandbox *sb, struct job *j);
/* The exit code for how the command ended, after the timeout's message
   and, with --json, the result object.  */
int cli_job_finish (struct job *j, const rt_exec_result *res);
void cli_job_free (struct job *j);

/* sandbox-tty.c: exec -i/-t and shell, a command with its stdin open.  */
/* After cli_job_prepare: checks -t (a terminal, no --json), adds TERM, and
   watches SIGWINCH and SIGCONT too; -1 after printing an error.  */
int cli_attach_prepare (struct cli_command *cmd, struct cli_args *a, struct job *j, bool tty, bool interactive);
/* Runs it; returns the exit code, as cli_job_run.  */
int cli_attach_run (rt_sandbox *sb, struct job *j);
int cli_sandbox_shell (struct cli_command *cmd, int argc, char **argv);
/* -i and -t of exec and run: their entries in the option table, and the
   long names cli_short_flags makes of "it".  */
#define CLI_ATTACH_OPTS                                                                                       \
  { "interactive", NULL, "keep stdin open and stream it to the command, any size (also -i)", NULL, false },   \
  { "tty", NULL, "run it on a terminal in the sandbox; with -i this terminal turns raw, ^C goes in (also -t)", \
    NULL, false }
extern const char *const cli_attach_longs[];
extern const struct cli_opt cli_shell_opts[];

/* The commands, each with its option table.  */
int cli_sandbox_exec (struct cli_command *cmd, int argc, char **argv);
int cli_sandbox_spawn (struct cli_command *cmd, int argc, char **argv);
int cli_sandbox_ps (struct cli_command *cmd, int argc, char **argv);
int cli_sandbox_logs (struct cli_command *cmd, int argc, char **argv);
int cli_sandbox_kill (struct cli_command *cmd, int argc, char **argv);
int cli_sandbox_write (struct cli_command *cmd, int argc, char **argv);
extern const struct cli_opt cli_exec_opts[], cli_spawn_opts[], cli_logs_opts[], cli_kill_opts[], cli_write_opts[];

/* sandbox-files.c  */
int cli_sandbox_cp (struct cli_command *cmd, int argc, char **argv);
int cli_sandbox_cat (struct cli_command *cmd, int argc, char **argv);
int cli_sandbox_files (struct cli_command *cmd, int argc, char **argv);
extern const struct cli_opt cli_files_opts[];
extern const struct cli_opt cli_cp_opts[];

/* sandbox-state.c  */
int cli_sandbox_ls (struct cli_command *cmd, int argc, char **argv);
int cli_sandbox_get (struct cli_command *cmd, int argc, char **argv);
int cli_sandbox_stop (struct cli_command *cmd, int argc, char **argv);
int cli_sandbox_pause (struct cli_command *cmd, int argc, char **argv);
int cli_sandbox_wake (struct cli_command *cmd, int argc, char **argv);
int cli_sandbox_rm (struct cli_command *cmd, int argc, char **argv);
int cli_sandbox_prune (struct cli_command *cmd, int argc, char **argv);
int cli_sandbox_extend (struct cli_command *cmd, int argc, char **argv);
/* A get object, one "key  value" line per field.  */
void cli_print_fields (json_object *o);
extern const struct cli_opt cli_ls_opts[];
extern const struct cli_opt cli_rm_opts[];
extern const struct cli_opt cli_prune_opts[];

/* sandbox-network.c  */
int cli_sandbox_network (struct cli_command *cmd, int argc, char **argv);
int cli_sandbox_metrics (struct cli_command *cmd, int argc, char **argv);
extern const struct cli_opt cli_network_opts[];

/* sandbox-forward.c  */
int cli_sandbox_forward (struct cli_command *cmd, int argc, char **argv);

/* sandbox-snapshot.c  */
#define IDLE_PAUSE_MIN_S 10
#define IDLE_PAUSE_MAX_S 86400
/* --idle-pause into *out: 1 when given, 0 when not, -1 after a usage
   error.  */
int cli_read_idle_pause (struct cli_command *cmd, struct cli_args *a, int *out);
/* --snapshot names a snapshot; -1 after printing the error.  */
int cli_check_snapshot (rt_context *ctx, const char *snapshot);
int cli_sandbox_snapshot (struct cli_command *cmd, int argc, char **argv);
int cli_sandbox_fork (struct cli_command *cmd, int argc, char **argv);
int cli_sandbox_update (struct cli_command *cmd, int argc, char **argv);
extern const struct cli_opt cli_snapshot_opts[], cli_fork_opts[], cli_update_opts[];

#endif
