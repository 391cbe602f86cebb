/* sandbox-verbs.c - a sandbox's lifecycle verbs (:stop :pause :wake
   :extend :update :fork :snapshot), its metrics, and snapshots
   (docs/API.md).
   (no header of its own: handlers.h declares its routes).  */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "core/state.h"
#include "common/util.h"
#include "api/body.h"
#include "api/handlers.h"

enum verb
{
  V_STOP,
  V_PAUSE,
  V_WAKE,
  V_EXTEND,
  V_UPDATE,
  V_FORK,
  V_SNAPSHOT,
};

const struct srv_field srv_fields_none[] = { { NULL, 0 } };
const struct srv_field srv_fields_wake[] = { { "timeoutSeconds", json_type_int }, { NULL, 0 } };
const struct srv_field srv_fields_extend[] = { { "seconds", json_type_int }, { NULL, 0 } };
const struct srv_field srv_fields_update[] = {
  { "name", json_type_null },        { "labels", json_type_null },          { "env", json_type_null },
  { "autoWake", json_type_boolean }, { "idlePauseSeconds", json_type_int }, { NULL, 0 },
};
const struct srv_field srv_fields_fork[] = {
  { "count", json_type_int },
  { "name", json_type_string },
  { "labels", json_type_object },
  { NULL, 0 },
};
const struct srv_field srv_fields_snapshot[] = {
  { "name", json_type_string },
  { "labels", json_type_object },
  { NULL, 0 },
};

static const struct
{
  const char *name;
  const struct srv_field *fields;
} verbs[] = {
  [V_STOP] = { "stop", srv_fields_none },
  [V_PAUSE] = { "pause", srv_fields_none },
  [V_WAKE] = { "wake", srv_fields_wake },
  [V_EXTEND] = { "extend", srv_fields_extend },
  [V_UPDATE] = { "update", srv_fields_update },
  [V_FORK] = { "fork", srv_fields_fork },
  [V_SNAPSHOT] = { "snapshot", srv_fields_snapshot },
};

/* A state change (stop, pause, wake) run on a thread of its own, so that
   Prefer: wait=N can answer after N s while it goes on.  */
struct job
{
  rt_sandbox *sb;
  enum verb verb;
  pthread_mutex_t mu;
  pthread_cond_t cond;
  bool done;
  int ret;
  rt_error *err;
};

static int
run_verb (rt_sandbox *sb, enum verb v, rt_error **err)
{
  switch (v)
    {
      case V_STOP:
        return rt_sandbox_stop (sb, err);
      case V_PAUSE:
        return rt_sandbox_pause (sb, err);
      case V_WAKE:
        return rt_sandbox_wake (sb, err);
      case V_EXTEND:
      case V_UPDATE:
      case V_FORK:
      case V_SNAPSHOT:
      default:
        return rt_error_set (err, EINVAL, "internal", "not a state change");
    }
}

static void *
job_main (void *arg)
{
  struct job *j = arg;
  rt_error *err = NULL;
  int ret = run_verb (j->sb, j->verb, &err);

  pthread_mutex_lock (&j->mu);
  j->ret = ret;
  j->err = err;
  j->done = true;
  pthread_cond_broadcast (&j->cond);
  pthread_mutex_unlock (&j->mu);
  return NULL;
}

/* The sandbox now, read by a context of the job's own (the request's is
   the job's while it runs).  */
static json_object *
info_aside (struct srv_req *r, const char *id, rt_error **err)
{
  rt_context *ctx = NULL;
  json_object *info = NULL;

  if (srv_ctx_new (r, &ctx, err) == 0)
    info = srv_sandbox_info (ctx, id, err);
  rt_context_free (ctx);
  return info;
}

/* Waits for the job at most 200 ms and up to @end (under j->mu): true
   once @end passed.  */
static bool
timed_out (struct job *j, uint64_t end_ms)
{
  uint64_t now = rt_now_ms ();
  struct timespec until;

  if (now >= end_ms)
    return true;
  until = rt_deadline_after (end_ms - now < 200 ? end_ms - now : 200);
  pthread_cond_timedwait (&j->cond, &j->mu, &until);
  return false;
}

/* Runs a state change: to its end when @wait < 0, else at most @wait s
   before answering the state then (the change goes on: this worker waits
   for it after answering).  */
static void
state_change (struct srv_req *r, rt_context *ctx, rt_sandbox *sb, enum verb v, int wait)
{
  struct job j = { .sb = sb, .verb = v };
  cleanup_error rt_error *err = NULL;
  json_object *info = NULL;
  uint64_t end_ms;
  pthread_t t;
  bool done;

  if (wait < 0 || pthread_mutex_init (&j.mu, NULL) != 0)
    {
      if (run_verb (sb, v, &err) < 0)
        return srv_reply_rt_error (r, err);
      return (info = srv_sandbox_info (ctx, rt_sandbox_id (sb), &err)) ? srv_reply_json (r, 200, info)
                                                                       : srv_reply_rt_error (r, err);
    }
  pthread_cond_init (&j.cond, NULL);
  if (pthread_create (&t, NULL, job_main, &j) != 0)
    {
      pthread_mutex_destroy (&j.mu);
      pthread_cond_destroy (&j.cond);
      return srv_reply_error (r, 503, "unavailable", NULL, NULL, "no thread for the change");
    }
  end_ms = rt_now_ms () + (uint64_t) wait * 1000;
  pthread_mutex_lock (&j.mu);
  /* In slices: a client gone meanwhile is answered (to no one) at once.  */
  while (!j.done && !timed_out (&j, end_ms) && !srv_gone (r))
    ;
  done = j.done;
  pthread_mutex_unlock (&j.mu);
  if (done)
    {
      pthread_join (t, NULL);
      if (j.ret < 0)
        srv_reply_rt_error (r, j.err);
      else if ((info = srv_sandbox_info (ctx, rt_sandbox_id (sb), &err)))
        srv_reply_json (r, 200, info);
      else
        srv_reply_rt_error (r, err);
    }
  else
    {
      if ((info = info_aside (r, rt_sandbox_id (sb), &err)))
        srv_reply_json (r, 200, info);
      else
        srv_reply_rt_error (r, err);
      pthread_join (t, NULL);
    }
  rt_error_free (j.err);
  pthread_mutex_destroy (&j.mu);
  pthread_cond_destroy (&j.cond);
}

static void
reply_info (struct srv_req *r, rt_context *ctx, const char *id)
{
  cleanup_error rt_error *err = NULL;
  json_object *info = srv_sandbox_info (ctx, id, &err);

  if (info == NULL)
    return srv_reply_rt_error (r, err);
  srv_reply_json (r, 200, info);
}

static void
extend (struct srv_req *r, rt_context *ctx, rt_sandbox *sb, json_object *body)
{
  cleanup_error rt_error *err = NULL;
  cleanup_free char *expires = NULL;
  int64_t secs = rt_json_i64 (body, "seconds");

  if (!json_object_object_get_ex (body, "seconds", NULL) || secs <= 0 || secs > 3600)
    return srv_reply_error (r, 400, "invalid_request", "e.g. {\"seconds\": 600}", NULL,
                            "seconds must be 1 to 3600 (the lease may end at most 1 h from now)");
  if (rt_sandbox_extend (sb, (unsigned) secs, &expires, &err) < 0)
    return srv_reply_rt_error (r, err);
  reply_info (r, ctx, rt_sandbox_id (sb));
}

/* name, labels and env are fixed at create in the library (its monitor
   holds them): refused by name rather than ignored.  */
static void
update (struct srv_req *r, rt_context *ctx, rt_sandbox *sb, json_object *body)
{
  cleanup_json json_object *issues = json_object_new_array ();
  cleanup_error rt_error *err = NULL;
  cleanup_free char *json = NULL;
  json_object *v;
  int64_t idle = -1;
  int wake = -1;

  for (const char *const *k = (const char *const[]){ "name", "labels", "env", NULL }; *k; k++)
    if (json_object_object_get_ex (body, *k, NULL))
      srv_issue (issues, *k, "cannot be changed after create yet (only autoWake and idlePauseSeconds)");
  if (json_object_object_get_ex (body, "idlePauseSeconds", &v))
    {
      idle = json_object_get_int64 (v);
      if (idle < 0 || idle > INT32_MAX)
        srv_issue (issues, "idlePauseSeconds", "must be 0 (off) or more seconds");
    }
  if (json_object_object_get_ex (body, "autoWake", &v))
    wake = json_object_get_boolean (v);
  if (srv_reply_issues (r, issues))
    return;
  if ((idle >= 0 || wake >= 0) && rt_sandbox_update (sb, (int) idle, wake, &json, &err) < 0)
    return srv_reply_rt_error (r, err);
  reply_info (r, ctx, rt_sandbox_id (sb));
}

static void
fork_verb (struct srv_req *r, rt_context *ctx, rt_sandbox *sb, json_object *body)
{
  cleanup_json json_object *issues = json_object_new_array (), *src = NULL;
  cleanup_strv char **labels = NULL, **ids = NULL;
  cleanup_error rt_error *err = NULL;
  int64_t count = json_object_object_get_ex (body, "count", NULL) ? rt_json_i64 (body, "count") : 1;
  json_object *out, *list;
  unsigned vcpu;
  int ret;

  if (count < 1 || count > RT_MAX_FORK)
    srv_issue (issues, "count", "must be 1 to 16");
  labels = srv_pairs_of (json_object_object_get (body, "labels"), "labels", issues);
  if (srv_reply_issues (r, issues))
    return;
  if ((src = srv_sandbox_info (ctx, rt_sandbox_id (sb), &err)) == NULL)
    return srv_reply_rt_error (r, err);
  vcpu = (unsigned) rt_json_i64 (src, "vcpu") * (unsigned) count;
  if (srv_quota_reserve (r, (unsigned) count, vcpu) < 0)
    return;
  ret = rt_sandbox_fork (sb, (unsigned) count, rt_json_str (body, "name"), (const char *const *) labels, &ids, &err);
  srv_quota_release (r, (unsigned) count, vcpu);
  if (ret < 0)
    return srv_reply_rt_error (r, err);
  out = json_object_new_object ();
  list = json_object_new_array ();
  json_object_object_add (out, "sandboxes", list);
  for (char **id = ids; id && *id; id++)
    {
      rt_error *e = NULL;
      json_object *info = srv_sandbox_info (ctx, *id, &e);
      rt_error_free (e);
      json_object_array_add (list, info);
    }
  srv_reply_json (r, 200, out);
}

/* A snapshot as the API shows it: without where it is on the host.  */
static json_object *
snapshot_of (const char *text)
{
  json_object *o = json_tokener_parse (text);

  if (o)
    json_object_object_del (o, "path");
  return o;
}

static void
snapshot_verb (struct srv_req *r, rt_sandbox *sb, json_object *body)
{
  cleanup_json json_object *issues = json_object_new_array ();
  cleanup_strv char **labels = NULL;
  cleanup_error rt_error *err = NULL;
  cleanup_free char *json = NULL;
  json_object *o;
  int ret;

  labels = srv_pairs_of (json_object_object_get (body, "labels"), "labels", issues);
  if (srv_reply_issues (r, issues))
    return;
  if (srv_quota_snapshot (r) < 0)
    return;
  ret = rt_sandbox_snapshot (sb, rt_json_str (body, "name"), (const char *const *) labels, &json, &err);
  srv_quota_snapshot_done (r);
  if (ret < 0)
    return srv_reply_rt_error (r, err);
  if ((o = snapshot_of (json)) == NULL)
    return srv_reply_error (r, 500, "internal", NULL, NULL, "the snapshot could not be read");
  srv_reply_json (r, 200, o);
}

/* Verbs on a sandbox that has stopped (or is paused) answer before any
   handle is opened: :stop of a stopped one is done, and so is :wake of a
   running one, as rt_sandbox_wake is locally.  1 when answered.  */
static int
answered_by_state (struct srv_req *r, rt_context *ctx, enum verb v)
{
  cleanup_error rt_error *err = NULL;
  json_object *info = srv_sandbox_info (ctx, srv_param (r, "id"), &err);
  const char *st;

  if (info == NULL)
    return srv_reply_rt_error (r, err), 1;
  st = rt_json_str (info, "state");
  if (v == V_STOP && st && rt_state_is (st, RT_SANDBOX_STOPPED))
    return srv_reply_json (r, 200, info), 1;
  /* Awake already (running, starting, resuming): nothing to do.  A
     stopping or stopped one goes on to the verb, which says so.  */
  if (v == V_WAKE && st
      && (rt_state_is (st, RT_SANDBOX_RUNNING) || rt_state_is (st, RT_SANDBOX_STARTING)
          || rt_state_is (st, RT_SANDBOX_RESUMING)))
    return srv_reply_json (r, 200, info), 1;
  json_object_put (info);
  return 0;
}

void
srv_sandbox_verb (struct srv_req *r)
{
  const char *name = srv_param (r, "verb");
  cleanup_json json_object *body = NULL;
  cleanup_error rt_error *err = NULL;
  rt_sandbox *sb = NULL;
  rt_context *ctx;
  size_t v;
  int wait;

  for (v = 0; v < sizeof verbs / sizeof verbs[0] && strcmp (verbs[v].name, name) != 0; v++)
    ;
  if (v == sizeof verbs / sizeof verbs[0])
    return srv_reply_error (r, 404, "not_found", "stop, pause, wake, extend, update, fork or snapshot", NULL,
                            "no verb :%s on a sandbox", name);
  if ((body = srv_body_json (r, verbs[v].fields)) == NULL || (ctx = srv_ctx (r)) == NULL)
    return;
  /* Those that keep it running, at the token's --max-cost; :fork and
     :snapshot are checked as creates are.  */
  if ((v == V_WAKE || v == V_EXTEND) && srv_quota_spend (r) < 0)
    return;
  if (answered_by_state (r, ctx, v))
    return;
  if (rt_sandbox_open (ctx, srv_param (r, "id"), &sb, &err) < 0)
    return srv_reply_rt_error (r, err);
  switch ((enum verb) v)
    {
      case V_STOP:
      case V_PAUSE:
      case V_WAKE:
        /* :wake's timeoutSeconds is its Prefer: wait.  */
        wait = srv_prefer_wait (r);
        if (wait < 0 && json_object_object_get_ex (body, "timeoutSeconds", NULL))
          {
            int64_t t = rt_json_i64 (body, "timeoutSeconds");
            wait = t < 0 ? 0 : t > 120 ? 120 : (int) t;
          }
        state_change (r, ctx, sb, v, wait);
        break;
      case V_EXTEND:
        extend (r, ctx, sb, body);
        break;
      case V_UPDATE:
        update (r, ctx, sb, body);
        break;
      case V_FORK:
        fork_verb (r, ctx, sb, body);
        break;
      case V_SNAPSHOT:
      default:
        snapshot_verb (r, sb, body);
        break;
    }
  rt_sandbox_close (sb);
}

void
srv_metrics (struct srv_req *r)
{
  cleanup_error rt_error *err = NULL;
  cleanup_free char *json = NULL;
  rt_context *ctx = srv_ctx (r);
  rt_sandbox *sb = NULL;
  int ret;

  if (ctx == NULL)
    return;
  if (rt_sandbox_open (ctx, srv_param (r, "id"), &sb, &err) < 0)
    return srv_reply_rt_error (r, err);
  ret = rt_sandbox_metrics_json (sb, &json, &err);
  rt_sandbox_close (sb);
  if (ret < 0)
    return srv_reply_rt_error (r, err);
  srv_reply_json_text (r, 200, json);
}

void
srv_snapshot_list (struct srv_req *r)
{
  cleanup_error rt_error *err = NULL;
  cleanup_free char *text = NULL;
  rt_context *ctx = srv_ctx (r);
  json_object *all;

  if (ctx == NULL)
    return;
  if (rt_snapshot_list_json (ctx, &text, &err) < 0)
    return srv_reply_rt_error (r, err);
  if ((all = json_tokener_parse (text)) == NULL)
    return srv_reply_error (r, 500, "internal", NULL, NULL, "the snapshots could not be read");
  for (size_t i = 0; i < json_object_array_length (all); i++)
    json_object_object_del (json_object_array_get_idx (all, i), "path");
  /* The SDK's snapshots.list filters.  */
  srv_reply_page (r, srv_filter (r, all, (const char *const[]){ "sandboxId", "sourceSandboxId", "name", "name",
                                                                 "state", "state", NULL }));
}

/* The snapshot {id}; NULL after replying the error.  */
static json_object *
snapshot_get (struct srv_req *r, rt_context *ctx)
{
  cleanup_error rt_error *err = NULL;
  cleanup_free char *text = NULL;
  json_object *o;

  if (rt_snapshot_get_json (ctx, srv_param (r, "id"), &text, &err) < 0)
    return srv_reply_rt_error (r, err), NULL;
  if ((o = snapshot_of (text)) == NULL)
    srv_reply_error (r, 500, "internal", NULL, NULL, "the snapshot could not be read");
  return o;
}

void
srv_snapshot_get (struct srv_req *r)
{
  rt_context *ctx = srv_ctx (r);
  json_object *o;

  if (ctx && (o = snapshot_get (r, ctx)))
    srv_reply_json (r, 200, o);
}

void
srv_snapshot_delete (struct srv_req *r)
{
  cleanup_error rt_error *err = NULL;
  cleanup_json json_object *o = NULL;
  rt_context *ctx = srv_ctx (r);
  json_object *out;

  if (ctx == NULL || (o = snapshot_get (r, ctx)) == NULL)
    return;
  if (rt_snapshot_remove (ctx, rt_json_str (o, "id"), &err) < 0)
    return srv_reply_rt_error (r, err);
  out = json_object_new_object ();
  json_object_object_add (out, "id", json_object_get (json_object_object_get (o, "id")));
  json_object_object_add (out, "kind", json_object_new_string ("snapshot"));
  json_object_object_add (out, "name", json_object_get (json_object_object_get (o, "name")));
  json_object_object_add (out, "status", json_object_new_string ("deleted"));
  srv_reply_json (r, 200, out);
}
