/* sandbox-files.c - `runtime sandbox cp, cat, files`: files in and out
   of a sandbox.  */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox.h"

int
cli_sandbox_cat (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  struct output o = { 0 };
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  int code;

  if (!cli_open_target (cmd, argc, argv, &a, &ctx, &sb, &code))
    return code;
  signal (SIGPIPE, SIG_IGN);
  {
    rt_exec_opts opts = { .cancel_fd = -1, .on_output = cli_on_output, .data = &o };
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
cli_sandbox_files (struct cli_command *cmd, int argc, char **argv)
{
  return cli_show_target_json (cmd, argc, argv, files_fetch, files_table);
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

/* --max-size: bytes, or with a K, M, G or T suffix (cli_parse_size).  */
static int
cp_max_size (struct cli_command *cmd, struct cli_args *a, uint64_t *out)
{
  const char *v = cli_opt (cmd, a, "max-size");

  if (v != NULL && cli_parse_size (v, 0, out) < 0)
    {
      cli_usage_error ("for example --max-size 20G or --max-size 512M",
                       "--max-size must be a size in bytes, with K, M, G or T, not '%s'", v);
      return -1;
    }
  return 0;
}

/* What a copy out left behind, on stderr: "skipped 3 entries: device
   nodes (2), FIFOs (1)".  */
static void
cp_report_skipped (const rt_copy_result *r)
{
  const struct
  {
    const char *what;
    unsigned n;
  } kinds[] = {
    { "device nodes", r->devices },
    { "FIFOs", r->fifos },
    { "symlinks leading out of the copy", r->links },
    { "hard links", r->hardlinks },
    { "other entries", r->others },
  };
  const char *sep = ": ";

  if (r->skipped == 0)
    return;
  fprintf (stderr, "runtime: skipped %u %s", r->skipped, r->skipped == 1 ? "entry" : "entries");
  for (size_t i = 0; i < sizeof (kinds) / sizeof (kinds[0]); i++)
    if (kinds[i].n)
      {
        fprintf (stderr, "%s%s (%u)", sep, kinds[i].what, kinds[i].n);
        sep = ", ";
      }
  fprintf (stderr, "\n");
}

static void
cp_print_json (rt_sandbox *sb, const rt_copy_result *r)
{
  cleanup_json json_object *o = json_object_new_object ();
  json_object *kinds = json_object_new_object ();

  json_object_object_add (o, "id", json_object_new_string (rt_sandbox_id (sb)));
  json_object_object_add (o, "copied", json_object_new_boolean (true));
  if (r)
    {
      json_object_object_add (o, "bytes", json_object_new_int64 ((int64_t) r->bytes));
      json_object_object_add (o, "skipped", json_object_new_int64 (r->skipped));
      json_object_object_add (kinds, "devices", json_object_new_int64 (r->devices));
      json_object_object_add (kinds, "fifos", json_object_new_int64 (r->fifos));
      json_object_object_add (kinds, "links", json_object_new_int64 (r->links));
      json_object_object_add (kinds, "hardlinks", json_object_new_int64 (r->hardlinks));
      json_object_object_add (kinds, "others", json_object_new_int64 (r->others));
      json_object_object_add (o, "skippedKinds", kinds);
      /* The old name, deprecated: gone in the next release (docs/sandboxes.md).  */
      json_object_object_add (o, "skipped_kinds", json_object_get (kinds));
    }
  else
    json_object_put (kinds);
  printf ("%s\n", json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

int
cli_sandbox_cp (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  cleanup_free char *src_ref = NULL, *dst_ref = NULL;
  const char *src_path = NULL, *dst_path = NULL;
  rt_copy_opts opts = { .cancel_fd = -1 };
  const char *user = NULL;
  rt_copy_result res = { 0 };
  int ret, code = 1;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  src_ref = remote_ref (a.pos[0], &src_path);
  dst_ref = remote_ref (a.pos[1], &dst_path);
  if ((src_ref == NULL) == (dst_ref == NULL))
    return cli_usage_error ("for example: runtime sandbox cp ./data dev:/workspace/ or cp dev:/workspace/out.csv .",
                            "exactly one side of cp must be a sandbox path ID:/abs/path");
  if (cp_max_size (cmd, &a, &opts.max_size) < 0)
    return 1;
  opts.follow = cli_opt (cmd, &a, "follow") != NULL;
  opts.keep_links = cli_opt (cmd, &a, "keep-links") != NULL;
  user = cli_opt (cmd, &a, "user");
  if (user && strcmp (user, "runtime") != 0 && strcmp (user, "root") != 0)
    return cli_usage_error ("for example: --user root", "--user must be runtime or root, not '%s'", user);
  if (user && src_ref)
    return cli_usage_error (NULL, "--user is for a copy into the sandbox");
  /* The host's side before the sandbox's: a missing source is the
     mistake, whatever state the sandbox is in.  */
  if (dst_ref && access (a.pos[0], F_OK) < 0 && errno == ENOENT)
    {
      struct stat st;
      if (lstat (a.pos[0], &st) < 0)
        return cli_fail ("file_not_found", "check the path; cp copies files and directories of this host",
                         "no such file or directory on this host: %s", a.pos[0]);
    }
  ctx = cli_context ();
  if (ctx == NULL)
    return 1;
  if (rt_sandbox_open (ctx, src_ref ? src_ref : dst_ref, &sb, &err) < 0)
    return cli_lib_fail (err);
  {
    /* Ctrl-C stops the copy cleanly (nothing half-written is left), like
       run and exec: the library watches the signalfd.  */
    sigset_t mask;
    cli_block_stop_signals (&mask);
    opts.cancel_fd = signalfd (-1, &mask, SFD_CLOEXEC);
    ret = src_ref ? rt_sandbox_copy_out (sb, src_path, a.pos[1], &opts, &res, &err)
                  : rt_sandbox_copy_in_as (sb, a.pos[0], dst_path, &opts, user, &err);
    code = ret < 0 ? (strcmp (err->code, "interrupted") == 0 ? (rt_error_free (err), 130) : cli_lib_fail (err)) : 0;
    if (opts.cancel_fd >= 0)
      close (opts.cancel_fd);
  }
  if (ret == 0 && a.json)
    cp_print_json (sb, src_ref ? &res : NULL);
  else if (ret == 0)
    cp_report_skipped (&res);
  return code;
}

const struct cli_opt cli_cp_opts[] = {
  { "max-size", "SIZE", "out: fail, writing nothing, past this many bytes (K, M, G, T suffixes)", "10G", false },
  { "keep-links", NULL, "out: the copied item may itself be a symlink", NULL, false },
  { "follow", NULL, "in: a symlink named as SRC is copied as what it points to", NULL, false },
  { "user", "USER", "in: write in the sandbox as runtime or root", "runtime", false },
  { NULL, NULL, NULL, NULL, false },
};

const struct cli_opt cli_files_opts[] = {
  { "depth", "N", "levels below PATH to list", "1", false },
  { NULL, NULL, NULL, NULL, false },
};
