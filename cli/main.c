/* main.c - `runtime <group> <command> …`: the table of groups.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

struct group
{
  const char *name;
  int (*run) (int argc, char **argv);
  const char *summary;
};

static const struct group groups[] = {
  { "sandbox", cli_cmd_sandbox, "create, run and manage sandboxes" },
  { "image", cli_cmd_image, "build and manage images" },
  { "secrets", cli_cmd_secrets, "values sandboxes use but never see" },
  { "snapshot", cli_cmd_snapshot, "saved sandboxes to start new ones from" },
  { "pool", cli_cmd_pool, "warm spares: sandboxes ready before they are asked for" },
  { "token", cli_cmd_token, "API tokens for runtime serve: each one a tenant with limits" },
  { "usage", cli_cmd_usage, "what sandboxes used and cost, trial hours left" },
  { "serve", cli_cmd_serve, "the HTTP API for this machine's sandboxes (runtime serve --help)" },
  { "node", cli_cmd_node, "this host in a cluster of many hosts over NATS (runtime node --help)" },
  { "chat", cli_cmd_chat, "ask a model whose Python runs in sandboxes (deepseek)" },
  { "doctor", cli_cmd_doctor, "what this host gives sandboxes, for a bug report (any user)" },
  { NULL, NULL, NULL },
};

static int
usage (FILE *out)
{
  fprintf (out, "Usage: runtime <group> <command> [options] [-- CMD…]\n\n"
                "Runs untrusted code in throwaway QEMU microVMs on this machine.\n\nGroups:\n");
  for (const struct group *g = groups; g->name; g++)
    fprintf (out, "  %-10s %s\n", g->name, g->summary);
  fprintf (out, "\n'runtime <group> --help' lists a group's commands.\n"
                "Example:\n  runtime sandbox run -- python3 -c 'print(6*7)'\n");
  return out == stdout ? 0 : 1;
}

/* The arguments as the process shows them (/proc/PID/cmdline, readable by
   every local user for as long as a sandbox's monitor — a fork of this
   process — lives) keep only "runtime GROUP COMMAND": an `--env K=V` or a
   command line may hold a secret.  The program goes on with copies.  */
static char **
hide_args (int argc, char **argv)
{
  char **copy = calloc (argc + 1, sizeof (char *));

  if (copy == NULL)
    return argv;
  for (int i = 0; i < argc; i++)
    if ((copy[i] = strdup (argv[i])) == NULL)
      return argv;
  for (int i = 1; i < argc; i++)
    if (i > 2 || argv[i][0] == '-')
      explicit_bzero (argv[i], strlen (argv[i]));
  return copy;
}

int
main (int argc, char **argv)
{
  const char *names[16];
  const char *s;
  int n = 0;

  argv = hide_args (argc, argv);

  /* --json before -- decides how even a usage error is printed.  */
  for (int i = 1; i < argc && strcmp (argv[i], "--") != 0; i++)
    if (strcmp (argv[i], "--json") == 0)
      cli_json_errors = true;

  if (argc < 2)
    return usage (stderr);
  if (strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "-h") == 0 || strcmp (argv[1], "help") == 0)
    return usage (stdout);
  if (strcmp (argv[1], "--roff") == 0)
    {
      /* runtime.1, from the same tables as --help.  */
      printf (".TH RUNTIME 1 \"\" \"runtime %s\" \"User Commands\"\n"
              ".SH NAME\nruntime \\- run untrusted code in throwaway QEMU microVMs\n"
              ".SH SYNOPSIS\n.B runtime\n\\fIgroup\\fR \\fIcommand\\fR [\\fIoptions\\fR] [\\-\\- \\fICMD\\fR...]\n"
              ".SH DESCRIPTION\nEvery sandbox is a QEMU microVM on this host, its network confined by this host, "
              "its CPU time metered here. Every command takes \\-\\-json (one JSON value on stdout; errors as "
              "{\\(dqerror\\(dq:{code,message,hint}} on stderr) and \\-\\-help. Errors exit 1; run and exec "
              "exit with the command's code (124 on timeout, 130 after Ctrl\\-C).\n.SH COMMANDS\n",
              rt_version ());
      for (const struct group *g = groups; g->name; g++)
        {
          char *sub[] = { (char *) g->name, (char *) "--roff", NULL };
          g->run (2, sub);
        }
      printf (".SH INTERACTIVE USE\n"
              "\\fBsandbox shell\\fR \\fIID\\fR and \\fBsandbox exec \\-it\\fR \\fIID\\fR \\-\\- \\fICMD\\fR run "
              "on a pseudo\\-terminal in the guest, sized like the window and resized with it; the host terminal "
              "is raw meanwhile, so Ctrl\\-C, Ctrl\\-Z and Ctrl\\-\\e reach the program, and is put back on "
              "every way out (the end, an error, SIGTERM, SIGHUP or SIGINT to runtime: the command then gets "
              "SIGTERM, SIGKILL 5 s later, exit 130; a sandbox that has not answered 5 s after the SIGKILL is given up on: "
              "cleanup_failed, exit 1). TERM is passed on (xterm\\-256color when unset). \\-t "
              "needs a terminal on stdin; \\-i alone streams stdin, any size, until its end.\n.PP\n"
              "\\fBsandbox forward\\fR \\fIID\\fR [[\\fIADDR\\fR:]\\fILOCAL\\fR:]\\fIREMOTE\\fR listens "
              "on the host (127.0.0.1 unless \\fIADDR\\fR) and carries each connection to 127.0.0.1:\\fIREMOTE\\fR "
              "in the sandbox over its agent channel: no route, no egress rule change.\n.PP\n"
              "\\fBsandbox spawn\\fR \\fIID\\fR \\-\\-stdin \\-\\- \\fICMD\\fR keeps the process's stdin "
              "open; \\fBsandbox write\\fR \\fIID\\fR \\fIPID\\fR [\\-\\-eof] sends it what write reads on "
              "its own stdin (\\-\\-eof: then closes it); one writer at a time per process: bytes sent over "
              "what another writer wrote since are refused (invalid_offset, exit 1), not interleaved.\n");
      printf (".SH ENVIRONMENT\n.TP\n.B RUNTIME_STATE_DIR\nwhere live sandboxes keep their sockets, pids and "
              "small state; their disks are in RUNTIME_DATA_DIR (default: see FILES)\n"
              ".TP\n.B RUNTIME_DATA_DIR\nimages, the ledger, secrets and the egress CA (default: see FILES)\n"
              ".TP\n.B RUNTIME_CACHE_DIR\nthe kernel, the accelerator probe and boot disks (default: see FILES)\n"
              ".TP\n.B RUNTIME_ACCEL\nkvm or tcg instead of the probe (default: the probe's answer)\n"
              ".TP\n.B RUNTIME_QEMU\nthe QEMU binary (default: qemu\\-system\\-x86_64 on PATH)\n"
              ".TP\n.B RUNTIME_TEMPLATES\noff: every sandbox boots cold, no template is made in the background "
              "(default: on)\n"
              ".TP\n.B RUNTIME_TEMPLATE_KEEP_S\nseconds a template's keeper holds its memory unasked (default: 300)\n"
              ".TP\n.B DEEPSEEK_API_KEY\nthe key of runtime chat deepseek (no default: required)\n"
              ".SH FILES\nAs root:\n.TP\n.I /run/runtime\nstate of live sandboxes\n"
              ".TP\n.I /var/lib/runtime\ndata: images/, snapshots/, sandboxes/ (records of ended sandboxes, disks and paused state of live ones), ledger/, secrets.json, ca/, rates.json (optional prices), tokens.json (API token hashes), tenants/ (each token's secrets)\n"
              ".TP\n.I /var/cache/runtime\ncache: kernel/, disks/, templates/, accel\n"
              ".PP\nOnly root manages sandboxes here: another user gets permission_denied from every command but "
              "\\-\\-help, \\-\\-version and doctor, unless RUNTIME_API_URL makes runtime a client of a "
              "runtime serve.\n"
              ".SH SEE ALSO\nThe README of the source tree.\n");
      return 0;
    }
  if (strcmp (argv[1], "--version") == 0 || strcmp (argv[1], "version") == 0)
    {
      rt_context *ctx = NULL;
      rt_error *err = NULL;
      const char *accel = NULL;
      /* The accelerator sandboxes get (probed once, then cached).  */
      if (rt_context_new (&ctx, &err) < 0 || rt_context_accel (ctx, &accel, &err) < 0)
        accel = NULL;
      printf ("runtime %s\naccelerator: %s%s%s\n", rt_version (), accel ? accel : "unknown (",
              accel ? "" : (err && err->msg ? err->msg : "?"), accel ? "" : ")");
      rt_error_free (err);
      rt_context_free (ctx);
      return 0;
    }
  for (const struct group *g = groups; g->name; g++)
    {
      if (strcmp (g->name, argv[1]) == 0)
        return g->run (argc - 1, argv + 1);
      names[n++] = g->name;
    }
  names[n] = NULL;
  s = cli_suggest (argv[1], names);
  if (s)
    return cli_usage_error ("runtime --help lists the groups", "Unknown command '%s'. Did you mean '%s'?", argv[1], s);
  return cli_usage_error ("runtime --help lists the groups", "Unknown command '%s'.", argv[1]);
}
