/* users.c - who a command runs as: /etc/passwd and /etc/group by hand.  */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "users.h"

/* Splits a colon-separated line in place; returns the number of fields.  */
static int
split_colons (char *line, char **fields, int max)
{
  int n = 0;

  line[strcspn (line, "\n")] = '\0';
  while (n < max)
    {
      fields[n++] = line;
      line = strchr (line, ':');
      if (line == NULL)
        break;
      *line++ = '\0';
    }
  return n;
}

static bool
parse_id (const char *s, unsigned long *out)
{
  char *end;

  if (!isdigit ((unsigned char) *s))
    return false;
  errno = 0;
  *out = strtoul (s, &end, 10);
  return errno == 0 && *end == '\0' && *out < UINT32_MAX;
}

/* /etc/passwd by hand: NSS does not work in a static binary.  */
static int
passwd_lookup (const char *name, struct user *u)
{
  cleanup_file FILE *f = fopen ("/etc/passwd", "re");
  cleanup_free char *line = NULL;
  size_t cap = 0;

  if (f == NULL)
    return -1;
  while (getline (&line, &cap, f) > 0)
    {
      char *fl[7];
      unsigned long uid, gid;

      if (split_colons (line, fl, 7) != 7 || strcmp (fl[0], name) != 0)
        continue;
      if (!parse_id (fl[2], &uid) || !parse_id (fl[3], &gid))
        return -1;
      u->uid = uid;
      u->gid = gid;
      snprintf (u->home, sizeof u->home, "%s", fl[5][0] ? fl[5] : "/");
      return 0;
    }
  return -1;
}

/* Supplementary groups, as initgroups() would find them.  */
static void
group_lookup (struct user *u)
{
  cleanup_file FILE *f = fopen ("/etc/group", "re");
  cleanup_free char *line = NULL;
  size_t cap = 0;

  u->groups[0] = u->gid;
  u->ngroups = 1;
  if (f == NULL)
    return;
  while (getline (&line, &cap, f) > 0 && u->ngroups < MAX_GROUPS)
    {
      char *fl[4], *save = NULL;
      unsigned long gid;

      if (split_colons (line, fl, 4) != 4 || !parse_id (fl[2], &gid) || gid == u->gid)
        continue;
      for (char *m = strtok_r (fl[3], ",", &save); m; m = strtok_r (NULL, ",", &save))
        if (strcmp (m, u->name) == 0)
          {
            u->groups[u->ngroups++] = gid;
            break;
          }
    }
}

int
resolve_user (const char *name, struct user *u)
{
  memset (u, 0, sizeof *u);
  if (name[0] == '\0' || strlen (name) >= sizeof u->name || strpbrk (name, ":/\n") != NULL)
    return -1;
  snprintf (u->name, sizeof u->name, "%s", name);
  if (passwd_lookup (name, u) < 0)
    {
      if (strcmp (name, "root") == 0)
        u->uid = u->gid = 0;
      else if (strcmp (name, DEFAULT_USER) == 0)
        {
          u->uid = u->gid = DEFAULT_UID;
          snprintf (u->home, sizeof u->home, WORKSPACE);
        }
      else
        return -1;
    }
  if (strcmp (name, "root") == 0)
    snprintf (u->home, sizeof u->home, "/root");
  group_lookup (u);
  return 0;
}
