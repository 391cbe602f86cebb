/* test-term.c - the terminal of `exec -t` (cli/term.c) on a pseudo-terminal
   of our own: raw mode, and the settings put back by cli_term_restore, at exit,
   after a crash and after any signal that ends the process; and -i/-t/-it
   spelled out (cli_short_flags).  */
#include <fcntl.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"
#include "tap.h"
#include "term.h"

static int
open_pty (void)
{
  int m = posix_openpt (O_RDWR | O_NOCTTY);
  struct winsize ws = { .ws_row = 30, .ws_col = 100 };
  int s;

  if (m < 0 || grantpt (m) < 0 || unlockpt (m) < 0)
    return -1;
  s = open (ptsname (m), O_RDWR | O_NOCTTY);
  ioctl (s, TIOCSWINSZ, &ws);
  /* The master stays open for the test's life: a pty whose master closed
     takes no settings.  */
  return s;
}

static bool
same (int fd, const struct termios *want)
{
  struct termios t;
  return tcgetattr (fd, &t) == 0 && t.c_iflag == want->c_iflag && t.c_oflag == want->c_oflag
         && t.c_cflag == want->c_cflag && t.c_lflag == want->c_lflag && memcmp (t.c_cc, want->c_cc, NCCS) == 0;
}

/* In a child: raw, then @how ends it; the settings after, back in ours.  */
static bool
restored_after (int fd, const struct termios *before, int how)
{
  pid_t pid;
  int status;

  /* The child's exit() must not print our buffered lines again.  */
  fflush (stdout);
  pid = fork ();
  if (pid == 0)
    {
      /* No core files of ours (SIGQUIT, SIGSEGV, …).  */
      setrlimit (RLIMIT_CORE, &(struct rlimit){ 0, 0 });
      if (cli_term_raw (fd) < 0)
        _exit (3);
      if (how == 0)
        exit (0); /* atexit */
      raise (how);
      _exit (4);
    }
  waitpid (pid, &status, 0);
  if (how == 0 ? !(WIFEXITED (status) && WEXITSTATUS (status) == 0)
               : !(WIFSIGNALED (status) && WTERMSIG (status) == how))
    return false;
  return same (fd, before);
}

/* In a child: SIGUSR2 ignored before cli_term_raw is still ignored after.  */
static bool
ignored_stays (int fd)
{
  pid_t pid;
  int status;

  fflush (stdout);
  pid = fork ();
  if (pid == 0)
    {
      signal (SIGUSR2, SIG_IGN);
      if (cli_term_raw (fd) < 0)
        _exit (3);
      raise (SIGUSR2);
      /* Still here, still raw: put it back ourselves.  */
      _exit (cli_term_is_raw () ? (cli_term_restore (), 5) : 4);
    }
  waitpid (pid, &status, 0);
  return WIFEXITED (status) && WEXITSTATUS (status) == 5;
}

static void
test_terminal (void)
{
  struct termios before, t;
  unsigned cols = 0, rows = 0;
  int fd = open_pty ();

  ok (fd >= 0, "a pseudo-terminal to test on");
  if (fd < 0)
    return;
  tcgetattr (fd, &before);
  ok (!cli_term_is_raw (), "not raw before cli_term_raw");
  ok (cli_term_raw (fd) == 0 && cli_term_is_raw (), "cli_term_raw on a terminal");
  tcgetattr (fd, &t);
  ok (!(t.c_lflag & (ICANON | ECHO | ISIG | IEXTEN)), "raw: no line editing, no echo, ^C ^Z ^\\ are bytes");
  ok (!(t.c_iflag & (IXON | ICRNL)) && !(t.c_oflag & OPOST), "raw: no ^S/^Q, no CR/NL mapping, no output processing");
  ok (t.c_cc[VMIN] == 1 && t.c_cc[VTIME] == 0, "raw: a read returns each byte");
  cli_term_restore ();
  ok (!cli_term_is_raw () && same (fd, &before), "cli_term_restore puts every setting back");
  cli_term_restore ();
  ok (same (fd, &before), "a second cli_term_restore changes nothing");
  cli_term_reraw ();
  tcgetattr (fd, &t);
  ok (cli_term_is_raw () && !(t.c_lflag & ICANON), "cli_term_reraw: raw again (after SIGCONT)");
  cli_term_restore ();
  ok (restored_after (fd, &before, 0), "exit() puts the terminal back (atexit)");
  ok (restored_after (fd, &before, SIGSEGV), "a crash (SIGSEGV) puts it back, and still dies of it");
  ok (restored_after (fd, &before, SIGABRT), "abort() puts it back, and still dies of it");
  {
    static const struct
    {
      int sig;
      const char *name;
    } ends[] = { { SIGQUIT, "SIGQUIT" }, { SIGUSR1, "SIGUSR1" }, { SIGUSR2, "SIGUSR2" }, { SIGALRM, "SIGALRM" },
                 { SIGHUP, "SIGHUP" },   { SIGTERM, "SIGTERM" }, { SIGINT, "SIGINT" },   { SIGPIPE, "SIGPIPE" },
                 { SIGXCPU, "SIGXCPU" }, { SIGPROF, "SIGPROF" } };
    for (size_t i = 0; i < sizeof (ends) / sizeof (ends[0]); i++)
      ok (restored_after (fd, &before, ends[i].sig), "%s puts it back, and still ends the process", ends[i].name);
    ok (restored_after (fd, &before, SIGRTMIN + 3), "a real-time signal (SIGRTMIN+3) too");
  }
  ok (ignored_stays (fd), "a signal the program ignores stays ignored: raw on, the process lives");
  cli_term_size (fd, 1000, &cols, &rows);
  ok (cols == 100 && rows == 30, "cli_term_size reads the window (100x30)");
  cli_term_size (fd, 50, &cols, &rows);
  ok (cols == 50 && rows == 30, "cli_term_size clamps a side to the maximum");
  {
    int null = open ("/dev/null", O_RDWR);
    ok (cli_term_raw (null) < 0 && !cli_term_is_raw (), "cli_term_raw refuses what is not a terminal");
    close (null);
  }
  close (fd);
}

static int
expand (const char *const *in, const char *want)
{
  static const char *const longs[] = { "--interactive", "--tty" };
  char **out;
  char got[256] = "";
  int argc = 0, n = 0;

  while (in[argc])
    argc++;
  out = cli_short_flags (argc, (char **) in, "it", longs, &n);
  if (out == NULL)
    return 0;
  for (int i = 0; i < n; i++)
    snprintf (got + strlen (got), sizeof (got) - strlen (got), "%s%s", i ? " " : "", out[i]);
  free (out);
  if (strcmp (got, want) != 0)
    printf ("# got '%s', want '%s'\n", got, want);
  return strcmp (got, want) == 0;
}

int
main (void)
{
  sigset_t none;

  /* Every signal at its default and unblocked, whatever we inherited: a
     background job of a shell without job control ignores SIGINT and
     SIGQUIT, and cli_term_raw rightly leaves an ignored signal alone.  */
  for (int sig = 1; sig < NSIG; sig++)
    {
      struct sigaction sa;
      if (sigaction (sig, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
        signal (sig, SIG_DFL);
    }
  sigemptyset (&none);
  sigprocmask (SIG_SETMASK, &none, NULL);
  test_terminal ();
  ok (expand ((const char *[]){ "exec", "-it", "dev", "--", "bash", NULL }, "exec --interactive --tty dev -- bash"),
      "-it is -i -t");
  ok (expand ((const char *[]){ "exec", "-ti", "-i", "dev", NULL }, "exec --tty --interactive --interactive dev"),
      "-ti and -i");
  ok (expand ((const char *[]){ "exec", "dev", "-t", "--cwd", "/", "--", "ls", "-it", NULL },
              "exec dev --tty --cwd / -- ls -it"),
      "after -- the words are the command's");
  ok (expand ((const char *[]){ "exec", "-ix", "-", "--tty", "-f", NULL }, "exec -ix - --tty -f"),
      "other letters, a lone - and long options stay as they are");
  return tap_done ();
}
