/* snapshot.c - `runtime snapshot …`: ls, get, rm.  A snapshot is made by
   `runtime sandbox snapshot` and started by `sandbox create --snapshot`
   (sandbox-snapshot.c).  */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

static int64_t
member_i64 (json_object *o, const char *key)
{
  json_object *v;

  return json_object_object_get_ex (o, key, &v) && v ? json_object_get_int64 (v) : 0;
}

static int
list_snapshots (rt_context *ctx, struct cli_args *a, char **json, rt_error **err)
{
  (void) a;
  return rt_snapshot_list_json (ctx, json, err);
}

static void
snapshots_table (json_object *arr)
{
  printf ("%-17s %-20s %-15s %-9s %9s %s\n", "ID", "NAME", "SOURCE", "CPU/MIB", "MIB", "CREATED");
  for (size_t i = 0; i < json_object_array_length (arr); i++)
    {
      json_object *o = json_object_array_get_idx (arr, i), *shape = NULL;
      char cpumem[32];
      json_object_object_get_ex (o, "shape", &shape);
      snprintf (cpumem, sizeof cpumem, "%" PRId64 "/%" PRId64, member_i64 (shape, "vcpu"),
                member_i64 (shape, "memoryMiB"));
      printf ("%-17s %-20s %-15s %-9s %9.1f %s\n", cli_jstr (o, "id") ? cli_jstr (o, "id") : "-",
              cli_jstr (o, "name") ? cli_jstr (o, "name") : "-",
              cli_jstr (o, "sourceSandboxId") ? cli_jstr (o, "sourceSandboxId") : "-", cpumem,
              member_i64 (o, "storedBytes") / 1048576.0, cli_jstr (o, "createdAt") ? cli_jstr (o, "createdAt") : "-");
    }
}

static int
snapshot_ls (struct cli_command *cmd, int argc, char **argv)
{
  return cli_show_json (cmd, argc, argv, list_snapshots, snapshots_table);
}

static int
get_snapshot (rt_context *ctx, struct cli_args *a, char **json, rt_error **err)
{
  return rt_snapshot_get_json (ctx, a->pos[0], json, err);
}

/* KEY VALUE, one per line; objects as k=v,k=v.  */
static void
snapshot_table (json_object *o)
{
  json_object_object_foreach (o, k, v)
  {
    printf ("%-16s ", k);
    if (v == NULL)
      printf ("-");
    else if (json_object_is_type (v, json_type_object))
      {
        bool first = true;
        json_object_object_foreach (v, k2, v2)
        {
          printf ("%s%s=%s", first ? "" : ",", k2, v2 ? json_object_get_string (v2) : "-");
          first = false;
        }
        if (first)
          printf ("-");
      }
    else
      printf ("%s", json_object_get_string (v));
    putchar ('\n');
  }
}

static int
snapshot_get (struct cli_command *cmd, int argc, char **argv)
{
  return cli_show_json (cmd, argc, argv, get_snapshot, snapshot_table);
}

/* Removes each one given; one error line for each that fails, and exit 1
   when any did.  */
static int
snapshot_rm (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_json json_object *removed = json_object_new_array ();
  int code;

  if (!cli_start (cmd, argc, argv, &a, &ctx, &code))
    return code;
  code = 0;
  for (int i = 0; i < a.npos; i++)
    {
      rt_error *err = NULL;
      if (rt_snapshot_remove (ctx, a.pos[i], &err) < 0)
        code = cli_lib_fail (err);
      else if (a.json)
        json_object_array_add (removed, json_object_new_string (a.pos[i]));
      else
        printf ("%s\n", a.pos[i]);
    }
  if (a.json)
    {
      cleanup_json json_object *o = json_object_new_object ();
      json_object_object_add (o, "removed", json_object_get (removed));
      printf ("%s\n", json_object_to_json_string_ext (o, JSON_FLAGS));
    }
  return code;
}

static struct cli_command snapshot_cmds[] = {
  { "ls", snapshot_ls, "List snapshots, oldest first: source sandbox, shape, size on disk.", "", "runtime snapshot ls",
    cli_no_opts, false, 0, 0, NULL },
  { "get", snapshot_get, "Show one snapshot: image, shape, sizes, where it lives.", "ID",
    "runtime snapshot get base --json", cli_no_opts, false, 1, 1, NULL },
  { "rm", snapshot_rm, "Delete snapshots; sandboxes made from them run on.", "ID…", "runtime snapshot rm base",
    cli_no_opts, false, 1, 8, NULL },
  { NULL, NULL, NULL, NULL, NULL, NULL, false, 0, 0, NULL },
};

int
cli_cmd_snapshot (int argc, char **argv)
{
  return cli_group_dispatch ("snapshot", snapshot_cmds, argc, argv);
}
