/* parse.c - a command's arguments read against its option table, the
   group's command found by name, and a did-you-mean for a slip in
   either.  */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "help.h"
#include "output.h"
#include "parse.h"

/* Optimal string alignment distance: Levenshtein plus adjacent
   transpositions ("rnu" is one slip from "run").  */
static size_t
edit_distance (const char *a, const char *b)
{
  size_t la = strlen (a), lb = strlen (b);
  size_t d[3][64], *prev2 = d[0], *prev = d[1], *cur = d[2];

  if (la >= 64 || lb >= 64)
    return 99;
  for (size_t j = 0; j <= lb; j++)
    prev[j] = j;
  for (size_t i = 1; i <= la; i++)
    {
      size_t *t;
      cur[0] = i;
      for (size_t j = 1; j <= lb; j++)
        {
          size_t best = prev[j - 1] + (a[i - 1] != b[j - 1]);
          if (prev[j] + 1 < best)
            best = prev[j] + 1;
          if (cur[j - 1] + 1 < best)
            best = cur[j - 1] + 1;
          if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < best)
            best = prev2[j - 2] + 1;
          cur[j] = best;
        }
      t = prev2;
      prev2 = prev;
      prev = cur;
      cur = t;
    }
  return prev[lb];
}

const char *
cli_suggest (const char *word, const char *const *names)
{
  const char *best = NULL;
  size_t best_d = 99, wl = strlen (word);

  /* A prefix either way ("--mem", "--memory-mib") is the likeliest slip.  */
  for (const char *const *n = names; *n; n++)
    {
      size_t nl = strlen (*n);
      if (wl > 0 && (strncmp (*n, word, wl) == 0 || strncmp (word, *n, nl) == 0))
        return *n;
    }
  for (const char *const *n = names; *n; n++)
    {
      size_t d = edit_distance (word, *n);
      if (d < best_d)
        {
          best_d = d;
          best = *n;
        }
    }
  if (best && best_d <= (wl > 5 ? 2u : 1u))
    return best;
  return NULL;
}

const struct cli_opt cli_no_opts[] = {
  { NULL, NULL, NULL, NULL, false },
};

const struct cli_opt cli_implicit_opts[] = {
  { "json", NULL, "print one JSON value on stdout (errors as JSON on stderr)", NULL, false },
  { "help", NULL, "show this help", NULL, false },
  { NULL, NULL, NULL, NULL, false },
};

static const struct cli_opt *
find_opt (struct cli_command *cmd, const char *name, int *index)
{
  int i = 0;
  for (const struct cli_opt *o = cmd->opts; o && o->name; o++, i++)
    if (strcmp (o->name, name) == 0)
      {
        *index = i;
        return o;
      }
  for (const struct cli_opt *o = cli_implicit_opts; o->name; o++)
    if (strcmp (o->name, name) == 0)
      {
        *index = -1;
        return o;
      }
  return NULL;
}

/* Prints the usage error for an unknown --@name, with the likeliest one.  */
static void
unknown_option (struct cli_command *cmd, struct cli_args *a, const char *name)
{
  const char *names[CLI_MAX_OPTS + 4];
  const char *s;
  int n = 0;
  char hint[256];

  for (const struct cli_opt *p = cmd->opts; p && p->name && n < CLI_MAX_OPTS; p++)
    names[n++] = p->name;
  names[n++] = "json";
  names[n++] = "help";
  names[n] = NULL;
  s = cli_suggest (name, names);
  /* A slip of one of ours gets its name alone; "after --" is for an option
     that may well be the command's own.  */
  if (cmd->takes_command && a->rest == NULL && s == NULL)
    snprintf (hint, sizeof (hint), "put the command to run after --: runtime %s%s%s %s", cmd->group,
              *cmd->group ? " " : "", cmd->name, cmd->usage);
  else
    snprintf (hint, sizeof (hint), "runtime %s%s%s --help lists the options", cmd->group, *cmd->group ? " " : "", cmd->name);
  if (s)
    cli_usage_error (hint, "Unknown option --%s. Did you mean --%s?", name, s);
  else
    cli_usage_error (hint, "Unknown option --%s.", name);
}

/* The long form of a one-letter option @arg, or NULL: -h for --help
   everywhere, -a for --all where there is one (as ls -a, docker ps -a).  */
static const char *
short_alias (struct cli_command *cmd, const char *arg)
{
  int idx;

  if (strcmp (arg, "-h") == 0)
    return "--help";
  if (strcmp (arg, "-a") == 0 && find_opt (cmd, "all", &idx))
    return "--all";
  return NULL;
}

/* One --name or --name=value at argv[*i] (the value may take the next
   word: *i moves past it).  -1 after a usage error, 1 after --help.  */
static int
parse_option (struct cli_command *cmd, int argc, char **argv, int *i, struct cli_args *a)
{
  char *arg = short_alias (cmd, argv[*i]) ? (char *) short_alias (cmd, argv[*i]) : argv[*i];
  const char *eq = strchr (arg + 2, '=');
  const struct cli_opt *o;
  const char *value = NULL;
  char name[64];
  int idx = -1;

  /* argv stays untouched: the name is copied out.  */
  snprintf (name, sizeof (name), "%.*s", eq ? (int) (eq - arg - 2) : (int) strlen (arg + 2), arg + 2);
  o = find_opt (cmd, name, &idx);
  if (o == NULL)
    {
      unknown_option (cmd, a, name);
      return -1;
    }
  if (o->metavar)
    {
      if (eq)
        value = eq + 1;
      else if (*i + 1 < argc && strcmp (argv[*i + 1], "--") != 0)
        value = argv[++*i];
      else
        {
          cli_usage_error (NULL, "--%s needs a value (%s)", o->name, o->metavar);
          return -1;
        }
    }
  else if (eq)
    {
      cli_usage_error (NULL, "--%s takes no value", o->name);
      return -1;
    }
  if (idx < 0)
    {
      if (strcmp (o->name, "help") == 0)
        {
          cli_print_help (cmd);
          return 1;
        }
      a->json = true;
      return 0;
    }
  if (a->count[idx] > 0 && !o->repeat)
    {
      cli_usage_error (NULL, "--%s given twice", o->name);
      return -1;
    }
  if (o->repeat)
    {
      const char **m = realloc (a->multi[idx], (a->count[idx] + 2) * sizeof (char *));
      if (m == NULL)
        return -1;
      m[a->count[idx]] = value;
      m[a->count[idx] + 1] = NULL;
      a->multi[idx] = m;
    }
  a->count[idx]++;
  a->val[idx] = value ? value : "";
  return 0;
}

int
cli_parse (struct cli_command *cmd, int argc, char **argv, struct cli_args *a)
{
  memset (a, 0, sizeof (*a));
  for (int i = 1; i < argc; i++)
    {
      char *arg = argv[i];
      if (strcmp (arg, "--") == 0)
        {
          if (!cmd->takes_command)
            {
              cli_usage_error (NULL, "'runtime %s%s%s' takes no command after --", cmd->group, *cmd->group ? " " : "", cmd->name);
              return -1;
            }
          a->rest = argv + i + 1;
          a->nrest = argc - i - 1;
          break;
        }
      if (strncmp (arg, "--", 2) == 0 || short_alias (cmd, arg))
        {
          int ret = parse_option (cmd, argc, argv, &i, a);
          if (ret != 0)
            return ret;
          continue;
        }
      if (cmd->takes_command && (a->npos >= cmd->max_pos || a->npos >= CLI_MAX_POS))
        {
          char hint[256];
          snprintf (hint, sizeof (hint), "put the command to run after --: runtime %s%s%s %s", cmd->group, *cmd->group ? " " : "", cmd->name,
                    cmd->usage);
          cli_usage_error (hint, "'%s' is not an option of 'runtime %s%s%s'", arg, cmd->group, *cmd->group ? " " : "", cmd->name);
          return -1;
        }
      if (a->npos >= cmd->max_pos || a->npos >= CLI_MAX_POS)
        {
          cli_usage_error (NULL, "unexpected argument '%s'", arg);
          return -1;
        }
      a->pos[a->npos++] = arg;
    }
  if (a->npos < cmd->min_pos)
    {
      cli_usage_error (NULL, "usage: runtime %s%s%s %s", cmd->group, *cmd->group ? " " : "", cmd->name, cmd->usage);
      return -1;
    }
  if (cmd->takes_command && a->nrest == 0)
    {
      char hint[256];
      snprintf (hint, sizeof (hint), "for example: %s", cmd->example ? cmd->example : cmd->usage);
      cli_usage_error (hint, "no command given: put it after --");
      return -1;
    }
  return 0;
}

void
cli_args_free (struct cli_args *a)
{
  /* Twice is harmless: cli_begin frees on failure, a cleanup again.  */
  for (int i = 0; i < CLI_MAX_OPTS; i++)
    {
      free (a->multi[i]);
      a->multi[i] = NULL;
    }
  for (int i = 0; i < a->nowned; i++)
    free (a->owned[i]);
  free (a->owned);
  a->owned = NULL;
  a->nowned = 0;
}

int
cli_opt_index (struct cli_command *cmd, const char *name)
{
  int i = -1;

  return find_opt (cmd, name, &i) ? i : -1;
}

const char *
cli_opt (struct cli_command *cmd, struct cli_args *a, const char *name)
{
  int i = 0;
  for (const struct cli_opt *o = cmd->opts; o && o->name; o++, i++)
    if (strcmp (o->name, name) == 0)
      return a->val[i];
  return NULL;
}

const char *
cli_opt_or_env (struct cli_command *cmd, struct cli_args *a, const char *name, const char *var)
{
  const char *v = cli_opt (cmd, a, name);

  if (v == NULL && (v = getenv (var)) != NULL && *v == '\0')
    v = NULL;
  return v;
}

int
cli_opt_uint (struct cli_command *cmd, struct cli_args *a, const char *name, unsigned long min, unsigned long max,
              unsigned long *out)
{
  const char *v = cli_opt (cmd, a, name);
  char *end = NULL;
  unsigned long n;

  if (v == NULL)
    return 0;
  errno = 0;
  n = strtoul (v, &end, 10);
  if (*v == '\0' || *v == '-' || *end != '\0' || errno != 0 || n < min || n > max)
    {
      cli_usage_error (NULL, "--%s must be a whole number from %lu to %lu, not '%s'", name, min, max, v);
      return -1;
    }
  *out = n;
  return 0;
}

int
cli_opt_usd (struct cli_command *cmd, struct cli_args *a, const char *name, int64_t *micros)
{
  const char *v = cli_opt (cmd, a, name);
  char *end = NULL;
  double usd;

  if (v == NULL)
    return 0;
  errno = 0;
  usd = strtod (v, &end);
  if (*v == '\0' || *end != '\0' || errno || !(usd > 0) || usd > 1e6)
    {
      cli_usage_error ("for example: --max-cost 0.05", "--%s takes dollars, not '%s'", name, v);
      return -1;
    }
  *micros = (int64_t) (usd * 1e6 + 0.5);
  return 0;
}

int
cli_parse_size (const char *v, int plain_shift, uint64_t *out)
{
  static const char units[] = "KMGT";
  const char *u;
  char *end = NULL;
  unsigned long long n;
  int shift = plain_shift;

  errno = 0;
  n = strtoull (v, &end, 10);
  if (*end && (u = strchr (units, *end & ~0x20)) != NULL)
    {
      shift = 10 * (int) (u - units + 1);
      end++;
      if (strcmp (end, "B") == 0 || strcmp (end, "iB") == 0 || strcmp (end, "b") == 0)
        end += strlen (end);
    }
  else if (strcmp (end, "B") == 0 || strcmp (end, "b") == 0)
    {
      shift = 0;
      end++;
    }
  if (*v == '\0' || *v == '-' || *end != '\0' || errno != 0 || n == 0 || n > (UINT64_MAX >> shift))
    return -1;
  *out = (uint64_t) n << shift;
  return 0;
}

int
cli_opt_mib (struct cli_command *cmd, struct cli_args *a, const char *name, unsigned long min, unsigned long max,
             unsigned long *out)
{
  const char *v = cli_opt (cmd, a, name);
  uint64_t bytes = 0;
  char hint[96];

  if (v == NULL)
    return 0;
  if (cli_parse_size (v, 20, &bytes) < 0 || bytes % (1 << 20) != 0 || (bytes >> 20) < min || (bytes >> 20) > max)
    {
      snprintf (hint, sizeof (hint), "a number is MiB; or say the unit: --%s %lum, --%s %lug", name, min, name,
                max >> 10);
      cli_usage_error (hint, "--%s must be from %lu MiB to %lu MiB (%lu GiB), not '%s'", name, min, max, max >> 10, v);
      return -1;
    }
  *out = (unsigned long) (bytes >> 20);
  return 0;
}

const char **
cli_opt_list (struct cli_command *cmd, struct cli_args *a, const char *name, int *n)
{
  int i = 0;
  for (const struct cli_opt *o = cmd->opts; o && o->name; o++, i++)
    if (strcmp (o->name, name) == 0)
      {
        if (n)
          *n = a->count[i];
        return a->multi[i];
      }
  if (n)
    *n = 0;
  return NULL;
}

bool
cli_begin (struct cli_command *cmd, int argc, char **argv, struct cli_args *a, int *code)
{
  int ret = cli_parse (cmd, argc, argv, a);

  if (ret != 0)
    {
      cli_args_free (a);
      *code = ret > 0 ? 0 : 1;
      return false;
    }
  return true;
}

bool
cli_start (struct cli_command *cmd, int argc, char **argv, struct cli_args *a, rt_context **ctx, int *code)
{
  *ctx = NULL;
  if (!cli_begin (cmd, argc, argv, a, code))
    return false;
  *ctx = cli_context ();
  *code = 1;
  return *ctx != NULL;
}

/* True when @w is "-" and one or more of @letters, nothing else.  */
static bool
short_cluster (const char *w, const char *letters)
{
  if (w[0] != '-' || w[1] == '\0' || w[1] == '-')
    return false;
  for (const char *c = w + 1; *c; c++)
    if (strchr (letters, *c) == NULL)
      return false;
  return true;
}

char **
cli_short_flags (int argc, char **argv, const char *letters, const char *const *names, int *out_argc)
{
  size_t cap = (size_t) argc + 1;
  char **out;
  int n = 0;
  bool dash = false;

  for (int i = 0; i < argc; i++)
    if (short_cluster (argv[i], letters))
      cap += strlen (argv[i]);
  out = calloc (cap, sizeof (char *));
  if (out == NULL)
    return NULL;
  for (int i = 0; i < argc; i++)
    {
      dash = dash || strcmp (argv[i], "--") == 0;
      if (dash || i == 0 || !short_cluster (argv[i], letters))
        {
          out[n++] = argv[i];
          continue;
        }
      for (const char *c = argv[i] + 1; *c; c++)
        out[n++] = (char *) names[strchr (letters, *c) - letters];
    }
  out[n] = NULL;
  *out_argc = n;
  return out;
}

int
cli_group_dispatch (const char *group, struct cli_command *cmds, int argc, char **argv)
{
  const char *names[32];
  const char *s;
  int n = 0;

  /* The man page is made from these tables at build time (--roff).  */
  if (argc == 2 && strcmp (argv[1], "--roff") == 0)
    {
      cli_print_group_roff (group, cmds);
      return 0;
    }

  if (argc < 2 || strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "help") == 0)
    {
      cli_print_group_help (group, cmds);
      return argc < 2 ? 1 : 0;
    }
  for (struct cli_command *c = cmds; c->name; c++)
    {
      if (strcmp (c->name, argv[1]) == 0)
        {
          c->group = group;
          return c->run (c, argc - 1, argv + 1);
        }
      if (n < 31)
        names[n++] = c->name;
    }
  names[n] = NULL;
  s = cli_suggest (argv[1], names);
  {
    char hint[128];
    snprintf (hint, sizeof (hint), "runtime %s --help lists the commands", group);
    if (s)
      return cli_usage_error (hint, "Unknown command '%s %s'. Did you mean '%s'?", group, argv[1], s);
    return cli_usage_error (hint, "Unknown command '%s %s'.", group, argv[1]);
  }
}

int
cli_run_single (struct cli_command *cmd, int argc, char **argv)
{
  if (argc == 2 && strcmp (argv[1], "--roff") == 0)
    {
      cli_print_roff (cmd);
      return 0;
    }
  return cmd->run (cmd, argc, argv);
}
