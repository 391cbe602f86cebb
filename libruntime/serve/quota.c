/* quota.c - a token's limits at create and fork (server.h): what its
   tenant holds (rt_tenant_usage_get) plus the creates it has in progress,
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
      if (free_slot == NULL && p->sandboxes == 0 && p->vcpu == 0)
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

static int
refuse (struct srv_req *r, const char *limit, int64_t max, int64_t held, int64_t asked, const char *retry)
{
  json_object *d = json_object_new_object ();

  json_object_object_add (d, "limit", json_object_new_string (limit));
  json_object_object_add (d, "max", json_object_new_int64 (max));
  json_object_object_add (d, "held", json_object_new_int64 (held));
  json_object_object_add (d, "requested", json_object_new_int64 (asked));
  srv_add_header (r, "Retry-After", retry);
  srv_reply_error (r, 429, "quota_exceeded", "stop or delete a sandbox of this token first, or ask for a larger limit",
                   d, "token %s's %s is %lld; it holds %lld (with the creates in progress) and asked for %lld more",
                   srv_token (r)->name, limit, (long long) max, (long long) held, (long long) asked);
  return -1;
}

int
srv_quota_reserve (struct srv_req *r, unsigned sandboxes, unsigned vcpu)
{
  const struct rt_token_info *t = srv_token (r);
  cleanup_error rt_error *err = NULL;
  struct rt_tenant_usage u;
  unsigned ps, pv;
  struct srv_pending *p;
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
  if (t->max_cost_micros && u.charged_micros >= t->max_cost_micros)
    {
      srv_quota_release (r, sandboxes, vcpu);
      return refuse (r, "maxCostMicros", t->max_cost_micros, u.charged_micros, 0, "3600");
    }
  if (t->max_sandboxes && u.sandboxes + ps + sandboxes > t->max_sandboxes)
    {
      srv_quota_release (r, sandboxes, vcpu);
      return refuse (r, "maxSandboxes", t->max_sandboxes, u.sandboxes + ps, sandboxes, ps ? "10" : "60");
    }
  if (t->max_vcpu && u.vcpu + pv + vcpu > t->max_vcpu)
    {
      srv_quota_release (r, sandboxes, vcpu);
      return refuse (r, "maxVcpu", t->max_vcpu, u.vcpu + pv, vcpu, pv ? "10" : "60");
    }
  return 0;
}
