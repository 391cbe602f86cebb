/* token.c - `runtime token create/ls/rm`: API tokens for `runtime serve`,
   each a tenant with its own sandboxes, images, secrets and usage.  */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int
token_create (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_free char *token = NULL;
  rt_token_limits lim = { 0 };
  unsigned long sandboxes = 0, vcpu = 0, rate = 0, snapshots = 0;
  rt_error *err = NULL;
  int code;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  if (cli_opt_uint (cmd, &a, "max-sandboxes", 1, 100000, &sandboxes) < 0
      || cli_opt_uint (cmd, &a, "max-vcpu", 1, 1000000, &vcpu) < 0
      || cli_opt_uint (cmd, &a, "rate", 1, 100000, &rate) < 0
      || cli_opt_uint (cmd, &a, "max-snapshots", 1, 100000, &snapshots) < 0
      || cli_opt_usd (cmd, &a, "max-cost", &lim.max_cost_micros) < 0)
    return 1;
  lim.max_sandboxes = sandboxes;
  lim.max_vcpu = vcpu;
  lim.rate = rate;
  lim.max_snapshots = snapshots;
  ctx = cli_context ();
  if (ctx == NULL)
    return 1;
  if (rt_token_create (ctx, a.pos[0], &lim, &token, &err) < 0)
    return cli_lib_fail (err);
  if (a.json)
    printf ("{\"name\":\"%s\",\"token\":\"%s\"}\n", a.pos[0], token);
  else
    printf ("%s\n", token);
  fflush (stdout);
  fprintf (stderr, "Token '%s' made. Keep it now: it will not be shown again (only its hash is stored).\n", a.pos[0]);
  explicit_bzero (token, strlen (token));
  return 0;
}

static int
list_tokens (rt_context *ctx, struct cli_args *a, char **json, rt_error **err)
{
  (void) a;
  return rt_token_list_json (ctx, json, err);
}

/* A limit as the table shows it: "-" for none.  */
static const char *
limit (json_object *o, const char *key, char buf[32])
{
  int64_t v = json_object_get_int64 (json_object_object_get (o, key));

  if (v <= 0)
    return "-";
  if (strcmp (key, "maxCostMicros") == 0)
    snprintf (buf, 32, "$%" PRId64 ".%02" PRId64, v / 1000000, v % 1000000 / 10000);
  else
    snprintf (buf, 32, "%" PRId64, v);
  return buf;
}

static void
tokens_table (json_object *arr)
{
  printf ("%-20s %-8s %-24s %9s %6s %10s %6s\n", "NAME", "PREFIX", "CREATED", "SANDBOXES", "VCPU", "COST", "RATE");
  for (size_t i = 0; i < json_object_array_length (arr); i++)
    {
      json_object *o = json_object_array_get_idx (arr, i);
      char s[32], v[32], c[32], r[32];
      const char *rate = limit (o, "rate", r);
      printf ("%-20s %-8s %-24s %9s %6s %10s %6s\n", cli_jstr (o, "name"), cli_jstr (o, "prefix"),
              cli_jstr (o, "createdAt"), limit (o, "maxSandboxes", s), limit (o, "maxVcpu", v),
              limit (o, "maxCostMicros", c), strcmp (rate, "-") ? rate : "50");
    }
}

static int
token_ls (struct cli_command *cmd, int argc, char **argv)
{
  return cli_show_json (cmd, argc, argv, list_tokens, tokens_table);
}

static int
token_rm (struct cli_command *cmd, int argc, char **argv)
{
  return cli_remove_named (cmd, argc, argv, rt_token_remove);
}

static const struct cli_opt create_opts[] = {
  { "max-sandboxes", "N", "live sandboxes (running or paused) it may hold at once", "no limit", false },
  { "max-vcpu", "N", "vCPUs summed over its live sandboxes", "no limit", false },
  { "max-cost", "USD", "dollars charged to it in all, after which creates are refused", "no limit", false },
  { "rate", "N", "requests a second (bursts of twice as many)", "50, bursts of 100", false },
  { "max-snapshots", "N", "snapshots it may keep at once", "32", false },
  { NULL, NULL, NULL, NULL, false },
};

static struct cli_command token_cmds[] = {
  { "create", token_create,
    "Make an API token for runtime serve and print it once (only its SHA-256 is kept, in the data dir's "
    "tokens.json, mode 0600). The token is a tenant: it sees only the sandboxes, images, secrets and usage it "
    "made; its limits are refused with 429 quota_exceeded. NAME: 1-32 of a-z, 0-9, '_', '-'.",
    "NAME [--max-sandboxes N] [--max-vcpu N] [--max-cost USD] [--rate N] [--max-snapshots N]",
    "runtime token create ci --max-sandboxes 8 --max-cost 20", create_opts, false, 1, 1, NULL },
  { "ls", token_ls, "List the tokens: name, first characters, limits (never a token or its hash).", "",
    "runtime token ls", cli_no_opts, false, 0, 0, NULL },
  { "rm", token_rm,
    "Revoke a token at once and stop every sandbox it made (paused ones too; their records and usage stay); "
    "its secrets are forgotten.",
    "NAME", "runtime token rm ci", cli_no_opts, false, 1, 1, NULL },
  { NULL, NULL, NULL, NULL, NULL, NULL, false, 0, 0, NULL },
};

int
cli_cmd_token (int argc, char **argv)
{
  return cli_group_dispatch ("token", token_cmds, argc, argv);
}
