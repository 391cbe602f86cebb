/* common.c - option parsing, help, did-you-mean and error printing shared
   by every command group.  */
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

bool cli_json_errors;

int
cli_error (const rt_error *err)
{
  const char *code = err && err->code ? err->code : "internal";
  const char *msg = err && err->msg ? err->msg : "unknown error";
  const char *hint = err ? err->hint : NULL;

  if (cli_json_errors)
    {
      json_object *o = json_object_new_object (), *e = json_object_new_object ();
      json_object_object_add (e, "code", json_object_new_string (code));
      json_object_object_add (e, "message", json_object_new_string (msg));
      json_object_object_add (e, "hint", hint ? json_object_new_string (hint) : NULL);
      json_object_object_add (o, "error", e);
      fprintf (stderr, "%s\n", json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
      json_object_put (o);
    }
  else
    {
      /* A message or hint may quote the guest (its console, a path it
         named): shown as text, the hint's lines kept.  */
      cleanup_free char *safe_msg = rt_text_escape (msg, false);
      cleanup_free char *safe_hint = hint ? rt_text_escape (hint, true) : NULL;
      fprintf (stderr, "Error [%s]: %s\n", code, safe_msg ? safe_msg : msg);
      if (hint)
        fprintf (stderr, "Hint: %s\n", safe_hint ? safe_hint : hint);
    }
  return 1;
}

/* The format attribute: clang's -Wformat-nonliteral (from -Wformat=2)
   accepts vasprintf on @fmt only then.  */
static int vfail (const char *code, const char *hint, const char *fmt, va_list ap)
    __attribute__ ((format (printf, 3, 0)));

static int
vfail (const char *code, const char *hint, const char *fmt, va_list ap)
{
  rt_error e = { EINVAL, (char *) code, NULL, (char *) hint };
  int ret;

  if (vasprintf (&e.msg, fmt, ap) < 0)
    e.msg = NULL;
  ret = cli_error (&e);
  free (e.msg);
  return ret;
}

int
cli_fail (const char *code, const char *hint, const char *fmt, ...)
{
  va_list ap;
  int ret;

  va_start (ap, fmt);
  ret = vfail (code, hint, fmt, ap);
  va_end (ap);
  return ret;
}

int
cli_usage_error (const char *hint, const char *fmt, ...)
{
  va_list ap;
  int ret;

  va_start (ap, fmt);
  ret = vfail ("usage", hint, fmt, ap);
  va_end (ap);
  return ret;
}

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
cli_jstr (json_object *o, const char *key)
{
  json_object *v;

  if (!json_object_object_get_ex (o, key, &v) || v == NULL)
    return NULL;
  return json_object_get_string (v);
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

static const struct cli_opt implicit_opts[] = {
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
  for (const struct cli_opt *o = implicit_opts; o->name; o++)
    if (strcmp (o->name, name) == 0)
      {
        *index = -1;
        return o;
      }
  return NULL;
}

void
cli_print_help (struct cli_command *cmd)
{
  printf ("Usage: runtime %s%s%s %s\n\n%s\n", cmd->group, *cmd->group ? " " : "", cmd->name, cmd->usage, cmd->summary);
  printf ("\nOptions:\n");
  for (int pass = 0; pass < 2; pass++)
    for (const struct cli_opt *o = pass == 0 ? cmd->opts : implicit_opts; o && o->name; o++)
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
  if (cmd->takes_command && a->rest == NULL)
    snprintf (hint, sizeof (hint), "put the command to run after --: runtime %s%s%s %s", cmd->group,
              *cmd->group ? " " : "", cmd->name, cmd->usage);
  else
    snprintf (hint, sizeof (hint), "runtime %s%s%s --help lists the options", cmd->group, *cmd->group ? " " : "", cmd->name);
  if (s)
    cli_usage_error (hint, "Unknown option --%s. Did you mean --%s?", name, s);
  else
    cli_usage_error (hint, "Unknown option --%s.", name);
}

/* One --name or --name=value at argv[*i] (the value may take the next
   word: *i moves past it).  -1 after a usage error, 1 after --help.  */
static int
parse_option (struct cli_command *cmd, int argc, char **argv, int *i, struct cli_args *a)
{
  char *arg = argv[*i];
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
      if (strncmp (arg, "--", 2) == 0)
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
cli_remove_named (struct cli_command *cmd, int argc, char **argv,
                  int (*remove) (rt_context *ctx, const char *name, rt_error **err))
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  rt_error *err = NULL;
  int code;

  if (!cli_start (cmd, argc, argv, &a, &ctx, &code))
    return code;
  if (remove (ctx, a.pos[0], &err) < 0)
    return cli_lib_fail (err);
  if (a.json)
    {
      cleanup_json json_object *o = json_object_new_object ();
      json_object_object_add (o, "removed", json_object_new_string (a.pos[0]));
      printf ("%s\n", json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    }
  else
    printf ("%s\n", a.pos[0]);
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

int
cli_group_dispatch (const char *group, struct cli_command *cmds, int argc, char **argv)
{
  const char *names[32];
  const char *s;
  int n = 0;

  /* The man page is made from these tables at build time (--roff).  */
  if (argc == 2 && strcmp (argv[1], "--roff") == 0)
    {
      for (struct cli_command *c = cmds; c->name; c++)
        {
          c->group = group;
          cli_print_roff (c);
        }
      return 0;
    }

  if (argc < 2 || strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "help") == 0)
    {
      printf ("Usage: runtime %s <command> [options]\n\nCommands:\n", group);
      for (struct cli_command *c = cmds; c->name; c++)
        printf ("  %-10s %s\n", c->name, c->summary);
      printf ("\n'runtime %s <command> --help' shows a command's options.\n", group);
      /* The first command is the group's main one: its example is the
         group's.  */
      if (cmds->example)
        printf ("\nExample:\n  %s\n", cmds->example);
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

void
cli_progress (void *data, const char *line)
{
  (void) data;
  fprintf (stderr, "runtime: %s\n", line);
}

rt_context *
cli_context (void)
{
  rt_context *ctx = NULL;
  rt_error *err = NULL;

  if (rt_context_new (&ctx, &err) < 0)
    {
      cli_error (err);
      rt_error_free (err);
      return NULL;
    }
  rt_context_set_progress (ctx, cli_progress, NULL);
  return ctx;
}

int
cli_lib_fail (rt_error *err)
{
  int ret = cli_error (err);
  rt_error_free (err);
  return ret;
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

int
cli_show_json (struct cli_command *cmd, int argc, char **argv,
               int (*fetch) (rt_context *ctx, struct cli_args *a, char **json, rt_error **err),
               void (*table) (json_object *value))
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  rt_error *err = NULL;
  cleanup_free char *json = NULL;
  cleanup_json json_object *value = NULL;
  int code;

  if (!cli_start (cmd, argc, argv, &a, &ctx, &code))
    return code;
  if (fetch (ctx, &a, &json, &err) < 0)
    return cli_lib_fail (err);
  if (a.json)
    printf ("%s\n", json);
  else if ((value = json_tokener_parse (json)))
    table (value);
  else
    return cli_fail ("internal", NULL, "the library returned unreadable JSON");
  return 0;
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
