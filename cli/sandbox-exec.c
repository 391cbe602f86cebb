/* sandbox-exec.c - `runtime sandbox exec, spawn, ps, logs, kill, write`:
   commands in a running sandbox, and the path of one command `run` shares
   (exec -i and -t go on in sandbox-tty.c).  */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sandbox.h"

#define JSON_SMALL_CAP (64 * 1024)
#define JSON_LARGE_CAP (1024 * 1024)

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

int
cli_on_output (void *data, int stream, const char *buf, size_t len)
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
print_json_result (const struct output *o, const rt_exec_result *res, int code)
{
  json_object *r = json_object_new_object ();
  json_object_object_add (r, "exitCode", json_object_new_int (code));
  json_object_object_add (r, "stdout", json_object_new_string_len (o->out.buf ? o->out.buf : "", o->out.len));
  json_object_object_add (r, "stderr", json_object_new_string_len (o->err.buf ? o->err.buf : "", o->err.len));
  json_object_object_add (r, "timedOut", json_object_new_boolean (res->timed_out));
  json_object_object_add (r, "stdoutTruncated", json_object_new_boolean (o->out.truncated));
  json_object_object_add (r, "stderrTruncated", json_object_new_boolean (o->err.truncated));
  json_object_object_add (r, "durationMs", json_object_new_int64 (res->duration_ms));
  cli_print_json (r);
  json_object_put (r);
}

int
cli_job_prepare (struct cli_command *cmd, struct cli_args *a, bool with_env, struct job *j)
{
  bool attach = j->attach;
  sigset_t mask;
  int ret;

  memset (j, 0, sizeof (*j));
  j->sfd = -1;
  j->attach = attach;
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
      if (cli_read_env_files (cmd, a) < 0)
        return -1;
      j->env = cli_opt_list (cmd, a, "env", &n);
      if (cli_check_env (j->env, n) < 0)
        return -1;
    }
  /* One argument runs under bash -c (sh -c without bash), several as
     argv with no shell.  */
  if (a->nrest == 1)
    {
      j->shell[0] = "/bin/sh";
      j->shell[1] = "-c";
      j->shell[2] = RT_SHELL_SCRIPT;
      j->shell[3] = "sh";
      j->shell[4] = a->rest[0];
      j->shell[5] = NULL;
      j->argv = j->shell;
    }
  else
    j->argv = (const char *const *) a->rest;
  /* --json changes what is printed, not how long the command may run
     (as the API's exec: no timeoutMs, no timeout).  */
  j->o.json = a->json;
  j->o.out.cap = j->o.err.cap = j->timeout_s > 0 && j->timeout_s <= 60 ? JSON_SMALL_CAP : JSON_LARGE_CAP;
  /* Streamed (exec -i, shell): nothing is read before the command runs.  */
  ret = j->attach ? 0 : read_stdin (&j->input, &j->input_len);
  if (ret < 0)
    {
      if (ret == -1)
        cli_fail ("internal", NULL, "cannot read standard input: %s", strerror (errno));
      return -1;
    }

  /* Ctrl-C, SIGTERM and SIGHUP become a request to stop the command (the
     library watches the signalfd): a `run` must still tear its sandbox
     down, so they must not kill us.  */
  cli_block_stop_signals (&mask);
  j->sfd = signalfd (-1, &mask, SFD_CLOEXEC);
  signal (SIGPIPE, SIG_IGN);
  return 0;
}

/* Runs the job; returns the exit code `run` and `exec` end with.  */
int
cli_job_run (rt_sandbox *sb, struct job *j)
{
  rt_exec_opts opts = { .cwd = j->cwd, .user = j->user, .env = j->env, .stdin_data = j->input,
                        .stdin_len = j->input_len, .timeout_ms = j->timeout_s * 1000ULL, .cancel_fd = j->sfd,
                        .on_output = cli_on_output, .data = &j->o };
  rt_exec_result res = { 0 };
  rt_error *err = NULL;

  if (rt_sandbox_exec (sb, j->argv, &opts, &res, &err) < 0)
    {
      if (j->o.lost)
        {
          rt_error_free (err);
          return 1;
        }
      return cli_lib_fail (err);
    }
  return cli_job_finish (j, &res);
}

int
cli_job_finish (struct job *j, const rt_exec_result *res)
{
  int code;

  if (res->timed_out)
    fprintf (stderr, "runtime: timed out after %lu s; the command's process group was killed.\n",
             j->timeout_s ? j->timeout_s : (unsigned long) RT_MAX_EXEC_TIMEOUT_S);
  code = res->interrupted ? 130 : res->timed_out ? 124 : res->exit_code;
  if (j->o.json)
    print_json_result (&j->o, res, code);
  if (j->o.lost)
    code = 1;
  return code;
}

void
cli_job_free (struct job *j)
{
  free (j->input);
  free (j->tty_env);
  free (j->term_var);
  free (j->o.out.buf);
  free (j->o.err.buf);
  if (j->sfd >= 0)
    close (j->sfd);
}

int
cli_sandbox_exec (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  struct job j = { .sfd = -1 };
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  cleanup_free char **args = NULL;
  bool tty, interactive;
  int code;

  /* -i, -t and -it, as docker exec and kubectl exec take them.  */
  if ((args = cli_short_flags (argc, argv, "it", cli_attach_longs, &argc)) == NULL)
    return cli_fail ("internal", NULL, "out of memory");
  if (!cli_start (cmd, argc, args, &a, &ctx, &code))
    return code;
  tty = cli_has_opt (cmd, &a, "tty");
  interactive = cli_has_opt (cmd, &a, "interactive");
  j.attach = tty || interactive;
  /* The command's own arguments are checked before the sandbox.  */
  if (cli_job_prepare (cmd, &a, true, &j) < 0 || (j.attach && cli_attach_prepare (cmd, &a, &j, tty, interactive) < 0))
    code = 1;
  else if (rt_sandbox_open (ctx, a.pos[0], &sb, &err) < 0)
    code = cli_lib_fail (err);
  else
    code = j.attach ? cli_attach_run (sb, &j) : cli_job_run (sb, &j);
  cli_job_free (&j);
  return code;
}

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

int
cli_sandbox_spawn (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  struct job j = { .sfd = -1 };
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  uint32_t process;
  int code;

  if (!cli_start (cmd, argc, argv, &a, &ctx, &code))
    return code;
  /* The command's own arguments are checked before the sandbox, as exec's.  */
  if (cli_job_prepare (cmd, &a, true, &j) < 0)
    code = 1;
  else if (rt_sandbox_open (ctx, a.pos[0], &sb, &err) < 0)
    code = cli_lib_fail (err);
  else
    {
      rt_exec_opts opts = { .cwd = j.cwd, .user = j.user, .env = j.env, .stdin_data = j.input,
                            .stdin_len = j.input_len, .timeout_ms = j.timeout_s * 1000ULL, .cancel_fd = -1,
                            .keep_stdin = cli_has_opt (cmd, &a, "stdin") };
      if (rt_sandbox_spawn (sb, j.argv, &opts, &process, &err) < 0)
        code = cli_lib_fail (err);
      else
        {
          if (a.json)
            printf ("{\"id\":\"%s\",\"process\":%u}\n", rt_sandbox_id (sb), process);
          else
            printf ("%u\n", process);
          code = 0;
        }
    }
  cli_job_free (&j);
  return code;
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
      /* The command line is the guest's to report: shown as text.  */
      cleanup_free char *command = rt_text_escape (cli_jstr (p, "command"), false);
      char exit_s[16] = "-";
      if (json_object_object_get_ex (p, "exitCode", &v) && v)
        snprintf (exit_s, sizeof (exit_s), "%d", json_object_get_int (v));
      json_object_object_get_ex (p, "process", &v);
      printf ("%-8d %-8s %-5s %s\n", json_object_get_int (v), cli_jstr (p, "state"), exit_s, command ? command : "-");
    }
}

int
cli_sandbox_ps (struct cli_command *cmd, int argc, char **argv)
{
  return cli_show_target_json (cmd, argc, argv, ps_fetch, ps_table);
}

int
cli_sandbox_logs (struct cli_command *cmd, int argc, char **argv)
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
  if (!cli_open_target (cmd, argc, argv, &a, &ctx, &sb, &code))
    return code;
  if (parse_process (a.pos[1], &process) < 0)
    return 1;
  signal (SIGPIPE, SIG_IGN);
  {
    rt_exec_opts opts = { .cancel_fd = -1, .on_output = cli_on_output, .data = &o };
    code = rt_sandbox_logs (sb, process, cli_has_opt (cmd, &a, "follow"), &opts, &res, &exited, &err) < 0
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

int
cli_sandbox_kill (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  uint32_t process;
  const char *sig_s;
  int sig = SIGTERM, code;

  if (!cli_open_target (cmd, argc, argv, &a, &ctx, &sb, &code))
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

/* Where process @process's stdin ends now (ps's stdinOffset).  Return:
   0, -1 with @err set, -2 when there is no such process.  */
static int
stdin_offset (rt_sandbox *sb, uint32_t process, uint64_t *offset, rt_error **err)
{
  cleanup_free char *text = NULL;
  cleanup_json json_object *arr = NULL;

  if (rt_sandbox_ps_json (sb, &text, err) < 0)
    return -1;
  arr = json_tokener_parse (text);
  for (size_t i = 0; arr && i < json_object_array_length (arr); i++)
    {
      json_object *p = json_object_array_get_idx (arr, i), *v;
      if (json_object_object_get_ex (p, "process", &v) && json_object_get_int64 (v) == process)
        {
          *offset = json_object_object_get_ex (p, "stdinOffset", &v) ? (uint64_t) json_object_get_int64 (v) : 0;
          return 0;
        }
    }
  return -2;
}

/* Fills @buf from stdin; *@end when it ended.  Return: the bytes, or -1.  */
static ssize_t
read_chunk (char *buf, size_t size, bool *end)
{
  size_t n = 0;

  while (n < size && !*end)
    {
      ssize_t r = read (0, buf + n, size - n);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        return -1;
      *end = r == 0;
      n += (size_t) r;
    }
  return (ssize_t) n;
}

/* Sends @len bytes at @at, again from where the sandbox stopped taking
   them until all are in.  */
static int
write_all (rt_sandbox *sb, uint32_t process, const char *buf, size_t len, uint64_t *at, bool eof, rt_error **err)
{
  uint64_t start = *at, end = start + len;

  do
    {
      uint64_t before = *at;
      if (rt_sandbox_write (sb, process, buf + (*at - start), end - *at, *at, eof, at, err) < 0)
        return -1;
      /* It holds all it will until the process reads some.  */
      if (*at == before && *at < end)
        nanosleep (&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
    }
  while (*at < end);
  return 0;
}

int
cli_sandbox_write (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  cleanup_free char *buf = NULL;
  rt_error *err = NULL;
  uint32_t process;
  uint64_t at = 0;
  bool eof, end = false;
  int code;

  if (!cli_open_target (cmd, argc, argv, &a, &ctx, &sb, &code))
    return code;
  if (parse_process (a.pos[1], &process) < 0)
    return 1;
  eof = cli_has_opt (cmd, &a, "eof");
  if ((buf = malloc (RT_MAX_STDIN)) == NULL)
    return cli_fail ("internal", NULL, "out of memory");
  if ((code = stdin_offset (sb, process, &at, &err)) == -2)
    return cli_fail ("not_found", "runtime sandbox ps ID lists the processes", "no process %u in sandbox %s", process,
                     rt_sandbox_id (sb));
  if (code < 0)
    return cli_lib_fail (err);
  while (!end)
    {
      ssize_t n = read_chunk (buf, RT_MAX_STDIN, &end);
      if (n < 0)
        return cli_fail ("internal", NULL, "cannot read standard input: %s", strerror (errno));
      if ((n > 0 || (end && eof)) && write_all (sb, process, buf, (size_t) n, &at, end && eof, &err) < 0)
        return cli_lib_fail (err);
    }
  if (a.json)
    printf ("{\"process\":%u,\"offset\":%llu}\n", process, (unsigned long long) at);
  return 0;
}

const char *const cli_attach_longs[] = { "--interactive", "--tty" };

const struct cli_opt cli_exec_opts[] = {
  CLI_ATTACH_OPTS,
  { "cwd", "DIR", "working directory (absolute)", "/workspace", false },
  { "user", "NAME", "run as runtime (uid 1000) or root", "runtime", false },
  { "env", "K=V", "an environment variable for this command", NULL, true },
  CLI_ENV_FILE_OPT,
  { "timeout", "S", "kill the command's process group after S seconds (exit 124)", "none", false },
  { NULL, NULL, NULL, NULL, false },
};

const struct cli_opt cli_spawn_opts[] = {
  { "cwd", "DIR", "working directory (absolute)", "/workspace", false },
  { "user", "NAME", "run as runtime (uid 1000) or root", "runtime", false },
  { "env", "K=V", "an environment variable for this command", NULL, true },
  CLI_ENV_FILE_OPT,
  { "timeout", "S", "kill the command's process group after S seconds", "none", false },
  { "stdin", NULL, "keep its stdin open for 'runtime sandbox write' (after piped input, if any)", NULL, false },
  { NULL, NULL, NULL, NULL, false },
};

const struct cli_opt cli_logs_opts[] = {
  { "follow", NULL, "keep printing output until the process exits (also -f)", NULL, false },
  { NULL, NULL, NULL, NULL, false },
};

const struct cli_opt cli_write_opts[] = {
  { "eof", NULL, "close its stdin after these bytes", NULL, false },
  { NULL, NULL, NULL, NULL, false },
};

const struct cli_opt cli_kill_opts[] = {
  { "signal", "SIG", "signal name or number (TERM, KILL, INT, HUP, USR1, …)", "TERM", false },
  { NULL, NULL, NULL, NULL, false },
};
