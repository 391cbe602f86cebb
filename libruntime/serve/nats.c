/* nats.c - the route handlers over NATS (see nats.h): a request message
   made into a srv_req (request.c) as server.c makes one of an HTTP
   request, the same route table, token check and worker threads
   (workers.c), and the answer sent back as the reply when it is whole.  */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/b64.h"
#include "common/cleanup.h"
#include "common/strutil.h"
#include "common/sys.h"
#include "common/util.h"
#include "serve/nats.h"
#include "serve/server-internal.h"
#include "serve/sweep.h"
#include "serve/tokens.h"
#include "serve/workers.h"

/* How long stopping waits for the handlers running.  */
#define STOP_WAIT_S 10
/* Room in a reply for its JSON besides the body (status, headers).  */
#define REPLY_ROOM 8192

struct tenant_count
{
  char name[33];
  unsigned inflight;
};

struct srv_nats
{
  struct srv *srv;
  rt_bus *bus;
  rt_bus_sub *sub;
  rt_context *ctx; /* the server's own copy: the caller's may go first */
  /* Requests of each tenant being answered (SRV_MAX_INFLIGHT each).  */
  pthread_mutex_t mu;
  struct tenant_count tenants[SRV_MAX_BUCKETS];
  size_t ntenants;
};

/* What a request of ours carries besides the srv_req.  */
struct nats_req
{
  struct srv_nats *n;
  char *reply;
  size_t cut; /* a stream's bytes kept at most: the reply fits max_payload */
  struct tenant_count *counted;
  bool sent, truncated;
};

/* @b64 decoded into r->body; false when it is not base64.  */
static bool
set_body (struct srv_req *r, const char *b64)
{
  size_t n = strlen (b64);
  ssize_t got;

  if (n == 0)
    return true;
  if (n % 4 != 0 || RT_B64_DECODED_MAX (n) > SRV_MAX_BODY || (r->body = malloc (RT_B64_DECODED_MAX (n) + 1)) == NULL)
    return false;
  got = rt_b64_decode (b64, n, r->body);
  if (got < 0)
    return false;
  r->body_len = (size_t) got;
  return true;
}

/* {NAME: VALUE or [VALUE…]} into @q; false on another shape.  */
static bool
set_pairs (struct evkeyvalq *q, json_object *o)
{
  if (o == NULL)
    return true;
  if (!json_object_is_type (o, json_type_object))
    return false;
  json_object_object_foreach (o, key, val)
  {
    size_t n = json_object_is_type (val, json_type_array) ? json_object_array_length (val) : 1;
    for (size_t i = 0; i < n; i++)
      {
        json_object *v = json_object_is_type (val, json_type_array) ? json_object_array_get_idx (val, i) : val;
        if (!json_object_is_type (v, json_type_string) || evhttp_add_header (q, key, json_object_get_string (v)) < 0)
          return false;
      }
  }
  return true;
}

/* The request message into @r; false (nothing answered) when it is not
   one.  */
static bool
read_message (struct srv_req *r, const struct rt_bus_msg *m, json_object **out)
{
  json_object *o;
  json_tokener *tok = json_tokener_new ();
  const char *method, *path, *body;
  int64_t timeout_ms;

  if (tok == NULL)
    return false;
  o = *out = json_tokener_parse_ex (tok, m->data, (int) m->len);
  json_tokener_free (tok);
  method = rt_json_str (o, "method");
  path = rt_json_str (o, "path");
  body = rt_json_str (o, "body");
  timeout_ms = json_object_object_get (o, "timeoutMs") ? rt_json_i64 (o, "timeoutMs") : SRV_NATS_DEADLINE_MS;
  if (o == NULL || (r->method = srv_method_code (method)) < 0 || path == NULL || path[0] != '/'
      || (r->path = strdup (path)) == NULL || !set_pairs (&r->query, json_object_object_get (o, "query"))
      || !set_pairs (&r->headers, json_object_object_get (o, "headers")) || (body && !set_body (r, body)))
    return false;
  if (timeout_ms <= 0 || timeout_ms > SRV_NATS_MAX_DEADLINE_MS)
    timeout_ms = timeout_ms <= 0 ? SRV_NATS_DEADLINE_MS : SRV_NATS_MAX_DEADLINE_MS;
  r->deadline_ms = rt_now_ms () + (uint64_t) timeout_ms;
  /* No bearer token reaches a node: the tenant is named (nats.h).  */
  evhttp_remove_header (&r->headers, "Authorization");
  srv_set_request_id (r);
  return true;
}

/* The reply message of @r's whole answer (under r->mu).  */
static char *
answer_of (struct srv_req *r, struct nats_req *x)
{
  cleanup_json json_object *o = json_object_new_object ();
  json_object *h = json_object_new_object ();
  size_t len = evbuffer_get_length (r->out);
  const char *data = (const char *) evbuffer_pullup (r->out, -1);
  cleanup_free char *b64 = NULL;
  struct evkeyval *kv;
  char *text;

  /* A stream past the cut keeps its whole lines up to it.  */
  if (r->started && len > x->cut)
    {
      const char *nl = memrchr (data, '\n', x->cut);
      len = nl ? (size_t) (nl - data) + 1 : x->cut;
      x->truncated = true;
    }
  b64 = rt_b64_encode (data, len);
  if (o == NULL || h == NULL || b64 == NULL)
    {
      json_object_put (h);
      return NULL;
    }
  TAILQ_FOREACH (kv, &r->out_headers, next)
  json_object_object_add (h, kv->key, json_object_new_string (kv->value));
  json_object_object_add (h, "x-request-id", json_object_new_string (r->request_id));
  json_object_object_add (o, "status", json_object_new_int (r->status));
  json_object_object_add (o, "contentType", json_object_new_string (r->ctype ? r->ctype : "application/json"));
  json_object_object_add (o, "headers", h);
  json_object_object_add (o, "body", json_object_new_string (b64));
  json_object_object_add (o, "truncated", json_object_new_boolean (x->truncated || r->timed_out));
  text = strdup (json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return text;
}

/* A small error reply, for when the answer itself cannot be sent.  */
static void
send_error (rt_bus *bus, const char *reply, int status, const char *code, const char *msg)
{
  cleanup_json json_object *o = json_object_new_object ();
  json_object *e = json_object_new_object ();
  cleanup_free char *b64 = NULL, *text = NULL;
  const char *body;

  if (o == NULL || e == NULL)
    {
      json_object_put (e);
      return;
    }
  json_object_object_add (e, "code", json_object_new_string (code));
  json_object_object_add (e, "status", json_object_new_int (status));
  json_object_object_add (e, "message", json_object_new_string (msg));
  json_object_object_add (e, "details", json_object_new_object ());
  json_object_object_add (o, "error", e);
  body = json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN);
  b64 = rt_b64_encode (body, strlen (body));
  text = b64 ? rt_strdup_printf ("{\"status\":%d,\"contentType\":\"application/json\",\"headers\":{},\"body\":\"%s\","
                                 "\"truncated\":false}",
                                 status, b64)
             : NULL;
  if (text)
    rt_bus_publish (bus, reply, text, strlen (text), NULL);
}

/* request.c calls this whenever the handler queued something: the reply
   goes once the answer is whole (a stream: ended); a stream past x->cut
   is cut, since nobody drains it before its end.  */
static void
on_answer (struct srv_req *r)
{
  struct nats_req *x = r->transport;
  cleanup_free char *text = NULL;
  size_t max;

  pthread_mutex_lock (&r->mu);
  if (!x->sent && r->started && !r->ended && evbuffer_get_length (r->out) > x->cut)
    {
      r->gone = true;
      x->truncated = true;
      pthread_cond_broadcast (&r->cond);
    }
  if (!x->sent && (r->whole || (r->started && r->ended)))
    {
      x->sent = true;
      text = answer_of (r, x);
    }
  pthread_mutex_unlock (&r->mu);
  if (text == NULL || x->reply == NULL)
    return;
  max = rt_bus_max_payload (x->n->bus);
  if ((max && strlen (text) > max) || rt_bus_publish (x->n->bus, x->reply, text, strlen (text), NULL) < 0)
    {
      cleanup_free char *msg = rt_strdup_printf ("the answer (%zu bytes) could not be sent over NATS (max_payload %zu)",
                                                 strlen (text), max);
      send_error (x->n->bus, x->reply, 502, "bad_gateway", msg ? msg : "the answer could not be sent");
    }
}

static void
nats_req_free (void *data)
{
  struct nats_req *x = data;

  if (x == NULL)
    return;
  if (x->counted)
    {
      pthread_mutex_lock (&x->n->mu);
      x->counted->inflight--;
      pthread_mutex_unlock (&x->n->mu);
    }
  free (x->reply);
  free (x);
}

/* The tenant named by the request, from this host's token store: its
   limits are this host's, an unknown name is refused.  */
static bool
tenant_known (struct srv_nats *n, struct srv_req *r, json_object *o)
{
  const char *name = rt_json_str (o, "tenant");

  if (name && rt_tokens_named (n->srv->tokens, name, &r->token) == 1)
    return r->authed = true;
  srv_reply_error (r, 401, "unauthorized", "the serve replica names a tenant this host has (runtime token create)",
                   NULL, name ? "tenant '%.40s' is unknown on this host" : "no tenant named", name);
  return false;
}

/* SRV_MAX_INFLIGHT requests of one tenant at once, as runtime serve's
   within_rate: one tenant cannot hold every worker.  */
static bool
within_inflight (struct srv_nats *n, struct srv_req *r)
{
  struct nats_req *x = r->transport;
  struct tenant_count *t = NULL;

  pthread_mutex_lock (&n->mu);
  for (size_t i = 0; i < n->ntenants && !t; i++)
    if (strcmp (n->tenants[i].name, r->token.name) == 0)
      t = &n->tenants[i];
  for (size_t i = 0; i < n->ntenants && !t; i++)
    if (n->tenants[i].inflight == 0)
      t = &n->tenants[i];
  if (t == NULL && n->ntenants < SRV_MAX_BUCKETS)
    t = &n->tenants[n->ntenants++];
  if (t && t->inflight < SRV_MAX_INFLIGHT)
    {
      if (t->inflight == 0)
        snprintf (t->name, sizeof t->name, "%s", r->token.name);
      t->inflight++;
      x->counted = t;
    }
  pthread_mutex_unlock (&n->mu);
  if (x->counted)
    return true;
  srv_add_header (r, "Retry-After", "1");
  if (t == NULL)
    srv_reply_error (r, 503, "unavailable", "retry in a second", NULL, "the node is busy");
  else
    srv_reply_error (r, 429, "rate_limited", "wait for an answer before sending more", NULL,
                     "over %u requests at once for this tenant", SRV_MAX_INFLIGHT);
  return false;
}

/* One request message, on the subscription's thread: read, routed,
   authenticated, then run on a worker (workers.c) like an HTTP one.  */
static void
on_request (void *data, const struct rt_bus_msg *m)
{
  struct srv_nats *n = data;
  struct srv_req *r;
  struct nats_req *x;
  cleanup_json json_object *o = NULL;
  size_t max = rt_bus_max_payload (n->bus);
  bool stopping;

  if (m->reply == NULL)
    return;
  x = calloc (1, sizeof *x);
  r = x ? srv_req_new (n->srv, NULL) : NULL;
  if (r == NULL || (x->reply = strdup (m->reply)) == NULL)
    {
      static const char oom[] = "{\"status\":500,\"contentType\":\"text/plain\",\"headers\":{},\"body\":\"\"}";
      rt_bus_publish (n->bus, m->reply, oom, sizeof oom - 1, NULL);
      if (r)
        srv_req_unref (r);
      nats_req_free (x);
      return;
    }
  x->n = n;
  /* base64 is 4/3 of the bytes.  */
  x->cut = max > REPLY_ROOM ? (max - REPLY_ROOM) / 4 * 3 : SRV_STREAM_HIGH;
  if (x->cut > SRV_STREAM_HIGH)
    x->cut = SRV_STREAM_HIGH;
  r->transport = x;
  r->transport_free = nats_req_free;
  r->on_answer = on_answer;
  pthread_mutex_lock (&n->srv->mu);
  stopping = n->srv->stopping;
  pthread_mutex_unlock (&n->srv->mu);
  if (!read_message (r, m, &o))
    srv_reply_error (r, 400, "invalid_request", "see nats.h for the message", NULL, "the request could not be read");
  else if (stopping)
    srv_reply_error (r, 503, "unavailable", "retry: the node is stopping", NULL, "the node is stopping");
  else if ((r->route = srv_find_route (r)) != NULL
           && ((r->route->flags & SRV_NO_AUTH) || (tenant_known (n, r, o) && within_inflight (n, r))))
    srv_run_route (r);
  /* A worker running it holds a reference of its own.  */
  srv_req_unref (r);
}

int
srv_nats_start (rt_context *ctx, rt_bus *bus, const char *subject, struct srv_nats **out, rt_error **err)
{
  struct srv_nats *n = calloc (1, sizeof *n);
  struct srv *s = NULL;

  if (n == NULL || rt_context_dup (ctx, &n->ctx, NULL) < 0 || (s = srv_alloc (n->ctx)) == NULL)
    {
      if (n)
        rt_context_free (n->ctx);
      free (n);
      return rt_error_oom (err);
    }
  pthread_mutex_init (&n->mu, NULL);
  n->srv = s;
  n->bus = bus;
  if (rt_tokens_open (n->ctx, &s->tokens, err) < 0
      || rt_bus_subscribe (bus, subject, NULL, on_request, n, &n->sub, err) < 0)
    {
      n->sub = NULL;
      srv_nats_stop (n);
      return -1;
    }
  /* Old files go at start too, as runtime serve's do (sweep.h).  */
  srv_sweep_start (s);
  *out = n;
  return 0;
}

void
srv_nats_sweep (struct srv_nats *n)
{
  srv_sweep_start (n->srv);
}

bool
srv_nats_stop (struct srv_nats *n)
{
  struct srv *s;
  struct timespec until;
  bool idle;

  if (n == NULL)
    return true;
  s = n->srv;
  rt_bus_unsubscribe (n->sub);
  clock_gettime (CLOCK_REALTIME, &until);
  until.tv_sec += STOP_WAIT_S;
  pthread_mutex_lock (&s->mu);
  s->stopping = true;
  while (s->workers > 0 && pthread_cond_timedwait (&s->idle, &s->mu, &until) == 0)
    ;
  idle = s->workers == 0;
  pthread_mutex_unlock (&s->mu);
  /* A handler still running past the wait holds the server, @n (its
     request's count) and the bus (its reply): left to the process's exit,
     as runtime serve does.  Its context is the server's own copy.  */
  if (!idle)
    return false;
  srv_workers_end (s);
  srv_free (s);
  rt_context_free (n->ctx);
  pthread_mutex_destroy (&n->mu);
  free (n);
  return true;
}
