/* watch.c - a sandbox's state and record watched with inotify.  */
#include <poll.h>
#include <string.h>
#include <sys/inotify.h>

#include "records/store.h"
#include "records/watch.h"

struct rt_record_watch
{
  int fd;
  int records_wd;
  char record[48]; /* "<id>.json", the name in the records dir */
};

int
rt_record_watch_open (rt_context *ctx, const char *id, struct rt_record_watch **out, rt_error **err)
{
  cleanup_free char *dir = rt_sandbox_dir (ctx, id);
  cleanup_free char *records = rt_strdup_printf ("%s/sandboxes", ctx->data_dir);
  struct rt_record_watch *w = calloc (1, sizeof *w);
  int ret;

  if (w == NULL || dir == NULL || records == NULL)
    {
      free (w);
      return rt_error_oom (err);
    }
  snprintf (w->record, sizeof w->record, "%s.json", id);
  w->fd = inotify_init1 (IN_NONBLOCK | IN_CLOEXEC);
  if (w->fd < 0)
    {
      ret = rt_error_set (err, errno, "internal", "inotify: %s", strerror (errno));
      free (w);
      return ret;
    }
  /* Records are written there anyway; made now so it can be watched.  */
  if (rt_mkdir_p (records, 0700, NULL) == 0)
    w->records_wd = inotify_add_watch (w->fd, records, IN_MOVED_TO | IN_CLOSE_WRITE);
  /* A sandbox that ended has no state dir: its record is what changes.  */
  inotify_add_watch (w->fd, dir, IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE_SELF);
  *out = w;
  return 0;
}

/* Reads what is queued: true when one of the events is the sandbox's.  */
static bool
drain (struct rt_record_watch *w)
{
  char buf[4096] __attribute__ ((aligned (__alignof__ (struct inotify_event))));
  bool mine = false;
  ssize_t n;

  while ((n = read (w->fd, buf, sizeof buf)) > 0)
    for (char *p = buf; p < buf + n;)
      {
        struct inotify_event *e = (struct inotify_event *) p;
        if (e->wd != w->records_wd || (e->len && strcmp (e->name, w->record) == 0))
          mine = true;
        p += sizeof *e + e->len;
      }
  return mine;
}

int
rt_record_watch_wait (struct rt_record_watch *w, int timeout_ms)
{
  struct pollfd p = { .fd = w->fd, .events = POLLIN };
  uint64_t end = rt_now_ms () + (uint64_t) (timeout_ms > 0 ? timeout_ms : 0);

  for (;;)
    {
      uint64_t now = rt_now_ms ();
      int r = poll (&p, 1, now >= end ? 0 : (int) (end - now));
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        return 0;
      if (drain (w))
        return 1;
    }
}

void
rt_record_watch_close (struct rt_record_watch *w)
{
  if (w == NULL)
    return;
  close (w->fd);
  free (w);
}
