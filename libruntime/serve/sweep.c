/* sweep.c - old server files removed (see sweep.h).  */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "records/store.h"
#include "serve/server-internal.h"
#include "serve/sweep.h"
#include "serve/workers.h"

size_t
srv_sweep_dir (const char *dir, time_t now, time_t age_s, int depth, bool (*keep) (const char *name, void *arg),
               void *arg)
{
  DIR *d = opendir (dir);
  struct dirent *de;
  struct stat st;
  size_t n = 0;

  if (d == NULL)
    return 0;
  while ((de = readdir (d)))
    {
      if (de->d_name[0] == '.' || fstatat (dirfd (d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        continue;
      if (depth > 0 && S_ISDIR (st.st_mode))
        {
          cleanup_free char *sub = rt_strdup_printf ("%s/%s", dir, de->d_name);
          if (sub)
            n += srv_sweep_dir (sub, now, age_s, depth - 1, keep, arg);
          continue;
        }
      if (S_ISREG (st.st_mode) && now - st.st_mtime > age_s && !(keep && keep (de->d_name, arg))
          && unlinkat (dirfd (d), de->d_name, 0) == 0)
        n++;
    }
  closedir (d);
  return n;
}

struct sweep
{
  struct srv *srv;
  rt_context *ctx;
};

/* A sandbox named @name still is: live (its state dir) or recorded.  */
static bool
sandbox_is (const char *name, void *arg)
{
  struct sweep *w = arg;
  cleanup_free char *dir = rt_sandbox_dir (w->ctx, name), *rec = rt_record_path (w->ctx, name);
  struct stat st;

  /* Unsure (out of memory): kept, the next sweep decides.  */
  return dir == NULL || rec == NULL || lstat (dir, &st) == 0 || lstat (rec, &st) == 0;
}

static void *
sweep_main (void *arg)
{
  struct sweep w = { .srv = arg };
  cleanup_free char *deleted = NULL, *network = NULL;
  time_t now = time (NULL);

  /* None over NATS: the replica keeps Idempotency-Key (nats.h).  */
  if (w.srv->idem)
    srv_idem_sweep (w.srv->idem);
  if (rt_context_dup (w.srv->ctx, &w.ctx, NULL) == 0)
    {
      deleted = rt_strdup_printf ("%s/serve/deleted", w.ctx->data_dir);
      network = rt_strdup_printf ("%s/serve/network", w.ctx->data_dir);
    }
  if (deleted)
    srv_sweep_dir (deleted, now, SRV_SWEEP_KEEP_S, 1, sandbox_is, &w);
  if (network)
    srv_sweep_dir (network, now, SRV_SWEEP_KEEP_S, 0, sandbox_is, &w);
  rt_context_free (w.ctx);
  srv_round_done (w.srv, &w.srv->sweeping);
  return NULL;
}

void
srv_sweep_start (struct srv *s)
{
  srv_round_start (s, &s->sweeping, sweep_main);
}
