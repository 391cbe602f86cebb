/* sandbox-state.c - `runtime sandbox ls, get, stop, pause, wake, rm,
   extend`: a sandbox's record and its life.  */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sandbox.h"


/* --state: one of the library's state names.  */
static int
check_state (const char *state)
{
  const char *names[RT_SANDBOX_STOPPED + 2] = { NULL };

  for (int i = 0; i <= RT_SANDBOX_STOPPED; i++)
    names[i] = rt_sandbox_state_name ((enum rt_sandbox_state) i);
  return cli_check_choice ("state", state, names);
}

/* Does @sb (a get object) carry label "k=v"?  Labels come as an object
   {k: v}, or as an array of "k=v".  */
static bool
has_label (json_object *sb, const char *kv)
{
  const char *eq = strchr (kv, '=');
  json_object *labels, *v;

  if (!json_object_object_get_ex (sb, "labels", &labels) || labels == NULL)
    return false;
  if (json_object_is_type (labels, json_type_array))
    {
      for (size_t i = 0; i < json_object_array_length (labels); i++)
        {
          const char *s = json_object_get_string (json_object_array_get_idx (labels, i));
          if (s && strcmp (s, kv) == 0)
            return true;
        }
      return false;
    }
  {
    char key[256];
    snprintf (key, sizeof (key), "%.*s", (int) (eq - kv), kv);
    return json_object_object_get_ex (labels, key, &v) && v && strcmp (json_object_get_string (v), eq + 1) == 0;
  }
}

static void
print_table (char *(*rows)[6], size_t n)
{
  size_t w[6] = { 0 };

  for (size_t r = 0; r < n; r++)
    for (int c = 0; c < 6; c++)
      if (strlen (rows[r][c]) > w[c])
        w[c] = strlen (rows[r][c]);
  for (size_t r = 0; r < n; r++)
    printf ("%-*s  %-*s  %-*s  %-*s  %-*s  %s\n", (int) w[0], rows[r][0], (int) w[1], rows[r][1], (int) w[2],
            rows[r][2], (int) w[3], rows[r][3], (int) w[4], rows[r][4], rows[r][5]);
}

/* The table of `ls` for the sandboxes in @keep; 0, or 1 when out of memory.  */
static int
print_ls_table (json_object *keep)
{
  char *(*rows)[6];
  size_t nrows = json_object_array_length (keep) + 1;
  int code = 1;

  rows = calloc (nrows, sizeof (*rows));
  if (rows == NULL)
    return 1;
  rows[0][0] = strdup ("ID");
  rows[0][1] = strdup ("NAME");
  rows[0][2] = strdup ("STATE");
  rows[0][3] = strdup ("CPU/MIB");
  rows[0][4] = strdup ("FUNDING");
  rows[0][5] = strdup ("EXPIRES");
  for (size_t i = 1; i < nrows; i++)
    {
      json_object *sb = json_object_array_get_idx (keep, i - 1), *v;
      const char *st = cli_jstr (sb, "state"), *s;
      long vcpu = json_object_object_get_ex (sb, "vcpu", &v) ? json_object_get_int64 (v) : 0;
      long mem = json_object_object_get_ex (sb, "memoryMiB", &v) ? json_object_get_int64 (v) : 0;

      rows[i][0] = strdup ((s = cli_jstr (sb, "id")) ? s : "-");
      rows[i][1] = strdup ((s = cli_jstr (sb, "name")) && *s ? s : "-");
      rows[i][2] = strdup (st ? st : "-");
      if (asprintf (&rows[i][3], "%ld/%ld", vcpu, mem) < 0)
        rows[i][3] = NULL;
      rows[i][4] = strdup ((s = cli_jstr (sb, "funding")) ? s : "-");
      rows[i][5] = strdup ((s = cli_jstr (sb, "expiresAt")) && !cli_state_is (st, RT_SANDBOX_STOPPED) ? s : "-");
    }
  for (size_t i = 0; i < nrows; i++)
    for (int c = 0; c < 6; c++)
      if (rows[i][c] == NULL)
        goto out;
  print_table (rows, nrows);
  code = 0;

out:
  for (size_t i = 0; i < nrows; i++)
    for (int c = 0; c < 6; c++)
      free (rows[i][c]);
  free (rows);
  return code;
}

/* The --label K=V options of @a, each checked; -1 after a usage error.  */
static int
read_labels (struct cli_command *cmd, struct cli_args *a, const char ***kv, int *n)
{
  *kv = cli_opt_list (cmd, a, "label", n);
  for (int i = 0; i < *n; i++)
    if (strchr ((*kv)[i], '=') == NULL || (*kv)[i][0] == '=')
      return cli_usage_error ("for example: --label team=ml", "--label '%s' is not key=value", (*kv)[i]), -1;
  return 0;
}

int
cli_sandbox_ls (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  rt_error *err = NULL;
  json_object *all = NULL, *keep = NULL;
  char *json = NULL;
  const char **labels, *state;
  int nlabels, code = 1;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  if (read_labels (cmd, &a, &labels, &nlabels) < 0)
    goto out;
  state = cli_opt (cmd, &a, "state");
  if (state && check_state (state) < 0)
    goto out;

  ctx = cli_context ();
  if (ctx == NULL)
    goto out;
  /* A stopped sandbox is only listed with --all; asking for that state
     asks for them too.  */
  if (rt_sandbox_list_json (ctx, cli_has_opt (cmd, &a, "all") || cli_state_is (state, RT_SANDBOX_STOPPED), &json, &err)
      < 0)
    {
      code = cli_lib_fail (err);
      goto out;
    }
  all = cli_parse_json (json);
  if (all == NULL)
    goto out;
  if (!json_object_is_type (all, json_type_array))
    {
      cli_fail ("internal", NULL, "the library's sandbox list is not an array");
      goto out;
    }
  keep = json_object_new_array ();
  for (size_t i = 0; i < json_object_array_length (all); i++)
    {
      json_object *sb = json_object_array_get_idx (all, i);
      const char *st = cli_jstr (sb, "state");
      bool match = !state || (st && strcmp (st, state) == 0);
      for (int l = 0; match && l < nlabels; l++)
        match = has_label (sb, labels[l]);
      if (match)
        json_object_array_add (keep, json_object_get (sb));
    }
  if (a.json)
    {
      cli_print_json (keep);
      code = 0;
      goto out;
    }

  code = print_ls_table (keep);

out:
  json_object_put (keep);
  json_object_put (all);
  free (json);
  return code;
}

/* A value of a get object as one table cell: null or empty is "-", arrays
   are comma-separated, objects k=v,k=v.  */
static void
write_value (FILE *f, json_object *v, bool top)
{
  bool first = true;

  if (v == NULL)
    {
      fputs (top ? "-" : "null", f);
      return;
    }
  switch (json_object_get_type (v))
    {
    case json_type_array:
      if (!top)
        {
          fputs (json_object_to_json_string_ext (v, JSON_FLAGS), f);
          return;
        }
      if (json_object_array_length (v) == 0)
        fputs ("-", f);
      for (size_t i = 0; i < json_object_array_length (v); i++)
        {
          fputs (i ? "," : "", f);
          write_value (f, json_object_array_get_idx (v, i), false);
        }
      return;
    case json_type_object:
      if (!top)
        {
          fputs (json_object_to_json_string_ext (v, JSON_FLAGS), f);
          return;
        }
      {
        json_object_object_foreach (v, key, val)
        {
          fprintf (f, "%s%s=", first ? "" : ",", key);
          write_value (f, val, false);
          first = false;
        }
      }
      if (first)
        fputs ("-", f);
      return;
    case json_type_string:
      {
        /* A value may quote the guest (a start-up error's console lines).  */
        cleanup_free char *text = rt_text_escape (json_object_get_string (v), false);
        fputs (top && json_object_get_string_len (v) == 0 ? "-" : text ? text : "?", f);
      }
      return;
    case json_type_null:
    case json_type_boolean:
    case json_type_double:
    case json_type_int:
    default:
      fputs (json_object_get_string (v), f);
      return;
    }
}

void
cli_print_fields (json_object *o)
{
  int width = 0;

  {
    json_object_object_foreach (o, key, val)
    {
      (void) val;
      if ((int) strlen (key) > width)
        width = strlen (key);
    }
  }
  {
    json_object_object_foreach (o, key, val)
    {
      printf ("%-*s  ", width, key);
      write_value (stdout, val, true);
      putchar ('\n');
    }
  }
}

int
cli_sandbox_get (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  rt_error *err = NULL;
  cleanup_json json_object *o = NULL;
  cleanup_free char *json = NULL;
  int code;

  if (!cli_start (cmd, argc, argv, &a, &ctx, &code))
    return code;
  if (a.json)
    return cli_print_get_json (ctx, a.pos[0]);
  if (rt_sandbox_get_json (ctx, a.pos[0], &json, &err) < 0)
    return cli_lib_fail (err);
  o = cli_parse_json (json);
  if (o == NULL)
    return 1;
  cli_print_fields (o);
  return 0;
}

enum action
{
  ACT_STOP,
  ACT_PAUSE,
  ACT_WAKE,
};

/* stop, pause, wake: open the sandbox, act, print its id (or, with --json,
   its object as it is afterwards).  */
static int
sandbox_act (struct cli_command *cmd, int argc, char **argv, enum action act)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  cleanup_free char *id = NULL;
  int ret, code;

  if (!cli_start (cmd, argc, argv, &a, &ctx, &code))
    return code;
  if (rt_sandbox_open (ctx, a.pos[0], &sb, &err) < 0)
    {
      cleanup_json json_object *o = NULL;
      cleanup_free char *json = NULL;
      json_object *v;
      /* Stopping what has stopped already is done, as rm is idempotent.  */
      if (act != ACT_STOP || (strcmp (err->code, "sandbox_stopped") != 0 && strcmp (err->code, "sandbox_not_ready") != 0))
        return cli_lib_fail (err);
      rt_error_free (err);
      err = NULL;
      if (a.json)
        return cli_print_get_json (ctx, a.pos[0]);
      if (rt_sandbox_get_json (ctx, a.pos[0], &json, &err) < 0)
        return cli_lib_fail (err);
      if (!(o = json_tokener_parse (json)) || !json_object_object_get_ex (o, "id", &v))
        return 1;
      printf ("%s\n", json_object_get_string (v));
      return 0;
    }
  id = strdup (rt_sandbox_id (sb));
  if (id == NULL)
    return 1;
  switch (act)
    {
    case ACT_STOP:
      ret = rt_sandbox_stop (sb, &err);
      break;
    case ACT_PAUSE:
      ret = rt_sandbox_pause (sb, &err);
      break;
    case ACT_WAKE:
    default:
      ret = rt_sandbox_wake (sb, &err);
      break;
    }
  if (ret < 0)
    return cli_lib_fail (err);
  if (a.json)
    return cli_print_get_json (ctx, id);
  printf ("%s\n", id);
  return 0;
}

int
cli_sandbox_stop (struct cli_command *cmd, int argc, char **argv)
{
  return sandbox_act (cmd, argc, argv, ACT_STOP);
}

int
cli_sandbox_pause (struct cli_command *cmd, int argc, char **argv)
{
  return sandbox_act (cmd, argc, argv, ACT_PAUSE);
}

int
cli_sandbox_wake (struct cli_command *cmd, int argc, char **argv)
{
  return sandbox_act (cmd, argc, argv, ACT_WAKE);
}

/* Removes @ref (learning the id behind a name first: afterwards nothing
   knows it) and says so; removing what was removed is done, an id that
   never was is not_found (rt_sandbox_remove).  Adds to @out with --json.  */
static int
rm_one (rt_context *ctx, const char *ref, json_object *out)
{
  cleanup_json json_object *o = NULL;
  cleanup_free char *json = NULL, *id = NULL;
  rt_error *err = NULL;

  if (rt_sandbox_get_json (ctx, ref, &json, &err) == 0 && (o = json_tokener_parse (json)) && cli_jstr (o, "id"))
    id = strdup (cli_jstr (o, "id"));
  rt_error_free (err);
  err = NULL;
  if (id == NULL && (id = strdup (ref)) == NULL)
    return -1;
  if (rt_sandbox_remove (ctx, id, &err) < 0)
    return cli_lib_fail (err), -1;
  if (out)
    {
      json_object *r = json_object_new_object ();
      json_object_object_add (r, "id", json_object_new_string (id));
      json_object_object_add (r, "removed", json_object_new_boolean (true));
      json_object_array_add (out, r);
    }
  else
    printf ("%s\n", id);
  return 0;
}

/* The ids of every sandbox (stopped ones too) for which @keep says yes,
   into @ids; -1 after saying why.  */
static int
pick (rt_context *ctx, bool (*keep) (json_object *sb, const void *arg), const void *arg, json_object *ids)
{
  cleanup_json json_object *all = NULL;
  cleanup_free char *json = NULL;
  rt_error *err = NULL;

  if (rt_sandbox_list_json (ctx, true, &json, &err) < 0)
    return cli_lib_fail (err), -1;
  all = cli_parse_json (json);
  if (all == NULL || !json_object_is_type (all, json_type_array))
    return cli_fail ("internal", NULL, "the library's sandbox list is not an array"), -1;
  for (size_t i = 0; i < json_object_array_length (all); i++)
    {
      json_object *sb = json_object_array_get_idx (all, i);
      if (cli_jstr (sb, "id") && keep (sb, arg))
        json_object_array_add (ids, json_object_new_string (cli_jstr (sb, "id")));
    }
  return 0;
}

struct labels
{
  const char **kv;
  int n;
};

static bool
has_labels (json_object *sb, const void *arg)
{
  const struct labels *l = arg;

  for (int i = 0; i < l->n; i++)
    if (!has_label (sb, l->kv[i]))
      return false;
  return true;
}

/* Removes every sandbox in @ids (strings), going on past a failure as
   docker rm does; the exit code.  With @json a list, or with @one the
   one object `rm ID` always gave.  */
static int
rm_all (rt_context *ctx, json_object *ids, bool json, bool one)
{
  cleanup_json json_object *out = json ? json_object_new_array () : NULL;
  int code = 0;

  for (size_t i = 0; i < json_object_array_length (ids); i++)
    if (rm_one (ctx, json_object_get_string (json_object_array_get_idx (ids, i)), out) < 0)
      code = 1;
  if (out)
    {
      if (one && json_object_array_length (out) == 1)
        cli_print_json (json_object_array_get_idx (out, 0));
      else if (!one && (code == 0 || json_object_array_length (out) > 0))
        cli_print_json (out);
    }
  return code;
}

int
cli_sandbox_rm (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_json json_object *ids = json_object_new_array ();
  struct labels l = { 0 };
  int code = 1;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  if (read_labels (cmd, &a, &l.kv, &l.n) < 0)
    return 1;
  if ((a.npos == 0) == (l.n == 0))
    return cli_usage_error ("for example: runtime sandbox rm dev sb-1234abcd5678, or runtime sandbox rm --label team=ml",
                            "give the sandboxes to remove, or --label K=V, not both");
  ctx = cli_context ();
  if (ctx == NULL)
    return 1;
  for (int i = 0; i < a.npos; i++)
    json_object_array_add (ids, json_object_new_string (a.pos[i]));
  if (l.n && pick (ctx, has_labels, &l, ids) < 0)
    return 1;
  return rm_all (ctx, ids, a.json, a.npos == 1 && l.n == 0);
}

/* Seconds in "30", "90s", "15m", "24h", "7d" (at most 100 years); -1 if
   not one.  */
static long long
parse_age (const char *v)
{
  char *end = NULL;
  long long n;

  long long unit;

  errno = 0;
  n = strtoll (v, &end, 10);
  if (end == v || n < 0 || errno)
    return -1;
  unit = *end == 'm' ? 60 : *end == 'h' ? 3600 : *end == 'd' ? 86400 : 1;
  if ((*end && !strchr ("smhd", *end)) || (*end && end[1]) || n > 100LL * 365 * 86400 / unit)
    return -1;
  return n * unit;
}

struct prune
{
  long long before;
  struct labels labels;
};

/* Stopped, ended before @arg's time (seconds since the epoch), and with
   its labels.  */
static bool
prunable (json_object *sb, const void *arg)
{
  const struct prune *p = arg;
  const char *st = cli_jstr (sb, "state"), *ended = cli_jstr (sb, "endedAt");
  struct tm tm = { 0 };

  if (st == NULL || !cli_state_is (st, RT_SANDBOX_STOPPED) || !has_labels (sb, &p->labels))
    return false;
  /* No end written (a monitor killed): as old as can be.  */
  if (ended == NULL || strptime (ended, "%Y-%m-%dT%H:%M:%S", &tm) == NULL)
    return true;
  return (long long) timegm (&tm) <= p->before;
}

int
cli_sandbox_prune (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_json json_object *ids = json_object_new_array ();
  struct prune p = { 0 };
  const char *v;
  long long age = 0;
  int code = 1;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  v = cli_opt (cmd, &a, "older-than");
  if (v && (age = parse_age (v)) < 0)
    return cli_usage_error ("for example --older-than 24h (s, m, h, d)", "--older-than must be an age, not '%s'", v);
  if (read_labels (cmd, &a, &p.labels.kv, &p.labels.n) < 0)
    return 1;
  ctx = cli_context ();
  if (ctx == NULL)
    return 1;
  p.before = (long long) time (NULL) - age;
  if (pick (ctx, prunable, &p, ids) < 0)
    return 1;
  return rm_all (ctx, ids, a.json, false);
}

const struct cli_opt cli_rm_opts[] = {
  { "label", "K=V", "every sandbox with this label (all of them if repeated), stopped ones too", NULL, true },
  { NULL, NULL, NULL, NULL, false },
};

const struct cli_opt cli_prune_opts[] = {
  { "older-than", "AGE", "only those that ended this long ago: 90s, 15m, 24h, 7d", "0 (every stopped one)", false },
  { "label", "K=V", "only those with this label", NULL, true },
  { NULL, NULL, NULL, NULL, false },
};

int
cli_sandbox_extend (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  char *end = NULL;
  cleanup_free char *expires = NULL;
  unsigned long secs;
  int code = 1;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  errno = 0;
  secs = strtoul (a.pos[1], &end, 10);
  if (a.pos[1][0] < '0' || a.pos[1][0] > '9' || *end != '\0' || errno != 0 || secs == 0 || secs > UINT_MAX)
    return cli_usage_error ("for example: runtime sandbox extend ID 600",
                            "SECONDS must be a positive whole number, not '%s'", a.pos[1]);
  ctx = cli_context ();
  if (ctx == NULL)
    return 1;
  if (rt_sandbox_open (ctx, a.pos[0], &sb, &err) < 0 || rt_sandbox_extend (sb, secs, &expires, &err) < 0)
    return cli_lib_fail (err);
  if (a.json)
    {
      cleanup_json json_object *r = json_object_new_object ();
      json_object_object_add (r, "id", json_object_new_string (rt_sandbox_id (sb)));
      json_object_object_add (r, "expiresAt", json_object_new_string (expires));
      cli_print_json (r);
    }
  else
    printf ("%s\n", expires);
  return 0;
}

const struct cli_opt cli_ls_opts[] = {
  { "all", NULL, "list stopped sandboxes too", NULL, false },
  { "label", "K=V", "only sandboxes with this label", NULL, true },
  { "state", "S", "only sandboxes in this state (starting, running, pausing, paused, resuming, stopping, stopped)",
    "every state", false },
  { NULL, NULL, NULL, NULL, false },
};
