/* pool.c - `runtime pool set/ls/rm`: warm spares per image and shape.  */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int
pool_set (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_free char *json = NULL;
  cleanup_json json_object *o = NULL;
  unsigned long spares = 0, vcpu = 0, mem = 0;
  rt_error *err = NULL;
  int code;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  if (!cli_opt (cmd, &a, "spares"))
    return cli_usage_error (NULL, "--spares N is needed (0 stops the spares)");
  if (cli_opt_uint (cmd, &a, "spares", 0, 64, &spares) < 0 || cli_opt_uint (cmd, &a, "vcpu", 1, RT_MAX_VCPU, &vcpu) < 0
      || cli_opt_mib (cmd, &a, "memory", RT_MIN_MEMORY_MIB, RT_MAX_MEMORY_MIB, &mem) < 0)
    return 1;
  ctx = cli_context ();
  if (ctx == NULL)
    return 1;
  if (rt_pool_set (ctx, a.pos[0], spares, vcpu, mem, &json, &err) < 0)
    return cli_lib_fail (err);
  if (a.json)
    {
      printf ("%s\n", json);
      return 0;
    }
  o = json_tokener_parse (json);
  printf ("%s: %s spares of %s vCPU / %s MiB ready\n", a.pos[0] ? a.pos[0] : "runtime",
          json_object_get_string (json_object_object_get (o, "ready")),
          json_object_get_string (json_object_object_get (o, "vcpu")),
          json_object_get_string (json_object_object_get (o, "memoryMiB")));
  return 0;
}

static int
list_pools (rt_context *ctx, struct cli_args *a, char **json, rt_error **err)
{
  (void) a;
  return rt_pool_list_json (ctx, json, err);
}

static void
pools_table (json_object *arr)
{
  printf ("%-24s %-14s %5s %8s %7s %6s\n", "IMAGE", "ID", "VCPU", "MEMORY", "SPARES", "READY");
  for (size_t i = 0; i < json_object_array_length (arr); i++)
    {
      json_object *o = json_object_array_get_idx (arr, i);
      printf ("%-24s %-14.12s %5s %8s %7s %6s\n", json_object_get_string (json_object_object_get (o, "image")),
              json_object_get_string (json_object_object_get (o, "imageId")),
              json_object_get_string (json_object_object_get (o, "vcpu")),
              json_object_get_string (json_object_object_get (o, "memoryMiB")),
              json_object_get_string (json_object_object_get (o, "spares")),
              json_object_get_string (json_object_object_get (o, "ready")));
    }
}

static int
pool_ls (struct cli_command *cmd, int argc, char **argv)
{
  return cli_show_json (cmd, argc, argv, list_pools, pools_table);
}

static int
pool_rm (struct cli_command *cmd, int argc, char **argv)
{
  return cli_remove_named (cmd, argc, argv, rt_pool_remove);
}

static const struct cli_opt set_opts[] = {
  { "spares", "N", "paused clones to keep ready (0-64; 0 stops them)", NULL, false },
  { "vcpu", "N", "the shape's virtual CPUs (1-16)", "2", false },
  { "memory", "SIZE", "the shape's memory, MiB or 512m, 4g (256m-64g)", "4096", false },
  { NULL, NULL, NULL, NULL, false },
};

static struct cli_command pool_cmds[] = {
  { "set", pool_set,
    "Keep N paused clones of an image and shape ready: a create of exactly that shape (without secrets) starts "
    "from one in a fraction of a second (about 0.2 s under TCG). Spares use no CPU and are not billed; together they hold at most "
    "RUNTIME_POOL_MAX_MIB (default a tenth of the host's RAM). Waits until the template and the spares exist.",
    "[REF] --spares N [--vcpu N] [--memory MiB]", "runtime pool set --spares 2 --vcpu 1 --memory 1024", set_opts,
    false, 0, 1, NULL },
  { "ls", pool_ls, "List the pools: image, shape, spares asked, spares ready.", "", "runtime pool ls", cli_no_opts,
    false, 0, 0, NULL },
  { "rm", pool_rm, "Forget an image's pools and stop their spares.", "REF", "runtime pool rm runtime", cli_no_opts,
    false, 1, 1, NULL },
  { NULL, NULL, NULL, NULL, NULL, NULL, false, 0, 0, NULL },
};

int
cli_cmd_pool (int argc, char **argv)
{
  return cli_group_dispatch ("pool", pool_cmds, argc, argv);
}
