/* sandbox.c - `runtime sandbox …`.  Parses, calls libruntime, prints.  */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define STDIN_MAX (1024 * 1024)
#define JSON_SMALL_CAP (64 * 1024)
#define JSON_LARGE_CAP (1024 * 1024)
#define DEFAULT_JSON_TIMEOUT_S 60
#define MAX_TIMEOUT_S (24 * 3600)

struct capture
{
  char *buf;
  size_t len, cap;
  bool truncated;
};

struct output
{
  bool json;
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
      if (size > STDIN_MAX)
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
print_json_result (struct output *o, const rt_exec_result *res)
{
  json_object *r = json_object_new_object ();
  json_object_object_add (r, "exitCode", json_object_new_int (res->exit_code));
  json_object_object_add (r, "stdout", json_object_new_string_len (o->out.buf ? o->out.buf : "", o->out.len));
  json_object_object_add (r, "stderr", json_object_new_string_len (o->err.buf ? o->err.buf : "", o->err.len));
  json_object_object_add (r, "timedOut", json_object_new_boolean (res->timed_out));
  json_object_object_add (r, "stdoutTruncated", json_object_new_boolean (o->out.truncated));
  json_object_object_add (r, "stderrTruncated", json_object_new_boolean (o->err.truncated));
  json_object_object_add (r, "durationMs", json_object_new_int64 (res->duration_ms));
  printf ("%s\n", json_object_to_json_string_ext (r, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put (r);
}

/* One argument runs under bash -c, several as argv with no shell.  */
static char **
command_argv (struct cli_args *a, char *shell[4])
{
  if (a->nrest == 1)
    {
      shell[0] = (char *) "bash";
      shell[1] = (char *) "-c";
      shell[2] = a->rest[0];
      shell[3] = NULL;
      return shell;
    }
  return a->rest;
}

static int
sandbox_run (struct cli_command *cmd, int argc, char **argv)
{
  struct cli_args a;
  rt_context *ctx = NULL;
  rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  rt_sandbox_config cfg = { 0 };
  rt_exec_result res = { 0 };
  struct output o = { 0 };
  char *shell[4], *input = NULL;
  size_t input_len = 0;
  unsigned long vcpu = 0, mem = 0, timeout = 0;
  sigset_t mask;
  int sfd = -1, ret, code = 1;

  ret = cli_parse (cmd, argc, argv, &a);
  if (ret != 0)
    return ret > 0 ? 0 : 1;
  if (cli_opt_uint (cmd, &a, "vcpu", 1, 16, &vcpu) < 0 || cli_opt_uint (cmd, &a, "memory", 256, 65536, &mem) < 0
      || cli_opt_uint (cmd, &a, "timeout", 1, MAX_TIMEOUT_S, &timeout) < 0)
    goto out;
  cfg.vcpu = vcpu;
  cfg.memory_mib = mem;
  cfg.image = cli_opt (cmd, &a, "image");
  o.json = a.json;
  if (a.json && timeout == 0)
    timeout = DEFAULT_JSON_TIMEOUT_S;
  o.out.cap = o.err.cap = timeout > 0 && timeout <= 60 ? JSON_SMALL_CAP : JSON_LARGE_CAP;
  if (read_stdin (&input, &input_len) < 0)
    goto out;

  /* Ctrl-C, SIGTERM and SIGHUP become a request to stop the command: the
     sandbox must still be torn down, so they must not kill us.  */
  sigemptyset (&mask);
  sigaddset (&mask, SIGINT);
  sigaddset (&mask, SIGTERM);
  sigaddset (&mask, SIGHUP);
  sigprocmask (SIG_BLOCK, &mask, NULL);
  sfd = signalfd (-1, &mask, SFD_CLOEXEC);
  signal (SIGPIPE, SIG_IGN);

  ctx = cli_context ();
  if (ctx == NULL)
    goto out;
  if (rt_sandbox_create (ctx, &cfg, &sb, &err) < 0)
    {
      code = cli_error (err);
      goto out;
    }
  {
    rt_exec_opts opts = { .stdin_data = input, .stdin_len = input_len, .timeout_ms = timeout * 1000ULL,
                          .cancel_fd = sfd, .on_output = on_output, .data = &o };
    ret = rt_sandbox_exec (sb, command_argv (&a, shell), &opts, &res, &err);
  }
  if (ret < 0)
    code = cli_error (err);
  else
    {
      if (res.timed_out)
        fprintf (stderr, "runtime: timed out after %lu s; the command's process group was killed.\n", timeout);
      code = res.interrupted ? 130 : res.exit_code;
      if (o.json)
        print_json_result (&o, &res);
    }
  rt_error_free (err);
  err = NULL;
  ret = rt_sandbox_destroy (sb, &err);
  sb = NULL;
  if (ret < 0)
    {
      cli_error (err);
      code = 1;
    }

out:
  if (sb)
    rt_sandbox_destroy (sb, NULL);
  rt_error_free (err);
  rt_context_free (ctx);
  cli_args_free (&a);
  free (input);
  free (o.out.buf);
  free (o.err.buf);
  if (sfd >= 0)
    close (sfd);
  return code;
}

static const struct cli_opt run_opts[] = {
  { "timeout", "S", "kill the command's process group after S seconds (exit 124)", "none; 60 with --json", false },
  { "vcpu", "N", "virtual CPUs", "2", false },
  { "memory", "MiB", "guest memory", "4096", false },
  { "image", "REF", "image to boot", "runtime", false },
  { NULL, NULL, NULL, NULL, false },
};

static struct cli_command sandbox_cmds[] = {
  { "run", sandbox_run, "Run one command in a fresh sandbox, stream its output, remove the sandbox.",
    "[options] -- CMD [ARG…]", "runtime sandbox run -- python3 -c 'print(6*7)'", run_opts, true, 0, 0, NULL },
  { NULL, NULL, NULL, NULL, NULL, NULL, false, 0, 0, NULL },
};

int
cmd_sandbox (int argc, char **argv)
{
  return cli_group_dispatch ("sandbox", sandbox_cmds, argc, argv);
}
