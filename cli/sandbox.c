/* sandbox.c - `runtime sandbox …`.  Parses, calls libruntime, prints.  */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define JSON_SMALL_CAP (64 * 1024)
#define JSON_LARGE_CAP (1024 * 1024)
#define DEFAULT_JSON_TIMEOUT_S 60
#define JSON_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

static const char *const states[] = { "starting", "running", "pausing", "paused", "resuming", "stopping", "stopped",
                                      NULL };
static const char *const on_timeout_values[] = { "pause", "stop", NULL };

static bool
has_opt (struct cli_command *cmd, struct cli_args *a, const char *name)
{
  return cli_opt (cmd, a, name) != NULL;
}

/* One of @names, or a usage error naming the likeliest one.  */
static int
check_choice (const char *opt, const char *v, const char *const *names)
{
  const char *s;

  for (const char *const *p = names; *p; p++)
    if (strcmp (*p, v) == 0)
      return 0;
  s = cli_suggest (v, names);
  {
    char list[256] = "";
    for (const char *const *p = names; *p; p++)
      snprintf (list + strlen (list), sizeof (list) - strlen (list), "%s%s", p == names ? "" : ", ", *p);
    if (s)
      cli_usage_error (NULL, "--%s must be one of %s, not '%s'. Did you mean '%s'?", opt, list, v, s);
    else
      cli_usage_error (NULL, "--%s must be one of %s, not '%s'", opt, list, v);
  }
  return -1;
}

/* K=V with a portable name.  The library checks again, but a typo is
   cheaper to report before a VM boots.  @limits: also the 32 / 32 KiB cap
   of a sandbox's own env.  */
static int
check_env (const char **env, int n, bool limits)
{
  size_t total = 0;

  if (limits && n > RT_MAX_ENV)
    {
      cli_fail ("env_too_large", NULL, "at most %d --env variables, not %d", RT_MAX_ENV, n);
      return -1;
    }
  for (int i = 0; i < n; i++)
    {
      const char *eq = strchr (env[i], '=');
      if (eq == NULL || !rt_env_name_valid (env[i], eq - env[i]))
        {
          cli_fail ("invalid_env", "names are letters, digits and _, not starting with a digit: --env NAME=VALUE",
                "--env '%.*s' is not NAME=VALUE with a valid name", eq ? (int) (eq - env[i]) : 64, env[i]);
          return -1;
        }
      total += strlen (env[i]) + 1;
    }
  if (limits && total > RT_MAX_ENV_BYTES)
    {
      cli_fail ("env_too_large", "pass large inputs as files with 'runtime sandbox cp'",
            "the --env variables take %zu bytes; at most %d are allowed", total, RT_MAX_ENV_BYTES);
      return -1;
    }
  return 0;
}

static int
check_labels (const char **labels, int n)
{
  if (n > RT_MAX_LABELS)
    {
      cli_usage_error (NULL, "at most %d --label options, not %d", RT_MAX_LABELS, n);
      return -1;
    }
  for (int i = 0; i < n; i++)
    {
      const char *eq = strchr (labels[i], '=');
      if (eq == NULL || eq == labels[i])
        {
          cli_usage_error ("for example: --label team=ml", "--label '%s' is not key=value", labels[i]);
          return -1;
        }
      for (int j = 0; j < i; j++)
        if (strncmp (labels[j], labels[i], eq - labels[i] + 1) == 0)
          {
            cli_usage_error (NULL, "--label '%.*s' given twice", (int) (eq - labels[i]), labels[i]);
            return -1;
          }
    }
  return 0;
}

/* Names are shown in tables and completed in shells: keep them one word.  */
static int
check_name (const char *name)
{
  size_t len = strlen (name);

  if (len == 0 || len > RT_MAX_NAME)
    {
      cli_usage_error (NULL, "--name must be 1 to %d characters", RT_MAX_NAME);
      return -1;
    }
  for (size_t i = 0; i < len; i++)
    if ((unsigned char) name[i] <= ' ' || name[i] == 0x7f || name[i] == '/')
      {
        cli_usage_error (NULL, "--name '%s' contains a space, a control character or '/'", name);
        return -1;
      }
  return 0;
}

/* The options `create` and `run` share, into @cfg (which points into @a).  */
static int
read_create_opts (struct cli_command *cmd, struct cli_args *a, rt_sandbox_config *cfg)
{
  unsigned long vcpu = 0, mem = 0, disk = 0;
  const char **labels, **env;
  int nlabels, nenv;

  if (cli_opt_uint (cmd, a, "vcpu", 1, RT_MAX_VCPU, &vcpu) < 0
      || cli_opt_uint (cmd, a, "memory", RT_MIN_MEMORY_MIB, RT_MAX_MEMORY_MIB, &mem) < 0
      || cli_opt_uint (cmd, a, "disk", RT_MIN_DISK_MIB, RT_MAX_DISK_MIB, &disk) < 0)
    return -1;
  cfg->vcpu = vcpu;
  cfg->memory_mib = mem;
  cfg->disk_mib = disk;
  cfg->image = cli_opt (cmd, a, "image");
  cfg->name = cli_opt (cmd, a, "name");
  if (cfg->name && check_name (cfg->name) < 0)
    return -1;
  labels = cli_opt_list (cmd, a, "label", &nlabels);
  if (check_labels (labels, nlabels) < 0)
    return -1;
  cfg->labels = labels;
  env = cli_opt_list (cmd, a, "env", &nenv);
  if (check_env (env, nenv, true) < 0)
    return -1;
  cfg->env = env;
  cfg->no_internet = has_opt (cmd, a, "no-internet");
  if (has_opt (cmd, a, "trial") && has_opt (cmd, a, "paid"))
    {
      cli_usage_error (NULL, "--trial and --paid: pick one");
      return -1;
    }
  cfg->funding = has_opt (cmd, a, "trial") ? "trial" : has_opt (cmd, a, "paid") ? "paid" : NULL;
  if (cli_opt (cmd, a, "max-cost"))
    {
      const char *v = cli_opt (cmd, a, "max-cost");
      char *end = NULL;
      double usd;
      errno = 0;
      usd = strtod (v, &end);
      if (*v == '\0' || *end != '\0' || errno || !(usd > 0) || usd > 1e6)
        {
          cli_usage_error ("for example: --max-cost 0.05", "--max-cost takes dollars, not '%s'", v);
          return -1;
        }
      cfg->max_cost_micros = (int64_t) (usd * 1e6 + 0.5);
    }
  cfg->allow = cli_opt_list (cmd, a, "allow", &nlabels);
  cfg->deny = cli_opt_list (cmd, a, "deny", &nlabels);
  return 0;
}

/* Parses a library JSON answer; prints an error when it is not JSON.  */
static json_object *
parse_json (const char *text)
{
  json_object *o = text ? json_tokener_parse (text) : NULL;

  if (o == NULL)
    cli_fail ("internal", NULL, "the library returned unreadable JSON");
  return o;
}

static const char *
jstr (json_object *o, const char *key)
{
  json_object *v;

  if (!json_object_object_get_ex (o, key, &v) || v == NULL)
    return NULL;
  return json_object_get_string (v);
}

static void
print_json (json_object *o)
{
  printf ("%s\n", json_object_to_json_string_ext (o, JSON_FLAGS));
}

/* Prints the library's object for @ref as is.  */
static int
print_get_json (rt_context *ctx, const char *ref)
{
  rt_error *err = NULL;
  char *json = NULL;
  size_t len;

  if (rt_sandbox_get_json (ctx, ref, &json, &err) < 0)
    return cli_lib_fail (err);
  len = strlen (json);
  printf ("%s%s", json, len > 0 && json[len - 1] == '\n' ? "" : "\n");
  free (json);
  return 0;
}

/* -- running commands: `run` and `exec` share this path.  */

struct capture
{
  char *buf;
  size_t len, cap;
  bool truncated;
};

struct output
{
  bool json;
  bool lost; /* a write to our stdout or stderr failed */
  struct capture out, err;
};

static int
capture_add (struct capture *c, const char *buf, size_t len)
{
  size_t take = len;

  if (c->len + take > c->cap)
    {
      take = c->cap - c->len;
      c->truncated = true;
    }
  if (take == 0)
    return 0;
  {
    char *nb = realloc (c->buf, c->len + take + 1);
    if (nb == NULL)
      return -1;
    c->buf = nb;
  }
  memcpy (c->buf + c->len, buf, take);
  c->len += take;
  c->buf[c->len] = '\0';
  return 0;
}

static int
on_output (void *data, int stream, const char *buf, size_t len)
{
  struct output *o = data;
  int fd = stream == 1 ? 1 : 2;

  if (o->json)
    return capture_add (stream == 1 ? &o->out : &o->err, buf, len);
  while (len > 0)
    {
      ssize_t n = write (fd, buf, len);
      if (n < 0)
        {
          if (errno == EINTR)
            continue;
          /* Nobody reads the rest: stopping the command beats running it
             blind.  */
          o->lost = true;
          return -1;
        }
      buf += n;
      len -= n;
    }
  return 0;
}

/* Piped or redirected stdin goes to the command; a terminal or /dev/null
   does not (reading a terminal would hang a script).  */
static int
read_stdin (char **out, size_t *len)
{
  struct stat st;
  size_t alloc = 0, size = 0;
  char *buf = NULL;

  *out = NULL;
  *len = 0;
  if (fstat (0, &st) < 0 || !(S_ISFIFO (st.st_mode) || S_ISREG (st.st_mode)))
    return 0;
  for (;;)
    {
      ssize_t n;
      if (alloc - size < 65536)
        {
          char *nb = realloc (buf, alloc = alloc ? alloc * 2 : 131072);
          if (nb == NULL)
            {
              free (buf);
              return -1;
            }
          buf = nb;
        }
      n = read (0, buf + size, alloc - size);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      size += n;
      if (size > RT_MAX_STDIN)
        {
          free (buf);
          cli_usage_error ("pass larger inputs with 'runtime sandbox cp'", "standard input is over 1 MiB");
          return -2;
        }
    }
  *out = buf;
  *len = size;
  return 0;
}

static void
print_json_result (struct output *o, const rt_exec_result *res, int code)
{
  json_object *r = json_object_new_object ();
  json_object_object_add (r, "exitCode", json_object_new_int (code));
  json_object_object_add (r, "stdout", json_object_new_string_len (o->out.buf ? o->out.buf : "", o->out.len));
  json_object_object_add (r, "stderr", json_object_new_string_len (o->err.buf ? o->err.buf : "", o->err.len));
  json_object_object_add (r, "timedOut", json_object_new_boolean (res->timed_out));
  json_object_object_add (r, "stdoutTruncated", json_object_new_boolean (o->out.truncated));
  json_object_object_add (r, "stderrTruncated", json_object_new_boolean (o->err.truncated));
  json_object_object_add (r, "durationMs", json_object_new_int64 (res->duration_ms));
  print_json (r);
  json_object_put (r);
}

/* One command to run: everything checked and read before any sandbox is
   touched.  */
struct job
{
  const char *const *argv;
  const char *shell[4];
  const char *cwd;
  const char *user;
  const char **env;
  unsigned long timeout_s; /* 0: none (24 h) */
  char *input;
  size_t input_len;
  int sfd;
  struct output o;
};

static int
job_prepare (struct cli_command *cmd, struct cli_args *a, bool with_env, struct job *j)
{
  sigset_t mask;
  int ret;

  memset (j, 0, sizeof (*j));
  j->sfd = -1;
  if (cli_opt_uint (cmd, a, "timeout", 1, RT_MAX_EXEC_TIMEOUT_S, &j->timeout_s) < 0)
    return -1;
  j->cwd = cli_opt (cmd, a, "cwd");
  j->user = cli_opt (cmd, a, "user");
  if (j->user && strcmp (j->user, "root") != 0 && strcmp (j->user, "runtime") != 0)
    {
      cli_usage_error (NULL, "--user must be runtime or root, not '%s'", j->user);
      return -1;
    }
  if (j->cwd && j->cwd[0] != '/')
    {
      cli_usage_error ("for example: --cwd /workspace/src", "--cwd must be an absolute path, not '%s'", j->cwd);
      return -1;
    }
  if (with_env)
    {
      int n;
      j->env = cli_opt_list (cmd, a, "env", &n);
      if (check_env (j->env, n, false) < 0)
        return -1;
    }
  /* One argument runs under bash -c, several as argv with no shell.  */
  if (a->nrest == 1)
    {
      j->shell[0] = "bash";
      j->shell[1] = "-c";
      j->shell[2] = a->rest[0];
      j->shell[3] = NULL;
      j->argv = j->shell;
    }
  else
    j->argv = (const char *const *) a->rest;
  j->o.json = a->json;
  if (a->json && j->timeout_s == 0)
    j->timeout_s = DEFAULT_JSON_TIMEOUT_S;
  j->o.out.cap = j->o.err.cap = j->timeout_s > 0 && j->timeout_s <= 60 ? JSON_SMALL_CAP : JSON_LARGE_CAP;
  ret = read_stdin (&j->input, &j->input_len);
  if (ret < 0)
    {
      if (ret == -1)
        cli_fail ("internal", NULL, "cannot read standard input: %s", strerror (errno));
      return -1;
    }

  /* Ctrl-C, SIGTERM and SIGHUP become a request to stop the command (the
     library watches the signalfd): a `run` must still tear its sandbox
     down, so they must not kill us.  */
  sigemptyset (&mask);
  sigaddset (&mask, SIGINT);
  sigaddset (&mask, SIGTERM);
  sigaddset (&mask, SIGHUP);
  sigprocmask (SIG_BLOCK, &mask, NULL);
  j->sfd = signalfd (-1, &mask, SFD_CLOEXEC);
  signal (SIGPIPE, SIG_IGN);
  return 0;
}

/* Runs the job; returns the exit code `run` and `exec` end with.  */
static int
job_run (rt_sandbox *sb, struct job *j)
{
  rt_exec_opts opts = { .cwd = j->cwd, .user = j->user, .env = j->env, .stdin_data = j->input,
                        .stdin_len = j->input_len, .timeout_ms = j->timeout_s * 1000ULL, .cancel_fd = j->sfd,
                        .on_output = on_output, .data = &j->o };
  rt_exec_result res = { 0 };
  rt_error *err = NULL;
  int code;

  if (rt_sandbox_exec (sb, j->argv, &opts, &res, &err) < 0)
    {
      if (j->o.lost)
        {
          rt_error_free (err);
          return 1;
        }
      return cli_lib_fail (err);
    }
  if (res.timed_out)
    fprintf (stderr, "runtime: timed out after %lu s; the command's process group was killed.\n",
             j->timeout_s ? j->timeout_s : (unsigned long) RT_MAX_EXEC_TIMEOUT_S);
  code = res.interrupted ? 130 : res.timed_out ? 124 : res.exit_code;
  if (j->o.json)
    print_json_result (&j->o, &res, code);
  if (j->o.lost)
    code = 1;
  return code;
}

static void
job_free (struct job *j)
{
  free (j->input);
  free (j->o.out.buf);
  free (j->o.err.buf);
  if (j->sfd >= 0)
    close (j->sfd);
}

/* -- commands  */

/* Funding chosen for the user, by create or run: say which, on stderr
   (create's stdout is the id, run's the command's).  */
static void
say_funding (rt_context *ctx, rt_sandbox *sb)
{
  char *json = NULL;
  json_object *o = NULL;

  if (rt_sandbox_get_json (ctx, rt_sandbox_id (sb), &json, NULL) == 0 && (o = json_tokener_parse (json)))
    fprintf (stderr, "runtime: funding: %s\n",
             jstr (o, "funding") && strcmp (jstr (o, "funding"), "trial") == 0
                 ? "trial (the free hours; runtime usage shows what is left)"
                 : "paid");
  json_object_put (o);
  free (json);
}

/* The common start of a command on one live sandbox: cli_start, then open
   a.pos[0].  False when the command must return *code now.  */
static bool
open_target (struct cli_command *cmd, int argc, char **argv, struct cli_args *a, rt_context **ctx, rt_sandbox **sb,
             int *code)
{
  rt_error *err = NULL;

  *sb = NULL;
  if (!cli_start (cmd, argc, argv, a, ctx, code))
    return false;
  if (rt_sandbox_open (*ctx, a->pos[0], sb, &err) < 0)
    {
      *code = cli_lib_fail (err);
      return false;
    }
  return true;
}

static int
sandbox_run (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  struct job j = { .sfd = -1 };
  cleanup_context rt_context *ctx = NULL;
  rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  rt_sandbox_config cfg = { 0 };
  int code = 1;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  if (read_create_opts (cmd, &a, &cfg) < 0 || job_prepare (cmd, &a, false, &j) < 0)
    goto out;
  /* Without --keep the sandbox must not outlive us, even after kill -9.  */
  cfg.ephemeral = !has_opt (cmd, &a, "keep");

  ctx = cli_context ();
  if (ctx == NULL)
    goto out;
  if (rt_sandbox_create (ctx, &cfg, &sb, &err) < 0)
    {
      code = cli_lib_fail (err);
      goto out;
    }
  if (cfg.funding == NULL)
    say_funding (ctx, sb);
  code = job_run (sb, &j);
  if (has_opt (cmd, &a, "keep"))
    {
      const char *id = rt_sandbox_id (sb);
      fprintf (stderr,
               "runtime: kept sandbox %s; run more with: runtime sandbox exec %s -- CMD\n"
               "runtime: stop it with: runtime sandbox stop %s (or it pauses when its lease ends)\n",
               id, id, id);
      rt_sandbox_close (sb);
    }
  else if (rt_sandbox_destroy (sb, &err) < 0)
    code = cli_lib_fail (err);
  sb = NULL;

out:
  /* Only an error before the command ran leaves @sb here.  */
  if (sb)
    rt_sandbox_destroy (sb, NULL);
  job_free (&j);
  return code;
}

static int
sandbox_exec (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  struct job j = { .sfd = -1 };
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  int code;

  if (!cli_start (cmd, argc, argv, &a, &ctx, &code))
    return code;
  /* The command's own arguments are checked before the sandbox.  */
  if (job_prepare (cmd, &a, true, &j) < 0)
    code = 1;
  else if (rt_sandbox_open (ctx, a.pos[0], &sb, &err) < 0)
    code = cli_lib_fail (err);
  else
    code = job_run (sb, &j);
  job_free (&j);
  return code;
}

static int
sandbox_create (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  rt_sandbox_config cfg = { 0 };
  unsigned long lease = 0;
  sigset_t mask, pending;
  bool interrupted;
  int ret, code = 1;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  if (read_create_opts (cmd, &a, &cfg) < 0
      || cli_opt_uint (cmd, &a, "timeout", RT_MIN_LEASE_S, RT_MAX_LEASE_S, &lease) < 0)
    goto out;
  cfg.timeout_s = lease;
  cfg.on_timeout = cli_opt (cmd, &a, "on-timeout");
  if (cfg.on_timeout && check_choice ("on-timeout", cfg.on_timeout, on_timeout_values) < 0)
    goto out;
  cfg.get_or_create = has_opt (cmd, &a, "get-or-create");
  cfg.no_wait = has_opt (cmd, &a, "no-wait");
  if (cfg.get_or_create && cfg.name == NULL)
    {
      cli_usage_error ("for example: runtime sandbox create --name dev --get-or-create",
                       "--get-or-create needs --name");
      goto out;
    }

  ctx = cli_context ();
  if (ctx == NULL)
    goto out;
  /* A Ctrl-C during the boot must not leave a sandbox whose id nobody
     saw: hold the signals until the library answers, then undo.  */
  sigemptyset (&mask);
  sigaddset (&mask, SIGINT);
  sigaddset (&mask, SIGTERM);
  sigaddset (&mask, SIGHUP);
  sigprocmask (SIG_BLOCK, &mask, NULL);
  ret = rt_sandbox_create (ctx, &cfg, &sb, &err);
  sigpending (&pending);
  interrupted = sigismember (&pending, SIGINT) || sigismember (&pending, SIGTERM) || sigismember (&pending, SIGHUP);
  if (ret < 0)
    {
      cli_lib_fail (err);
      code = interrupted ? 130 : 1;
      goto out;
    }
  if (interrupted)
    {
      char *id = strdup (rt_sandbox_id (sb));
      rt_sandbox_close (sb);
      /* --get-or-create may have found one that was there before.  */
      code = 130;
      if (id && !cfg.get_or_create && rt_sandbox_remove (ctx, id, &err) < 0)
        code = cli_lib_fail (err);
      else if (id && cfg.get_or_create)
        fprintf (stderr, "runtime: interrupted; sandbox %s named '%s' keeps running\n", id, cfg.name);
      else if (id)
        fprintf (stderr, "runtime: interrupted; removed the new sandbox %s\n", id);
      free (id);
      goto out;
    }
  if (cfg.funding == NULL)
    say_funding (ctx, sb);
  if (a.json)
    code = print_get_json (ctx, rt_sandbox_id (sb));
  else
    {
      printf ("%s\n", rt_sandbox_id (sb));
      code = 0;
    }
  rt_sandbox_close (sb);

out:
  return code;
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

static int
sandbox_ls (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  rt_error *err = NULL;
  json_object *all = NULL, *keep = NULL;
  char *json = NULL, *(*rows)[6] = NULL;
  const char **labels, *state;
  int nlabels, code = 1;
  size_t nrows = 0;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  labels = cli_opt_list (cmd, &a, "label", &nlabels);
  for (int i = 0; i < nlabels; i++)
    if (strchr (labels[i], '=') == NULL || labels[i][0] == '=')
      {
        cli_usage_error ("for example: --label team=ml", "--label '%s' is not key=value", labels[i]);
        goto out;
      }
  state = cli_opt (cmd, &a, "state");
  if (state && check_choice ("state", state, states) < 0)
    goto out;

  ctx = cli_context ();
  if (ctx == NULL)
    goto out;
  /* A stopped sandbox is only listed with --all; asking for that state
     asks for them too.  */
  if (rt_sandbox_list_json (ctx, has_opt (cmd, &a, "all") || (state && strcmp (state, "stopped") == 0), &json, &err)
      < 0)
    {
      code = cli_lib_fail (err);
      goto out;
    }
  all = parse_json (json);
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
      const char *st = jstr (sb, "state");
      bool match = !state || (st && strcmp (st, state) == 0);
      for (int l = 0; match && l < nlabels; l++)
        match = has_label (sb, labels[l]);
      if (match)
        json_object_array_add (keep, json_object_get (sb));
    }
  if (a.json)
    {
      print_json (keep);
      code = 0;
      goto out;
    }

  nrows = json_object_array_length (keep) + 1;
  rows = calloc (nrows, sizeof (*rows));
  if (rows == NULL)
    goto out;
  rows[0][0] = strdup ("ID");
  rows[0][1] = strdup ("NAME");
  rows[0][2] = strdup ("STATE");
  rows[0][3] = strdup ("CPU/MIB");
  rows[0][4] = strdup ("FUNDING");
  rows[0][5] = strdup ("EXPIRES");
  for (size_t i = 1; i < nrows; i++)
    {
      json_object *sb = json_object_array_get_idx (keep, i - 1), *v;
      const char *st = jstr (sb, "state"), *s;
      long vcpu = json_object_object_get_ex (sb, "vcpu", &v) ? json_object_get_int64 (v) : 0;
      long mem = json_object_object_get_ex (sb, "memoryMiB", &v) ? json_object_get_int64 (v) : 0;

      rows[i][0] = strdup ((s = jstr (sb, "id")) ? s : "-");
      rows[i][1] = strdup ((s = jstr (sb, "name")) && *s ? s : "-");
      rows[i][2] = strdup (st ? st : "-");
      if (asprintf (&rows[i][3], "%ld/%ld", vcpu, mem) < 0)
        rows[i][3] = NULL;
      rows[i][4] = strdup ((s = jstr (sb, "funding")) ? s : "-");
      rows[i][5] = strdup ((s = jstr (sb, "expiresAt")) && !(st && strcmp (st, "stopped") == 0) ? s : "-");
    }
  for (size_t i = 0; i < nrows; i++)
    for (int c = 0; c < 6; c++)
      if (rows[i][c] == NULL)
        goto out;
  print_table (rows, nrows);
  code = 0;

out:
  if (rows)
    for (size_t i = 0; i < nrows; i++)
      for (int c = 0; c < 6; c++)
        free (rows[i][c]);
  free (rows);
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
      fputs (top && json_object_get_string_len (v) == 0 ? "-" : json_object_get_string (v), f);
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

static int
sandbox_get (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  rt_error *err = NULL;
  cleanup_json json_object *o = NULL;
  cleanup_free char *json = NULL;
  int code, width = 0;

  if (!cli_start (cmd, argc, argv, &a, &ctx, &code))
    return code;
  if (a.json)
    return print_get_json (ctx, a.pos[0]);
  if (rt_sandbox_get_json (ctx, a.pos[0], &json, &err) < 0)
    return cli_lib_fail (err);
  o = parse_json (json);
  if (o == NULL)
    return 1;
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
      if (act != ACT_STOP || strcmp (err->code, "sandbox_not_ready") != 0)
        return cli_lib_fail (err);
      rt_error_free (err);
      err = NULL;
      if (a.json)
        return print_get_json (ctx, a.pos[0]);
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
    return print_get_json (ctx, id);
  printf ("%s\n", id);
  return 0;
}

static int
sandbox_stop (struct cli_command *cmd, int argc, char **argv)
{
  return sandbox_act (cmd, argc, argv, ACT_STOP);
}

static int
sandbox_pause (struct cli_command *cmd, int argc, char **argv)
{
  return sandbox_act (cmd, argc, argv, ACT_PAUSE);
}

static int
sandbox_wake (struct cli_command *cmd, int argc, char **argv)
{
  return sandbox_act (cmd, argc, argv, ACT_WAKE);
}

static int
sandbox_rm (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  rt_error *err = NULL;
  cleanup_json json_object *o = NULL;
  cleanup_free char *json = NULL, *id = NULL;
  int code;

  if (!cli_start (cmd, argc, argv, &a, &ctx, &code))
    return code;
  /* Learn the id behind a name first (afterwards nothing knows it) and
     remove by id.  An unknown ref is no error: removing is idempotent.  */
  if (rt_sandbox_get_json (ctx, a.pos[0], &json, &err) == 0 && (o = json_tokener_parse (json)) && jstr (o, "id"))
    id = strdup (jstr (o, "id"));
  rt_error_free (err);
  err = NULL;
  if (id == NULL && (id = strdup (a.pos[0])) == NULL)
    return 1;
  if (rt_sandbox_remove (ctx, id, &err) < 0)
    return cli_lib_fail (err);
  if (a.json)
    {
      cleanup_json json_object *r = json_object_new_object ();
      json_object_object_add (r, "id", json_object_new_string (id));
      json_object_object_add (r, "removed", json_object_new_boolean (true));
      print_json (r);
    }
  else
    printf ("%s\n", id);
  return 0;
}

static int
sandbox_extend (struct cli_command *cmd, int argc, char **argv)
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
      print_json (r);
    }
  else
    printf ("%s\n", expires);
  return 0;
}

/* The options `create` and `run` share (read_create_opts).  */
#define CREATE_OPTS                                                                                \
  { "name", "N", "a name unique among live sandboxes; use it in place of the id", "none", false },   \
  { "label", "K=V", "a label to find the sandbox by (at most 32)", NULL, true },                   \
  { "env", "K=V", "a variable for every command; only its name is shown again", NULL, true },      \
  { "vcpu", "N", "virtual CPUs (1-16)", "2", false },                                              \
  { "memory", "MiB", "guest memory (256-65536)", "4096", false },                                  \
  { "disk", "MiB", "disk size (4096-65536)", "4096", false },                                           \
  { "image", "REF", "image to boot", "runtime", false },                                          \
  { "no-internet", NULL, "refuse every connection out of the sandbox", NULL, false },             \
  { "allow", "HOST", "reach only these: a name, *.domain (its subdomains), an IP or a CIDR", "everything public", \
    true },                                                                                        \
  { "deny", "HOST", "never reach this (wins over --allow)", NULL, true },                         \
  { "trial", NULL, "run on the 50 free hours (<= 2 vCPU, 4096 MiB, 8 at once, ports 80/443)", NULL, false }, \
  { "paid", NULL, "pay for it even while trial hours remain", NULL, false },                      \
  { "max-cost", "USD", "refuse if the first lease, every vCPU busy, could cost more", "no limit", false }

static const struct cli_opt run_opts[] = {
  { "timeout", "S", "kill the command's process group after S seconds (exit 124)", "none; 60 with --json", false },
  { "keep", NULL, "keep the sandbox afterwards and print how to use and stop it", NULL, false },
  CREATE_OPTS,
  { NULL, NULL, NULL, NULL, false },
};

static const struct cli_opt create_opts[] = {
  CREATE_OPTS,
  { "timeout", "S", "the lease: seconds (60-3600) until --on-timeout happens", "1800", false },
  { "on-timeout", "pause|stop", "what happens when the lease ends", "pause", false },
  { "no-wait", NULL, "print the id at once, while the sandbox boots (state starting)", NULL, false },
  { "get-or-create", NULL, "with --name: print the live sandbox of that name instead of failing", NULL, false },
  { NULL, NULL, NULL, NULL, false },
};

/* -- background processes and files  */

static int
parse_process (const char *s, uint32_t *out)
{
  char *end = NULL;
  unsigned long v;

  errno = 0;
  v = strtoul (s, &end, 10);
  if (*s == '\0' || *s == '-' || *end != '\0' || errno || v == 0 || v > UINT32_MAX)
    {
      cli_usage_error ("runtime sandbox ps ID lists the processes", "'%s' is not a process number", s);
      return -1;
    }
  *out = (uint32_t) v;
  return 0;
}

static int
sandbox_spawn (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  struct job j = { .sfd = -1 };
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  uint32_t process;
  int code;

  if (!open_target (cmd, argc, argv, &a, &ctx, &sb, &code))
    return code;
  if (job_prepare (cmd, &a, true, &j) < 0)
    {
      job_free (&j);
      return 1;
    }
  {
    rt_exec_opts opts = { .cwd = j.cwd, .user = j.user, .env = j.env, .stdin_data = j.input,
                          .stdin_len = j.input_len, .timeout_ms = j.timeout_s * 1000ULL, .cancel_fd = -1 };
    if (rt_sandbox_spawn (sb, j.argv, &opts, &process, &err) < 0)
      code = cli_lib_fail (err);
    else if (a.json)
      {
        printf ("{\"id\":\"%s\",\"process\":%u}\n", rt_sandbox_id (sb), process);
        code = 0;
      }
    else
      {
        printf ("%u\n", process);
        code = 0;
      }
  }
  job_free (&j);
  return code;
}

/* A command that shows one JSON value a live sandbox gives (@fetch, which
   may read the options; a usage error there leaves *err NULL): as it is
   with --json, else through @table.  */
static int
show_target_json (struct cli_command *cmd, int argc, char **argv,
                  int (*fetch) (rt_sandbox *sb, struct cli_command *cmd, struct cli_args *a, char **json,
                                rt_error **err),
                  void (*table) (json_object *value))
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  cleanup_free char *json = NULL;
  cleanup_json json_object *value = NULL;
  int code;

  if (!open_target (cmd, argc, argv, &a, &ctx, &sb, &code))
    return code;
  if (fetch (sb, cmd, &a, &json, &err) < 0)
    return err ? cli_lib_fail (err) : 1;
  if (a.json)
    printf ("%s\n", json);
  else if ((value = parse_json (json)))
    table (value);
  else
    return 1;
  return 0;
}

static int
ps_fetch (rt_sandbox *sb, struct cli_command *cmd, struct cli_args *a, char **json, rt_error **err)
{
  (void) cmd;
  (void) a;
  return rt_sandbox_ps_json (sb, json, err);
}

static void
ps_table (json_object *arr)
{
  size_t n = json_object_array_length (arr);
  printf ("%-8s %-8s %-5s %s\n", "PROCESS", "STATE", "EXIT", "COMMAND");
  for (size_t i = 0; i < n; i++)
    {
      json_object *p = json_object_array_get_idx (arr, i), *v;
      char exit_s[16] = "-";
      if (json_object_object_get_ex (p, "exitCode", &v) && v)
        snprintf (exit_s, sizeof (exit_s), "%d", json_object_get_int (v));
      json_object_object_get_ex (p, "process", &v);
      printf ("%-8d %-8s %-5s %s\n", json_object_get_int (v), jstr (p, "state"), exit_s, jstr (p, "command"));
    }
}

static int
sandbox_ps (struct cli_command *cmd, int argc, char **argv)
{
  return show_target_json (cmd, argc, argv, ps_fetch, ps_table);
}

static int
sandbox_logs (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  struct output o = { 0 };
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  rt_exec_result res;
  uint32_t process;
  bool exited = false;
  int code;

  /* -f is what everyone types (tail -f).  */
  for (int i = 1; i < argc && strcmp (argv[i], "--") != 0; i++)
    if (strcmp (argv[i], "-f") == 0)
      argv[i] = (char *) "--follow";
  if (!open_target (cmd, argc, argv, &a, &ctx, &sb, &code))
    return code;
  if (parse_process (a.pos[1], &process) < 0)
    return 1;
  signal (SIGPIPE, SIG_IGN);
  {
    rt_exec_opts opts = { .cancel_fd = -1, .on_output = on_output, .data = &o };
    code = rt_sandbox_logs (sb, process, has_opt (cmd, &a, "follow"), &opts, &res, &exited, &err) < 0
               ? cli_lib_fail (err)
               : o.lost;
  }
  return code;
}

static const struct
{
  const char *name;
  int sig;
} signals[] = {
  { "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT }, { "KILL", SIGKILL }, { "USR1", SIGUSR1 },
  { "USR2", SIGUSR2 }, { "ALRM", SIGALRM }, { "TERM", SIGTERM }, { "CONT", SIGCONT }, { "STOP", SIGSTOP },
};

static int
parse_signal (const char *s)
{
  char *end = NULL;
  long v;

  if (strncasecmp (s, "SIG", 3) == 0)
    s += 3;
  for (size_t i = 0; i < sizeof (signals) / sizeof (signals[0]); i++)
    if (strcasecmp (s, signals[i].name) == 0)
      return signals[i].sig;
  v = strtol (s, &end, 10);
  return *s && *end == '\0' && v >= 1 && v <= 64 ? (int) v : -1;
}

static int
sandbox_kill (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  uint32_t process;
  const char *sig_s;
  int sig = SIGTERM, code;

  if (!open_target (cmd, argc, argv, &a, &ctx, &sb, &code))
    return code;
  if (parse_process (a.pos[1], &process) < 0)
    return 1;
  if ((sig_s = cli_opt (cmd, &a, "signal")) && (sig = parse_signal (sig_s)) < 0)
    {
      cli_usage_error ("for example --signal KILL, --signal INT or --signal 9", "unknown signal '%s'", sig_s);
      return 1;
    }
  if (rt_sandbox_kill (sb, process, sig, &err) < 0)
    code = cli_lib_fail (err);
  else
    {
      printf ("%u\n", process);
      code = 0;
    }
  return code;
}

static int
sandbox_cat (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  struct output o = { 0 };
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  int code;

  if (!open_target (cmd, argc, argv, &a, &ctx, &sb, &code))
    return code;
  signal (SIGPIPE, SIG_IGN);
  {
    rt_exec_opts opts = { .cancel_fd = -1, .on_output = on_output, .data = &o };
    code = rt_sandbox_cat (sb, a.pos[1], &opts, &err) < 0 ? (o.lost ? 1 : cli_lib_fail (err)) : o.lost;
    if (o.lost)
      rt_error_free (err);
  }
  return code;
}

static int
files_fetch (rt_sandbox *sb, struct cli_command *cmd, struct cli_args *a, char **json, rt_error **err)
{
  unsigned long depth = 1;

  if (cli_opt_uint (cmd, a, "depth", 1, 64, &depth) < 0)
    return -1;
  return rt_sandbox_files_json (sb, a->npos > 1 ? a->pos[1] : "/workspace", depth, json, err);
}

static void
files_table (json_object *arr)
{
  for (size_t i = 0; i < json_object_array_length (arr); i++)
    {
      json_object *e = json_object_array_get_idx (arr, i), *v;
      json_object_object_get_ex (e, "size", &v);
      printf ("%s %lld %s\n", jstr (e, "type"), (long long) json_object_get_int64 (v), jstr (e, "path"));
    }
}

static int
sandbox_files (struct cli_command *cmd, int argc, char **argv)
{
  return show_target_json (cmd, argc, argv, files_fetch, files_table);
}

/* "ID:/abs/path" names a sandbox side; ids and names never hold '/', so a
   ':' after a '/' is part of a host path.  */
static char *
remote_ref (const char *arg, const char **path)
{
  const char *colon = strchr (arg, ':');
  if (colon == NULL || colon == arg || memchr (arg, '/', colon - arg))
    return NULL;
  *path = colon + 1;
  return strndup (arg, colon - arg);
}

static int
sandbox_cp (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  cleanup_free char *src_ref = NULL, *dst_ref = NULL;
  const char *src_path = NULL, *dst_path = NULL;
  int ret, code = 1;

  if (!cli_begin (cmd, argc, argv, &a, &code))
    return code;
  src_ref = remote_ref (a.pos[0], &src_path);
  dst_ref = remote_ref (a.pos[1], &dst_path);
  if ((src_ref == NULL) == (dst_ref == NULL))
    return cli_usage_error ("for example: runtime sandbox cp ./data dev:/workspace/ or cp dev:/workspace/out.csv .",
                            "exactly one side of cp must be a sandbox path ID:/abs/path");
  ctx = cli_context ();
  if (ctx == NULL)
    return 1;
  if (rt_sandbox_open (ctx, src_ref ? src_ref : dst_ref, &sb, &err) < 0)
    return cli_lib_fail (err);
  {
    /* Ctrl-C stops the copy cleanly (nothing half-written is left), like
       run and exec: the library watches the signalfd.  */
    sigset_t mask;
    int sfd;
    sigemptyset (&mask);
    sigaddset (&mask, SIGINT);
    sigaddset (&mask, SIGTERM);
    sigaddset (&mask, SIGHUP);
    sigprocmask (SIG_BLOCK, &mask, NULL);
    sfd = signalfd (-1, &mask, SFD_CLOEXEC);
    ret = src_ref ? rt_sandbox_copy_out (sb, src_path, a.pos[1], sfd, &err)
                  : rt_sandbox_copy_in (sb, a.pos[0], dst_path, sfd, &err);
    code = ret < 0 ? (strcmp (err->code, "interrupted") == 0 ? (rt_error_free (err), 130) : cli_lib_fail (err)) : 0;
    if (sfd >= 0)
      close (sfd);
  }
  if (ret == 0 && a.json)
    printf ("{\"id\":\"%s\",\"copied\":true}\n", rt_sandbox_id (sb));
  return code;
}

static const struct cli_opt spawn_opts[] = {
  { "cwd", "DIR", "working directory (absolute)", "/workspace", false },
  { "user", "NAME", "run as runtime (uid 1000) or root", "runtime", false },
  { "env", "K=V", "an environment variable for this command", NULL, true },
  { "timeout", "S", "kill the command's process group after S seconds", "none", false },
  { NULL, NULL, NULL, NULL, false },
};

static const struct cli_opt logs_opts[] = {
  { "follow", NULL, "keep printing output until the process exits (also -f)", NULL, false },
  { NULL, NULL, NULL, NULL, false },
};

static const struct cli_opt kill_opts[] = {
  { "signal", "SIG", "signal name or number (TERM, KILL, INT, HUP, USR1, …)", "TERM", false },
  { NULL, NULL, NULL, NULL, false },
};

static const struct cli_opt files_opts[] = {
  { "depth", "N", "levels below PATH to list", "1", false },
  { NULL, NULL, NULL, NULL, false },
};

static const struct cli_opt exec_opts[] = {
  { "cwd", "DIR", "working directory (absolute)", "/workspace", false },
  { "user", "NAME", "run as runtime (uid 1000) or root", "runtime", false },
  { "env", "K=V", "an environment variable for this command", NULL, true },
  { "timeout", "S", "kill the command's process group after S seconds (exit 124)", "none; 60 with --json", false },
  { NULL, NULL, NULL, NULL, false },
};

static const struct cli_opt ls_opts[] = {
  { "all", NULL, "list stopped sandboxes too", NULL, false },
  { "label", "K=V", "only sandboxes with this label", NULL, true },
  { "state", "S", "only sandboxes in this state (starting, running, pausing, paused, resuming, stopping, stopped)",
    "every state", false },
  { NULL, NULL, NULL, NULL, false },
};

static const struct cli_opt no_opts[] = {
  { NULL, NULL, NULL, NULL, false },
};

/* -- metrics  */

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
  printf ("%-12s %s%% of %s vCPU\n", "cpu now", jstr (o, "cpuPercent"), jstr (o, "vcpu"));
  if (total >= 0 && avail >= 0)
    printf ("%-12s %" PRId64 " MiB used of %" PRId64 " MiB (the guest's own figures; %s MiB allocated)\n",
            "memory now", total - avail, total, jstr (o, "memoryMiB"));
  else
    printf ("%-12s %s MiB allocated\n", "memory", jstr (o, "memoryMiB"));
  printf ("%-12s %s\n", "cpu seconds", jstr (o, "cpuSeconds") ? jstr (o, "cpuSeconds") : "0");
  printf ("%-12s $%" PRId64 ".%06" PRId64 "\n", "cost so far", micros / 1000000, micros % 1000000);
}

static int
sandbox_metrics (struct cli_command *cmd, int argc, char **argv)
{
  return show_target_json (cmd, argc, argv, metrics_fetch, metrics_table);
}

/* -- network  */

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
      char addr[80];
      if (o == NULL)
        continue;
      if (json)
        {
          json_object_array_add (all, o);
          continue;
        }
      snprintf (addr, sizeof addr, "%s:%d", jstr (o, "address") ? jstr (o, "address") : "-",
                json_object_object_get_ex (o, "port", &v) ? json_object_get_int (v) : 0);
      printf ("%-24s %-8s %-15s %-7s %-30s %-21s %10" PRId64 " %10" PRId64 "\n",
              jstr (o, "time") ? jstr (o, "time") : "-", jstr (o, "decision") ? jstr (o, "decision") : "-",
              jstr (o, "reason") ? jstr (o, "reason") : "-", jstr (o, "kind") ? jstr (o, "kind") : "-",
              jstr (o, "name") ? jstr (o, "name") : "-", addr,
              json_object_object_get_ex (o, "bytesOut", &v) ? json_object_get_int64 (v) : (int64_t) 0,
              json_object_object_get_ex (o, "bytesIn", &v) ? json_object_get_int64 (v) : (int64_t) 0);
      json_object_put (o);
    }
  free (line);
  if (f)
    fclose (f);
  if (json)
    print_json (all);
  json_object_put (all);
  return 0;
}

static int
sandbox_network (struct cli_command *cmd, int argc, char **argv)
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
  on = has_opt (cmd, &a, "internet");
  off = has_opt (cmd, &a, "no-internet");
  allow = cli_opt_list (cmd, &a, "allow", &nallow);
  deny = cli_opt_list (cmd, &a, "deny", &ndeny);
  change = on || off || nallow > 0 || ndeny > 0;
  if (on && off)
    return cli_usage_error (NULL, "--internet and --no-internet contradict each other");
  if (change && has_opt (cmd, &a, "log"))
    return cli_usage_error ("show the log and change the rules in two commands", "--log does not go with rule changes");
  ctx = cli_context ();
  if (ctx == NULL)
    return 1;
  if (has_opt (cmd, &a, "log"))
    return print_egress_log (ctx, a.pos[0], a.json);
  if (!change)
    {
      json_object *net;
      if (rt_sandbox_get_json (ctx, a.pos[0], &json, &err) < 0)
        return cli_lib_fail (err);
      o = parse_json (json);
      if (o == NULL)
        return 1;
      if (!json_object_object_get_ex (o, "network", &net))
        net = NULL;
      if (a.json)
        print_json (net);
      else
        print_rules (net);
      return 0;
    }
  if (rt_sandbox_open (ctx, a.pos[0], &sb, &err) < 0
      || rt_sandbox_set_network (sb, !off, allow, deny, &json, &err) < 0)
    return cli_lib_fail (err);
  o = parse_json (json);
  if (o == NULL)
    return 1;
  if (a.json)
    print_json (o);
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

static const struct cli_opt network_opts[] = {
  { "internet", NULL, "allow the public internet (what --allow and --deny leave)", NULL, false },
  { "no-internet", NULL, "refuse every connection", NULL, false },
  { "allow", "HOST", "reach only these: a name, *.domain (its subdomains), an IP or a CIDR", NULL, true },
  { "deny", "HOST", "never reach this (wins over --allow)", NULL, true },
  { "log", NULL, "show the egress log: every connection and refused name, with bytes each way", NULL, false },
  { NULL, NULL, NULL, NULL, false },
};

static struct cli_command sandbox_cmds[] = {
  { "run", sandbox_run, "Run one command in a fresh sandbox, stream its output, stop the sandbox.",
    "[options] -- CMD [ARG…]", "runtime sandbox run -- python3 -c 'print(6*7)'", run_opts, true, 0, 0, NULL },
  { "create", sandbox_create, "Start a sandbox and print its id once it answers commands.", "[options]",
    "id=$(runtime sandbox create --name dev --timeout 600)", create_opts, false, 0, 0, NULL },
  { "exec", sandbox_exec, "Run one command in a running sandbox, stream its output, exit with its code.",
    "ID [options] -- CMD [ARG…]", "runtime sandbox exec dev --cwd /tmp -- ls -l", exec_opts, true, 1, 1, NULL },
  { "ls", sandbox_ls, "List sandboxes, oldest first.", "[options]", "runtime sandbox ls --label team=ml", ls_opts,
    false, 0, 0, NULL },
  { "get", sandbox_get, "Show everything about one sandbox.", "ID", "runtime sandbox get dev --json", no_opts, false,
    1, 1, NULL },
  { "stop", sandbox_stop, "Stop a sandbox: its VM ends, its record stays.", "ID", "runtime sandbox stop dev", no_opts,
    false, 1, 1, NULL },
  { "pause", sandbox_pause, "Freeze a sandbox; it uses no CPU until woken.", "ID", "runtime sandbox pause dev",
    no_opts, false, 1, 1, NULL },
  { "wake", sandbox_wake, "Resume a paused sandbox.", "ID", "runtime sandbox wake dev", no_opts, false, 1, 1, NULL },
  { "rm", sandbox_rm, "Stop a sandbox if it runs and forget it (no error if it is gone).", "ID",
    "runtime sandbox rm dev", no_opts, false, 1, 1, NULL },
  { "spawn", sandbox_spawn, "Start a command in the background; print its process number.",
    "ID [options] -- CMD [ARG…]", "runtime sandbox spawn dev -- python3 -m http.server 8000", spawn_opts, true, 1, 1,
    NULL },
  { "ps", sandbox_ps, "List a sandbox's background processes.", "ID", "runtime sandbox ps dev", no_opts, false, 1, 1,
    NULL },
  { "logs", sandbox_logs, "Print a background process's output (its latest 1 MiB).", "ID PROCESS [-f]",
    "runtime sandbox logs dev 1 -f", logs_opts, false, 2, 2, NULL },
  { "kill", sandbox_kill, "Signal a background process's group.", "ID PROCESS [--signal SIG]",
    "runtime sandbox kill dev 1 --signal INT", kill_opts, false, 2, 2, NULL },
  { "cp", sandbox_cp, "Copy a file or a whole directory into or out of a sandbox (modes kept).", "SRC DST",
    "runtime sandbox cp ./project dev:/workspace/ && runtime sandbox cp dev:/workspace/report.html .", no_opts,
    false, 2, 2, NULL },
  { "cat", sandbox_cat, "Print a file from the sandbox, byte for byte.", "ID PATH",
    "runtime sandbox cat dev /workspace/out.json", no_opts, false, 2, 2, NULL },
  { "files", sandbox_files, "List files in the sandbox: TYPE (d, l or -) SIZE PATH per entry.",
    "ID [PATH] [--depth N]", "runtime sandbox files dev /workspace --depth 2", files_opts, false, 1, 2, NULL },
  { "extend", sandbox_extend, "Move a sandbox's lease end SECONDS later (at most 1 h from now); print the new end.",
    "ID SECONDS", "runtime sandbox extend dev 600", no_opts, false, 2, 2, NULL },
  { "metrics", sandbox_metrics, "CPU now (% of its vCPUs), memory now, CPU seconds and cost so far.", "ID",
    "runtime sandbox metrics dev", no_opts, false, 1, 1, NULL },
  { "network", sandbox_network,
    "Show a sandbox's egress rules, replace them live (open connections they refuse are cut), or show its log.",
    "ID [--internet|--no-internet] [--allow HOST]... [--deny HOST]... | ID --log",
    "runtime sandbox network dev --allow pypi.org --allow '*.pythonhosted.org'", network_opts, false, 1, 1, NULL },
  { NULL, NULL, NULL, NULL, NULL, NULL, false, 0, 0, NULL },
};

int
cmd_sandbox (int argc, char **argv)
{
  return cli_group_dispatch ("sandbox", sandbox_cmds, argc, argv);
}
