/* term.c - the host terminal in raw mode for `exec -t` and `shell`, and
   put back whatever way the process ends: the caller's restore, exit
   (atexit), a crash or any other signal whose default ends the process (a
   handler that restores and re-raises).  Process state, as a terminal is
   the process's: the CLI's, not the library's.  */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "term.h"

static struct termios saved, raw;
static int term_fd = -1;
static pid_t term_pid; /* a child forked since does not own the terminal */
static volatile sig_atomic_t raw_on;

void
cli_term_restore (void)
{
  if (!raw_on)
    return;
  raw_on = 0;
  /* TCSADRAIN: what was written in raw mode is shown as it was meant.  */
  while (tcsetattr (term_fd, TCSADRAIN, &saved) < 0 && errno == EINTR)
    ;
}

void
cli_term_reraw (void)
{
  if (term_fd < 0 || raw_on)
    return;
  if (tcsetattr (term_fd, TCSADRAIN, &raw) == 0)
    raw_on = 1;
}

bool
cli_term_is_raw (void)
{
  return raw_on;
}

static void
on_fatal (int sig)
{
  int saved_errno = errno;

  /* At once: a crash may be with output stuck behind ^S.  */
  if (raw_on && getpid () == term_pid)
    tcsetattr (term_fd, TCSANOW, &saved);
  raw_on = 0;
  errno = saved_errno;
  /* SA_RESETHAND made the action the default: this ends the process.  */
  raise (sig);
}

static void
arm_exit_paths (void)
{
  static bool armed;
  /* Every signal whose default action ends the process (SIGKILL aside).
     INT, TERM and HUP are blocked and read by the commands' signalfd:
     the handler is for when they are not.  */
  static const int fatal[]
      = { SIGSEGV, SIGBUS,  SIGFPE,  SIGILL,  SIGABRT, SIGTRAP,   SIGSYS,  SIGXCPU, SIGXFSZ, SIGHUP,  SIGINT,
          SIGTERM, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGPIPE, SIGIO,   SIGPWR, SIGSTKFLT };
  struct sigaction sa, old;

  if (armed)
    return;
  armed = true;
  atexit (cli_term_restore);
  memset (&sa, 0, sizeof (sa));
  sa.sa_handler = on_fatal;
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  sigemptyset (&sa.sa_mask);
  /* A signal someone ignores or handles (SIGPIPE, ignored by the
     commands) stays theirs.  */
  for (size_t i = 0; i < sizeof (fatal) / sizeof (fatal[0]); i++)
    if (sigaction (fatal[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
      sigaction (fatal[i], &sa, NULL);
  for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
    if (sigaction (sig, NULL, &old) == 0 && old.sa_handler == SIG_DFL)
      sigaction (sig, &sa, NULL);
}

int
cli_term_raw (int fd)
{
  if (raw_on)
    return 0;
  if (tcgetattr (fd, &saved) < 0)
    return -1;
  raw = saved;
  cfmakeraw (&raw);
  /* A read returns as soon as one byte is there.  */
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  term_fd = fd;
  term_pid = getpid ();
  arm_exit_paths ();
  if (tcsetattr (fd, TCSADRAIN, &raw) < 0)
    return -1;
  raw_on = 1;
  return 0;
}

void
cli_term_size (int fd, unsigned max, unsigned *cols, unsigned *rows)
{
  struct winsize ws;

  memset (&ws, 0, sizeof (ws));
  if ((ioctl (fd, TIOCGWINSZ, &ws) < 0 || ws.ws_col == 0 || ws.ws_row == 0)
      && (ioctl (STDOUT_FILENO, TIOCGWINSZ, &ws) < 0 || ws.ws_col == 0 || ws.ws_row == 0))
    {
      ws.ws_col = 80;
      ws.ws_row = 24;
    }
  *cols = ws.ws_col > max ? max : ws.ws_col;
  *rows = ws.ws_row > max ? max : ws.ws_row;
}
