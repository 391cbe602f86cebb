/* test-agent-watch.c - the guest agent's directory watch on inotify
   (images/agent/watch.c), on the host's own inotify in a temp directory:
   each change gives its event (create, write folded with a count, chmod,
   rename with oldPath, remove), a directory made later is followed when
   recursive and not otherwise, a flood past WATCH_MAX_EVENTS is kept to
   that many and answered by an overflow notice with the count dropped,
   and the root's removal ends the watch.  Polls inotify for at most 10 s
   a step: a quiet machine answers at once, a loaded one later.  */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "watch.h"

static char root[64];

/* What the watch has after the changes so far: its take's array,
   waiting until inotify has something (or 10 s).  */
static json_object *
take (struct watch *w)
{
  struct pollfd p = { .fd = watch_fd (w), .events = POLLIN };
  if (poll (&p, 1, 10000) > 0)
    watch_read (w);
  return watch_take (w);
}

/* "type path-below-root[ oldPath][ count]" of each event of @a, ';'-joined.  */
static char *
summary (json_object *a)
{
  static char out[8192];
  size_t n = strlen (root);
  out[0] = '\0';
  for (size_t i = 0; i < json_object_array_length (a); i++)
    {
      json_object *o = json_object_array_get_idx (a, i), *evs, *v;
      if (!json_object_object_get_ex (o, "events", &evs))
        {
          snprintf (out + strlen (out), sizeof out - strlen (out), "%s;", json_object_get_string (json_object_object_get (o, "k")));
          continue;
        }
      for (size_t j = 0; j < json_object_array_length (evs); j++)
        {
          json_object *e = json_object_array_get_idx (evs, j);
          const char *p = json_object_get_string (json_object_object_get (e, "path"));
          snprintf (out + strlen (out), sizeof out - strlen (out), "%s %s", json_object_get_string (json_object_object_get (e, "type")),
                    strncmp (p, root, n) == 0 ? p + n : p);
          if (json_object_object_get_ex (e, "oldPath", &v))
            snprintf (out + strlen (out), sizeof out - strlen (out), " %s", json_object_get_string (v) + n);
          if (json_object_object_get_ex (e, "count", &v) && json_object_get_int (v) > 1)
            snprintf (out + strlen (out), sizeof out - strlen (out), " x%d", json_object_get_int (v));
          strcat (out, ";");
        }
    }
  return out;
}

/* take's summary into @got, the array freed.  */
static void
took (struct watch *w, char *got, size_t size)
{
  json_object *a = take (w);
  snprintf (got, size, "%s", summary (a));
  json_object_put (a);
}

static void
write_file (const char *rel, const char *text, int times)
{
  char p[256];
  snprintf (p, sizeof p, "%s/%s", root, rel);
  int fd = open (p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  for (int i = 0; fd >= 0 && i < times; i++)
    if (write (fd, text, strlen (text)) < 0)
      break;
  if (fd >= 0)
    close (fd);
}

static char *
at (const char *rel)
{
  static char p[4][256];
  static int k;
  k = (k + 1) % 4;
  snprintf (p[k], sizeof p[k], "%s/%s", root, rel);
  return p[k];
}

int
main (void)
{
  struct watch *w = NULL, *flat = NULL;
  json_object *a;
  char got[8192];

  snprintf (root, sizeof root, "/tmp/rt-watch.XXXXXX");
  if (mkdtemp (root) == NULL)
    return 1;
  ok (watch_open ("relative", true, &w) == -EINVAL, "a relative path: refused");
  ok (watch_open ("/nonexistent/x", true, &w) == -ENOENT, "a missing one: ENOENT");
  write_file ("f", "x", 1);
  ok (watch_open (at ("f"), true, &w) == -ENOTDIR, "a file: ENOTDIR");
  unlink (at ("f"));
  ok (watch_open (root, true, &w) == 0 && watch_open (root, false, &flat) == 0, "a watch of a directory, recursive and not");

  /* Three writes, each read by the watch before the next (inotify folds
     writes it still holds itself): one write event counting 3.  */
  int fd = open (at ("a.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  for (int i = 0; i < 3; i++)
    {
      struct pollfd q = { .fd = watch_fd (w), .events = POLLIN };
      if (write (fd, "hello", 5) != 5 || poll (&q, 1, 10000) <= 0 || watch_read (w) < 0)
        break;
    }
  close (fd);
  a = watch_take (w);
  snprintf (got, sizeof got, "%s", summary (a));
  ok (strcmp (got, "create /a.txt;write /a.txt x3;") == 0, "a file made and written three times: create, one write counting 3 (%s)", got);
  json_object_put (a);
  chmod (at ("a.txt"), 0600);
  rename (at ("a.txt"), at ("b.txt"));
  took (w, got, sizeof got);
  ok (strcmp (got, "chmod /a.txt;rename /b.txt /a.txt;") == 0, "chmod, then a rename with its oldPath (%s)", got);

  mkdir (at ("sub"), 0755);
  json_object_put (take (w));
  write_file ("sub/deep.txt", "x", 1);
  took (w, got, sizeof got);
  ok (strcmp (got, "create /sub/deep.txt;write /sub/deep.txt;") == 0, "a directory made later is followed (%s)", got);
  rename (at ("sub"), at ("moved"));
  json_object_put (take (w));
  write_file ("moved/again.txt", "x", 1);
  took (w, got, sizeof got);
  ok (strcmp (got, "create /moved/again.txt;write /moved/again.txt;") == 0, "… and named by its new path once renamed (%s)", got);
  took (flat, got, sizeof got);
  ok (strstr (got, "deep.txt") == NULL && strstr (got, "create /sub;") && strstr (got, "rename /moved /sub;"),
      "the watch that is not recursive: the directory's own events only (%s)", got);
  unlink (at ("moved/again.txt"));
  unlink (at ("moved/deep.txt"));
  rmdir (at ("moved"));
  unlink (at ("b.txt"));
  took (w, got, sizeof got);
  ok (strstr (got, "remove /b.txt;") && strstr (got, "remove /moved/deep.txt;"), "removals (%s)", got);

  /* A flood: more files made than the queue holds, none taken meanwhile.  */
  for (int i = 0; i < WATCH_MAX_EVENTS + 500; i++)
    {
      char n[32];
      snprintf (n, sizeof n, "flood%d", i);
      write_file (n, "", 0);
    }
  struct pollfd p = { .fd = watch_fd (w), .events = POLLIN };
  while (poll (&p, 1, 2000) > 0 && watch_read (w) == 0 && !(p.revents & POLLERR))
    if (poll (&p, 1, 0) == 0)
      break;
  a = watch_take (w);
  json_object *first = json_object_array_get_idx (a, 0), *evs = NULL;
  json_object_object_get_ex (json_object_array_get_idx (a, 1), "events", &evs);
  ok (first && strcmp (json_object_get_string (json_object_object_get (first, "k")), "overflow") == 0
          && strcmp (json_object_get_string (json_object_object_get (first, "reason")), "rate") == 0
          && json_object_get_int (json_object_object_get (first, "dropped")) >= 500,
      "a flood past %d events: an overflow notice first, with what was dropped (%s)", WATCH_MAX_EVENTS,
      first ? json_object_to_json_string (first) : "none");
  ok (evs && json_object_array_length (evs) == WATCH_MAX_EVENTS, "… and the %d events kept (%zu)", WATCH_MAX_EVENTS,
      evs ? json_object_array_length (evs) : 0);
  json_object_put (a);
  watch_read (w);
  a = watch_take (w);
  ok (strstr (summary (a), "overflow") == NULL, "… told once");
  json_object_put (a);

  for (int i = 0; i < WATCH_MAX_EVENTS + 500; i++)
    {
      char n[32];
      snprintf (n, sizeof n, "flood%d", i);
      unlink (at (n));
    }
  watch_read (w);
  json_object_put (watch_take (w));
  rmdir (root);
  for (int i = 0; i < 10 && !watch_ended (w); i++)
    json_object_put (take (w));
  ok (watch_ended (w), "the root removed ends the watch");
  watch_free (w);
  watch_free (flat);
  return tap_done ();
}
