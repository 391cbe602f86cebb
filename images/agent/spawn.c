/* spawn.c - a command's environment and its fork/exec.  */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spawn.h"
#include "users.h"

void
strv_clear (struct strv *s)
{
  for (size_t i = 0; i < s->n; i++)
    free (s->v[i]);
  free (s->v);
  s->v = NULL;
  s->n = s->cap = 0;
}

/* Sets KEY=VALUE (`entry`, length `len`), replacing an entry of the same
   key.  Return: 0, or -1 when out of memory.  */
int
env_set (struct strv *s, const char *entry, size_t len)
{
  size_t klen = strchr (entry, '=') - entry + 1;
  char *copy = strndup (entry, len);

  if (copy == NULL)
    return -1;
  for (size_t i = 0; i < s->n; i++)
    if (strncmp (s->v[i], entry, klen) == 0)
      {
        free (s->v[i]);
        s->v[i] = copy;
        return 0;
      }
  if (s->n + 2 > s->cap)
    {
      size_t cap = s->cap ? s->cap * 2 : 16;
      char **v = realloc (s->v, cap * sizeof *v);
      if (v == NULL)
        {
          free (copy);
          return -1;
        }
      s->v = v;
      s->cap = cap;
    }
  s->v[s->n++] = copy;
  s->v[s->n] = NULL;
  return 0;
}

static int
env_setf (struct strv *s, const char *key, const char *value)
{
  char buf[512];
  int n = snprintf (buf, sizeof buf, "%s=%s", key, value);

  if (n < 0 || (size_t) n >= sizeof buf)
    return -1;
  return env_set (s, buf, n);
}

int
env_base (struct strv *s, const struct user *u, const char *proxy_url)
{
  if (env_setf (s, "PATH", DEFAULT_PATH) < 0 || env_setf (s, "HOME", u->home) < 0
      || env_setf (s, "USER", u->name) < 0 || env_setf (s, "LOGNAME", u->name) < 0
      || env_setf (s, "LANG", "C.UTF-8") < 0)
    return -1;
  /* Both spellings: curl reads only the lower-case http_proxy.  */
  if (proxy_url[0]
      && (env_setf (s, "HTTP_PROXY", proxy_url) < 0 || env_setf (s, "HTTPS_PROXY", proxy_url) < 0
          || env_setf (s, "http_proxy", proxy_url) < 0 || env_setf (s, "https_proxy", proxy_url) < 0
          || env_setf (s, "NO_PROXY", "localhost,127.0.0.1,::1") < 0
          || env_setf (s, "no_proxy", "localhost,127.0.0.1,::1") < 0))
    return -1;
  return 0;
}

static void __attribute__ ((noreturn))
child_exec (const struct spawn *s)
{
  sigset_t none;
  int err;

  /* The agent blocks SIGCHLD and ignores SIGPIPE; the command must not
     inherit either.  */
  sigemptyset (&none);
  sigprocmask (SIG_SETMASK, &none, NULL);
  for (int sig = 1; sig < NSIG; sig++)
    signal (sig, SIG_DFL);
  /* Own session and process group: signals and the final SIGKILL reach
     everything it starts.  */
  setsid ();
  for (int i = 0; i < 3; i++)
    if (s->fd[i] != i && dup2 (s->fd[i], i) < 0)
      _exit (127);
  /* The new session's terminal: its foreground group is this one, so a
     ^C typed reaches the program, not the agent.  */
  if (s->ctty && ioctl (0, TIOCSCTTY, 0) < 0)
    _exit (127);
  if (setgroups (s->user->ngroups, s->user->groups) < 0 || setgid (s->user->gid) < 0
      || setuid (s->user->uid) < 0)
    {
      dprintf (2, "runtime: cannot switch to user '%s': %s\n", s->user->name, strerror (errno));
      _exit (127);
    }
  if (chdir (s->cwd) < 0)
    {
      dprintf (2, "runtime: cannot enter '%s': %s\n", s->cwd, strerror (errno));
      _exit (127);
    }
  /* glibc's execvpe searches the caller's PATH, not envp's.  */
  environ = s->envp;
  execvpe (s->argv[0], s->argv, s->envp);
  err = errno;
  dprintf (2, "runtime: cannot run '%s': %s\n", s->argv[0], strerror (err));
  _exit (err == EACCES ? 126 : 127);
}

pid_t
spawn (const struct spawn *s)
{
  pid_t pid = fork ();

  if (pid == 0)
    child_exec (s);
  return pid;
}

int
pty_resize (int fd, unsigned cols, unsigned rows)
{
  struct winsize ws = { .ws_row = (unsigned short) rows, .ws_col = (unsigned short) cols };
  return ioctl (fd, TIOCSWINSZ, &ws);
}

int
pty_open (unsigned cols, unsigned rows, const struct user *u, int *master, int *slave)
{
  cleanup_close int m = posix_openpt (O_RDWR | O_NOCTTY | O_CLOEXEC);
  char name[64];
  int s, err;

  if (m < 0 || grantpt (m) < 0 || unlockpt (m) < 0 || ptsname_r (m, name, sizeof name) != 0)
    return -1;
  s = open (name, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (s < 0)
    return -1;
  /* The user's own terminal, as login would leave it (group tty has no
     meaning here: nobody else may write to it).  */
  if (fchown (s, u->uid, u->gid) < 0 || fchmod (s, 0600) < 0 || pty_resize (m, cols, rows) < 0
      || fcntl (m, F_SETFL, O_NONBLOCK) < 0)
    {
      err = errno;
      close (s);
      errno = err;
      return -1;
    }
  *slave = s;
  *master = steal_fd (&m);
  return 0;
}
