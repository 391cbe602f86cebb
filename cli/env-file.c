/* env-file.c - --env-file FILE for create, run, exec and spawn: docker's
   format (docker run --env-file), read into the --env list.  */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox.h"

/* Far over what the env caps let through (RT_MAX_ENV_BYTES): a file this
   big is the wrong file.  */
#define ENV_FILE_MAX (256 * 1024)

/* @s for cli_args_free to free with the arguments; -1 without memory.  */
static int
own (struct cli_args *a, char *s)
{
  char **m = realloc (a->owned, (a->nowned + 2) * sizeof (char *));

  if (m == NULL)
    {
      free (s);
      return -1;
    }
  m[a->nowned++] = s;
  m[a->nowned] = NULL;
  a->owned = m;
  return 0;
}

/* Adds NAME=VALUE @e to @list (of *n), in place of an earlier one of the
   same name: the last one wins, as in docker, and counts once against the
   env caps.  */
static int
add_entry (const char ***list, int *n, const char *e)
{
  size_t len = strcspn (e, "=");
  const char **m;

  for (int i = 0; i < *n; i++)
    if (strncmp ((*list)[i], e, len) == 0 && (*list)[i][len] == '=')
      {
        (*list)[i] = e;
        return 0;
      }
  m = realloc (*list, (*n + 2) * sizeof (char *));
  if (m == NULL)
    return -1;
  m[(*n)++] = e;
  m[*n] = NULL;
  *list = m;
  return 0;
}

/* Reads @path whole, NUL-terminated, kept with @a; -1 after the error.  */
static int
slurp (struct cli_args *a, const char *path, char **out)
{
  FILE *f = fopen (path, "re");
  char *buf = NULL;
  size_t len = 0;
  int saved;

  if (f == NULL)
    return cli_fail (errno == ENOENT ? "file_not_found" : errno == EACCES ? "permission_denied" : "invalid_env",
                     NULL, "--env-file '%s': %s", path, strerror (errno)),
           -1;
  if ((buf = malloc (ENV_FILE_MAX + 1)) != NULL)
    len = fread (buf, 1, ENV_FILE_MAX + 1, f);
  saved = ferror (f) ? (errno ? errno : EIO) : 0;
  fclose (f);
  if (buf == NULL || own (a, buf) < 0)
    return cli_fail ("internal", NULL, "out of memory"), -1;
  if (saved)
    return cli_fail ("invalid_env", NULL, "--env-file '%s': %s", path, strerror (saved)), -1;
  if (len > ENV_FILE_MAX)
    return cli_fail ("invalid_env", NULL, "--env-file '%s' is over %d KiB: not an env file", path,
                     ENV_FILE_MAX / 1024),
           -1;
  buf[len] = '\0';
  if (memchr (buf, '\0', len))
    return cli_fail ("invalid_env", NULL, "--env-file '%s' is not text (it holds a NUL byte)", path), -1;
  *out = buf;
  return 0;
}

/* One file's lines into @list: KEY=VALUE (the value as it is, no quotes
   taken off), KEY alone for our own environment's value when it is set,
   blank lines and # comments skipped; leading blanks and a trailing \r
   ignored.  -1 after the error, which names FILE:LINE.  */
static int
read_file (struct cli_args *a, const char *path, const char ***list, int *n)
{
  char *buf, *line, *next;
  unsigned lineno = 0;

  if (slurp (a, path, &buf) < 0)
    return -1;
  /* A UTF-8 byte-order mark, as editors on Windows write.  */
  line = strncmp (buf, "\xef\xbb\xbf", 3) == 0 ? buf + 3 : buf;
  for (; line; line = next)
    {
      size_t len, name_len;
      char *eq;

      lineno++;
      next = strchr (line, '\n');
      if (next)
        *next++ = '\0';
      len = strlen (line);
      if (len && line[len - 1] == '\r')
        line[--len] = '\0';
      line += strspn (line, " \t");
      if (*line == '\0' || *line == '#')
        continue;
      eq = strchr (line, '=');
      name_len = eq ? (size_t) (eq - line) : strlen (line);
      if (!rt_env_name_valid (line, name_len))
        return cli_fail ("invalid_env", "each line is NAME=VALUE (or NAME alone, or # a comment); names are "
                                         "letters, digits and _, not starting with a digit",
                         "%s:%u: '%.*s' is not a valid variable name", path, lineno,
                         (int) (name_len > 64 ? 64 : name_len), line),
               -1;
      if (eq == NULL)
        {
          const char *v = getenv (line);
          char *e;
          /* As docker: a name not set here is left out.  */
          if (v == NULL)
            continue;
          if (asprintf (&e, "%s=%s", line, v) < 0 || own (a, e) < 0)
            return cli_fail ("internal", NULL, "out of memory"), -1;
          line = e;
        }
      if (add_entry (list, n, line) < 0)
        return cli_fail ("internal", NULL, "out of memory"), -1;
    }
  return 0;
}

int
cli_read_env_files (struct cli_command *cmd, struct cli_args *a)
{
  int fi = cli_opt_index (cmd, "env-file"), ei = cli_opt_index (cmd, "env");
  const char **list = NULL;
  int n = 0;

  if (fi < 0 || ei < 0 || a->count[fi] == 0)
    return 0;
  for (int i = 0; i < a->count[fi]; i++)
    if (read_file (a, a->multi[fi][i], &list, &n) < 0)
      {
        free (list);
        return -1;
      }
  /* --env after the files: the command line has the last word.  */
  for (int i = 0; i < a->count[ei]; i++)
    if (add_entry (&list, &n, a->multi[ei][i]) < 0)
      {
        free (list);
        return cli_fail ("internal", NULL, "out of memory"), -1;
      }
  free (a->multi[ei]);
  a->multi[ei] = list;
  a->count[ei] = n;
  return 0;
}
