/* fuzz-main.c - the replay driver: a target's corpus as a regression test
 * in the normal test run, as systemd's src/fuzz/fuzz-main.c does.
 *
 * Every regular file of each directory named on the command line (in name
 * order, dot files skipped) and every file named goes once through the
 * target's LLVMFuzzerTestOneInput, in a buffer of exactly its size.  Output
 * is TAP, one "ok N - <file>" per input; a target that finds a property
 * broken aborts, which fails the test.  Registered by tests/fuzz/meson.build.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "fuzz.h"

struct tap
{
  int n;
  int failed;
};

/* The whole file in a malloc'd buffer of its exact size (1 byte for an empty
   file, never read), so a sanitizer sees any read past the end.  */
static int
read_input (const char *path, uint8_t **out, size_t *len)
{
  cleanup_file FILE *f = fopen (path, "rb");
  cleanup_free uint8_t *buf = NULL;
  struct stat st;

  if (f == NULL || fstat (fileno (f), &st) < 0)
    return -errno;
  if (!S_ISREG (st.st_mode))
    return -EINVAL;
  buf = malloc (st.st_size > 0 ? (size_t) st.st_size : 1);
  if (buf == NULL)
    return -ENOMEM;
  if (st.st_size > 0 && fread (buf, 1, st.st_size, f) != (size_t) st.st_size)
    return -EIO;
  *out = steal_pointer (&buf);
  *len = st.st_size;
  return 0;
}

static void
replay_file (struct tap *t, const char *path, const char *label)
{
  cleanup_free uint8_t *data = NULL;
  size_t len = 0;
  int ret = read_input (path, &data, &len);

  if (ret < 0)
    {
      printf ("not ok %d - %s # %s\n", ++t->n, label, strerror (-ret));
      t->failed++;
      return;
    }
  /* Said first: if the target aborts, the log shows which input did it.  */
  printf ("# %s (%zu bytes)\n", label, len);
  fflush (stdout);
  LLVMFuzzerTestOneInput (data, len);
  printf ("ok %d - %s\n", ++t->n, label);
}

static int
skip_dot (const struct dirent *d)
{
  return d->d_name[0] != '.';
}

static void
replay_dir (struct tap *t, const char *dir)
{
  struct dirent **names = NULL;
  int n = scandir (dir, &names, skip_dot, alphasort);

  if (n < 0)
    {
      printf ("not ok %d - %s # %s\n", ++t->n, dir, strerror (errno));
      t->failed++;
      return;
    }
  for (int i = 0; i < n; i++)
    {
      char path[PATH_MAX];
      if (snprintf (path, sizeof (path), "%s/%s", dir, names[i]->d_name) >= (int) sizeof (path))
        {
          printf ("not ok %d - %s # path too long\n", ++t->n, names[i]->d_name);
          t->failed++;
        }
      else
        replay_file (t, path, names[i]->d_name);
      free (names[i]);
    }
  free (names);
}

int
main (int argc, char **argv)
{
  struct tap t = { 0, 0 };

  if (argc < 2)
    {
      fprintf (stderr, "usage: %s CORPUS-DIR|FILE...\n", argv[0]);
      return 2;
    }
  for (int i = 1; i < argc; i++)
    {
      struct stat st;
      if (stat (argv[i], &st) == 0 && S_ISDIR (st.st_mode))
        replay_dir (&t, argv[i]);
      else
        replay_file (&t, argv[i], argv[i]);
    }
  printf ("1..%d\n", t.n);
  return t.failed ? 1 : 0;
}
