/* sandbox-files.c - `runtime sandbox cp, cat, files`: files in and out
   of a sandbox.  */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "sandbox.h"

int
sandbox_cat (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  struct output o = { 0 };
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  int code;

  if (!open_target (cmd, argc, argv, &a, &ctx, &sb, &code))
    return code;
  signal (SIGPIPE, SIG_IGN);
  {
    rt_exec_opts opts = { .cancel_fd = -1, .on_output = on_output, .data = &o };
    code = rt_sandbox_cat (sb, a.pos[1], &opts, &err) < 0 ? (o.lost ? 1 : cli_lib_fail (err)) : o.lost;
    if (o.lost)
      rt_error_free (err);
  }
  return code;
}

static int
files_fetch (rt_sandbox *sb, struct cli_command *cmd, struct cli_args *a, char **json, rt_error **err)
{
  unsigned long depth = 1;

  if (cli_opt_uint (cmd, a, "depth", 1, 64, &depth) < 0)
    return -1;
  return rt_sandbox_files_json (sb, a->npos > 1 ? a->pos[1] : "/workspace", depth, json, err);
}

static void
files_table (json_object *arr)
{
  for (size_t i = 0; i < json_object_array_length (arr); i++)
    {
      json_object *e = json_object_array_get_idx (arr, i), *v;
      /* Names are the guest's: a name may hold an escape sequence.  */
      cleanup_free char *path = rt_text_escape (cli_jstr (e, "path"), false);
      json_object_object_get_ex (e, "size", &v);
      printf ("%s %lld %s\n", cli_jstr (e, "type"), (long long) json_object_get_int64 (v), path ? path : "-");
    }
}

int
sandbox_files (struct cli_command *cmd, int argc, char **argv)
{
  return show_target_json (cmd, argc, argv, files_fetch, files_table);
}

/* "ID:/abs/path" names a sandbox side; ids and names never hold '/', so a
   ':' after a '/' is part of a host path.  */
static char *
remote_ref (const char *arg, const char **path)
{
  const char *colon = strchr (arg, ':');
  if (colon == NULL || colon == arg || memchr (arg, '/', colon - arg))
    return NULL;
  *path = colon + 1;
  return strndup (arg, colon - arg);
}

int
sandbox_cp (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  cleanup_free char *src_ref = NULL, *dst_ref = NULL;
  const char *src_path = NULL, *dst_path = NULL;
  int ret, code = 1;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  src_ref = remote_ref (a.pos[0], &src_path);
  dst_ref = remote_ref (a.pos[1], &dst_path);
  if ((src_ref == NULL) == (dst_ref == NULL))
    return cli_usage_error ("for example: runtime sandbox cp ./data dev:/workspace/ or cp dev:/workspace/out.csv .",
                            "exactly one side of cp must be a sandbox path ID:/abs/path");
  ctx = cli_context ();
  if (ctx == NULL)
    return 1;
  if (rt_sandbox_open (ctx, src_ref ? src_ref : dst_ref, &sb, &err) < 0)
    return cli_lib_fail (err);
  {
    /* Ctrl-C stops the copy cleanly (nothing half-written is left), like
       run and exec: the library watches the signalfd.  */
    sigset_t mask;
    int sfd;
    block_stop_signals (&mask);
    sfd = signalfd (-1, &mask, SFD_CLOEXEC);
    ret = src_ref ? rt_sandbox_copy_out (sb, src_path, a.pos[1], sfd, &err)
                  : rt_sandbox_copy_in (sb, a.pos[0], dst_path, sfd, &err);
    code = ret < 0 ? (strcmp (err->code, "interrupted") == 0 ? (rt_error_free (err), 130) : cli_lib_fail (err)) : 0;
    if (sfd >= 0)
      close (sfd);
  }
  if (ret == 0 && a.json)
    printf ("{\"id\":\"%s\",\"copied\":true}\n", rt_sandbox_id (sb));
  return code;
}

const struct cli_opt files_opts[] = {
  { "depth", "N", "levels below PATH to list", "1", false },
  { NULL, NULL, NULL, NULL, false },
};
