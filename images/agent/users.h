/* users.h - who a command runs as, from /etc/passwd and /etc/group.  */
#ifndef AGENT_USERS_H
#define AGENT_USERS_H

#include <sys/types.h>

#include "agent.h"

struct user
{
  uid_t uid;
  gid_t gid;
  char name[64];
  char home[256];
  gid_t groups[MAX_GROUPS];
  int ngroups;
};

/* Fills *u for @name; root and DEFAULT_USER exist even without a passwd
   entry.  Return: 0, or -1 for an unknown or invalid name.  */
int resolve_user (const char *name, struct user *u);

#endif
