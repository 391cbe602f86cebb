/* sandbox.c - `runtime sandbox …`: the group's table and helpers, and
   the commands that make a sandbox, create and run.  The other commands
   live in sandbox-*.c, by what they act on.  */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"

static const char *const on_timeout_values[] = { "pause", "stop", NULL };

bool
cli_has_opt (struct cli_command *cmd, struct cli_args *a, const char *name)
{
  return cli_opt (cmd, a, name) != NULL;
}

/* One of @names, or a usage error naming the likeliest one.  */
int
cli_check_choice (const char *opt, const char *v, const char *const *names)
{
  const char *s;

  for (const char *const *p = names; *p; p++)
    if (strcmp (*p, v) == 0)
      return 0;
  s = cli_suggest (v, names);
  {
    char list[256] = "";
    for (const char *const *p = names; *p; p++)
      snprintf (list + strlen (list), sizeof (list) - strlen (list), "%s%s", p == names ? "" : ", ", *p);
    if (s)
      cli_usage_error (NULL, "--%s must be one of %s, not '%s'. Did you mean '%s'?", opt, list, v, s);
    else
      cli_usage_error (NULL, "--%s must be one of %s, not '%s'", opt, list, v);
  }
  return -1;
}

/* The library's fields as the command line names them.  */
static const struct
{
  const char *field, *flag;
  const char *hint; /* said instead of the library's, or NULL */
} flags[] = {
  { "vcpu", "--vcpu" },
  { "memory_mib", "--memory" },
  { "disk_mib", "--disk" },
  { "timeout_s", "--timeout", "a lease is at most 1 h, trial or paid; runtime sandbox extend renews it" },
  { "on_timeout", "--on-timeout" },
  { "name", "--name" },
  { "get_or_create", "--get-or-create" },
  { "idle_pause_s", "--idle-pause" },
  { "auto_wake", "--auto-wake" },
  { "labels", "--label", "for example: --label team=ml" },
  { "env", "--env" },
  { "funding", "--trial or --paid" },
  { "ephemeral", "sandbox run" },
};

/* @msg with the library's field names said as flags: @field where the
   message starts, every other field with a '_' in its name up to the
   first quote (what follows quotes the user's own value).  */
static char *
in_flags (const char *msg, const char *field)
{
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream (&out, &len);

  if (f == NULL)
    return NULL;
  while (*msg && *msg != '\'')
    {
      size_t i, n = 0;
      for (i = 0; i < sizeof flags / sizeof flags[0]; i++)
        {
          n = strlen (flags[i].field);
          if (strncmp (msg, flags[i].field, n) == 0 && !isalnum ((unsigned char) msg[n]) && msg[n] != '_'
              && (strcmp (flags[i].field, field ? field : "") == 0 || strchr (flags[i].field, '_')))
            break;
        }
      if (i < sizeof flags / sizeof flags[0])
        {
          fputs (flags[i].flag, f);
          msg += n;
        }
      else
        {
          fputc (*msg, f);
          msg++;
        }
      while (*msg && (isalnum ((unsigned char) msg[-1]) || msg[-1] == '_') && (isalnum ((unsigned char) *msg) || *msg == '_'))
        fputc (*msg++, f);
    }
  fputs (msg, f);
  fclose (f);
  return out;
}

int
cli_config_check (const rt_sandbox_config *cfg)
{
  rt_error *err = NULL;
  cleanup_free char *msg = NULL;
  const char *field = NULL, *hint;

  if (rt_sandbox_config_check (cfg, &field, &err) == 0)
    return 0;
  hint = err->hint;
  msg = in_flags (err->msg, field);
  for (size_t i = 0; field && i < sizeof flags / sizeof flags[0]; i++)
    if (strcmp (flags[i].field, field) == 0 && flags[i].hint)
      hint = flags[i].hint;
  /* A bad value on the command line is a usage error there.  */
  cli_fail (strcmp (err->code, "invalid_request") == 0 ? "usage" : err->code, hint, "%s", msg ? msg : err->msg);
  rt_error_free (err);
  return -1;
}

/* K=V with a portable name, for a command's env (no sandbox's caps).  */
int
cli_check_env (const char **env, int n)
{
  for (int i = 0; i < n; i++)
    {
      const char *eq = strchr (env[i], '=');
      if (eq == NULL || !rt_env_name_valid (env[i], eq - env[i]))
        {
          cli_fail ("invalid_env", "names are letters, digits and _, not starting with a digit: --env NAME=VALUE",
                    "--env '%.*s' is not NAME=VALUE with a valid name", eq ? (int) (eq - env[i]) : 64, env[i]);
          return -1;
        }
    }
  return 0;
}

/* This host's memory in MiB (MemTotal), or ULONG_MAX when unknown.  A
   client asks another host's, so it does not look (RUNTIME_API_URL).  */
static unsigned long
host_mib (void)
{
  unsigned long kib = 0;
  char line[128];
  FILE *f = fopen ("/proc/meminfo", "re");

  while (f && fgets (line, sizeof line, f))
    if (sscanf (line, "MemTotal: %lu kB", &kib) == 1)
      break;
  if (f)
    fclose (f);
  return kib ? kib / 1024 : ULONG_MAX;
}

/* The options `create` and `run` share, into @cfg (which points into @a).  */
static int
read_create_opts (struct cli_command *cmd, struct cli_args *a, rt_sandbox_config *cfg)
{
  unsigned long vcpu = 0, mem = 0, disk = 0;
  const char **labels, **env;
  int nlabels, nenv, idle = 0;

  if (cli_opt_uint (cmd, a, "vcpu", 1, RT_MAX_VCPU, &vcpu) < 0
      || cli_opt_mib (cmd, a, "memory", RT_MIN_MEMORY_MIB, RT_MAX_MEMORY_MIB, &mem) < 0
      || cli_opt_mib (cmd, a, "disk", RT_MIN_DISK_MIB, RT_MAX_DISK_MIB, &disk) < 0)
    return -1;
  if (mem && mem > host_mib () && !cli_has_opt (cmd, a, "overcommit") && !getenv ("RUNTIME_API_URL"))
    {
      cli_usage_error ("ask for less, or --overcommit if the guest will not touch it all",
                       "--memory %lu MiB is more than this host's %lu MiB", mem, host_mib ());
      return -1;
    }
  cfg->vcpu = vcpu;
  cfg->memory_mib = mem;
  cfg->disk_mib = disk;
  cfg->image = cli_opt (cmd, a, "image");
  cfg->name = cli_opt (cmd, a, "name");
  labels = cli_opt_list (cmd, a, "label", &nlabels);
  cfg->labels = labels;
  if (cli_read_env_files (cmd, a) < 0)
    return -1;
  env = cli_opt_list (cmd, a, "env", &nenv);
  cfg->env = env;
  cfg->no_internet = cli_has_opt (cmd, a, "no-internet");
  cfg->cold = cli_has_opt (cmd, a, "cold");
  if (cli_has_opt (cmd, a, "trial") && cli_has_opt (cmd, a, "paid"))
    {
      cli_usage_error (NULL, "--trial and --paid: pick one");
      return -1;
    }
  cfg->funding = cli_has_opt (cmd, a, "trial") ? "trial" : cli_has_opt (cmd, a, "paid") ? "paid" : NULL;
  if (cli_opt_usd (cmd, a, "max-cost", &cfg->max_cost_micros) < 0)
    return -1;
  cfg->allow = cli_opt_list (cmd, a, "allow", &nlabels);
  cfg->deny = cli_opt_list (cmd, a, "deny", &nlabels);
  cfg->snapshot = cli_opt (cmd, a, "snapshot");
  if (cli_read_idle_pause (cmd, a, &idle) < 0)
    return -1;
  cfg->idle_pause_s = idle;
  cfg->auto_wake = cli_has_opt (cmd, a, "auto-wake");
  return 0;
}

/* Blocks SIGINT, SIGTERM and SIGHUP, the signals that ask us to stop, and
   returns them in @mask for a signalfd or sigpending: the caller then
   finishes or undoes its work instead of dying half-way.  */
void
cli_block_stop_signals (sigset_t *mask)
{
  sigemptyset (mask);
  sigaddset (mask, SIGINT);
  sigaddset (mask, SIGTERM);
  sigaddset (mask, SIGHUP);
  sigprocmask (SIG_BLOCK, mask, NULL);
}

/* Parses a library JSON answer; prints an error when it is not JSON.  */
json_object *
cli_parse_json (const char *text)
{
  json_object *o = text ? json_tokener_parse (text) : NULL;

  if (o == NULL)
    cli_fail ("internal", NULL, "the library returned unreadable JSON");
  return o;
}

void
cli_print_json (json_object *o)
{
  printf ("%s\n", json_object_to_json_string_ext (o, JSON_FLAGS));
}

/* Prints the library's object for @ref as is.  */
int
cli_print_get_json (rt_context *ctx, const char *ref)
{
  rt_error *err = NULL;
  char *json = NULL;
  size_t len;

  if (rt_sandbox_get_json (ctx, ref, &json, &err) < 0)
    return cli_lib_fail (err);
  len = strlen (json);
  printf ("%s%s", json, len > 0 && json[len - 1] == '\n' ? "" : "\n");
  free (json);
  return 0;
}

/* Funding chosen for the user, by create or run: say which, on stderr
   (create's stdout is the id, run's the command's).  */
static void
say_funding (rt_context *ctx, rt_sandbox *sb)
{
  char *json = NULL;
  json_object *o = NULL;

  /* Only what costs money is said, and why it does: the trial is what a
     sandbox is unless told, and `runtime usage` shows its hours.  */
  if (rt_sandbox_get_json (ctx, rt_sandbox_id (sb), &json, NULL) == 0 && (o = json_tokener_parse (json))
      && !(cli_jstr (o, "funding") && strcmp (cli_jstr (o, "funding"), "trial") == 0))
    {
      if (cli_jstr (o, "fundingReason"))
        fprintf (stderr, "runtime: funding: paid (%s)\n", cli_jstr (o, "fundingReason"));
      else
        fprintf (stderr, "runtime: funding: paid\n");
    }
  json_object_put (o);
  free (json);
}

/* The common start of a command on one live sandbox: cli_start, then open
   a.pos[0].  False when the command must return *code now.  */
bool
cli_open_target (struct cli_command *cmd, int argc, char **argv, struct cli_args *a, rt_context **ctx, rt_sandbox **sb,
                 int *code)
{
  rt_error *err = NULL;

  *sb = NULL;
  if (!cli_start (cmd, argc, argv, a, ctx, code))
    return false;
  if (rt_sandbox_open (*ctx, a->pos[0], sb, &err) < 0)
    {
      *code = cli_lib_fail (err);
      return false;
    }
  return true;
}

/* A command that shows one JSON value a live sandbox gives (@fetch, which
   may read the options; a usage error there leaves *err NULL): as it is
   with --json, else through @table.  */
int
cli_show_target_json (struct cli_command *cmd, int argc, char **argv,
                      int (*fetch) (rt_sandbox *sb, struct cli_command *cmd, struct cli_args *a, char **json,
                                    rt_error **err),
                      void (*table) (json_object *value))
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  cleanup_free char *json = NULL;
  cleanup_json json_object *value = NULL;
  int code;

  if (!cli_open_target (cmd, argc, argv, &a, &ctx, &sb, &code))
    return code;
  if (fetch (sb, cmd, &a, &json, &err) < 0)
    return err ? cli_lib_fail (err) : 1;
  if (a.json)
    printf ("%s\n", json);
  else if ((value = cli_parse_json (json)))
    table (value);
  else
    return 1;
  return 0;
}

static int
sandbox_run (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  struct job j = { .sfd = -1 };
  cleanup_context rt_context *ctx = NULL;
  rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  rt_sandbox_config cfg = { 0 };
  cleanup_free char **args = NULL;
  bool tty, interactive;
  int code = 1;

  /* -i, -t and -it, as exec (and docker run) take them.  */
  if ((args = cli_short_flags (argc, argv, "it", cli_attach_longs, &argc)) == NULL)
    return cli_fail ("internal", NULL, "out of memory");
  if (!cli_begin (cmd, argc, args, &a, &code))
    return code;
  tty = cli_has_opt (cmd, &a, "tty");
  interactive = cli_has_opt (cmd, &a, "interactive");
  j.attach = tty || interactive;
  /* All of it checked before a sandbox is made: -t needs a terminal.  */
  if (read_create_opts (cmd, &a, &cfg) < 0 || cli_job_prepare (cmd, &a, false, &j) < 0
      || (j.attach && cli_attach_prepare (cmd, &a, &j, tty, interactive) < 0))
    goto out;
  /* Without --keep the sandbox must not outlive us, even after kill -9.  */
  cfg.ephemeral = !cli_has_opt (cmd, &a, "keep");
  if (cli_config_check (&cfg) < 0)
    goto out;

  ctx = cli_context ();
  if (ctx == NULL || cli_check_snapshot (ctx, cfg.snapshot) < 0)
    goto out;
  if (rt_sandbox_create (ctx, &cfg, &sb, &err) < 0)
    {
      code = cli_lib_fail (err);
      goto out;
    }
  if (cfg.funding == NULL)
    say_funding (ctx, sb);
  code = j.attach ? cli_attach_run (sb, &j) : cli_job_run (sb, &j);
  if (cli_has_opt (cmd, &a, "keep"))
    {
      const char *id = rt_sandbox_id (sb);
      fprintf (stderr,
               "runtime: kept sandbox %s; run more with: runtime sandbox exec %s -- CMD\n"
               "runtime: stop it with: runtime sandbox stop %s (or it pauses when its lease ends)\n",
               id, id, id);
      rt_sandbox_close (sb);
    }
  else
    {
      /* As docker run --rm: the ledger, not the record, keeps what it
         cost (usage), so nothing of it need stay unless asked.  */
      char *id = strdup (rt_sandbox_id (sb));
      if (rt_sandbox_destroy (sb, &err) < 0)
        code = cli_lib_fail (err);
      else if (id && !cli_has_opt (cmd, &a, "keep-record") && rt_sandbox_remove (ctx, id, &err) < 0)
        {
          /* The command's code is what a script waits for: only said.  */
          fprintf (stderr, "runtime: could not remove the record of %s: %s\n", id, err->msg);
          rt_error_free (err);
          err = NULL;
        }
      free (id);
    }
  sb = NULL;

out:
  /* Only an error before the command ran leaves @sb here.  */
  if (sb)
    rt_sandbox_destroy (sb, NULL);
  cli_job_free (&j);
  return code;
}

static int
sandbox_create (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  rt_sandbox_config cfg = { 0 };
  unsigned long lease = 0;
  sigset_t mask, pending;
  bool interrupted;
  int ret, code = 1;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  if (read_create_opts (cmd, &a, &cfg) < 0
      || cli_opt_uint (cmd, &a, "timeout", RT_MIN_LEASE_S, RT_MAX_LEASE_S, &lease) < 0)
    goto out;
  cfg.timeout_s = lease;
  cfg.on_timeout = cli_opt (cmd, &a, "on-timeout");
  if (cfg.on_timeout && cli_check_choice ("on-timeout", cfg.on_timeout, on_timeout_values) < 0)
    goto out;
  cfg.get_or_create = cli_has_opt (cmd, &a, "get-or-create");
  cfg.no_wait = cli_has_opt (cmd, &a, "no-wait");
  if (cfg.get_or_create && cfg.name == NULL)
    {
      cli_usage_error ("for example: runtime sandbox create --name dev --get-or-create",
                       "--get-or-create needs --name");
      goto out;
    }
  if (cli_config_check (&cfg) < 0)
    goto out;

  ctx = cli_context ();
  if (ctx == NULL || cli_check_snapshot (ctx, cfg.snapshot) < 0)
    goto out;
  /* A Ctrl-C during the boot must not leave a sandbox whose id nobody
     saw: hold the signals until the library answers, then undo.  */
  cli_block_stop_signals (&mask);
  ret = rt_sandbox_create (ctx, &cfg, &sb, &err);
  sigpending (&pending);
  interrupted = sigismember (&pending, SIGINT) || sigismember (&pending, SIGTERM) || sigismember (&pending, SIGHUP);
  if (ret < 0)
    {
      cli_lib_fail (err);
      code = interrupted ? 130 : 1;
      goto out;
    }
  if (interrupted)
    {
      char *id = strdup (rt_sandbox_id (sb));
      rt_sandbox_close (sb);
      /* --get-or-create may have found one that was there before.  */
      code = 130;
      if (id && !cfg.get_or_create && rt_sandbox_remove (ctx, id, &err) < 0)
        code = cli_lib_fail (err);
      else if (id && cfg.get_or_create)
        fprintf (stderr, "runtime: interrupted; sandbox %s named '%s' keeps running\n", id, cfg.name);
      else if (id)
        fprintf (stderr, "runtime: interrupted; removed the new sandbox %s\n", id);
      free (id);
      goto out;
    }
  if (cfg.funding == NULL)
    say_funding (ctx, sb);
  if (a.json)
    code = cli_print_get_json (ctx, rt_sandbox_id (sb));
  else
    {
      printf ("%s\n", rt_sandbox_id (sb));
      code = 0;
    }
  rt_sandbox_close (sb);

out:
  return code;
}

/* The options `create` and `run` share (read_create_opts).  */
#define CREATE_OPTS                                                                                \
  { "name", "N", "a name unique among live sandboxes; use it in place of the id", "none", false },   \
  { "label", "K=V", "a label to find the sandbox by (at most 32)", NULL, true },                   \
  { "env", "K=V", "a variable for every command; only its name is shown again", NULL, true },      \
  CLI_ENV_FILE_OPT,                                                                                \
  { "vcpu", "N", "virtual CPUs (1-16)", "2", false },                                              \
  { "memory", "SIZE", "guest memory, MiB or with a unit: 512m, 4g (256m-64g)", "4096", false },    \
  { "disk", "SIZE", "disk size, MiB or with a unit: 10g (4g-64g)", "4096", false },                \
  { "overcommit", NULL, "allow --memory above this host's memory", NULL, false },                 \
  { "image", "REF", "image to boot", "runtime", false },                                          \
  { "no-internet", NULL, "refuse every connection out of the sandbox", NULL, false },             \
  { "allow", "HOST", "reach only these: a name, *.domain (its subdomains), an IP or a CIDR", "everything public", \
    true },                                                                                        \
  { "deny", "HOST", "never reach this (wins over --allow)", NULL, true },                         \
  { "trial", NULL, "run on the 50 free hours (<= 2 vCPU, 4096 MiB, 8 at once, ports 80/443)", NULL, false }, \
  { "paid", NULL, "pay for it even while trial hours remain", NULL, false },                      \
  { "max-cost", "USD", "refuse if the first lease, every vCPU busy, could cost more", "no limit", false }, \
  { "cold", NULL, "boot, even when a template of the image and shape could start it faster", NULL, false }, \
  { "snapshot", "SNAP", "continue from this snapshot (id or name): its image, shape, processes and files",        \
    "none", false },                                                                                       \
  { "idle-pause", "S", "pause to disk after S seconds without commands, copies, output or API calls (10-86400)", \
    "0 (never)", false },                                                                           \
  { "auto-wake", NULL, "an exec, cp, cat, files or API call to it when paused wakes it first", NULL, false }

static const struct cli_opt run_opts[] = {
  CLI_ATTACH_OPTS,
  { "timeout", "S", "kill the command's process group after S seconds (exit 124)", "none", false },
  { "keep", NULL, "keep the sandbox afterwards and print how to use and stop it", NULL, false },
  { "keep-record", NULL, "keep the stopped sandbox's record for ls --all and get (removed by default)", NULL, false },
  { "cwd", "DIR", "working directory (absolute)", "/workspace", false },
  { "user", "NAME", "run as runtime (uid 1000) or root", "runtime", false },
  CREATE_OPTS,
  { NULL, NULL, NULL, NULL, false },
};

static const struct cli_opt create_opts[] = {
  CREATE_OPTS,
  { "timeout", "S", "the lease: seconds (60-3600) until --on-timeout happens", "1800", false },
  { "on-timeout", "pause|stop", "what happens when the lease ends", "pause", false },
  { "no-wait", NULL, "print the id at once, while the sandbox boots (state starting)", NULL, false },
  { "get-or-create", NULL, "with --name: print the live sandbox of that name instead of failing", NULL, false },
  { NULL, NULL, NULL, NULL, false },
};

static struct cli_command sandbox_cmds[] = {
  { "run", sandbox_run, "Run one command in a fresh sandbox, stream its output, stop the sandbox.",
    "[-i] [-t] [options] -- CMD [ARG…]", "runtime sandbox run -- python3 -c 'print(6*7)'", run_opts, true, 0, 0, NULL },
  { "create", sandbox_create, "Start a sandbox and print its id once it answers commands.", "[options]",
    "id=$(runtime sandbox create --name dev --timeout 600)", create_opts, false, 0, 0, NULL },
  { "exec", cli_sandbox_exec, "Run one command in a running sandbox, stream its output, exit with its code.",
    "[-i] [-t] ID [options] -- CMD [ARG…]",
    "runtime sandbox exec dev --cwd /tmp -- ls -l; runtime sandbox exec -it dev -- python3", cli_exec_opts, true, 1, 1,
    NULL },
  { "shell", cli_sandbox_shell, "Open a login shell (bash -l) in a running sandbox, on a terminal; exit ends it.",
    "ID [--user root] [--cwd DIR]", "runtime sandbox shell dev", cli_shell_opts, false, 1, 1, NULL },
  { "ls", cli_sandbox_ls, "List sandboxes, oldest first.", "[options]", "runtime sandbox ls --label team=ml",
    cli_ls_opts, false, 0, 0, NULL },
  { "get", cli_sandbox_get, "Show everything about one sandbox.", "ID", "runtime sandbox get dev --json", cli_no_opts,
    false, 1, 1, NULL },
  { "stop", cli_sandbox_stop, "Stop a sandbox: its VM ends, its record stays.", "ID", "runtime sandbox stop dev",
    cli_no_opts, false, 1, 1, NULL },
  { "pause", cli_sandbox_pause, "Pause a sandbox to disk: no CPU and no host memory until woken; get shows where.",
    "ID", "runtime sandbox pause dev", cli_no_opts, false, 1, 1, NULL },
  { "wake", cli_sandbox_wake,
    "Resume a paused sandbox: the same processes and files; connections to the outside are reset.", "ID",
    "runtime sandbox wake dev", cli_no_opts, false, 1, 1, NULL },
  { "snapshot", cli_sandbox_snapshot,
    "Save a sandbox (memory, processes, disk) as a snapshot and print its id; a running one pauses briefly.",
    "ID [--name N] [--label K=V]...", "snap=$(runtime sandbox snapshot dev --name base)", cli_snapshot_opts, false, 1,
    1, NULL },
  { "fork", cli_sandbox_fork,
    "Copy a running sandbox into N new ones, each continuing its processes with its own memory and disk; print "
    "their ids.",
    "ID [--count N] [--name N] [--label K=V]...", "runtime sandbox fork dev --count 4", cli_fork_opts, false, 1, 1,
    NULL },
  { "update", cli_sandbox_update, "Change a sandbox's idle pause and auto-wake; print it as get does.",
    "ID [--idle-pause S] [--auto-wake on|off]", "runtime sandbox update dev --idle-pause 600 --auto-wake on",
    cli_update_opts, false, 1, 1, NULL },
  { "rm", cli_sandbox_rm,
    "Stop sandboxes if they run and forget them (done already for one removed before; not_found for one that never "
    "was).",
    "ID… | --label K=V", "runtime sandbox rm dev sb-1234abcd5678", cli_rm_opts, false, 0, 64, NULL },
  { "prune", cli_sandbox_prune, "Forget stopped sandboxes (their records and egress logs); print each id.",
    "[--older-than AGE]", "runtime sandbox prune --older-than 24h", cli_prune_opts, false, 0, 0, NULL },
  { "spawn", cli_sandbox_spawn,
    "Start a command in the background; print its process number (1, 2, 3… in spawn order, per sandbox).",
    "ID [options] [--stdin] -- CMD [ARG…]", "runtime sandbox spawn dev -- python3 -m http.server 8000", cli_spawn_opts,
    true, 1, 1, NULL },
  { "ps", cli_sandbox_ps, "List a sandbox's background processes.", "ID", "runtime sandbox ps dev", cli_no_opts, false,
    1, 1, NULL },
  { "logs", cli_sandbox_logs, "Print a background process's output (its latest 1 MiB).", "ID PROCESS [-f]",
    "runtime sandbox logs dev 1 -f", cli_logs_opts, false, 2, 2, NULL },
  { "kill", cli_sandbox_kill, "Signal a background process's group.", "ID PROCESS [--signal SIG]",
    "runtime sandbox kill dev 1 --signal INT", cli_kill_opts, false, 2, 2, NULL },
  { "write", cli_sandbox_write,
    "Send what this command reads on its stdin to a background process's stdin (spawn --stdin); a retry "
    "never repeats bytes. One writer at a time per process: bytes sent over what another writer wrote since "
    "are refused (invalid_offset).",
    "ID PROCESS [--eof]", "echo hello | runtime sandbox write dev 1 --eof", cli_write_opts, false, 2, 2, NULL },
  { "cp", cli_sandbox_cp,
    "Copy a file or a whole directory into or out of a sandbox (modes kept; out: no devices, FIFOs, setuid or "
    "links leading out).",
    "SRC DST [--max-size SIZE] [--keep-links] [--follow]",
    "runtime sandbox cp ./project dev:/workspace/ && runtime sandbox cp dev:/workspace/report.html .", cli_cp_opts,
    false, 2, 2, NULL },
  { "cat", cli_sandbox_cat, "Print a file from the sandbox, byte for byte.", "ID PATH",
    "runtime sandbox cat dev /workspace/out.json", cli_no_opts, false, 2, 2, NULL },
  { "files", cli_sandbox_files, "List files in the sandbox: TYPE (d, l or -) SIZE PATH per entry.",
    "ID [PATH] [--depth N]", "runtime sandbox files dev /workspace --depth 2", cli_files_opts, false, 1, 2, NULL },
  { "forward", cli_sandbox_forward,
    "Forward a host port to a port inside the sandbox over the agent channel (no route, no egress rule change); "
    "listen on 127.0.0.1 unless ADDR (LOCAL left out: REMOTE; 0: a free port), print the bound address, relay "
    "until Ctrl-C or until the sandbox ends.",
    "ID [[ADDR:]LOCAL:]REMOTE", "runtime sandbox forward dev 8080:8000", cli_no_opts, false, 2, 2, NULL },
  { "extend", cli_sandbox_extend, "Move a sandbox's lease end SECONDS later (at most 1 h from now); print the new end.",
    "ID SECONDS", "runtime sandbox extend dev 600", cli_no_opts, false, 2, 2, NULL },
  { "metrics", cli_sandbox_metrics, "CPU now (% of its vCPUs), memory now, CPU seconds and cost so far.", "ID",
    "runtime sandbox metrics dev", cli_no_opts, false, 1, 1, NULL },
  { "network", cli_sandbox_network,
    "Show a sandbox's egress rules, replace them live (open connections they refuse are cut), or show its log.",
    "ID [--internet|--no-internet] [--allow HOST]... [--deny HOST]... | ID --log",
    "runtime sandbox network dev --allow pypi.org --allow '*.pythonhosted.org'", cli_network_opts, false, 1, 1, NULL },
  { NULL, NULL, NULL, NULL, NULL, NULL, false, 0, 0, NULL },
};

int
cli_cmd_sandbox (int argc, char **argv)
{
  return cli_group_dispatch ("sandbox", sandbox_cmds, argc, argv);
}
