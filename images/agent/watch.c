/* watch.c - a directory watch on inotify (watch.h).  */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "watch.h"

#define MASK                                                                                                          \
  (IN_CREATE | IN_MODIFY | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF       \
   | IN_DONT_FOLLOW | IN_EXCL_UNLINK | IN_ONLYDIR)

struct wdir
{
  int wd;
  char *path;
};

struct wev
{
  const char *type;
  char *path, *old;
  bool dir;
  unsigned count;
};

struct watch
{
  int fd, root_wd;
  bool recursive;
  struct wdir dirs[WATCH_MAX_DIRS];
  size_t ndirs;
  struct wev evs[WATCH_MAX_EVENTS];
  size_t nev;
  uint64_t dropped;
  bool kernel_overflow, limit_hit, limit_told, ended, end_told;
  uint32_t cookie; /* of a rename's first half, moved_from */
  char *moved_from;
  bool moved_dir;
};

static const char *
dir_path (struct watch *w, int wd)
{
  for (size_t i = 0; i < w->ndirs; i++)
    if (w->dirs[i].wd == wd)
      return w->dirs[i].path;
  return NULL;
}

static void add_tree (struct watch *w, const char *path);

/* Follows the directory @path (and, recursive, those below it).  */
static void
add_dir (struct watch *w, const char *path)
{
  int wd;
  char *copy;

  if (w->ndirs >= WATCH_MAX_DIRS)
    {
      w->limit_hit = true;
      return;
    }
  wd = inotify_add_watch (w->fd, *path ? path : "/", MASK);
  if (wd < 0)
    return;
  for (size_t i = 0; i < w->ndirs; i++)
    if (w->dirs[i].wd == wd)
      return; /* the same directory by another way */
  if ((copy = strdup (path)) == NULL)
    return;
  w->dirs[w->ndirs].wd = wd;
  w->dirs[w->ndirs].path = copy;
  w->ndirs++;
  if (w->recursive)
    add_tree (w, path);
}

static void
add_tree (struct watch *w, const char *path)
{
  DIR *d = opendir (*path ? path : "/");
  struct dirent *e;

  if (d == NULL)
    return;
  while ((e = readdir (d)) && !w->limit_hit)
    {
      char child[PATH_MAX];
      struct stat st;
      if (strcmp (e->d_name, ".") == 0 || strcmp (e->d_name, "..") == 0
          || snprintf (child, sizeof child, "%s/%s", path, e->d_name) >= (int) sizeof child)
        continue;
      if (e->d_type == DT_DIR || (e->d_type == DT_UNKNOWN && lstat (child, &st) == 0 && S_ISDIR (st.st_mode)))
        add_dir (w, child);
    }
  closedir (d);
}

int
watch_open (const char *root, bool recursive, struct watch **out)
{
  struct watch *w;
  struct stat st;

  if (root == NULL || root[0] != '/' || strlen (root) >= PATH_MAX)
    return -EINVAL;
  if (stat (root, &st) < 0)
    return -errno;
  if (!S_ISDIR (st.st_mode))
    return -ENOTDIR;
  if ((w = calloc (1, sizeof *w)) == NULL)
    return -ENOMEM;
  w->recursive = recursive;
  w->fd = inotify_init1 (IN_NONBLOCK | IN_CLOEXEC);
  if (w->fd < 0)
    {
      int e = errno;
      free (w);
      return -e;
    }
  add_dir (w, strcmp (root, "/") == 0 ? "" : root);
  if (w->ndirs == 0)
    {
      watch_free (w);
      return -EMFILE;
    }
  w->root_wd = w->dirs[0].wd;
  *out = w;
  return 0;
}

static void
ev_clear (struct wev *e)
{
  free (e->path);
  free (e->old);
  memset (e, 0, sizeof *e);
}

void
watch_free (struct watch *w)
{
  if (w == NULL)
    return;
  if (w->fd >= 0)
    close (w->fd);
  for (size_t i = 0; i < w->ndirs; i++)
    free (w->dirs[i].path);
  for (size_t i = 0; i < w->nev; i++)
    ev_clear (&w->evs[i]);
  free (w->moved_from);
  free (w);
}

int
watch_fd (const struct watch *w)
{
  return w->fd;
}

bool
watch_ended (const struct watch *w)
{
  return w->ended;
}

/* Queues an event (taking @path and @old), folding a write into the one
   before it on the same path; counted as dropped when the queue is full.  */
static void
push (struct watch *w, const char *type, char *path, char *old, bool dir)
{
  struct wev *last = w->nev ? &w->evs[w->nev - 1] : NULL;

  if (last && strcmp (type, "write") == 0 && strcmp (last->type, "write") == 0 && strcmp (last->path, path) == 0)
    {
      last->count++;
      free (path);
      return;
    }
  if (w->nev >= WATCH_MAX_EVENTS)
    {
      w->dropped++;
      free (path);
      free (old);
      return;
    }
  w->evs[w->nev++] = (struct wev){ .type = type, .path = path, .old = old, .dir = dir, .count = 1 };
}

/* A rename's first half with no second: moved out of the watch.  */
static void
flush_moved (struct watch *w)
{
  if (w->moved_from)
    push (w, "remove", w->moved_from, NULL, w->moved_dir);
  w->moved_from = NULL;
}

/* The directories at or below @from now at @to.  */
static void
rename_dirs (struct watch *w, const char *from, const char *to)
{
  size_t n = strlen (from);

  for (size_t i = 0; i < w->ndirs; i++)
    if (strncmp (w->dirs[i].path, from, n) == 0 && (w->dirs[i].path[n] == '\0' || w->dirs[i].path[n] == '/'))
      {
        char *p = NULL;
        if (asprintf (&p, "%s%s", to, w->dirs[i].path + n) >= 0 && strlen (p) < PATH_MAX)
          {
            free (w->dirs[i].path);
            w->dirs[i].path = p;
          }
        else
          free (p);
      }
}

static void
forget_dir (struct watch *w, int wd)
{
  for (size_t i = 0; i < w->ndirs; i++)
    if (w->dirs[i].wd == wd)
      {
        free (w->dirs[i].path);
        w->dirs[i] = w->dirs[--w->ndirs];
        return;
      }
}

static void
one_event (struct watch *w, const struct inotify_event *ev)
{
  const char *dir = dir_path (w, ev->wd);
  bool isdir = ev->mask & IN_ISDIR;
  char *path = NULL;

  if (ev->mask & IN_Q_OVERFLOW)
    {
      w->kernel_overflow = true;
      return;
    }
  if ((ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) && ev->wd == w->root_wd)
    w->ended = true;
  if (ev->mask & IN_IGNORED)
    return forget_dir (w, ev->wd);
  if (dir == NULL || ev->len == 0 || memchr (ev->name, '\0', ev->len) == NULL)
    return;
  if (asprintf (&path, "%s/%s", dir, ev->name) < 0)
    return;
  if (strlen (path) >= PATH_MAX)
    {
      w->dropped++;
      free (path);
      return;
    }
  if (ev->mask & IN_MOVED_FROM)
    {
      flush_moved (w);
      w->moved_from = path;
      w->moved_dir = isdir;
      w->cookie = ev->cookie;
      return;
    }
  if (ev->mask & IN_MOVED_TO)
    {
      if (w->moved_from && w->cookie == ev->cookie)
        {
          if (isdir && w->recursive)
            rename_dirs (w, w->moved_from, path);
          char *old = w->moved_from;
          w->moved_from = NULL;
          push (w, "rename", path, old, isdir);
          return;
        }
      if (isdir && w->recursive)
        add_dir (w, path);
      return push (w, "create", path, NULL, isdir);
    }
  flush_moved (w);
  if (ev->mask & IN_CREATE)
    {
      if (isdir && w->recursive)
        add_dir (w, path);
      return push (w, "create", path, NULL, isdir);
    }
  if (ev->mask & IN_MODIFY)
    return push (w, "write", path, NULL, isdir);
  if (ev->mask & IN_ATTRIB)
    return push (w, "chmod", path, NULL, isdir);
  if (ev->mask & IN_DELETE)
    return push (w, "remove", path, NULL, isdir);
  free (path);
}

int
watch_read (struct watch *w)
{
  char buf[64 * 1024] __attribute__ ((aligned (__alignof__ (struct inotify_event))));

  for (;;)
    {
      ssize_t n = read (w->fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && errno == EAGAIN)
        break;
      if (n <= 0)
        return n < 0 ? -errno : -EIO;
      for (char *p = buf; p < buf + n;)
        {
          const struct inotify_event *ev = (const struct inotify_event *) p;
          if ((size_t) (buf + n - p) < sizeof *ev || (size_t) (buf + n - p) < sizeof *ev + ev->len)
            break;
          one_event (w, ev);
          p += sizeof *ev + ev->len;
        }
    }
  /* The kernel queues a rename's halves together: one left alone is a
     move out of the watch.  */
  flush_moved (w);
  return 0;
}

static json_object *
notice (const char *k)
{
  json_object *o = json_object_new_object ();
  json_object_object_add (o, "k", json_object_new_string (k));
  return o;
}

json_object *
watch_take (struct watch *w)
{
  json_object *out = json_object_new_array (), *o, *evs;

  if (w->dropped || w->kernel_overflow)
    {
      o = notice ("overflow");
      json_object_object_add (o, "dropped", w->kernel_overflow ? NULL : json_object_new_uint64 (w->dropped));
      json_object_object_add (o, "reason", json_object_new_string (w->kernel_overflow ? "kernel" : "rate"));
      json_object_array_add (out, o);
      w->dropped = 0;
      w->kernel_overflow = false;
    }
  if (w->limit_hit && !w->limit_told)
    {
      o = notice ("limit");
      json_object_object_add (o, "watches", json_object_new_uint64 (w->ndirs));
      json_object_array_add (out, o);
      w->limit_told = true;
    }
  if (w->nev)
    {
      o = notice ("events");
      evs = json_object_new_array ();
      for (size_t i = 0; i < w->nev; i++)
        {
          json_object *e = json_object_new_object ();
          json_object_object_add (e, "type", json_object_new_string (w->evs[i].type));
          json_object_object_add (e, "path", json_object_new_string (w->evs[i].path));
          json_object_object_add (e, "isDir", json_object_new_boolean (w->evs[i].dir));
          if (w->evs[i].old)
            json_object_object_add (e, "oldPath", json_object_new_string (w->evs[i].old));
          if (strcmp (w->evs[i].type, "write") == 0)
            json_object_object_add (e, "count", json_object_new_uint64 (w->evs[i].count));
          json_object_array_add (evs, e);
          ev_clear (&w->evs[i]);
        }
      json_object_object_add (o, "events", evs);
      json_object_array_add (out, o);
      w->nev = 0;
    }
  if (w->ended && !w->end_told)
    {
      o = notice ("end");
      json_object_object_add (o, "reason", json_object_new_string ("root-removed"));
      json_object_array_add (out, o);
      w->end_told = true;
    }
  return out;
}
