/* help.c - a command's --help and its section of runtime.1, both from
   its option table, and a group's list of commands.  */
#include <stdio.h>

#include "help.h"

void
cli_print_help (struct cli_command *cmd)
{
  printf ("Usage: runtime %s%s%s %s\n\n%s\n", cmd->group, *cmd->group ? " " : "", cmd->name, cmd->usage, cmd->summary);
  printf ("\nOptions:\n");
  for (int pass = 0; pass < 2; pass++)
    for (const struct cli_opt *o = pass == 0 ? cmd->opts : cli_implicit_opts; o && o->name; o++)
      {
        char left[64];
        snprintf (left, sizeof (left), "--%s%s%s", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
        printf ("  %-24s %s", left, o->help);
        if (o->dflt)
          printf (" (default: %s)", o->dflt);
        if (o->repeat)
          printf (" (repeatable)");
        printf ("\n");
      }
  if (cmd->example)
    printf ("\nExample:\n  %s\n", cmd->example);
}

/* roff-escaped text: backslashes, a leading dot or quote, and UTF-8 as
   \[uXXXX] (plain groff reads its input as Latin-1).  */
static void
roff (const char *s)
{
  if (*s == '.' || *s == '\'')
    fputs ("\\&", stdout);
  for (; *s; s++)
    {
      unsigned char c = *s;
      if (c == '\\')
        fputs ("\\e", stdout);
      else if (c == '-')
        fputs ("\\-", stdout);
      else if (c >= 0xc0 && c < 0xf0 && (s[1] & 0xc0) == 0x80 && (c < 0xe0 || (s[2] & 0xc0) == 0x80))
        {
          unsigned cp = c < 0xe0 ? (c & 0x1f) << 6 | (s[1] & 0x3f) : (c & 0x0f) << 12 | (s[1] & 0x3f) << 6 | (s[2] & 0x3f);
          s += c < 0xe0 ? 1 : 2;
          printf ("\\[u%04X]", cp);
        }
      else
        putchar (c);
    }
}

void
cli_print_roff (struct cli_command *cmd)
{
  printf (".SS \"runtime %s%s%s\"\n.B runtime %s%s%s\n", cmd->group, *cmd->group ? " " : "", cmd->name, cmd->group,
          *cmd->group ? " " : "", cmd->name);
  roff (cmd->usage);
  printf ("\n.PP\n");
  roff (cmd->summary);
  printf ("\n");
  for (const struct cli_opt *o = cmd->opts; o && o->name; o++)
    {
      printf (".TP\n.B \\-\\-");
      roff (o->name);
      if (o->metavar)
        {
          printf (" \\fI");
          roff (o->metavar);
          printf ("\\fR");
        }
      printf ("\n");
      roff (o->help);
      if (o->dflt)
        {
          printf (" (default: ");
          roff (o->dflt);
          printf (")");
        }
      if (o->repeat)
        printf (" (repeatable)");
      printf ("\n");
    }
  if (cmd->example)
    {
      printf (".PP\nExample:\n.RS\n.nf\n");
      roff (cmd->example);
      printf ("\n.fi\n.RE\n");
    }
}

void
cli_print_group_help (const char *group, struct cli_command *cmds)
{
  printf ("Usage: runtime %s <command> [options]\n\nCommands:\n", group);
  for (struct cli_command *c = cmds; c->name; c++)
    printf ("  %-10s %s\n", c->name, c->summary);
  printf ("\n'runtime %s <command> --help' shows a command's options.\n", group);
  /* The first command is the group's main one: its example is the
     group's.  */
  if (cmds->example)
    printf ("\nExample:\n  %s\n", cmds->example);
}

void
cli_print_group_roff (const char *group, struct cli_command *cmds)
{
  for (struct cli_command *c = cmds; c->name; c++)
    {
      c->group = group;
      cli_print_roff (c);
    }
}
