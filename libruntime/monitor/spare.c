/* spare.c - a spare's reservation and claim (spare.h).  */
#include <string.h>
#include <sys/pidfd.h>

#include "monitor/idle.h"
#include "monitor/lifecycle.h"
#include "monitor/reply.h"
#include "monitor/spare.h"
#include "net/proxy.h"
#include "vmm/guest-ops.h"
#include "vmm/qmp.h"

#define RESTORE_TIMEOUT_MS 20000

static void
drop_claimer (struct mon *m)
{
  if (m->spare.ev_claimer)
    event_free (m->spare.ev_claimer);
  m->spare.ev_claimer = NULL;
  if (m->spare.claimer_pidfd >= 0)
    close (m->spare.claimer_pidfd);
  m->spare.claimer_pidfd = -1;
}

/* A reserver or claimer that dies before it confirmed: the spare is not
   handed out again (the dead one may have written half of what it meant
   to), and a claimed one is a sandbox nobody can name.  It stops.  */
static void
on_claimer_exit (evutil_socket_t fd, short what, void *arg)
{
  struct mon *m = arg;
  (void) fd;
  (void) what;

  drop_claimer (m);
  mon_stop (m, "requested");
}

static bool
not_a_spare (struct mon *m, struct evhttp_request *req)
{
  if (m->phase == MON_SPARE && !m->spare.claimed)
    return false;
  mon_reply_error (req, 409, "sandbox_not_ready", NULL, "sandbox %s is not a spare", m->cfg->id);
  return true;
}

void
mon_handle_reserve (struct mon *m, struct evhttp_request *req, json_object *body)
{
  json_object *v;
  int pidfd;

  if (not_a_spare (m, req))
    return;
  if (m->spare.claimer_pidfd >= 0)
    return mon_reply_error (req, 409, "sandbox_not_ready", NULL, "spare %s is reserved", m->cfg->id);
  if (!json_object_object_get_ex (body, "claimer", &v) || !json_object_is_type (v, json_type_int)
      || json_object_get_int64 (v) <= 0)
    return mon_reply_error (req, 400, "invalid_request", NULL, "a reservation needs {\"claimer\": pid}");
  pidfd = pidfd_open ((pid_t) json_object_get_int64 (v), 0);
  if (pidfd < 0)
    return mon_reply_error (req, 400, "invalid_request", NULL, "no process %lld", (long long) json_object_get_int64 (v));
  m->spare.claimer_pidfd = pidfd;
  m->spare.ev_claimer = event_new (m->base, pidfd, EV_READ, on_claimer_exit, m);
  if (m->spare.ev_claimer == NULL || event_add (m->spare.ev_claimer, NULL) < 0)
    {
      drop_claimer (m);
      return mon_reply_error (req, 500, "internal", NULL, "cannot watch the claimer");
    }
  mon_reply_json (req, 200, m->state);
}

/* The claim's env (["K=V"…]) into @sp->claim_env.  */
static int
take_env (struct mon_spare *sp, json_object *body)
{
  json_object *env;
  size_t n;

  if (!json_object_object_get_ex (body, "env", &env) || !json_object_is_type (env, json_type_array))
    return -1;
  n = json_object_array_length (env);
  sp->claim_env = calloc (n + 1, sizeof (char *));
  if (sp->claim_env == NULL)
    return -1;
  for (size_t i = 0; i < n; i++)
    {
      json_object *e = json_object_array_get_idx (env, i);
      if (!json_object_is_type (e, json_type_string)
          || (sp->claim_env[i] = strdup (json_object_get_string (e))) == NULL)
        return -1;
    }
  return 0;
}

/* The claimant's rules, before the guest runs a single instruction.  */
static int
apply_rules (struct mon *m, json_object *body, bool trial, rt_error **err)
{
  struct rt_egress_rules rules = { 0 };
  json_object *net;
  int ret;

  if (!json_object_object_get_ex (body, "network", &net))
    return rt_error_set (err, EINVAL, "invalid_request", "a claim needs its network rules");
  ret = rt_egress_rules_from_json (net, &rules, err);
  if (ret < 0)
    return ret;
  rules.trial = trial;
  ret = rt_netns_apply (&m->net, &rules, err);
  if (ret == 0)
    ret = rt_proxy_set_rules (m->proxy, &rules, err) < 0 ? -1 : 0;
  rt_egress_rules_clear (&rules);
  return ret;
}

/* QEMU resumes and the agent makes the clone unique, on the channel the
   event loop does not read yet.  */
static int
resume_and_restore (struct mon *m, rt_error **err)
{
  struct rt_channel ch;
  int ret = rt_qmp_command (m->qmp_sock, "cont", err);

  mon_chan_borrow (m, &ch);
  return ret < 0 ? ret : rt_guest_restore (&ch, m->cfg->id, RESTORE_TIMEOUT_MS, err);
}

/* The claimant's state, with what the monitor measured of the start.  */
static void
take_state (struct mon *m, json_object *state)
{
  static const char *const kept[] = { "jail", "template" };
  json_object *s = json_object_get (state), *v;

  for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
    if (json_object_object_get_ex (m->state, kept[i], &v))
      json_object_object_add (s, kept[i], json_object_get (v));
  json_object_put (m->state);
  m->state = s;
  m->meter.state = s;
  rt_tenant_adopt (m->ctx, s);
}

static int
claim (struct mon *m, json_object *body, rt_error **err)
{
  struct rt_monitor_config *c = &m->spare.claim_cfg;
  json_object *state;
  const char *funding;
  bool trial;
  int64_t start_ms = rt_json_i64 (body, "startMs"), ready;
  pid_t owner = (pid_t) rt_json_i64 (body, "owner");
  int ret;

  if (!json_object_object_get_ex (body, "state", &state) || !json_object_is_type (state, json_type_object)
      || take_env (&m->spare, body) < 0)
    return rt_error_set (err, EINVAL, "invalid_request", "a claim needs {state, env, network}");
  funding = rt_json_str (state, "funding");
  trial = funding && strcmp (funding, "trial") == 0;
  ret = apply_rules (m, body, trial, err);
  if (ret < 0)
    return ret;
  *c = *m->cfg;
  c->env = m->spare.claim_env;
  c->expires_ms = rt_json_i64 (body, "expiresMs");
  c->timeout_s = (unsigned) rt_json_i64 (body, "timeoutSeconds");
  c->stop_on_timeout = json_object_object_get_ex (body, "stopOnTimeout", NULL)
                       && json_object_get_boolean (json_object_object_get (body, "stopOnTimeout"));
  c->owner = owner;
  c->start_ms = start_ms;
  m->cfg = c;
  m->trial = trial;
  ret = resume_and_restore (m, err);
  if (ret < 0)
    return ret;
  take_state (m, state);
  ready = start_ms > 0 ? rt_epoch_ms () - start_ms : 0;
  mon_set_str (m, "start", "spare");
  json_object_object_add (m->state, "readyMs", json_object_new_int64 (ready > 0 ? ready : 0));
  mon_enter (m, MON_RUNNING);
  m->spare.claimed = true;
  mon_chan_read_start (m);
  if (owner > 0 && mon_watch_owner (m, owner, err) < 0)
    return -1;
  if (m->cfg->expires_ms > 0)
    mon_set_expires (m, m->cfg->expires_ms);
  ret = mon_start_meter (m, err);
  if (ret < 0)
    return ret;
  mon_idle_start (m);
  rt_meter_record (&m->meter);
  mon_save_state (m);
  return 0;
}

void
mon_handle_claim (struct mon *m, struct evhttp_request *req, json_object *body)
{
  cleanup_error rt_error *err = NULL;

  if (not_a_spare (m, req))
    return;
  if (m->spare.claimer_pidfd < 0)
    return mon_reply_error (req, 409, "sandbox_not_ready", NULL, "spare %s is not reserved", m->cfg->id);
  if (claim (m, body, &err) < 0)
    {
      mon_reply_error (req, 500, err->code, err->hint, "%s", err->msg);
      /* Half claimed is of no use to anyone.  */
      m->spare.claimed = true;
      mon_stop (m, "startup_failed");
      return;
    }
  mon_reply_json (req, 200, m->state);
}

void
mon_handle_claimed (struct mon *m, struct evhttp_request *req, json_object *body)
{
  (void) body;
  if (!m->spare.claimed)
    return mon_reply_error (req, 409, "sandbox_not_ready", NULL, "sandbox %s was not claimed", m->cfg->id);
  drop_claimer (m);
  m->spare.claimed = false;
  mon_reply_json (req, 200, m->state);
}
