/* idle.c - the idle pause and the :update route (see idle.h).  */
#include <string.h>
#include <time.h>

#include "monitor/idle.h"
#include "monitor/lifecycle.h"
#include "monitor/monitor-internal.h"
#include "monitor/reply.h"

/* How often the timer looks, at most: an idle pause comes at most this
   late.  */
#define IDLE_TICK_S 5

int
mon_idle_parse_update (json_object *body, int *idle, int *wake, rt_error **err)
{
  char unknown[256] = "";
  size_t used = 0;

  *idle = -1;
  *wake = -1;
  json_object_object_foreach (body, key, v)
  {
    if (strcmp (key, "idlePauseSeconds") == 0)
      {
        int64_t s = json_object_is_type (v, json_type_int) ? json_object_get_int64 (v) : -1;
        if (s != 0 && (s < RT_IDLE_PAUSE_MIN_S || s > RT_IDLE_PAUSE_MAX_S))
          return rt_error_set (err, EINVAL, "invalid_request",
                               "idlePauseSeconds must be 0 (off) or a whole number of seconds from %d to %d",
                               RT_IDLE_PAUSE_MIN_S, RT_IDLE_PAUSE_MAX_S);
        *idle = (int) s;
      }
    else if (strcmp (key, "autoWake") == 0)
      {
        if (!json_object_is_type (v, json_type_boolean))
          return rt_error_set (err, EINVAL, "invalid_request", "autoWake must be true or false");
        *wake = json_object_get_boolean (v) ? 1 : 0;
      }
    else if (used < sizeof unknown)
      /* Truncated past the buffer: the first names are enough.  */
      used += snprintf (unknown + used, sizeof unknown - used, "%s'%.64s'", used ? ", " : "", key);
  }
  if (used > 0)
    return rt_error_set (err, EINVAL, "invalid_request",
                         "unknown member(s) %s: an update takes idlePauseSeconds and autoWake", unknown);
  return 0;
}

/* A command whose client still waits keeps the sandbox awake, however
   quiet it is: no pause in the middle of a command.  */
static bool
command_running (struct mon *m)
{
  for (struct mon_exec *e = m->execs; e; e = e->next)
    if (e->proc == NULL && (e->req != NULL || e->sess != NULL))
      return true;
  return false;
}

static bool
should_pause (struct mon *m, int64_t now)
{
  if (m->idle.pause_s == 0 || m->phase != MON_RUNNING)
    return false;
  return now - m->idle.last_activity_us >= (int64_t) m->idle.pause_s * 1000000
         && m->meter.cpu_percent < RT_IDLE_CPU_PERCENT;
}

static void on_idle (evutil_socket_t fd, short what, void *arg);

/* The next look: a tick from now, or the deadline when it comes first.  */
static void
idle_arm (struct mon *m)
{
  int64_t tick = (int64_t) (m->idle.pause_s < IDLE_TICK_S ? m->idle.pause_s : IDLE_TICK_S) * 1000000;
  int64_t left = m->idle.last_activity_us + (int64_t) m->idle.pause_s * 1000000 - (int64_t) rt_now_us ();
  int64_t delay = left > 0 && left < tick ? left : tick;
  struct timeval tv = { .tv_sec = delay / 1000000, .tv_usec = delay % 1000000 };

  if (m->idle.pause_s == 0 || mon_stopping (m))
    {
      if (m->idle.ev)
        evtimer_del (m->idle.ev);
      return;
    }
  if (m->idle.ev == NULL && (m->idle.ev = evtimer_new (m->base, on_idle, m)) == NULL)
    {
      fprintf (stderr, "idle pause: cannot set up its timer (out of memory)\n");
      return;
    }
  evtimer_add (m->idle.ev, &tv);
}

static void
on_idle (evutil_socket_t fd, short what, void *arg)
{
  struct mon *m = arg;
  int64_t now = (int64_t) rt_now_us ();
  (void) fd;
  (void) what;

  if (command_running (m))
    m->idle.last_activity_us = now;
  if (should_pause (m, now))
    {
      cleanup_error rt_error *err = NULL;
      /* A whole idle period passes before the next try: each try stops the
         VM and may write its memory.  */
      if (mon_pause (m, "idle", &err) < 0)
        {
          fprintf (stderr, "idle pause of %s failed: %s\n", m->cfg->id, err ? err->msg : "unknown error");
          m->idle.last_activity_us = now;
        }
    }
  idle_arm (m);
}

void
mon_idle_touch (struct mon *m)
{
  m->idle.last_activity_us = (int64_t) rt_now_us ();
}

static void
show_settings (struct mon *m)
{
  json_object_object_add (m->state, "idlePauseSeconds", json_object_new_int64 (m->idle.pause_s));
  json_object_object_add (m->state, "autoWake", json_object_new_boolean (m->idle.auto_wake));
}

void
mon_idle_start (struct mon *m)
{
  json_object *v;

  m->idle.pause_s = m->cfg->idle_pause_s;
  m->idle.auto_wake = m->cfg->auto_wake;
  if (json_object_object_get_ex (m->state, "idlePauseSeconds", &v) && json_object_is_type (v, json_type_int))
    {
      int64_t s = json_object_get_int64 (v);
      if (s == 0 || (s >= RT_IDLE_PAUSE_MIN_S && s <= RT_IDLE_PAUSE_MAX_S))
        m->idle.pause_s = (unsigned) s;
    }
  if (json_object_object_get_ex (m->state, "autoWake", &v) && json_object_is_type (v, json_type_boolean))
    m->idle.auto_wake = json_object_get_boolean (v);
  show_settings (m);
  mon_idle_touch (m);
  idle_arm (m);
}

void
mon_handle_update (struct mon *m, struct evhttp_request *req, json_object *body)
{
  cleanup_error rt_error *err = NULL;
  int idle, wake;

  if (mon_idle_parse_update (body, &idle, &wake, &err) < 0)
    return mon_reply_error (req, 400, err->code, err->hint, "%s", err->msg);
  if (idle >= 0)
    m->idle.pause_s = (unsigned) idle;
  if (wake >= 0)
    m->idle.auto_wake = wake;
  show_settings (m);
  /* Re-armed: idle time counts from this request (mon_handle_request).  */
  idle_arm (m);
  mon_save_state (m);
  mon_reply_json (req, 200, m->state);
}
