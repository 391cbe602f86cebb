/* dns.c - the proxy's resolver, its DNS server for the guest, and the
   names it gave out (see dns.h).  */
#include <event2/dns_struct.h>
#include <string.h>
#include <strings.h>

#include "net/dns.h"
#include "net/proxy-internal.h"
#include "net/sockaddr.h"

#define DNS_TTL 60

/* ---- the cache of answers -------------------------------------------------- */

/* The newest answer for a name goes last: an older copy of it is emptied,
   so a name the guest keeps asking for is not pushed out by the ring.  */
static void
cache_put (struct rt_dns *d, const struct in_addr *a, const char *name)
{
  struct rt_dns_entry *e;

  for (size_t i = 0; i < RT_DNS_CACHE; i++)
    if (d->cache[i].addr.s_addr == a->s_addr && strcasecmp (d->cache[i].name, name) == 0)
      d->cache[i].name[0] = '\0';
  e = &d->cache[d->cache_next++ % RT_DNS_CACHE];
  e->addr = *a;
  snprintf (e->name, sizeof e->name, "%s", name);
}

size_t
rt_dns_names_of (const struct rt_dns *d, const struct sockaddr_storage *ss, const char **names, size_t max)
{
  const struct in_addr *a = &((const struct sockaddr_in *) ss)->sin_addr;
  size_t n = d->cache_next < RT_DNS_CACHE ? d->cache_next : RT_DNS_CACHE, found = 0;

  if (ss->ss_family != AF_INET)
    return 0;
  for (size_t i = 1; i <= n && found < max; i++)
    {
      const struct rt_dns_entry *e = &d->cache[(d->cache_next - i) % RT_DNS_CACHE];
      if (e->addr.s_addr == a->s_addr && e->name[0])
        names[found++] = e->name;
    }
  return found;
}

/* ---- resolving ------------------------------------------------------------ */

struct rt_resolve_req
{
  void *owner;
  rt_resolve_cb cb;
  struct evdns_getaddrinfo_request *req;
  struct rt_resolve_req **backref;
};

static struct evutil_addrinfo *
addrinfo_of (const struct sockaddr_storage *ss)
{
  struct evutil_addrinfo *ai = calloc (1, sizeof *ai + sizeof *ss);

  if (ai == NULL)
    return NULL;
  ai->ai_family = ss->ss_family;
  ai->ai_socktype = SOCK_STREAM;
  ai->ai_addr = (struct sockaddr *) (ai + 1);
  ai->ai_addrlen = rt_addr_len (ss);
  memcpy (ai->ai_addr, ss, ai->ai_addrlen);
  return ai;
}

static void
addrinfo_free (struct evutil_addrinfo *ai, bool ours)
{
  if (ai == NULL)
    return;
  if (!ours)
    {
      evutil_freeaddrinfo (ai);
      return;
    }
  while (ai)
    {
      struct evutil_addrinfo *next = ai->ai_next;
      free (ai);
      ai = next;
    }
}

static void
on_resolved (int result, struct evutil_addrinfo *res, void *arg)
{
  struct rt_resolve_req *r = arg;

  if (r->backref)
    *r->backref = NULL;
  if (r->owner)
    r->cb (r->owner, result == 0 ? res : NULL);
  if (res)
    evutil_freeaddrinfo (res);
  free (r);
}

/* The overrides answer first: tests point names at their own servers.  */
void
rt_dns_resolve (struct rt_dns *d, const char *name, void *owner, rt_resolve_cb cb, struct rt_resolve_req **backref)
{
  struct evutil_addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
  struct evutil_addrinfo *list = NULL, **tail = &list;
  struct rt_resolve_req *r;
  bool overridden = false;

  for (size_t i = 0; i < d->n_overrides; i++)
    if (strcasecmp (d->overrides[i].name, name) == 0)
      {
        overridden = true;
        if ((*tail = addrinfo_of (&d->overrides[i].addr)))
          tail = &(*tail)->ai_next;
      }
  if (overridden)
    {
      cb (owner, list);
      addrinfo_free (list, true);
      return;
    }
  r = calloc (1, sizeof *r);
  if (r == NULL)
    {
      cb (owner, NULL);
      return;
    }
  r->owner = owner;
  r->cb = cb;
  r->backref = backref;
  *backref = r;
  {
    /* NULL when the callback already ran (and freed r).  */
    struct evdns_getaddrinfo_request *req = evdns_getaddrinfo (d->base, name, NULL, &hints, on_resolved, r);
    if (req)
      r->req = req;
  }
}

void
rt_dns_resolve_cancel (struct rt_resolve_req **rp)
{
  struct rt_resolve_req *r = *rp;

  if (r == NULL)
    return;
  *rp = NULL;
  r->owner = NULL;
  r->backref = NULL;
  if (r->req)
    evdns_getaddrinfo_cancel (r->req);
}

/* ---- the guest's DNS server ------------------------------------------------ */

struct dns_query
{
  struct rt_proxy *px;
  struct evdns_server_request *req;
  char *name;
  struct rt_resolve_req *resolving;
};

static void
dns_refuse (struct dns_query *q, const char *reason)
{
  rt_proxy_log (q->px, "dns", q->name, NULL, 53, "refused", reason, 0, 0, NULL);
  evdns_server_request_respond (q->req, DNS_ERR_NOTEXIST);
}

static void
on_dns_resolved (void *owner, struct evutil_addrinfo *res)
{
  struct dns_query *q = owner;
  const char *reason = "unresolved";
  int answers = 0;

  q->px->dns.in_flight--;
  for (struct evutil_addrinfo *ai = res; ai; ai = ai->ai_next)
    {
      const char *why;
      if (ai->ai_family != AF_INET)
        continue;
      why = rt_proxy_refusal (q->px, q->name, ai->ai_addr, 0);
      if (why)
        {
          reason = why;
          continue;
        }
      cache_put (&q->px->dns, &((struct sockaddr_in *) ai->ai_addr)->sin_addr, q->name);
      evdns_server_request_add_a_reply (q->req, q->req->questions[0]->name, 1,
                                        &((struct sockaddr_in *) ai->ai_addr)->sin_addr, DNS_TTL);
      answers++;
    }
  if (answers == 0)
    dns_refuse (q, reason);
  else
    evdns_server_request_respond (q->req, 0);
  free (q->name);
  free (q);
}

static void
on_dns_request (struct evdns_server_request *req, void *arg)
{
  struct rt_proxy *px = arg;
  struct dns_query *q;
  const struct evdns_server_question *question;
  enum rt_egress_verdict v;
  struct sockaddr_storage lit;

  if (req->nquestions != 1)
    {
      evdns_server_request_respond (req, DNS_ERR_FORMAT);
      return;
    }
  question = req->questions[0];
  q = calloc (1, sizeof *q);
  if (q == NULL || (q->name = strdup (question->name)) == NULL)
    {
      free (q);
      evdns_server_request_respond (req, DNS_ERR_SERVERFAILED);
      return;
    }
  q->px = px;
  q->req = req;
  v = rt_egress_decide (&px->rules, q->name, NULL, 0);
  if (v != RT_EGRESS_ALLOWED || rt_addr_parse_literal (q->name, &lit))
    {
      dns_refuse (q, v != RT_EGRESS_ALLOWED ? rt_egress_verdict_str (v) : "unresolved");
      free (q->name);
      free (q);
      return;
    }
  if (question->type != EVDNS_TYPE_A)
    {
      /* The guest has IPv4 only: an allowed name simply has no other
         records (NOERROR, no answer), so resolvers fall back to A.  */
      evdns_server_request_respond (req, 0);
      free (q->name);
      free (q);
      return;
    }
  if (px->dns.in_flight >= RT_DNS_MAX_IN_FLIGHT)
    {
      rt_proxy_log (px, "dns", q->name, NULL, 53, "refused", "too_many_queries", 0, 0, NULL);
      evdns_server_request_respond (req, DNS_ERR_REFUSED);
      free (q->name);
      free (q);
      return;
    }
  /* The lookup finishes even if the guest gives up: req lives until we
     respond.  */
  px->dns.in_flight++;
  rt_dns_resolve (&px->dns, q->name, q, on_dns_resolved, &q->resolving);
}

/* ---- set-up ------------------------------------------------------------------- */

int
rt_dns_overrides_parse (struct rt_dns *d, const char *spec, rt_error **err)
{
  cleanup_free char *copy = spec ? strdup (spec) : NULL;
  char *save = NULL;

  if (spec == NULL || *spec == '\0')
    return 0;
  if (copy == NULL)
    return rt_error_oom (err);
  for (char *item = strtok_r (copy, ",", &save); item; item = strtok_r (NULL, ",", &save))
    {
      char *eq = strchr (item, '=');
      struct rt_dns_override *o = &d->overrides[d->n_overrides];
      if (eq == NULL || d->n_overrides >= RT_DNS_MAX_OVERRIDES)
        return rt_error_set (err, EINVAL, "invalid_request", "RUNTIME_RESOLVE: bad entry '%s'", item);
      *eq = '\0';
      if (!rt_addr_parse_literal (eq + 1, &o->addr))
        return rt_error_set (err, EINVAL, "invalid_request", "RUNTIME_RESOLVE: '%s' is not an address", eq + 1);
      o->name = strdup (item);
      if (o->name == NULL)
        return rt_error_oom (err);
      d->n_overrides++;
    }
  return 0;
}

int
rt_dns_resolver_new (struct rt_dns *d, struct event_base *base, rt_error **err)
{
  /* Created here, in the host's namespace: its queries leave from there.  */
  d->base = evdns_base_new (base, EVDNS_BASE_INITIALIZE_NAMESERVERS | EVDNS_BASE_DISABLE_WHEN_INACTIVE);
  if (d->base == NULL)
    d->base = evdns_base_new (base, 0);
  if (d->base == NULL)
    return rt_error_set (err, ENOMEM, "startup_failed", "cannot set up the DNS resolver");
  evdns_base_set_option (d->base, "timeout:", "3");
  evdns_base_set_option (d->base, "attempts:", "2");
  return 0;
}

bool
rt_dns_serve (struct rt_proxy *px, struct event_base *base, int fd)
{
  px->dns.port = evdns_add_server_port_with_base (base, fd, 0, on_dns_request, px);
  return px->dns.port != NULL;
}

void
rt_dns_clear (struct rt_dns *d)
{
  /* Failing the lookups in flight answers their DNS queries: the port
     must still be open then.  */
  if (d->base)
    evdns_base_free (d->base, 1);
  if (d->port)
    evdns_close_server_port (d->port);
  for (size_t i = 0; i < d->n_overrides; i++)
    free (d->overrides[i].name);
}
