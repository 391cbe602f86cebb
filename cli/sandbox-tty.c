/* sandbox-tty.c - `runtime sandbox exec -i|-t` and `runtime sandbox shell`:
   a command with its stdin open (rt_sandbox_attach), on a terminal in the
   guest with -t, driven by one poll() loop over our stdin, the session and
   a signalfd (stop signals, SIGWINCH, SIGCONT).  With -it our terminal is
   raw, so ^C ^Z ^\ are bytes for the guest's terminal (term.c puts it
   back on every way out).  A sandbox that does not answer a stop (its VM
   stopped, its agent stuck) is given up on 5 s after the SIGKILL.  */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "sandbox.h"
#include "term.h"

#define PUMP_BUF (64 * 1024)
#define KILL_AFTER_MS 5000
#define GIVE_UP_AFTER_MS 5000 /* after the SIGKILL: the guest does not answer */
#define DEFAULT_TERM "xterm-256color"

/* TERM for the guest: ours, else xterm-256color (the base image knows
   it); the user's own --env TERM wins.  */
static int
add_term (struct job *j)
{
  const char *term = getenv ("TERM");
  size_t n = 0;

  for (; j->env && j->env[n]; n++)
    if (strncmp (j->env[n], "TERM=", 5) == 0)
      return 0;
  j->tty_env = calloc (n + 2, sizeof (char *));
  if (j->tty_env == NULL || asprintf (&j->term_var, "TERM=%s", term && *term ? term : DEFAULT_TERM) < 0)
    {
      j->term_var = NULL;
      return -1;
    }
  memcpy (j->tty_env, j->env, n * sizeof (char *));
  j->tty_env[n] = j->term_var;
  j->env = j->tty_env;
  return 0;
}

int
cli_attach_prepare (struct cli_command *cmd, struct cli_args *a, struct job *j, bool tty, bool interactive)
{
  const char *what = strcmp (cmd->name, "shell") == 0 ? "runtime sandbox shell" : "-t";
  sigset_t mask;

  j->tty = tty;
  j->interactive = interactive;
  if (tty && a->json)
    {
      cli_usage_error ("--json is for output a program reads; drop it, or drop -t", "%s takes no --json", what);
      return -1;
    }
  if (tty && !isatty (STDIN_FILENO))
    {
      bool run = strcmp (cmd->name, "run") == 0;
      if (strcmp (what, "-t") == 0)
        cli_usage_error (run ? "standard input is a pipe or a file: drop -t and pass it with -i "
                               "(runtime sandbox run -i -- CMD)"
                             : "standard input is a pipe or a file: drop -t and pass it with -i "
                               "(runtime sandbox exec -i ID -- CMD)",
                         "-t needs a terminal on standard input");
      else
        cli_usage_error ("without a terminal, pipe commands to a shell: runtime sandbox exec -i ID -- bash -s",
                         "%s needs a terminal on standard input", what);
      return -1;
    }
  if (tty && add_term (j) < 0)
    {
      cli_fail ("internal", NULL, "out of memory");
      return -1;
    }
  /* The signalfd of cli_job_prepare also takes the window's changes and a
     continue after a stop.  */
  sigemptyset (&mask);
  sigaddset (&mask, SIGWINCH);
  sigaddset (&mask, SIGCONT);
  sigprocmask (SIG_BLOCK, &mask, NULL);
  sigprocmask (SIG_BLOCK, NULL, &mask);
  /* Non-blocking: the loop reads it until it is empty.  */
  if (j->sfd < 0 || signalfd (j->sfd, &mask, 0) < 0 || fcntl (j->sfd, F_SETFL, O_NONBLOCK) < 0)
    {
      cli_fail ("internal", NULL, "cannot watch signals: %s", strerror (errno));
      return -1;
    }
  return 0;
}

struct pump
{
  rt_session *s;
  struct job *j;
  bool in_open;        /* our stdin is still read */
  int stop_sig;        /* the first stop signal we got, or 0 */
  uint64_t kill_at;    /* CLOCK_MONOTONIC ms of the SIGKILL to send, or 0 */
  uint64_t give_up_at; /* CLOCK_MONOTONIC ms to stop waiting for the end, or 0 */
  bool gave_up;
  rt_error *err;
  int poll_errno;
};

static uint64_t
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* SIGKILL to the command's group; its end is awaited only so long.  */
static int
send_kill (struct pump *p)
{
  p->kill_at = 0;
  if (p->give_up_at == 0)
    p->give_up_at = now_ms () + GIVE_UP_AFTER_MS;
  return rt_session_signal (p->s, SIGKILL, &p->err);
}

static int
pass_size (struct pump *p)
{
  unsigned cols, rows;

  if (!p->j->tty)
    return 0;
  cli_term_size (STDIN_FILENO, RT_MAX_PTY_SIDE, &cols, &rows);
  return rt_session_resize (p->s, cols, rows, &p->err);
}

/* A stop signal to us: as exec's Ctrl-C, the command's group gets SIGTERM
   (SIGHUP after a hang-up), SIGKILL 5 s later or at a second one.  */
static int
on_stop (struct pump *p, int sig)
{
  if (p->stop_sig)
    return send_kill (p);
  p->stop_sig = sig;
  p->in_open = false;
  p->kill_at = now_ms () + KILL_AFTER_MS;
  return rt_session_signal (p->s, sig == SIGHUP ? SIGHUP : SIGTERM, &p->err);
}

static int
on_signals (struct pump *p)
{
  struct signalfd_siginfo si;
  int ret = 0;

  while (ret == 0 && read (p->j->sfd, &si, sizeof (si)) == (ssize_t) sizeof (si))
    {
      if (si.ssi_signo == SIGWINCH)
        ret = pass_size (p);
      else if (si.ssi_signo == SIGCONT)
        {
          /* Whoever stopped us may have reset the terminal.  */
          if (p->j->tty && p->j->interactive)
            cli_term_reraw ();
          ret = pass_size (p);
        }
      else
        ret = on_stop (p, (int) si.ssi_signo);
    }
  return ret;
}

/* Our stdin to the command, as much as its window takes.  */
static int
on_input (struct pump *p)
{
  char buf[PUMP_BUF];
  size_t room = rt_session_writable (p->s);
  ssize_t n;

  n = read (STDIN_FILENO, buf, room < sizeof (buf) ? room : sizeof (buf));
  if (n < 0 && (errno == EINTR || errno == EAGAIN))
    return 0;
  if (n > 0)
    return rt_session_write (p->s, buf, n, &p->err);
  p->in_open = false;
  /* A pty has no end of input: our terminal hung up, so does theirs.  */
  if (p->j->tty)
    return rt_session_signal (p->s, SIGHUP, &p->err);
  return rt_session_close_input (p->s, &p->err);
}

/* Everything the session has now: 1 at its end, 0 for more, -1 on an
   error (in p->err) or a lost write (p->j->o.lost).  */
static int
drain (struct pump *p)
{
  char buf[PUMP_BUF];

  for (;;)
    {
      int stream = 1;
      long n = rt_session_read (p->s, &stream, buf, sizeof (buf), &p->err);
      if (n == -EAGAIN)
        return 0;
      if (n == 0)
        return 1;
      if (n < 0 || cli_on_output (&p->j->o, stream, buf, n) < 0)
        return -1;
    }
}

/* Until the session ends: 0, or -1 (p->err set, or the output lost).  */
static int
pump_loop (struct pump *p)
{
  for (;;)
    {
      struct pollfd fds[3] = {
        { rt_session_fd (p->s), POLLIN, 0 },
        { p->j->sfd, POLLIN, 0 },
        { p->in_open && rt_session_writable (p->s) > 0 ? STDIN_FILENO : -1, POLLIN, 0 },
      };
      uint64_t now = now_ms (), next = p->kill_at ? p->kill_at : p->give_up_at;
      int timeout = -1, ret;

      if (p->give_up_at && now >= p->give_up_at)
        {
          p->gave_up = true;
          return -1;
        }
      if (p->kill_at && now >= p->kill_at)
        {
          if (send_kill (p) < 0)
            return -1;
          continue;
        }
      if (next)
        timeout = (int) (next - now);
      if (poll (fds, 3, timeout) < 0 && errno != EINTR)
        {
          p->poll_errno = errno;
          return -1;
        }
      if (fds[1].revents && on_signals (p) < 0)
        return -1;
      ret = drain (p);
      if (ret != 0)
        return ret > 0 ? 0 : -1;
      if (fds[2].revents && on_input (p) < 0)
        return -1;
    }
}

int
cli_attach_run (rt_sandbox *sb, struct job *j)
{
  rt_exec_opts opts
      = { .cwd = j->cwd, .user = j->user, .env = j->env, .timeout_ms = j->timeout_s * 1000ULL, .cancel_fd = -1 };
  struct pump p = { .j = j, .in_open = j->interactive };
  rt_exec_result res = { 0 };
  int ret;

  if (j->tty)
    cli_term_size (STDIN_FILENO, RT_MAX_PTY_SIDE, &opts.pty_cols, &opts.pty_rows);
  if (rt_sandbox_attach (sb, j->argv, &opts, &p.s, &p.err) < 0)
    return cli_lib_fail (p.err);
  /* -t alone reads no keyboard: ^C stays ours, as exec's.  */
  if (j->tty && j->interactive && cli_term_raw (STDIN_FILENO) < 0)
    {
      rt_session_free (p.s);
      return cli_fail ("internal", NULL, "cannot put the terminal in raw mode: %s", strerror (errno));
    }
  ret = pump_loop (&p);
  if (ret == 0)
    ret = rt_session_result (p.s, &res, &p.err);
  /* Freed first: a command still running (after an error) is killed.  */
  rt_session_free (p.s);
  cli_term_restore ();
  if (ret < 0)
    {
      if (p.gave_up)
        return cli_fail ("cleanup_failed",
                         "runtime sandbox get ID shows its state; runtime sandbox stop ID ends all that runs in it",
                         "sandbox %s did not answer within %d s of SIGKILL to the command: it may still run",
                         rt_sandbox_id (sb), GIVE_UP_AFTER_MS / 1000);
      if (p.err)
        return cli_lib_fail (p.err);
      if (p.poll_errno)
        return cli_fail ("internal", NULL, "poll: %s", strerror (p.poll_errno));
      return 1; /* our output was lost: nobody to tell */
    }
  res.interrupted = p.stop_sig != 0;
  return cli_job_finish (j, &res);
}

static const char *const login_shell[] = { "bash", "-l", NULL };

int
cli_sandbox_shell (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  struct job j = { .sfd = -1, .attach = true };
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  int code;

  if (!cli_start (cmd, argc, argv, &a, &ctx, &code))
    return code;
  if (cli_job_prepare (cmd, &a, true, &j) < 0 || cli_attach_prepare (cmd, &a, &j, true, true) < 0)
    code = 1;
  else
    {
      j.argv = login_shell;
      if (j.cwd == NULL)
        j.cwd = "/workspace";
      if (rt_sandbox_open (ctx, a.pos[0], &sb, &err) < 0)
        code = cli_lib_fail (err);
      else
        code = cli_attach_run (sb, &j);
    }
  cli_job_free (&j);
  return code;
}

const struct cli_opt cli_shell_opts[] = {
  { "user", "NAME", "log in as runtime (uid 1000) or root", "runtime", false },
  { "cwd", "DIR", "start in this directory (absolute)", "/workspace", false },
  { "env", "K=V", "an environment variable for the shell", NULL, true },
  { NULL, NULL, NULL, NULL, false },
};
