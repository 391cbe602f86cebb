/* main.c - `runtime <group> <command> …`: the table of groups.  */
#include <stdio.h>
#include <string.h>

#include "cli.h"

struct group
{
  const char *name;
  int (*run) (int argc, char **argv);
  const char *summary;
};

static const struct group groups[] = {
  { "sandbox", cmd_sandbox, "create, run and manage sandboxes" },
  { "image", cmd_image, "build and manage images" },
  { "usage", cmd_usage, "what sandboxes used and cost, trial hours left" },
  { "chat", cmd_chat, "ask a model whose Python runs in sandboxes (deepseek)" },
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

int
main (int argc, char **argv)
{
  const char *names[8];
  const char *s;
  int n = 0;

  /* --json before -- decides how even a usage error is printed.  */
  for (int i = 1; i < argc && strcmp (argv[i], "--") != 0; i++)
    if (strcmp (argv[i], "--json") == 0)
      cli_json_errors = true;

  if (argc < 2)
    return usage (stderr);
  if (strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "-h") == 0 || strcmp (argv[1], "help") == 0)
    return usage (stdout);
  if (strcmp (argv[1], "--version") == 0 || strcmp (argv[1], "version") == 0)
    {
      printf ("runtime %s\n", rt_version ());
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
