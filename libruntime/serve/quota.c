/* quota.c - a token's limits at create, fork and snapshot, and its spend
   on every verb that keeps a sandbox running (server.h): what its tenant
   holds (rt_tenant_usage_get) plus the creates it has in progress,
   counted here because a sandbox being made is not in the usage yet.
   A reservation is released only once the sandbox is in the store (or
   failed), so two concurrent creates never both fit a last place; for a
   moment the new one counts twice, which errs on refusing.
   (no header of its own: server.h declares it).  */
#include <string.h>

#include "common/util.h"
#include "serve/server-internal.h"

/* The tenant's in-progress entry, made when @make (under s->mu); NULL when
   the table is full of tenants creating.  */
static struct srv_pending *
pending_of (struct srv *s, const char *name, bool make)
{
  struct srv_pending *free_slot = NULL;

  for (size_t i = 0; i < SRV_MAX_BUCKETS; i++)
    {
      struct srv_pending *p = &s->pending[i];
      if (strcmp (p->name, name) == 0)
        return p;
      if (free_slot == NULL && p->sandboxes == 0 && p->vcpu == 0 && p->snapshots == 0)
        free_slot = p;
    }
  if (make && free_slot)
    snprintf (free_slot->name, sizeof free_slot->name, "%s", name);
  return make ? free_slot : NULL;
}

static bool
limited (const struct rt_token_info *t)
{
  return t && (t->max_sandboxes || t->max_vcpu || t->max_cost_micros);
}

void
srv_quota_release (struct srv_req *r, unsigned sandboxes, unsigned vcpu)
{
  const struct rt_token_info *t = srv_token (r);
  struct srv_pending *p;

  if (!limited (t))
    return;
  pthread_mutex_lock (&r->srv->mu);
  p = pending_of (r->srv, t->name, false);
  if (p)
    {
      p->sandboxes -= sandboxes <= p->sandboxes ? sandboxes : p->sandboxes;
      p->vcpu -= vcpu <= p->vcpu ? vcpu : p->vcpu;
    }
  pthread_mutex_unlock (&r->srv->mu);
}

static void
refuse_with (struct srv_req *r, const char *limit, int64_t max, int64_t held, int64_t asked, const char *retry,
             const char *hint)
{
  json_object *d = json_object_new_object ();

  json_object_object_add (d, "limit", json_object_new_string (limit));
  json_object_object_add (d, "max", json_object_new_int64 (max));
  json_object_object_add (d, "held", json_object_new_int64 (held));
  json_object_object_add (d, "requested", json_object_new_int64 (asked));
  srv_add_header (r, "Retry-After", retry);
  srv_reply_error (r, 429, "quota_exceeded", hint, d,
                   "token %s's %s is %lld; it holds %lld (with those in progress) and asked for %lld more",
                   srv_token (r)->name, limit, (long long) max, (long long) held, (long long) asked);
}

static int
refuse (struct srv_req *r, const char *limit, int64_t max, int64_t held, int64_t asked, const char *retry)
{
  refuse_with (r, limit, max, held, asked, retry,
               "stop or delete a sandbox of this token first, or ask for a larger limit");
  return -1;
}

/* What the reservation of @sandboxes and @vcpu would exceed: NULL when
   it fits, else the limit's name with its max and what is held.  */
static const char *
over (const struct rt_token_info *t, const struct rt_tenant_usage *u, unsigned ps, unsigned pv, unsigned sandboxes,
      unsigned vcpu, int64_t *max, int64_t *held, int64_t *asked)
{
  if (t->max_cost_micros && u->charged_micros >= t->max_cost_micros)
    return *max = t->max_cost_micros, *held = u->charged_micros, *asked = 0, "maxCostMicros";
  if (t->max_sandboxes && u->sandboxes + ps + sandboxes > t->max_sandboxes)
    return *max = t->max_sandboxes, *held = u->sandboxes + ps, *asked = sandboxes, "maxSandboxes";
  if (t->max_vcpu && u->vcpu + pv + vcpu > t->max_vcpu)
    return *max = t->max_vcpu, *held = u->vcpu + pv, *asked = vcpu, "maxVcpu";
  return NULL;
}

/* srv_quota_reserve, or with @quiet 1 and nothing replied when a limit is
   reached.  */
static int
reserve (struct srv_req *r, unsigned sandboxes, unsigned vcpu, bool quiet)
{
  const struct rt_token_info *t = srv_token (r);
  cleanup_error rt_error *err = NULL;
  struct rt_tenant_usage u;
  unsigned ps = 0, pv = 0;
  struct srv_pending *p;
  int64_t max, held, asked;
  const char *limit;
  rt_context *ctx;

  if (!limited (t))
    return 0;
  pthread_mutex_lock (&r->srv->mu);
  p = pending_of (r->srv, t->name, true);
  if (p)
    {
      ps = p->sandboxes;
      pv = p->vcpu;
      p->sandboxes += sandboxes;
      p->vcpu += vcpu;
    }
  pthread_mutex_unlock (&r->srv->mu);
  if (p == NULL)
    {
      srv_add_header (r, "Retry-After", "5");
      srv_reply_error (r, 503, "unavailable", NULL, NULL, "too many tokens are creating sandboxes at once");
      return -1;
    }
  if ((ctx = srv_ctx (r)) == NULL)
    return srv_quota_release (r, sandboxes, vcpu), -1;
  if (rt_tenant_usage_get (ctx, t->name, &u, &err) < 0)
    {
      srv_quota_release (r, sandboxes, vcpu);
      srv_reply_rt_error (r, err);
      return -1;
    }
  if ((limit = over (t, &u, ps, pv, sandboxes, vcpu, &max, &held, &asked)) == NULL)
    return 0;
  srv_quota_release (r, sandboxes, vcpu);
  if (quiet)
    return 1;
  return refuse (r, limit, max, held, asked, strcmp (limit, "maxCostMicros") == 0 ? "3600" : ps || pv ? "10" : "60");
}

int
srv_quota_spend (struct srv_req *r)
{
  const struct rt_token_info *t = srv_token (r);
  cleanup_error rt_error *err = NULL;
  struct rt_tenant_usage u;
  rt_context *ctx;

  if (t == NULL || t->max_cost_micros == 0)
    return 0;
  if ((ctx = srv_ctx (r)) == NULL)
    return -1;
  if (rt_tenant_usage_get (ctx, t->name, &u, &err) < 0)
    {
      srv_reply_rt_error (r, err);
      return -1;
    }
  if (u.charged_micros < t->max_cost_micros)
    return 0;
  refuse_with (r, "maxCostMicros", t->max_cost_micros, u.charged_micros, 0, "3600",
               "the token has spent its --max-cost: stop or delete its sandboxes, or ask for a larger limit");
  return -1;
}

int
srv_quota_reserve (struct srv_req *r, unsigned sandboxes, unsigned vcpu)
{
  return reserve (r, sandboxes, vcpu, false);
}

int
srv_quota_try (struct srv_req *r, unsigned sandboxes, unsigned vcpu)
{
  return reserve (r, sandboxes, vcpu, true);
}

void
srv_quota_snapshot_done (struct srv_req *r)
{
  struct srv_pending *p;

  pthread_mutex_lock (&r->srv->mu);
  p = pending_of (r->srv, srv_token (r)->name, false);
  if (p && p->snapshots)
    p->snapshots--;
  pthread_mutex_unlock (&r->srv->mu);
}

int
srv_quota_snapshot (struct srv_req *r)
{
  const struct rt_token_info *t = srv_token (r);
  unsigned max = t->max_snapshots ? t->max_snapshots : RT_TOKEN_DEFAULT_SNAPSHOTS, pending = 0;
  cleanup_error rt_error *err = NULL;
  cleanup_free char *text = NULL;
  cleanup_json json_object *all = NULL;
  struct srv_pending *p;
  rt_context *ctx;
  size_t held;

  pthread_mutex_lock (&r->srv->mu);
  if ((p = pending_of (r->srv, t->name, true)))
    pending = p->snapshots++;
  pthread_mutex_unlock (&r->srv->mu);
  if (p == NULL)
    {
      srv_add_header (r, "Retry-After", "5");
      srv_reply_error (r, 503, "unavailable", NULL, NULL, "too many tokens are creating at once");
      return -1;
    }
  if ((ctx = srv_ctx (r)) == NULL)
    return srv_quota_snapshot_done (r), -1;
  if (rt_snapshot_list_json (ctx, &text, &err) < 0)
    {
      srv_quota_snapshot_done (r);
      srv_reply_rt_error (r, err);
      return -1;
    }
  all = json_tokener_parse (text);
  held = (all && json_object_is_type (all, json_type_array) ? json_object_array_length (all) : 0) + pending;
  if (held + 1 <= max)
    return 0;
  srv_quota_snapshot_done (r);
  refuse_with (r, "maxSnapshots", max, (int64_t) held, 1, pending ? "10" : "60",
               "delete a snapshot of this token first, or ask for a larger --max-snapshots");
  return -1;
}
