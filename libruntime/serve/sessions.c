/* sessions.c - the server's table of sandbox sessions (sessions.h).  */
#include <errno.h>
#include <event2/http.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/server-internal.h"
#include "serve/sessions.h"
#include "serve/tokens.h"

#define TOKEN_CHARS 40
#define ID_CHARS 20
#define KEEP_ENDED_MS (24 * 3600 * 1000LL)

struct srv_sessions
{
  unsigned min_ttl_s;
  pthread_mutex_t mu;
  struct srv_session *v;
  size_t n, cap;
};

int
srv_sessions_setup (struct srv *s)
{
  const char *t;
  char *end;
  long n;

  s->sessions = calloc (1, sizeof *s->sessions);
  if (s->sessions == NULL)
    return -1;
  pthread_mutex_init (&s->sessions->mu, NULL);
  s->sessions->min_ttl_s = SRV_SESSION_TTL_MIN_S;
  /* Shorter for a test that must see one expire
     (tests/integration/serve/62-sessions.sh).  */
  if ((t = getenv ("RUNTIME_SERVE_SESSION_MIN_TTL")) && (n = strtol (t, &end, 10)) >= 1 && n <= SRV_SESSION_TTL_MIN_S
      && *end == '\0')
    s->sessions->min_ttl_s = (unsigned) n;
  return 0;
}

void
srv_sessions_free (struct srv *s)
{
  struct srv_sessions *t = s->sessions;

  if (t == NULL)
    return;
  if (t->v)
    explicit_bzero (t->v, t->cap * sizeof *t->v);
  free (t->v);
  pthread_mutex_destroy (&t->mu);
  free (t);
  s->sessions = NULL;
}

unsigned
srv_sessions_min_ttl (struct srv_req *r)
{
  return r->srv->sessions->min_ttl_s;
}

static bool
active (const struct srv_session *ss, int64_t now)
{
  return ss->revoked_ms == 0 && now < ss->expires_ms;
}

static int64_t
ended_at (const struct srv_session *ss)
{
  return ss->revoked_ms && ss->revoked_ms < ss->expires_ms ? ss->revoked_ms : ss->expires_ms;
}

/* Forgets the sessions that ended over a day ago.  Under t->mu.  */
static void
prune (struct srv_sessions *t, int64_t now)
{
  size_t k = 0;

  for (size_t i = 0; i < t->n; i++)
    if (active (&t->v[i], now) || now - ended_at (&t->v[i]) < KEEP_ENDED_MS)
      t->v[k++] = t->v[i];
  if (k < t->n)
    explicit_bzero (&t->v[k], (t->n - k) * sizeof *t->v);
  t->n = k;
}

int
srv_sessions_check (struct srv *s, const char *bearer, struct srv_session *out)
{
  struct srv_sessions *t = s->sessions;
  const size_t plen = strlen (SRV_SESSION_TOKEN_PREFIX);
  unsigned char h[32];
  size_t found = SIZE_MAX;
  int ret = 0;

  if (t == NULL || bearer == NULL || strlen (bearer) != plen + TOKEN_CHARS
      || strncmp (bearer, SRV_SESSION_TOKEN_PREFIX, plen) != 0)
    return 0;
  rt_token_hash (bearer, h);
  pthread_mutex_lock (&t->mu);
  /* Every entry, each in constant time, as tokens.c does.  */
  for (size_t i = 0; i < t->n; i++)
    if (CRYPTO_memcmp (h, t->v[i].hash, sizeof h) == 0)
      found = i;
  if (found != SIZE_MAX)
    {
      *out = t->v[found];
      ret = active (out, rt_epoch_ms ()) ? 1 : -1;
    }
  pthread_mutex_unlock (&t->mu);
  return ret;
}

bool
srv_session_lists (const struct srv_session *ss, const char *origin)
{
  for (unsigned i = 0; origin && i < ss->norigins; i++)
    if (strcmp (ss->origins[i], origin) == 0)
      return true;
  return false;
}

bool
srv_sessions_origin_ok (struct srv *s, const char *sandbox, const char *origin)
{
  struct srv_sessions *t = s->sessions;
  int64_t now = rt_epoch_ms ();
  bool ok = false;

  if (t == NULL || sandbox == NULL || origin == NULL)
    return false;
  pthread_mutex_lock (&t->mu);
  for (size_t i = 0; i < t->n && !ok; i++)
    ok = active (&t->v[i], now) && strcmp (t->v[i].sandbox, sandbox) == 0 && srv_session_lists (&t->v[i], origin);
  pthread_mutex_unlock (&t->mu);
  return ok;
}

bool
srv_session_origin_valid (const char *origin)
{
  size_t n = origin ? strlen (origin) : 0, hl;
  bool plain = n > 7 && strncmp (origin, "http://", 7) == 0;
  const char *host, *p;

  if (n == 0 || n > SRV_SESSION_ORIGIN_MAX || (!plain && strncmp (origin, "https://", 8) != 0))
    return false;
  host = origin + (plain ? 7 : 8);
  /* A host of lower-case letters, digits, dots and dashes, then at most a
     port: no user, path, query or fragment, as a browser's Origin is.  */
  p = host + strspn (host, "abcdefghijklmnopqrstuvwxyz0123456789.-");
  hl = (size_t) (p - host);
  if (hl == 0 || *host == '.' || *host == '-' || p[-1] == '.' || p[-1] == '-')
    return false;
  /* Plain http only from this machine, as a page being developed is.  */
  if (plain && !(hl == 9 && (strncmp (host, "localhost", 9) == 0 || strncmp (host, "127.0.0.1", 9) == 0)))
    return false;
  if (*p == '\0')
    return true;
  if (*p != ':' || p[1] == '\0' || p[1] == '0' || strlen (p + 1) > 5 || strspn (p + 1, "0123456789") != strlen (p + 1))
    return false;
  return atoi (p + 1) <= 65535;
}

int
srv_sessions_add (struct srv_req *r, struct srv_session *ss, char token[48])
{
  struct srv_sessions *t = r->srv->sessions;
  int64_t now = rt_epoch_ms (), ttl = ss->expires_ms - ss->created_ms;
  unsigned live = 0, mine = 0;
  char id[ID_CHARS + 1];
  int ret = 0;

  memcpy (token, SRV_SESSION_TOKEN_PREFIX, strlen (SRV_SESSION_TOKEN_PREFIX));
  if (rt_token_random (token + strlen (SRV_SESSION_TOKEN_PREFIX), TOKEN_CHARS) < 0
      || rt_token_random (id, ID_CHARS) < 0)
    return -EIO;
  snprintf (ss->id, sizeof ss->id, "sess_%s", id);
  ss->created_ms = now;
  ss->expires_ms = now + ttl;
  ss->revoked_ms = 0;
  rt_token_hash (token, ss->hash);
  pthread_mutex_lock (&t->mu);
  prune (t, now);
  for (size_t i = 0; i < t->n; i++)
    if (active (&t->v[i], now))
      {
        live += strcmp (t->v[i].sandbox, ss->sandbox) == 0;
        mine += strcmp (t->v[i].tenant, ss->tenant) == 0;
      }
  /* Full: the session that ended first goes (ended ones are kept only
     for the list), so a tenant making and revoking sessions cannot keep
     out everyone else's.  */
  if (t->n >= SRV_SESSIONS_MAX && live < SRV_SESSIONS_PER_SANDBOX && mine < SRV_SESSIONS_PER_TENANT)
    {
      size_t old = SIZE_MAX;

      for (size_t i = 0; i < t->n; i++)
        if (!active (&t->v[i], now) && (old == SIZE_MAX || ended_at (&t->v[i]) < ended_at (&t->v[old])))
          old = i;
      if (old != SIZE_MAX)
        {
          /* Shifted, not swapped: the list keeps time order.  */
          memmove (&t->v[old], &t->v[old + 1], (t->n - old - 1) * sizeof *t->v);
          explicit_bzero (&t->v[--t->n], sizeof *t->v);
        }
    }
  if (live >= SRV_SESSIONS_PER_SANDBOX)
    ret = -EMFILE;
  else if (mine >= SRV_SESSIONS_PER_TENANT)
    ret = -EDQUOT;
  else if (t->n >= SRV_SESSIONS_MAX)
    ret = -ENOSPC;
  else if (t->n == t->cap)
    {
      size_t cap = t->cap ? 2 * t->cap : 16;
      struct srv_session *v = realloc (t->v, cap * sizeof *v);
      if (v == NULL)
        ret = -ENOMEM;
      else
        {
          t->v = v;
          t->cap = cap;
        }
    }
  if (ret == 0)
    t->v[t->n++] = *ss;
  pthread_mutex_unlock (&t->mu);
  if (ret < 0)
    explicit_bzero (token, 48);
  return ret;
}

static const char *
state_of (const struct srv_session *ss, int64_t now)
{
  return ss->revoked_ms ? "revoked" : now < ss->expires_ms ? "active" : "expired";
}

json_object *
srv_session_json (const struct srv_session *ss)
{
  json_object *o = json_object_new_object (), *origins = json_object_new_array ();
  char when[32];

  json_object_object_add (o, "id", json_object_new_string (ss->id));
  json_object_object_add (o, "sandboxId", json_object_new_string (ss->sandbox));
  json_object_object_add (o, "name", ss->named ? json_object_new_string (ss->name) : NULL);
  for (unsigned i = 0; i < ss->norigins; i++)
    json_object_array_add (origins, json_object_new_string (ss->origins[i]));
  json_object_object_add (o, "origins", origins);
  json_object_object_add (o, "createdBy", json_object_new_string (ss->tenant));
  rt_format_time (ss->created_ms, when);
  json_object_object_add (o, "createdAt", json_object_new_string (when));
  rt_format_time (ss->expires_ms, when);
  json_object_object_add (o, "expiresAt", json_object_new_string (when));
  if (ss->revoked_ms)
    rt_format_time (ss->revoked_ms, when);
  json_object_object_add (o, "revokedAt", ss->revoked_ms ? json_object_new_string (when) : NULL);
  json_object_object_add (o, "state", json_object_new_string (state_of (ss, rt_epoch_ms ())));
  return o;
}

json_object *
srv_sessions_list (struct srv_req *r, const char *tenant, const char *sandbox)
{
  struct srv_sessions *t = r->srv->sessions;
  json_object *arr = json_object_new_array ();

  pthread_mutex_lock (&t->mu);
  prune (t, rt_epoch_ms ());
  /* Added in time order: the newest is the last.  */
  for (size_t i = t->n; i-- > 0;)
    if (strcmp (t->v[i].tenant, tenant) == 0 && strcmp (t->v[i].sandbox, sandbox) == 0)
      json_object_array_add (arr, srv_session_json (&t->v[i]));
  pthread_mutex_unlock (&t->mu);
  return arr;
}

int
srv_sessions_revoke (struct srv_req *r, const char *tenant, const char *sandbox, const char *id,
                     struct srv_session *out)
{
  struct srv_sessions *t = r->srv->sessions;
  int ret = 0;

  pthread_mutex_lock (&t->mu);
  for (size_t i = 0; i < t->n && ret == 0; i++)
    if (strcmp (t->v[i].id, id) == 0 && strcmp (t->v[i].tenant, tenant) == 0
        && strcmp (t->v[i].sandbox, sandbox) == 0)
      {
        if (t->v[i].revoked_ms == 0)
          t->v[i].revoked_ms = rt_epoch_ms ();
        *out = t->v[i];
        ret = 1;
      }
  pthread_mutex_unlock (&t->mu);
  return ret;
}

/* The CORS of an answer to a page of @origin.  */
static void
cors (struct srv_req *r, const char *origin)
{
  srv_add_header (r, "Access-Control-Allow-Origin", origin);
  srv_add_header (r, "Vary", "Origin");
  srv_add_header (r, "Access-Control-Expose-Headers",
                  "x-request-id, x-content-length, x-content-sha256, Idempotency-Replayed, Retry-After");
}

bool
srv_session_admit (struct srv_req *r, int state)
{
  const char *origin = srv_header (r, "Origin"), *id = srv_param (r, "id");
  bool listed = origin && srv_session_lists (&r->sess, origin);

  r->session = true;
  if (listed)
    cors (r, origin);
  if (state < 0)
    {
      srv_reply_error (r, 401, "unauthorized", "make a new session (POST /v1/sandboxes/{id}/sessions)", NULL,
                       "this session %s", r->sess.revoked_ms ? "was revoked" : "expired");
      return false;
    }
  /* Its token, as it is now: one removed ends its sessions with it.  */
  if (rt_tokens_named (r->srv->tokens, r->sess.tenant, &r->token) != 1)
    {
      srv_reply_error (r, 401, "unauthorized", "make a new session with a valid token", NULL,
                       "the token that made this session was removed");
      return false;
    }
  if (origin && !listed)
    {
      srv_reply_error (r, 403, "forbidden", "make a session that lists this page's origin", NULL,
                       "this session is not for pages of %s", origin);
      return false;
    }
  if (!(r->route->flags & SRV_SESSION) || id == NULL || strcmp (id, r->sess.sandbox) != 0)
    {
      srv_reply_error (r, 403, "forbidden", "use the token itself for anything else", NULL,
                       "a session reaches only sandbox %s's exec, processes and files, by its id", r->sess.sandbox);
      return false;
    }
  /* Neither it nor its token replays the other's answers.  */
  snprintf (r->idem_owner, sizeof r->idem_owner, "%s/%s", r->token.name, r->sess.id);
  return r->authed = true;
}

void
srv_session_preflight (struct srv_req *r)
{
  const char *origin = srv_header (r, "Origin"), *want = srv_header (r, "Access-Control-Request-Method");
  const char *p = r->path && strncmp (r->path, "/v1/sandboxes/", 14) == 0 ? r->path + 14 : NULL;
  int method = want ? srv_method_code (want) : -1;
  const struct srv_route *rt = method < 0 ? NULL : srv_route_lookup (r->srv->app->routes, method, r->path);
  cleanup_free char *raw = p ? strndup (p, strcspn (p, "/:")) : NULL;
  cleanup_free char *sandbox = raw ? evhttp_uridecode (raw, 0, NULL) : NULL;

  if (rt == NULL || !(rt->flags & SRV_SESSION) || sandbox == NULL || !srv_sessions_origin_ok (r->srv, sandbox, origin))
    return srv_reply_error (r, 403, "forbidden", "make a session for this sandbox that lists the page's origin", NULL,
                            "no session of this sandbox is for %s %s from %s", want ? want : "?", r->path,
                            origin ? origin : "no Origin");
  cors (r, origin);
  srv_add_header (r, "Access-Control-Allow-Methods", "GET, POST, PUT, DELETE");
  srv_add_header (r, "Access-Control-Allow-Headers", "Authorization, Content-Type, Idempotency-Key, Prefer, X-Request-Id");
  srv_add_header (r, "Access-Control-Max-Age", "600");
  srv_reply_bytes (r, 204, "text/plain", "", 0);
}
