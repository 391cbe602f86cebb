/* lifecycle.c - pause, wake, extend and the lease (see lifecycle.h).  */
#include <string.h>

#include "billing/trial.h"
#include "monitor/capture.h"
#include "monitor/exec.h"
#include "monitor/lifecycle.h"
#include "monitor/reply.h"

void
mon_set_expires (struct mon *m, int64_t expires_ms)
{
  char when[32];
  struct timeval tv;
  int64_t left = expires_ms - rt_epoch_ms ();

  m->expires_ms = expires_ms;
  rt_format_time (expires_ms, when);
  mon_set_str (m, "expiresAt", when);
  if (left < 0)
    left = 0;
  tv.tv_sec = left / 1000;
  tv.tv_usec = (left % 1000) * 1000;
  evtimer_add (m->ev_lease, &tv);
}

int
mon_pause (struct mon *m, const char *reason, rt_error **err)
{
  int ret;

  if (m->phase == MON_PAUSED)
    return 0;
  /* Saved with the rest of the state; a wake clears it with pausedAt
     (clone.c).  */
  mon_set_str (m, "pauseReason", reason);
  ret = mon_pause_to_disk (m, err);
  if (ret < 0)
    mon_set_str (m, "pauseReason", NULL);
  return ret;
}

/* The lease ended: a command waiting for it is cut (it would hold the
   sandbox past its lease), then the sandbox pauses to disk; if it cannot,
   it stops.  */
void
mon_on_lease (evutil_socket_t fd, short what, void *arg)
{
  struct mon *m = arg;
  cleanup_error rt_error *err = NULL;
  (void) fd;
  (void) what;
  if (m->cfg->stop_on_timeout)
    return mon_stop (m, "time_limit");
  mon_exec_fail_clients (m, "sandbox_paused", "the lease ended: the sandbox paused");
  if (mon_pause (m, "lease_ended", &err) < 0)
    {
      fprintf (stderr, "cannot pause at the end of the lease, stopping: %s\n", err->msg);
      mon_stop (m, "time_limit");
    }
}

/* The trial's refusal is a payment matter (402); anything else is ours.  */
static void
reply_trial_error (struct evhttp_request *req, const rt_error *err)
{
  mon_reply_error (req, strcmp (err->code, "trial_exhausted") == 0 ? 402 : 500, err->code, err->hint, "%s",
                   err->msg);
}

void
mon_handle_stop (struct mon *m, struct evhttp_request *req, json_object *body)
{
  (void) body;
  mon_stop (m, "requested");
  mon_reply_json (req, 200, m->state);
}

void
mon_handle_pause (struct mon *m, struct evhttp_request *req, json_object *body)
{
  cleanup_error rt_error *err = NULL;

  (void) body;
  if (mon_pause (m, "requested", &err) < 0)
    return mon_reply_error (req, strcmp (err->code, "internal") == 0 ? 500 : 409, err->code, err->hint, "%s",
                            err->msg);
  mon_reply_json (req, 200, m->state);
}

/* A monitor runs only while its VM does: its sandbox is awake (a paused
   one is woken by a new monitor, sandbox/wake.c).  */
void
mon_handle_wake (struct mon *m, struct evhttp_request *req, json_object *body)
{
  (void) body;
  mon_reply_json (req, 200, m->state);
}

void
mon_handle_extend (struct mon *m, struct evhttp_request *req, json_object *body)
{
  json_object *v;
  int64_t seconds = 0, now = rt_epoch_ms (), end;

  if (json_object_object_get_ex (body, "seconds", &v))
    seconds = json_object_get_int64 (v);
  if (seconds <= 0)
    return mon_reply_error (req, 400, "invalid_request", NULL, "seconds must be a positive whole number");
  if (seconds > RT_MAX_LEASE_S)
    return mon_reply_error (req, 400, "invalid_request", "a lease may end at most 1 h from now",
                            "extending by %lld s would end the lease more than 1 h from now", (long long) seconds);
  end = (m->expires_ms > now ? m->expires_ms : now) + seconds * 1000;
  if (end > now + (int64_t) RT_MAX_LEASE_S * 1000 + 1000)
    return mon_reply_error (req, 400, "invalid_request", "a lease may end at most 1 h from now",
                            "extending by %lld s would end the lease more than 1 h from now", (long long) seconds);
  if (m->trial)
    {
      cleanup_error rt_error *err = NULL;
      int64_t lease_us = (end - now) * 1000;
      if (rt_trial_hold (m->ctx, m->cfg->id, (int64_t) m->meter.running_us, &lease_us, false, &err) < 0)
        return reply_trial_error (req, err);
    }
  mon_set_expires (m, end);
  mon_save_state (m);
  mon_reply_json (req, 200, m->state);
}
