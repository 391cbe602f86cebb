/* test-ledger.c - folding the ledger: the last record per sandbox, lines
   cut short, and the fold cache (fold.json) giving the same answer as a
   fold from scratch however the ledger grew, and ignored when it no longer
   fits the ledger.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/context.h"
#include "tap.h"
#include "billing/ledger.h"

static char ledger[512], cache[512];

static void
append (const char *text)
{
  FILE *f = fopen (ledger, "a");
  fputs (text, f);
  fclose (f);
}

static void
append_records (int from, int to, int interval)
{
  FILE *f = fopen (ledger, "a");
  for (int i = from; i < to; i++)
    fprintf (f, "{\"id\":\"sb-%04d\",\"funding\":\"trial\",\"runningUs\":%d,\"micros\":%d,\"pad\":\"%0200d\"}\n",
             i % 50, interval * 1000000, interval, 0);
  fclose (f);
}

/* The fold as one string, to compare.  */
static char *
fold (rt_context *ctx)
{
  json_object *rows = NULL;
  rt_error *err = NULL;
  char *s;

  if (rt_ledger_fold (ctx, &rows, &err) < 0)
    {
      rt_error_free (err);
      return strdup ("(failed)");
    }
  s = strdup (json_object_to_json_string_ext (rows, JSON_C_TO_STRING_PLAIN));
  json_object_put (rows);
  return s;
}

static char *
fold_from_scratch (rt_context *ctx)
{
  char *keep = NULL, *s;
  FILE *f = fopen (cache, "r");
  size_t len = 0;

  if (f)
    {
      if (getdelim (&keep, &len, 0, f) < 0)
        keep = (free (keep), NULL);
      fclose (f);
      unlink (cache);
    }
  s = fold (ctx);
  unlink (cache);
  if (keep)
    {
      f = fopen (cache, "w");
      fputs (keep, f);
      fclose (f);
      free (keep);
    }
  return s;
}

static void
same_as_scratch (rt_context *ctx, const char *what)
{
  char *a = fold (ctx), *b = fold_from_scratch (ctx);
  ok (strcmp (a, b) == 0, "%s", what);
  free (a);
  free (b);
}

int
main (void)
{
  char dir[] = "/tmp/rt-ledger.XXXXXX", cmd[600];
  rt_context *ctx = NULL;
  rt_error *err = NULL;
  char *s;

  if (mkdtemp (dir) == NULL)
    return 1;
  setenv ("RUNTIME_DATA_DIR", dir, 1);
  setenv ("RUNTIME_STATE_DIR", dir, 1);
  if (rt_context_new (&ctx, &err) < 0)
    return 1;
  snprintf (cmd, sizeof cmd, "%s/ledger", dir);
  mkdir (cmd, 0755);
  snprintf (ledger, sizeof ledger, "%s/ledger/ledger.jsonl", dir);
  snprintf (cache, sizeof cache, "%s/ledger/fold.json", dir);

  s = fold (ctx);
  ok (strcmp (s, "[]") == 0, "no ledger: no rows");
  free (s);

  append_records (0, 100, 5);
  s = fold (ctx);
  ok (strstr (s, "sb-0049") && !strstr (s, "sb-0050"), "one row per sandbox");
  free (s);
  ok (access (cache, F_OK) < 0, "a small ledger is not worth a cache");

  append_records (100, 2000, 7);
  same_as_scratch (ctx, "a big ledger folds the same");
  ok (access (cache, F_OK) == 0, "… and leaves a fold cache");

  append_records (2000, 2010, 9);
  append ("{\"id\":\"sb-0001\",\"runningUs\":1,\"micros\":123");
  same_as_scratch (ctx, "appended records and a line still being written fold the same from the cache");
  s = fold (ctx);
  ok (strstr (s, "\"micros\":9") && !strstr (s, "\"micros\":123"), "the unfinished line is not taken");
  free (s);
  append (",\"pad\":\"x\"}\n");
  s = fold (ctx);
  ok (strstr (s, "\"micros\":123") != NULL, "… until it is finished");
  free (s);

  append_records (2010, 4000, 11);
  same_as_scratch (ctx, "a second cache on top of the first folds the same");

  /* The ledger replaced by a shorter one: the cache no longer fits.  */
  unlink (ledger);
  append_records (0, 3, 13);
  s = fold (ctx);
  ok (strstr (s, "sb-0002") && !strstr (s, "sb-0003"), "a cache that does not fit the ledger is ignored");
  free (s);

  rt_context_free (ctx);
  snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system (cmd) != 0)
    return 1;
  return tap_done ();
}
