/* workers.c - the worker threads that run the route handlers (see
   workers.h).  */
#include <errno.h>
#include <time.h>

#include "serve/workers.h"

/* An idle worker thread ends after this.  */
#define SRV_IDLE_S 30

/* Runs the handler, and answers 500 when it did not answer.  */
static void
run_handler (struct srv_req *r)
{
  bool answered, open_stream;

  r->route->fn (r);
  pthread_mutex_lock (&r->mu);
  answered = r->whole || r->started;
  open_stream = r->started && !r->ended;
  pthread_mutex_unlock (&r->mu);
  if (!answered)
    srv_reply_error (r, 500, "internal", NULL, NULL, "the server gave no answer to %s %s", srv_method (r), r->path);
  else if (open_stream)
    srv_stream_end (r);
}

/* A pooled worker: runs queued requests; ends after SRV_IDLE_S without
   one, or when the server ends.  */
static void *
worker_main (void *arg)
{
  struct srv *s = arg;
  struct srv_req *r;

  pthread_mutex_lock (&s->mu);
  for (;;)
    {
      while (s->queue == NULL && !s->exiting)
        {
          struct timespec until = rt_deadline_after (SRV_IDLE_S * 1000);
          int rc;

          s->nidle++;
          rc = pthread_cond_timedwait (&s->work, &s->mu, &until);
          s->nidle--;
          if (rc == ETIMEDOUT && s->queue == NULL)
            break;
        }
      if ((r = s->queue) == NULL)
        break;
      s->queue = r->next_queued;
      s->nqueued--;
      if (s->queue == NULL)
        s->queue_tail = NULL;
      pthread_mutex_unlock (&s->mu);
      run_handler (r);
      srv_req_unref (r);
      pthread_mutex_lock (&s->mu);
      s->workers--;
      pthread_cond_broadcast (&s->idle);
    }
  s->nthreads--;
  pthread_cond_broadcast (&s->idle);
  pthread_mutex_unlock (&s->mu);
  return NULL;
}

/* A thread for the request about to be queued unless an idle one is free
   for it; false when none could be made.  Under s->mu.  */
static bool
add_thread (struct srv *s)
{
  pthread_attr_t attr;
  pthread_t t;
  bool ok;

  if (s->nidle > s->nqueued)
    return true;
  pthread_attr_init (&attr);
  pthread_attr_setdetachstate (&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize (&attr, 1 << 20);
  ok = pthread_create (&t, &attr, worker_main, s) == 0;
  pthread_attr_destroy (&attr);
  if (ok)
    s->nthreads++;
  return ok || s->nthreads > 0;
}

void
srv_run_route (struct srv_req *r)
{
  struct srv *s = r->srv;
  bool ok;

  if (r->route->flags & SRV_INLINE)
    return run_handler (r);
  pthread_mutex_lock (&s->mu);
  ok = s->workers < SRV_MAX_WORKERS && add_thread (s);
  if (ok)
    {
      s->workers++;
      pthread_mutex_lock (&r->mu);
      r->refs++;
      pthread_mutex_unlock (&r->mu);
      r->next_queued = NULL;
      if (s->queue_tail)
        s->queue_tail->next_queued = r;
      else
        s->queue = r;
      s->queue_tail = r;
      s->nqueued++;
      pthread_cond_signal (&s->work);
    }
  pthread_mutex_unlock (&s->mu);
  if (!ok)
    {
      srv_add_header (r, "Retry-After", "1");
      srv_reply_error (r, 503, "unavailable", "retry in a second", NULL, "the server is busy");
    }
}

void
srv_workers_end (struct srv *s)
{
  pthread_mutex_lock (&s->mu);
  s->exiting = true;
  pthread_cond_broadcast (&s->work);
  while (s->nthreads > 0)
    pthread_cond_wait (&s->idle, &s->mu);
  pthread_mutex_unlock (&s->mu);
}

void
srv_round_done (struct srv *s, bool *running)
{
  pthread_mutex_lock (&s->mu);
  *running = false;
  s->workers--;
  pthread_cond_broadcast (&s->idle);
  pthread_mutex_unlock (&s->mu);
}

void
srv_round_start (struct srv *s, bool *running, void *(*fn) (void *))
{
  pthread_attr_t attr;
  pthread_t t;
  bool go;

  pthread_mutex_lock (&s->mu);
  go = !*running && !s->stopping;
  if (go)
    {
      *running = true;
      s->workers++;
    }
  pthread_mutex_unlock (&s->mu);
  if (!go)
    return;
  pthread_attr_init (&attr);
  pthread_attr_setdetachstate (&attr, PTHREAD_CREATE_DETACHED);
  go = pthread_create (&t, &attr, fn, s) == 0;
  pthread_attr_destroy (&attr);
  if (!go)
    srv_round_done (s, running);
}
