/* usage.c - `runtime usage [--json|--csv]`: trial hours left, what was
   charged, one row per sandbox (newest 100).  */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The CSV's columns (its header keeps these names) and the JSON keys
   they come from.  */
static const struct
{
  const char *header, *key;
} columns[] = {
  { "resource_id", "resourceId" },         { "name", "name" },
  { "kind", "kind" },                      { "state", "state" },
  { "created_at", "createdAt" },           { "vcpu", "vcpu" },
  { "memory_mib", "memoryMiB" },           { "running_seconds", "runningSeconds" },
  { "active_cpu_seconds", "activeCpuSeconds" }, { "memory_gib_seconds", "memoryGiBSeconds" },
  { "charged_usd", "chargedUsd" },         { NULL, NULL },
};

/* A CSV field: quoted when it holds a comma, a quote or a line break.  */
static void
csv_field (const char *s)
{
  if (strpbrk (s, ",\"\n\r") == NULL)
    {
      fputs (s, stdout);
      return;
    }
  putchar ('"');
  for (; *s; s++)
    {
      if (*s == '"')
        putchar ('"');
      putchar (*s);
    }
  putchar ('"');
}

static const char *
field (json_object *row, const char *key)
{
  json_object *v;
  return json_object_object_get_ex (row, key, &v) && v ? json_object_get_string (v) : "";
}

static int
usage_show (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  rt_error *err = NULL;
  cleanup_free char *json = NULL;
  cleanup_json json_object *o = NULL;
  json_object *rows;
  int code = 1;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  if (a.json && cli_opt (cmd, &a, "csv"))
    return cli_usage_error (NULL, "--json and --csv: pick one");
  ctx = cli_context ();
  if (ctx == NULL)
    return 1;
  if (rt_usage_json (ctx, &json, &err) < 0)
    return cli_lib_fail (err);
  if (a.json)
    {
      printf ("%s\n", json);
      return 0;
    }
  o = json_tokener_parse (json);
  if (o == NULL || !json_object_object_get_ex (o, "sandboxes", &rows))
    return cli_fail ("internal", NULL, "the library returned unreadable JSON");
  if (cli_opt (cmd, &a, "csv"))
    {
      for (size_t c = 0; columns[c].header; c++)
        printf ("%s%s", c ? "," : "", columns[c].header);
      putchar ('\n');
      for (size_t i = 0; i < json_object_array_length (rows); i++)
        {
          json_object *row = json_object_array_get_idx (rows, i);
          for (size_t c = 0; columns[c].header; c++)
            {
              if (c)
                putchar (',');
              csv_field (field (row, columns[c].key));
            }
          putchar ('\n');
        }
      return 0;
    }
  printf ("Trial hours left: %s of 50\nCharged in all:   $%s\n\n", field (o, "trialHoursLeft"), field (o, "chargedUsd"));
  printf ("%-16s %-16s %-8s %-7s %7s %10s %10s %12s\n", "ID", "NAME", "STATE", "FUNDING", "CPU/MIB", "RUNNING s",
          "CPU s", "CHARGED $");
  for (size_t i = 0; i < json_object_array_length (rows); i++)
    {
      json_object *row = json_object_array_get_idx (rows, i);
      char shape[32];
      snprintf (shape, sizeof shape, "%s/%s", field (row, "vcpu"), field (row, "memoryMiB"));
      printf ("%-16s %-16s %-8s %-7s %7s %10s %10s %12s\n", field (row, "resourceId"),
              *field (row, "name") ? field (row, "name") : "-", field (row, "state"), field (row, "funding"), shape,
              field (row, "runningSeconds"), field (row, "activeCpuSeconds"), field (row, "chargedUsd"));
    }
  return 0;
}

static const struct cli_opt usage_opts[] = {
  { "csv", NULL, "one CSV row per sandbox (header first)", NULL, false },
  { NULL, NULL, NULL, NULL, false },
};

static struct cli_command usage_cmd = {
  "usage", usage_show, "Trial hours left, the total charged, and what each sandbox used (newest 100).",
  "[--json|--csv]", "runtime usage --csv > usage.csv", usage_opts, false, 0, 0, "",
};

int
cli_cmd_usage (int argc, char **argv)
{
  return cli_run_single (&usage_cmd, argc, argv);
}
