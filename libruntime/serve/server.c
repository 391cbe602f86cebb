/* server.c - `runtime serve`: the listener, the event loop, and each
   request's way from its bytes to a handler and back (see server.h).
   (no header of its own: server.h and server-internal.h declare it).  */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/thread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "serve/conns.h"
#include "serve/gate.h"
#include "serve/listen.h"
#include "serve/spend.h"
#include "serve/sweep.h"
#include "serve/workers.h"
#include "serve/server-internal.h"

/* How long a stopping server waits for the requests it is answering.  */
#define SRV_STOP_S 10

/* The log line of a request: time, token, method, path, status, ms, id.  */
static void
log_request (struct srv_req *r, int status)
{
  char when[32];

  if (r->logged)
    return;
  r->logged = true;
  rt_format_time (rt_epoch_ms (), when);
  fprintf (stderr, "%s %s %s %s %d %llums %s\n", when, r->authed ? r->token.name : "-", srv_method_name (r->method),
           r->path ? r->path : "?", status, (unsigned long long) (rt_now_ms () - r->t0_ms), r->request_id);
}

static void resume_waiters (struct srv *s, const char *id);

/* The request's key is no longer being answered (its answer, when kept,
   was stored by the worker: srv_reply_bytes).  */
static void
idem_done (struct srv_req *r)
{
  cleanup_free char *id = r->idem_id;

  if (id == NULL)
    return;
  r->idem_id = NULL;
  srv_idem_finish (r->srv->idem, id, r->body_sha, false, 0, NULL, NULL, 0);
  resume_waiters (r->srv, id);
}

void
srv_loop_release (struct srv_req *r, int status)
{
  if (!r->loop_ref)
    return;
  r->loop_ref = false;
  if (r->bucket)
    r->bucket->inflight--;
  r->bucket = NULL;
  r->req = NULL;
  if (r->peer)
    event_free (r->peer);
  r->peer = NULL;
  log_request (r, status);
  idem_done (r);
  srv_req_unref (r);
}

static void
on_complete (struct evhttp_request *req, void *arg)
{
  struct srv_req *r = arg;
  struct evhttp_connection *evcon = evhttp_request_get_connection (req);
  bool gone;

  if (evcon)
    srv_gate_set_close (r->srv, evcon, NULL, NULL);
  pthread_mutex_lock (&r->mu);
  gone = r->gone;
  pthread_mutex_unlock (&r->mu);
  /* Written into a connection its client had closed (on_peer_closed).  */
  srv_loop_release (r, gone ? 499 : r->status);
}

static void
on_close (struct evhttp_connection *evcon, void *arg)
{
  struct srv_req *r = arg;
  bool sent;

  (void) evcon;
  pthread_mutex_lock (&r->mu);
  r->gone = true;
  pthread_cond_broadcast (&r->cond);
  pthread_mutex_unlock (&r->mu);
  /* Its fd closes now: no watch may stay on a number reused next.  */
  if (r->peer)
    event_free (r->peer);
  r->peer = NULL;
  sent = r->start_sent;
  /* A whole answer being written goes with its connection.  A request
     not answered yet, or a stream (whose start is not the end of the
     answer for libevent), is only detached from it: it is freed when
     answered (srv_req_flush), and a stream's end frees it here.  */
  if (sent && r->req && evhttp_request_get_connection (r->req) == NULL && !r->end_sent)
    {
      r->end_sent = true;
      evhttp_send_reply_end (r->req);
    }
  if (sent)
    srv_loop_release (r, r->ws_up ? 101 : 499);
}

/* The client closed its end while its request is handled: evhttp reads
   nothing then (it would take more bytes for a request of the wrong
   time), so a wait or a quiet stream would go on to its end.  Marked
   gone, the handler ends early; its answer then meets the closed
   connection, whose close callback lets the request go.  A client that
   only shuts down its sending side counts as gone too.  */
static void
on_peer_closed (evutil_socket_t fd, short what, void *arg)
{
  struct srv_req *r = arg;

  (void) fd;
  (void) what;
  pthread_mutex_lock (&r->mu);
  r->gone = true;
  pthread_cond_broadcast (&r->cond);
  pthread_mutex_unlock (&r->mu);
}

/* Watches the connection for its client's close while the request may
   wait: not for a plain GET (answered at once; the most frequent).  */
static void
watch_peer (struct srv_req *r, struct evhttp_request *req)
{
  struct evhttp_connection *evcon = evhttp_request_get_connection (req);
  struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent (evcon) : NULL;
  evutil_socket_t fd = bev ? bufferevent_getfd (bev) : -1;

  if (fd < 0 || (r->route->flags & SRV_INLINE) || (r->method == EVHTTP_REQ_GET && TAILQ_EMPTY (&r->query))
      || !(event_base_get_features (r->srv->base) & EV_FEATURE_EARLY_CLOSE))
    return;
  r->peer = event_new (r->srv->base, fd, EV_CLOSED, on_peer_closed, r);
  if (r->peer && event_add (r->peer, NULL) < 0)
    {
      event_free (r->peer);
      r->peer = NULL;
    }
}

static void
on_chunk_done (struct evhttp_connection *evcon, void *arg)
{
  struct srv_req *r = arg;

  (void) evcon;
  pthread_mutex_lock (&r->mu);
  r->inflight = 0;
  pthread_cond_broadcast (&r->cond);
  pthread_mutex_unlock (&r->mu);
}

static void
add_head (struct srv_req *r)
{
  struct evkeyvalq *h = evhttp_request_get_output_headers (r->req);
  struct evkeyval *kv;

  evhttp_add_header (h, "x-request-id", r->request_id);
  if (r->ctype)
    evhttp_add_header (h, "Content-Type", r->ctype);
  TAILQ_FOREACH (kv, &r->out_headers, next)
  evhttp_add_header (h, kv->key, kv->value);
}

/* A whole answer: its Idempotency-Key's time ends (the worker kept the
   answer: srv_reply_bytes), then it is sent.  */
static void
send_whole (struct srv_req *r)
{
  if (r->idem_id)
    idem_done (r);
  add_head (r);
  evhttp_send_reply (r->req, r->status, rt_http_reason (r->status), r->out);
}

void
srv_req_flush (struct srv_req *r)
{
  struct evbuffer *chunk = NULL;
  bool whole = false, start = false, end = false, detached;

  if (r->req == NULL)
    return;
  pthread_mutex_lock (&r->mu);
  if (r->ws)
    {
      pthread_mutex_unlock (&r->mu);
      return srv_ws_flush (r);
    }
  if (!r->start_sent && (r->whole || r->started))
    {
      r->start_sent = true;
      whole = r->whole;
      start = !whole;
    }
  if (r->start_sent && !whole && !r->end_sent && evbuffer_get_length (r->out) > 0 && (chunk = evbuffer_new ()))
    {
      r->inflight += evbuffer_get_length (r->out);
      evbuffer_add_buffer (chunk, r->out);
    }
  if (r->start_sent && !whole && r->ended && !r->end_sent)
    end = r->end_sent = true;
  pthread_mutex_unlock (&r->mu);
  /* A client that left before any answer leaves its request detached from
     the connection; libevent frees such a request when it is answered.  A
     whole answer is still kept for its Idempotency-Key: the client's retry
     gets it.  */
  detached = (whole || start) && evhttp_request_get_connection (r->req) == NULL;
  if (detached)
    {
      if (whole)
        send_whole (r);
      else
        evhttp_send_reply (r->req, r->status, rt_http_reason (r->status), NULL);
      if (chunk)
        evbuffer_free (chunk);
      return srv_loop_release (r, 499);
    }
  if (whole)
    send_whole (r);
  if (start)
    {
      add_head (r);
      evhttp_send_reply_start (r->req, r->status, rt_http_reason (r->status));
    }
  if (chunk)
    {
      evhttp_send_reply_chunk_with_cb (r->req, chunk, on_chunk_done, r);
      evbuffer_free (chunk);
    }
  if (end)
    {
      idem_done (r);
      evhttp_send_reply_end (r->req);
    }
}

static void dispatch_idem (struct srv_req *r);

/* The requests that waited for the first answer to their key go on.  */
static void
resume_waiters (struct srv *s, const char *id)
{
  struct srv_req *r, **pp, *ready = NULL;

  /* Unlink first: a waiter may wait again (another request took the key
     meanwhile) and re-link itself.  */
  for (pp = &s->waiters; (r = *pp);)
    if (strcmp (r->idem_id, id) == 0)
      {
        *pp = r->next_waiter;
        r->next_waiter = ready;
        ready = r;
      }
    else
      pp = &r->next_waiter;
  while ((r = ready))
    {
      ready = r->next_waiter;
      r->next_waiter = NULL;
      r->waiting_idem = false;
      free (r->idem_id);
      r->idem_id = NULL;
      dispatch_idem (r);
    }
}

/* The stored answer again, marked as such.  */
static void
replay (struct srv_req *r, int status, const char *ctype, const char *body, size_t len)
{
  cleanup_json json_object *o = NULL;

  srv_add_header (r, "Idempotency-Replayed", "true");
  if (ctype && strcmp (ctype, "application/json") == 0 && (o = json_tokener_parse (body))
      && json_object_is_type (o, json_type_object))
    {
      json_object_object_add (o, "replayed", json_object_new_boolean (true));
      return srv_reply_json (r, status, json_object_get (o));
    }
  srv_reply_bytes (r, status, ctype ? ctype : "application/json", body, len);
}

/* Idempotency-Key, then the handler.  */
static void
dispatch_idem (struct srv_req *r)
{
  const char *key = srv_header (r, "Idempotency-Key");
  cleanup_free char *ctype = NULL, *body = NULL;
  enum srv_idem_state st;
  size_t len = 0;
  int status = 0;

  if (r->method == EVHTTP_REQ_GET || key == NULL || (r->route->flags & SRV_OWN_IDEM))
    return srv_run_route (r);
  if (*key == '\0' || strlen (key) > 255)
    return srv_reply_error (r, 400, "invalid_request", "send 1 to 255 characters", NULL, "bad Idempotency-Key");
  /* Only here is the body hashed: not for every request.  */
  rt_sha256_hex (r->body ? r->body : (const unsigned char *) "", r->body_len, r->body_sha);
  r->idem_id = srv_idem_id (r->session ? r->idem_owner : r->token.name, srv_method (r), r->path, key);
  if (r->idem_id == NULL)
    return srv_reply_error (r, 500, "internal", NULL, NULL, "out of memory");
  st = srv_idem_begin (r->srv->idem, r->idem_id, r->body_sha, &status, &ctype, &body, &len);
  switch (st)
    {
    case SRV_IDEM_NEW:
      return srv_run_route (r);
    case SRV_IDEM_BUSY:
      r->waiting_idem = true;
      r->next_waiter = r->srv->waiters;
      r->srv->waiters = r;
      return;
    case SRV_IDEM_REPLAY:
      free (r->idem_id);
      r->idem_id = NULL;
      return replay (r, status, ctype, body, len);
    case SRV_IDEM_CONFLICT:
    default:
      free (r->idem_id);
      r->idem_id = NULL;
      return srv_reply_error (r, 409, "idempotency_conflict", "use a new Idempotency-Key for a different request",
                              NULL, "this Idempotency-Key was used with another body");
    }
}

/* Matches @path against a route's pattern, filling the request's params
   (none kept without @r).  */
static bool
match (struct srv_req *r, const char *pat, const char *path)
{
  size_t nparams = 0;

  while (*pat)
    {
      if (*pat == '{')
        {
          const char *close = strchr (pat, '}');
          size_t n = strcspn (path, "/:");

          if (n == 0 || nparams++ == SRV_MAX_PARAMS)
            return false;
          if (r)
            {
              r->pnames[r->nparams] = strndup (pat + 1, close - pat - 1);
              r->pvals[r->nparams] = strndup (path, n);
              r->nparams++;
            }
          pat = close + 1;
          path += n;
          continue;
        }
      if (*pat++ != *path++)
        return false;
    }
  return *path == '\0';
}

static void
clear_params (struct srv_req *r)
{
  for (size_t i = 0; i < r->nparams; i++)
    {
      free (r->pnames[i]);
      free (r->pvals[i]);
    }
  r->nparams = 0;
}

const struct srv_route *
srv_route_lookup (const struct srv_route *routes, int method, const char *path)
{
  for (const struct srv_route *rt = routes; rt->pattern; rt++)
    if (rt->method == method && match (NULL, rt->pattern, path))
      return rt;
  return NULL;
}

const struct srv_route *
srv_find_route (struct srv_req *r)
{
  bool other_method = false;

  for (const struct srv_route *rt = r->srv->app->routes; rt->pattern; rt++)
    {
      bool ok = match (r, rt->pattern, r->path);

      if (ok && rt->method == r->method)
        {
          for (size_t i = 0; i < r->nparams; i++)
            {
              char *d = evhttp_uridecode (r->pvals[i], 0, NULL);
              if (d)
                {
                  free (r->pvals[i]);
                  r->pvals[i] = d;
                }
            }
          return rt;
        }
      other_method |= ok;
      clear_params (r);
    }
  if (other_method)
    srv_reply_error (r, 405, "method_not_allowed", NULL, NULL, "%s is not allowed on %s", srv_method (r), r->path);
  else
    srv_reply_error (r, 404, "not_found", "see docs/API.md", NULL, "no route %s %s", srv_method (r), r->path);
  return NULL;
}

bool
srv_authenticate (struct srv_req *r)
{
  const char *h = srv_header (r, "Authorization");
  const char *bearer = h && strncasecmp (h, "Bearer ", 7) == 0 ? h + 7 : NULL;
  int sess;

  if (bearer && rt_tokens_check (r->srv->tokens, bearer, &r->token) == 1)
    return r->authed = true;
  if (bearer && (sess = srv_sessions_check (r->srv, bearer, &r->sess)) != 0)
    return srv_session_admit (r, sess);
  srv_reply_error (r, 401, "unauthorized", "send Authorization: Bearer <token> (runtime token create)", NULL,
                   h ? "the token is not valid" : "no token given");
  return false;
}

/* A token bucket per token: `rate` a second, a burst of twice that
   (RT_TOKEN_DEFAULT_RATE and _BURST by default).  */
static bool
within_rate (struct srv_req *r)
{
  struct srv *s = r->srv;
  double rate = r->token.rate ? r->token.rate : RT_TOKEN_DEFAULT_RATE, t = rt_now_us () / 1e6;
  struct srv_bucket *b = NULL;

  for (size_t i = 0; i < s->nbuckets && !b; i++)
    if (strcmp (s->buckets[i].name, r->token.name) == 0)
      b = &s->buckets[i];
  if (b == NULL)
    {
      /* Full: a bucket with nothing in flight is taken over.  */
      if (s->nbuckets < SRV_MAX_BUCKETS)
        b = &s->buckets[s->nbuckets++];
      for (size_t i = 0; i < s->nbuckets && !b; i++)
        if (s->buckets[i].inflight == 0)
          b = &s->buckets[i];
      if (b == NULL)
        {
          srv_add_header (r, "Retry-After", "1");
          srv_reply_error (r, 503, "unavailable", "retry in a second", NULL, "the server is busy");
          return false;
        }
      snprintf (b->name, sizeof b->name, "%s", r->token.name);
      b->inflight = 0;
      b->tokens = 2 * rate;
      b->last_s = t;
    }
  b->tokens += (t - b->last_s) * rate;
  if (b->tokens > 2 * rate)
    b->tokens = 2 * rate;
  b->last_s = t;
  if (b->inflight >= SRV_MAX_INFLIGHT)
    {
      srv_add_header (r, "Retry-After", "1");
      srv_reply_error (r, 429, "rate_limited", "wait for an answer before sending more", NULL,
                       "over %u requests at once for this token", SRV_MAX_INFLIGHT);
      return false;
    }
  if (b->tokens >= 1)
    {
      b->tokens -= 1;
      b->inflight++;
      r->bucket = b;
      return true;
    }
  srv_add_header (r, "Retry-After", "1");
  srv_reply_error (r, 429, "rate_limited", "slow down, or ask for a higher --rate", NULL,
                   "over %.0f requests a second for this token", rate);
  return false;
}

static void
copy_headers (struct evkeyvalq *to, struct evkeyvalq *from)
{
  struct evkeyval *kv;

  TAILQ_FOREACH (kv, from, next)
  evhttp_add_header (to, kv->key, kv->value);
}

static bool
sane_id (const char *s)
{
  size_t n = s ? strlen (s) : 0;
  return n >= 1 && n <= 64 && strspn (s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

void
srv_set_request_id (struct srv_req *r)
{
  const char *rid = srv_header (r, "x-request-id");

  if (sane_id (rid))
    snprintf (r->request_id, sizeof r->request_id, "%s", rid);
  else
    snprintf (r->request_id, sizeof r->request_id, "req_%08x%08x", r->srv->seed, ++r->srv->serial);
}

/* Reads what the handler needs out of libevent's request.  */
static int
read_request (struct srv_req *r, struct evhttp_request *req)
{
  const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri (req);
  struct evbuffer *in = evhttp_request_get_input_buffer (req);
  const char *q;

  r->method = evhttp_request_get_command (req);
  r->path = strdup (uri && evhttp_uri_get_path (uri) ? evhttp_uri_get_path (uri) : "/");
  q = uri ? evhttp_uri_get_query (uri) : NULL;
  if (r->path == NULL || (q && evhttp_parse_query_str (q, &r->query) < 0))
    return -1;
  copy_headers (&r->headers, evhttp_request_get_input_headers (req));
  srv_set_request_id (r);
  r->body_len = evbuffer_get_length (in);
  if (r->body_len)
    {
      r->body = malloc (r->body_len);
      if (r->body == NULL)
        return -1;
      evbuffer_copyout (in, r->body, r->body_len);
    }
  return 0;
}

static void
on_request (struct evhttp_request *req, void *arg)
{
  struct srv *s = arg;
  struct srv_req *r = srv_req_new (s, req);

  if (r == NULL)
    {
      evhttp_send_error (req, 500, "out of memory");
      return;
    }
  evhttp_request_set_on_complete_cb (req, on_complete, r);
  srv_gate_set_close (s, evhttp_request_get_connection (req), on_close, r);
  if (read_request (r, req) < 0)
    return srv_reply_error (r, 400, "invalid_request", NULL, NULL, "the request could not be read");
  if (srv_gate_answer (r))
    return;
  if (s->stopping)
    {
      srv_add_header (r, "Retry-After", "1");
      return srv_reply_error (r, 503, "unavailable", "retry: a restarted server answers", NULL,
                              "the server is stopping");
    }
  if (r->method == EVHTTP_REQ_OPTIONS)
    return srv_session_preflight (r);
  r->route = srv_find_route (r);
  if (r->route == NULL)
    return;
  if (!(r->route->flags & SRV_NO_AUTH) && (!srv_authenticate (r) || !within_rate (r)))
    return;
  if (!srv_query_known (r))
    return;
  if ((r->route->flags & SRV_WEBSOCKET) && !srv_ws_check (r))
    return;
  watch_peer (r, req);
  dispatch_idem (r);
}

/* Stopping: no new connections, streams end with `continue`, and the loop
   ends when every worker has or after SRV_STOP_S.  */
static void
on_stop_tick (evutil_socket_t fd, short what, void *arg)
{
  struct srv *s = arg;
  static const struct timeval tick = { 0, 100 * 1000 };
  bool idle;

  (void) fd;
  (void) what;
  pthread_mutex_lock (&s->mu);
  idle = s->workers == 0;
  pthread_mutex_unlock (&s->mu);
  if (idle || rt_now_us () / 1e6 > s->stop_deadline)
    event_base_loopexit (s->base, NULL);
  else
    evtimer_add (s->stop_timer, &tick);
}

static void
on_sweep (evutil_socket_t fd, short what, void *arg)
{
  struct srv *s = arg;

  (void) fd;
  (void) what;
  srv_sweep_start (s);
}

static void
on_signal (evutil_socket_t sig, short what, void *arg)
{
  struct srv *s = arg;

  (void) what;
  if (s->stopping)
    return;
  fprintf (stderr, "runtime serve: %s, stopping (sandboxes keep running)\n", strsignal (sig));
  pthread_mutex_lock (&s->mu);
  s->stopping = true;
  pthread_mutex_unlock (&s->mu);
  if (s->bound)
    evhttp_del_accept_socket (s->http, s->bound);
  s->bound = NULL;
  s->stop_deadline = rt_now_us () / 1e6 + SRV_STOP_S;
  on_stop_tick (-1, 0, s);
}

struct srv *
srv_alloc (rt_context *ctx)
{
  struct srv *s = calloc (1, sizeof (*s));

  if (s == NULL)
    return NULL;
  pthread_mutex_init (&s->mu, NULL);
  pthread_cond_init (&s->idle, NULL);
  pthread_cond_init (&s->work, NULL);
  if (getrandom (&s->seed, sizeof s->seed, 0) != sizeof s->seed)
    s->seed = (uint32_t) getpid ();
  s->ctx = ctx;
  return s;
}

void
srv_free (struct srv *s)
{
  if (s->sigterm)
    event_free (s->sigterm);
  if (s->sigint)
    event_free (s->sigint);
  if (s->stop_timer)
    event_free (s->stop_timer);
  if (s->sweep_timer)
    event_free (s->sweep_timer);
  if (s->spend_timer)
    event_free (s->spend_timer);
  if (s->accept_timer)
    event_free (s->accept_timer);
  if (s->http)
    evhttp_free (s->http);
  if (s->base)
    event_base_free (s->base);
  /* After the base: freeing it ends the connections, and their gates.  */
  srv_gate_free (s);
  if (s->ssl)
    SSL_CTX_free (s->ssl);
  rt_tokens_free (s->tokens);
  srv_sessions_free (s);
  srv_idem_free (s->idem);
  pthread_cond_destroy (&s->idle);
  pthread_cond_destroy (&s->work);
  pthread_mutex_destroy (&s->mu);
  free (s);
}

static int
srv_setup (struct srv *s, rt_context *ctx, const rt_serve_opts *opts, int fd, rt_error **err)
{
  static const struct timeval sweep_every = { 3600, 0 };
  cleanup_free char *idem_dir = rt_strdup_printf ("%s/serve/idempotency", ctx->data_dir);

  s->ctx = ctx;
  if (idem_dir == NULL)
    return rt_error_oom (err);
  if (rt_tokens_open (ctx, &s->tokens, err) < 0 || srv_idem_open (idem_dir, &s->idem, err) < 0)
    return -1;
  if (opts->tls_cert && (s->ssl = srv_tls_context (opts, err)) == NULL)
    return -1;
  /* Workers wake the loop (event_active) from their threads.  */
  if (evthread_use_pthreads () < 0 || (s->base = event_base_new ()) == NULL
      || (s->http = evhttp_new (s->base)) == NULL)
    return rt_error_oom (err);
  evhttp_set_allowed_methods (s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE
                                           | EVHTTP_REQ_HEAD | EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS);
  evhttp_set_max_body_size (s->http, SRV_MAX_BODY);
  evhttp_set_max_headers_size (s->http, 64 << 10);
  /* The time a connection may be idle, or a body or answer stalled; a
     head has the header timeout (gate.h).  */
  evhttp_set_timeout (s->http, 300);
  evhttp_set_gencb (s->http, on_request, s);
  evhttp_set_bevcb (s->http, srv_conn_bev, s);
  s->bound = evhttp_accept_socket_with_handle (s->http, fd);
  s->sigterm = evsignal_new (s->base, SIGTERM, on_signal, s);
  s->sigint = evsignal_new (s->base, SIGINT, on_signal, s);
  s->stop_timer = evtimer_new (s->base, on_stop_tick, s);
  s->sweep_timer = event_new (s->base, -1, EV_PERSIST, on_sweep, s);
  if (s->bound == NULL || srv_conns_setup (s) < 0 || srv_gate_setup (s) < 0 || srv_sessions_setup (s) < 0 || s->sigterm == NULL || s->sigint == NULL || s->stop_timer == NULL
      || s->sweep_timer == NULL || evsignal_add (s->sigterm, NULL) < 0 || evsignal_add (s->sigint, NULL) < 0
      || event_add (s->sweep_timer, &sweep_every) < 0 || srv_spend_watch (s) < 0)
    return rt_error_set (err, EIO, "internal", "cannot start the server's event loop");
  return 0;
}

static void
app_stop (struct srv *s)
{
  if (s->app->stop)
    s->app->stop (s->app_data);
  s->app_data = NULL;
}

void *
srv_app_data (struct srv_req *r)
{
  return r->srv->app_data;
}

int
srv_run (rt_context *ctx, const rt_serve_opts *opts, const struct srv_app *app, rt_error **err)
{
  static const rt_serve_opts none = { 0 };
  struct srv *s;
  bool idle;
  int fd;

  if (opts == NULL)
    opts = &none;
  if ((opts->tls_cert == NULL) != (opts->tls_key == NULL))
    {
      rt_error_set (err, EINVAL, "usage", "--tls-cert and --tls-key go together");
      return rt_error_hint (err, "give both, or neither on a loopback address");
    }
  s = srv_alloc (ctx);
  if (s == NULL)
    return rt_error_oom (err);
  s->app = app;
  /* The app first: nothing listens for a replica that cannot reach its
     hosts.  */
  if (app->start && app->start (s, opts, &s->app_data, err) < 0)
    {
      app_stop (s);
      srv_free (s);
      return -1;
    }
  if (srv_listen (opts, opts->tls_cert != NULL, &fd, err) < 0)
    {
      app_stop (s);
      srv_free (s);
      return -1;
    }
  if (app->banner)
    fprintf (stderr, "runtime serve: %s\n", app->banner);
  if (srv_setup (s, ctx, opts, fd, err) < 0)
    {
      if (s->bound == NULL)
        close (fd);
      app_stop (s);
      srv_free (s);
      return -1;
    }
  /* Old files go at start too: a server restarted more often than hourly
     would never sweep.  */
  srv_sweep_start (s);
  event_base_dispatch (s->base);
  pthread_mutex_lock (&s->mu);
  idle = s->workers == 0;
  pthread_mutex_unlock (&s->mu);
  /* A worker still running past the deadline holds the server: leave it to
     the process's exit.  Idle threads end first.  */
  if (idle)
    {
      srv_workers_end (s);
      app_stop (s);
      srv_free (s);
    }
  return 0;
}
