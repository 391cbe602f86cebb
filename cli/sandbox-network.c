/* sandbox-network.c - `runtime sandbox network, metrics`: egress rules
   and log, and what a sandbox uses now.  */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"

static int
metrics_fetch (rt_sandbox *sb, struct cli_command *cmd, struct cli_args *a, char **json, rt_error **err)
{
  (void) cmd;
  (void) a;
  return rt_sandbox_metrics_json (sb, json, err);
}

static void
metrics_table (json_object *o)
{
  json_object *v;
  int64_t micros = json_object_object_get_ex (o, "chargedMicros", &v) ? json_object_get_int64 (v) : 0;
  int64_t total = json_object_object_get_ex (o, "guestMemoryTotalMiB", &v) ? json_object_get_int64 (v) : -1;
  int64_t avail = json_object_object_get_ex (o, "guestMemoryAvailableMiB", &v) ? json_object_get_int64 (v) : -1;
  printf ("%-12s %s%% of %s vCPU\n", "cpu now", cli_jstr (o, "cpuPercent"), cli_jstr (o, "vcpu"));
  if (total >= 0 && avail >= 0)
    printf ("%-12s %" PRId64 " MiB used of %" PRId64 " MiB (the guest's own figures; %s MiB allocated)\n",
            "memory now", total - avail, total, cli_jstr (o, "memoryMiB"));
  else
    printf ("%-12s %s MiB allocated\n", "memory", cli_jstr (o, "memoryMiB"));
  printf ("%-12s %s\n", "cpu seconds", cli_jstr (o, "cpuSeconds") ? cli_jstr (o, "cpuSeconds") : "0");
  printf ("%-12s $%" PRId64 ".%06" PRId64 "\n", "cost so far", micros / 1000000, micros % 1000000);
}

int
cli_sandbox_metrics (struct cli_command *cmd, int argc, char **argv)
{
  return cli_show_target_json (cmd, argc, argv, metrics_fetch, metrics_table);
}

static void
print_list (const char *key, json_object *arr)
{
  size_t n = arr ? json_object_array_length (arr) : 0;

  printf ("%-9s ", key);
  if (n == 0)
    printf ("-");
  for (size_t i = 0; i < n; i++)
    printf ("%s%s", i ? " " : "", json_object_get_string (json_object_array_get_idx (arr, i)));
  printf ("\n");
}

static void
print_rules (json_object *net)
{
  json_object *v;
  bool internet = json_object_object_get_ex (net, "internet", &v) && json_object_get_boolean (v);
  json_object *allow = json_object_object_get_ex (net, "allow", &v) ? v : NULL;
  json_object *deny = json_object_object_get_ex (net, "deny", &v) ? v : NULL;

  printf ("%-9s %s\n", "internet", internet ? (allow && json_object_array_length (allow) ? "allow list" : "on") : "off");
  print_list ("allow", allow);
  print_list ("deny", deny);
}

/* The egress log as it is (--json: one array), else one line per entry.  */
static int
print_egress_log (rt_context *ctx, const char *ref, bool json)
{
  rt_error *err = NULL;
  char *path = NULL, *line = NULL;
  size_t cap = 0;
  json_object *all = json_object_new_array ();
  FILE *f;

  if (rt_sandbox_egress_log (ctx, ref, &path, &err) < 0)
    {
      json_object_put (all);
      return cli_lib_fail (err);
    }
  /* No file: nothing left the sandbox yet.  */
  f = fopen (path, "re");
  free (path);
  if (!json)
    printf ("%-24s %-8s %-15s %-7s %-30s %-21s %10s %10s\n", "TIME", "DECISION", "REASON", "KIND", "NAME", "ADDRESS",
            "OUT", "IN");
  while (f && getline (&line, &cap, f) > 0)
    {
      json_object *o = json_tokener_parse (line), *v;
      cleanup_free char *name = NULL;
      char addr[80];
      if (o == NULL)
        continue;
      if (json)
        {
          json_object_array_add (all, o);
          continue;
        }
      /* The name is what the guest asked for (DNS, SNI, Host): text only.  */
      name = rt_text_escape (cli_jstr (o, "name") ? cli_jstr (o, "name") : "-", false);
      snprintf (addr, sizeof addr, "%s:%d", cli_jstr (o, "address") ? cli_jstr (o, "address") : "-",
                json_object_object_get_ex (o, "port", &v) ? json_object_get_int (v) : 0);
      printf ("%-24s %-8s %-15s %-7s %-30s %-21s %10" PRId64 " %10" PRId64 "\n",
              cli_jstr (o, "time") ? cli_jstr (o, "time") : "-",
              cli_jstr (o, "decision") ? cli_jstr (o, "decision") : "-",
              cli_jstr (o, "reason") ? cli_jstr (o, "reason") : "-", cli_jstr (o, "kind") ? cli_jstr (o, "kind") : "-",
              name ? name : "-", addr,
              json_object_object_get_ex (o, "bytesOut", &v) ? json_object_get_int64 (v) : (int64_t) 0,
              json_object_object_get_ex (o, "bytesIn", &v) ? json_object_get_int64 (v) : (int64_t) 0);
      json_object_put (o);
    }
  free (line);
  if (f)
    fclose (f);
  if (json)
    cli_print_json (all);
  json_object_put (all);
  return 0;
}

int
cli_sandbox_network (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  cleanup_free char *json = NULL;
  cleanup_json json_object *o = NULL;
  const char **allow, **deny;
  int nallow, ndeny, code = 1;
  bool on, off, change;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  on = cli_has_opt (cmd, &a, "internet");
  off = cli_has_opt (cmd, &a, "no-internet");
  allow = cli_opt_list (cmd, &a, "allow", &nallow);
  deny = cli_opt_list (cmd, &a, "deny", &ndeny);
  change = on || off || nallow > 0 || ndeny > 0;
  if (on && off)
    return cli_usage_error (NULL, "--internet and --no-internet contradict each other");
  if (change && cli_has_opt (cmd, &a, "log"))
    return cli_usage_error ("show the log and change the rules in two commands", "--log does not go with rule changes");
  ctx = cli_context ();
  if (ctx == NULL)
    return 1;
  if (cli_has_opt (cmd, &a, "log"))
    return print_egress_log (ctx, a.pos[0], a.json);
  if (!change)
    {
      json_object *net;
      if (rt_sandbox_get_json (ctx, a.pos[0], &json, &err) < 0)
        return cli_lib_fail (err);
      o = cli_parse_json (json);
      if (o == NULL)
        return 1;
      if (!json_object_object_get_ex (o, "network", &net))
        net = NULL;
      if (a.json)
        cli_print_json (net);
      else
        print_rules (net);
      return 0;
    }
  if (rt_sandbox_open (ctx, a.pos[0], &sb, &err) < 0
      || rt_sandbox_set_network (sb, !off, allow, deny, &json, &err) < 0)
    return cli_lib_fail (err);
  o = cli_parse_json (json);
  if (o == NULL)
    return 1;
  if (a.json)
    cli_print_json (o);
  else
    {
      json_object *v;
      int closed = json_object_object_get_ex (o, "closed", &v) ? json_object_get_int (v) : 0;
      print_rules (o);
      if (closed > 0)
        fprintf (stderr, "Closed %d open connection%s the new rules refuse.\n", closed, closed == 1 ? "" : "s");
    }
  return 0;
}

const struct cli_opt cli_network_opts[] = {
  { "internet", NULL, "allow the public internet (what --allow and --deny leave)", NULL, false },
  { "no-internet", NULL, "refuse every connection", NULL, false },
  { "allow", "HOST", "reach only these: a name, *.domain (its subdomains), an IP or a CIDR", NULL, true },
  { "deny", "HOST", "never reach this (wins over --allow)", NULL, true },
  { "log", NULL, "show the egress log: every connection and refused name, with bytes each way", NULL, false },
  { NULL, NULL, NULL, NULL, false },
};
