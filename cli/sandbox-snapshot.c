/* sandbox-snapshot.c - `runtime sandbox snapshot, fork, update`: saving a
   sandbox, copying it into new ones, and its idle pause and auto-wake;
   and the reading of `create --idle-pause`.  */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"

static const char *const on_off[] = { "on", "off", NULL };

int
cli_read_idle_pause (struct cli_command *cmd, struct cli_args *a, int *out)
{
  const char *v = cli_opt (cmd, a, "idle-pause");
  unsigned long n = 0;

  if (v == NULL)
    return 0;
  if (cli_opt_uint (cmd, a, "idle-pause", 0, IDLE_PAUSE_MAX_S, &n) < 0)
    return -1;
  /* Under 10 s a sandbox would pause between two commands of a script;
     over a day, pausing is what `pause` is for.  */
  if (n != 0 && n < IDLE_PAUSE_MIN_S)
    {
      cli_usage_error ("0 turns idle pause off",
                       "--idle-pause must be 0 or a whole number of seconds from %d to %d, "
                       "not '%s'",
                       IDLE_PAUSE_MIN_S, IDLE_PAUSE_MAX_S, v);
      return -1;
    }
  *out = (int) n;
  return 1;
}

/* A usage-level check of `create --snapshot`: an unknown snapshot is
   reported before anything starts.  */
int
cli_check_snapshot (rt_context *ctx, const char *snapshot)
{
  cleanup_free char *json = NULL;
  rt_error *err = NULL;

  if (snapshot && rt_snapshot_get_json (ctx, snapshot, &json, &err) < 0)
    return -cli_lib_fail (err);
  return 0;
}

/* True when a stop signal (cli_block_stop_signals) came while we waited.  */
static bool
interrupted (void)
{
  sigset_t pending;

  sigpending (&pending);
  return sigismember (&pending, SIGINT) || sigismember (&pending, SIGTERM) || sigismember (&pending, SIGHUP);
}

/* Once the options are checked: the context and the sandbox a->pos[0];
   false after printing the error.  */
static bool
open_checked (const struct cli_args *a, rt_context **ctx, rt_sandbox **sb)
{
  rt_error *err = NULL;

  if ((*ctx = cli_context ()) == NULL)
    return false;
  if (rt_sandbox_open (*ctx, a->pos[0], sb, &err) < 0)
    {
      cli_lib_fail (err);
      return false;
    }
  return true;
}

/* --name and --label of snapshot and fork; -1 after a usage error.  */
static int
read_name_labels (struct cli_command *cmd, struct cli_args *a, const char **name, const char ***labels)
{
  rt_sandbox_config cfg = { 0 };
  int n;

  /* The rules a sandbox's name and labels follow.  */
  cfg.name = *name = cli_opt (cmd, a, "name");
  cfg.labels = *labels = cli_opt_list (cmd, a, "label", &n);
  return cli_config_check (&cfg);
}

int
cli_sandbox_snapshot (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  cleanup_free char *json = NULL;
  cleanup_json json_object *o = NULL;
  rt_error *err = NULL;
  const char *name, **labels;
  sigset_t mask;
  int code = 1;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  if (read_name_labels (cmd, &a, &name, &labels) < 0 || !open_checked (&a, &ctx, &sb))
    return 1;
  /* A Ctrl-C during the capture must not leave a snapshot nobody saw.  */
  cli_block_stop_signals (&mask);
  if (rt_sandbox_snapshot (sb, name, labels, &json, &err) < 0)
    {
      cli_lib_fail (err);
      return interrupted () ? 130 : 1;
    }
  if ((o = cli_parse_json (json)) == NULL)
    return 1;
  if (interrupted ())
    {
      if (rt_snapshot_remove (ctx, cli_jstr (o, "id"), &err) < 0)
        return cli_lib_fail (err);
      fprintf (stderr, "runtime: interrupted; removed the new snapshot %s\n", cli_jstr (o, "id"));
      return 130;
    }
  if (a.json)
    cli_print_json (o);
  else
    printf ("%s\n", cli_jstr (o, "id"));
  return 0;
}

/* The children of a fork as rt_sandbox_get_json objects, in one array.  */
static int
print_children_json (rt_context *ctx, char **ids)
{
  cleanup_json json_object *arr = json_object_new_array ();
  rt_error *err = NULL;

  for (char **id = ids; *id; id++)
    {
      cleanup_free char *json = NULL;
      json_object *o;
      if (rt_sandbox_get_json (ctx, *id, &json, &err) < 0)
        return cli_lib_fail (err);
      if ((o = cli_parse_json (json)) == NULL)
        return 1;
      json_object_array_add (arr, o);
    }
  cli_print_json (arr);
  return 0;
}

static void
free_ids (char **ids)
{
  for (char **id = ids; id && *id; id++)
    free (*id);
  free (ids);
}

/* After a Ctrl-C: no child whose id nobody saw keeps running.  */
static int
undo_fork (rt_context *ctx, char **ids)
{
  rt_error *err = NULL;
  int code = 130;

  for (char **id = ids; *id; id++)
    if (rt_sandbox_remove (ctx, *id, &err) < 0)
      code = cli_lib_fail (err);
    else
      fprintf (stderr, "runtime: interrupted; removed the new sandbox %s\n", *id);
  return code;
}

int
cli_sandbox_fork (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  const char *name, **labels;
  unsigned long count = 1;
  char **ids = NULL;
  sigset_t mask;
  int code = 1;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  if (cli_opt_uint (cmd, &a, "count", 1, RT_MAX_FORK, &count) < 0 || read_name_labels (cmd, &a, &name, &labels) < 0
      || !open_checked (&a, &ctx, &sb))
    return 1;
  cli_block_stop_signals (&mask);
  if (rt_sandbox_fork (sb, count, name, labels, &ids, &err) < 0)
    {
      cli_lib_fail (err);
      return interrupted () ? 130 : 1;
    }
  if (interrupted ())
    code = undo_fork (ctx, ids);
  else if (a.json)
    code = print_children_json (ctx, ids);
  else
    {
      for (char **id = ids; *id; id++)
        printf ("%s\n", *id);
      code = 0;
    }
  free_ids (ids);
  return code;
}

int
cli_sandbox_update (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  cleanup_free char *json = NULL;
  cleanup_json json_object *o = NULL;
  rt_error *err = NULL;
  const char *wake;
  int idle = -1, code = 1, has_idle;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  if ((has_idle = cli_read_idle_pause (cmd, &a, &idle)) < 0)
    return 1;
  wake = cli_opt (cmd, &a, "auto-wake");
  if (wake && cli_check_choice ("auto-wake", wake, on_off) < 0)
    return 1;
  if (!has_idle && wake == NULL)
    return cli_usage_error ("for example: runtime sandbox update dev --idle-pause 300 --auto-wake on",
                            "give --idle-pause, --auto-wake or both");
  if (!open_checked (&a, &ctx, &sb))
    return 1;
  if (rt_sandbox_update (sb, idle, wake ? strcmp (wake, "on") == 0 : -1, &json, &err) < 0)
    return cli_lib_fail (err);
  if ((o = cli_parse_json (json)) == NULL)
    return 1;
  if (a.json)
    cli_print_json (o);
  else
    cli_print_fields (o);
  return 0;
}

const struct cli_opt cli_snapshot_opts[] = {
  { "name", "N", "a name unique among snapshots; use it in place of the id", "none", false },
  { "label", "K=V", "a label of the snapshot (at most 32)", NULL, true },
  { NULL, NULL, NULL, NULL, false },
};

const struct cli_opt cli_fork_opts[] = {
  { "count", "N", "how many sandboxes (1-16)", "1", false },
  { "name", "N", "the new sandboxes' name; N-1, N-2… when --count is over 1", "none", false },
  { "label", "K=V", "a label of every new sandbox (at most 32)", NULL, true },
  { NULL, NULL, NULL, NULL, false },
};

const struct cli_opt cli_update_opts[] = {
  { "idle-pause", "S", "pause to disk after S idle seconds (10-86400; 0: never)", "unchanged", false },
  { "auto-wake", "on|off", "wake a paused sandbox on exec, cp, cat, files or an API call", "unchanged", false },
  { NULL, NULL, NULL, NULL, false },
};
