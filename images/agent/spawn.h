/* spawn.h - a command's environment and its fork/exec.  */
#ifndef AGENT_SPAWN_H
#define AGENT_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "agent.h"

struct user;

/* A NULL-terminated string vector that owns its strings.  */
struct strv
{
  char **v;
  size_t n, cap;
};

void strv_clear (struct strv *s);
#define cleanup_strvec __attribute__ ((cleanup (strv_clear)))

/* Sets KEY=VALUE (`entry`, length `len`), replacing an entry of the same
   key.  Return: 0, or -1 when out of memory.  */
int env_set (struct strv *s, const char *entry, size_t len);
/* PATH, HOME, USER, LOGNAME, LANG, and the proxy variables when
   @proxy_url is not empty.  Return: 0, or -1.  */
int env_base (struct strv *s, const struct user *u, const char *proxy_url);

struct spawn
{
  char **argv;
  char **envp;
  const char *cwd;
  const struct user *user;
  int fd[3];
  bool ctty; /* fd[0] is a terminal: make it the controlling one */
};

/* A pseudo-terminal of @cols x @rows whose other end @u owns: *master
   (non-blocking) and *slave, both close-on-exec.  Return: 0, or -1 with
   errno set.  */
int pty_open (unsigned cols, unsigned rows, const struct user *u, int *master, int *slave);
/* Sets the size of the pty whose master is @fd.  */
int pty_resize (int fd, unsigned cols, unsigned rows);

/* Forks a child that becomes @s->user in its own session and execs.  */
pid_t spawn (const struct spawn *s);

#endif
