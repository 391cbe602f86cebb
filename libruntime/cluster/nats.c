/* nats.c - the route handlers over NATS (see nats.h): a request message
   made into a srv_req (request.c) as server.c makes one of an HTTP
   request, the same route table, token check and worker threads
   (workers.c), and the answer sent back as the reply when it is whole.  */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/b64.h"
#include "common/cleanup.h"
#include "common/strutil.h"
#include "common/sys.h"
#include "common/util.h"
#include "core/context.h"
#include "api/handlers.h"
#include "cluster/nats-msg.h"
#include "cluster/nats.h"
#include "serve/server-internal.h"
#include "serve/sweep.h"
#include "serve/tokens.h"
#include "serve/workers.h"

/* How long stopping waits for the handlers running.  */
#define STOP_WAIT_S 10
/* Room in a reply for its JSON besides the body (status, headers).  */
#define REPLY_ROOM 8192
/* A pulled stream's chunk at most, and how long a stream waits for its
   next pull before it counts as gone (its replica died; or its client
   stopped reading that long: the replica pulls only what it could pass
   on).  */
#define PULL_CHUNK (256u << 10)
#define PULL_IDLE_MS 300000

struct tenant_count
{
  char name[33];
  unsigned inflight;
};

struct nats_req;

struct srv_nats
{
  struct srv *srv;
  rt_bus *bus;
  rt_bus_sub *sub, *pull_sub;
  struct nats_req *streams; /* pulled streams, under mu; each holds its request */
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
  struct srv_req *r;
  char *reply;
  size_t cut; /* a stream's bytes kept at most: the reply fits max_payload */
  struct tenant_count *counted;
  bool sent, truncated;
  /* A stream the replica pulls (nats.h), under r->mu but `registered`
     and `next` (n->mu).  */
  bool pull, registered;
  char sid[33];
  uint64_t seq;        /* of the last chunk sent */
  unsigned char *last; /* that chunk, for a pull repeated */
  size_t last_len, chunk;
  char *waiting; /* a pull's reply subject, waiting for bytes */
  uint64_t waiting_seq;
  struct nats_req *next;
};

/* {NAME: VALUE or [VALUE…]} (checked by srv_nats_msg_parse) into @q.  */
static bool
set_pairs (struct evkeyvalq *q, json_object *o)
{
  if (o == NULL)
    return true;
  json_object_object_foreach (o, key, val)
  {
    size_t n = json_object_is_type (val, json_type_array) ? json_object_array_length (val) : 1;
    for (size_t i = 0; i < n; i++)
      {
        json_object *v = json_object_is_type (val, json_type_array) ? json_object_array_get_idx (val, i) : val;
        if (evhttp_add_header (q, key, json_object_get_string (v)) < 0)
          return false;
      }
  }
  return true;
}

/* The request message into @r (its parts read by nats-msg.c); false
   (nothing answered) when it is not one.  */
static bool
read_message (struct srv_req *r, const struct rt_bus_msg *m, struct srv_nats_msg *msg)
{
  if (srv_nats_msg_parse (m->data, m->len, msg) < 0 || (r->method = srv_method_code (msg->method)) < 0
      || (r->path = strdup (msg->path)) == NULL || !set_pairs (&r->query, msg->query)
      || !set_pairs (&r->headers, msg->headers))
    return false;
  r->body = steal_pointer (&msg->body);
  r->body_len = msg->body_len;
  r->deadline_ms = rt_now_ms () + (uint64_t) msg->timeout_ms;
  /* No bearer token reaches a node: the tenant is named (nats.h).  */
  evhttp_remove_header (&r->headers, "Authorization");
  srv_set_request_id (r);
  return true;
}

/* {status, contentType, headers} of @r's answer (under r->mu).  */
static json_object *
head_json (struct srv_req *r)
{
  json_object *o = json_object_new_object (), *h = json_object_new_object ();
  struct evkeyval *kv;

  if (o == NULL || h == NULL)
    {
      json_object_put (o);
      json_object_put (h);
      return NULL;
    }
  TAILQ_FOREACH (kv, &r->out_headers, next)
  json_object_object_add (h, kv->key, json_object_new_string (kv->value));
  json_object_object_add (h, "x-request-id", json_object_new_string (r->request_id));
  json_object_object_add (o, "status", json_object_new_int (r->status));
  json_object_object_add (o, "contentType", json_object_new_string (r->ctype ? r->ctype : "application/json"));
  json_object_object_add (o, "headers", h);
  return o;
}

/* The reply message of @r's whole answer (under r->mu).  */
static char *
answer_of (struct srv_req *r, struct nats_req *x)
{
  cleanup_json json_object *o = head_json (r);
  size_t len = evbuffer_get_length (r->out);
  const char *data = (const char *) evbuffer_pullup (r->out, -1);
  cleanup_free char *b64 = NULL;

  /* A stream past the cut keeps its whole lines up to it.  */
  if (r->started && len > x->cut)
    {
      const char *nl = memrchr (data, '\n', x->cut);
      len = nl ? (size_t) (nl - data) + 1 : x->cut;
      x->truncated = true;
    }
  b64 = rt_b64_encode (data, len);
  if (o == NULL || b64 == NULL)
    return NULL;
  json_object_object_add (o, "body", json_object_new_string (b64));
  json_object_object_add (o, "truncated", json_object_new_boolean (x->truncated || r->timed_out));
  return strdup (json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
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

/* A pulled stream's head: {status, contentType, headers, stream}
   (under r->mu).  */
static char *
head_of (struct srv_req *r, struct nats_req *x)
{
  cleanup_json json_object *o = head_json (r);

  if (o == NULL)
    return NULL;
  json_object_object_add (o, "stream", json_object_new_string (x->sid));
  return strdup (json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* Whether a pulled stream has something for a pull (under r->mu).  */
static bool
chunk_ready (struct srv_req *r)
{
  return evbuffer_get_length (r->out) > 0 || r->ended;
}

/* The next chunk of a pulled stream (under r->mu): a byte 'd' (more to
   come), 'e' (the end) or 't' (the end, cut by its deadline), then up to
   x->chunk bytes; kept as x->last for a pull repeated.  */
static bool
take_chunk (struct srv_req *r, struct nats_req *x, uint64_t seq)
{
  size_t have = evbuffer_get_length (r->out), n = have < x->chunk ? have : x->chunk;
  unsigned char *c = malloc (n + 1);

  /* Nothing answered: the replica asks the same seq again.  */
  if (c == NULL)
    return false;
  c[0] = r->ended && n == have ? (r->timed_out ? 't' : 'e') : 'd';
  evbuffer_remove (r->out, c + 1, n);
  free (x->last);
  x->last = c;
  x->last_len = n + 1;
  x->seq = seq;
  /* Room again for the handler's writer.  */
  pthread_cond_broadcast (&r->cond);
  return true;
}

static void
stream_register (struct nats_req *x)
{
  pthread_mutex_lock (&x->r->mu);
  x->r->refs++;
  pthread_mutex_unlock (&x->r->mu);
  pthread_mutex_lock (&x->n->mu);
  x->registered = true;
  x->next = x->n->streams;
  x->n->streams = x;
  pthread_mutex_unlock (&x->n->mu);
}

/* Off the list (under n->mu): the caller then drops its reference.  */
static bool
stream_unlink (struct nats_req *x)
{
  for (struct nats_req **p = &x->n->streams; *p; p = &(*p)->next)
    if (*p == x)
      {
        *p = x->next;
        x->registered = false;
        return true;
      }
  return false;
}

/* request.c calls this whenever the handler queued something: the reply
   goes once the answer is whole (a stream: ended); a stream past x->cut
   is cut, since nobody drains it before its end.  A stream the replica
   pulls is answered by its head at once, its bytes by the pulls.  */
static void
on_answer (struct srv_req *r)
{
  struct nats_req *x = r->transport;
  cleanup_free char *text = NULL, *to = NULL;
  cleanup_free unsigned char *chunk = NULL;
  size_t max, chunk_len = 0;
  bool head = false;

  pthread_mutex_lock (&r->mu);
  if (x->pull && !x->sent && r->started && !r->whole)
    {
      x->sent = head = true;
      text = head_of (r, x);
      r->deadline_ms = rt_now_ms () + PULL_IDLE_MS;
    }
  else if (x->pull && x->sent && x->waiting && chunk_ready (r))
    {
      bool took = take_chunk (r, x, x->waiting_seq);
      to = x->waiting;
      x->waiting = NULL;
      chunk = took && x->last ? malloc (x->last_len) : NULL;
      if (chunk)
        memcpy (chunk, x->last, chunk_len = x->last_len);
    }
  else if (!x->pull && !x->sent && r->started && !r->ended && evbuffer_get_length (r->out) > x->cut)
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
  if (to)
    {
      if (chunk)
        rt_bus_publish (x->n->bus, to, chunk, chunk_len, NULL);
      return;
    }
  if (text == NULL || x->reply == NULL)
    return;
  /* Listed before the head goes: the first pull may come at once.  */
  if (head)
    stream_register (x);
  max = rt_bus_max_payload (x->n->bus);
  if ((max && strlen (text) > max) || rt_bus_publish (x->n->bus, x->reply, text, strlen (text), NULL) < 0)
    {
      cleanup_free char *msg = rt_strdup_printf ("the answer (%zu bytes) could not be sent over NATS (max_payload %zu)",
                                                 strlen (text), max);
      send_error (x->n->bus, x->reply, 502, "bad_gateway", msg ? msg : "the answer could not be sent");
    }
}

/* runtime.node.<name>.pull: {stream, seq} asks for chunk @seq of a
   stream (the one after the last, or the last again when its answer was
   lost); {stream, close: true} ends it (no answer).  An unknown stream
   is answered 'x'.  */
static void
on_pull (void *data, const struct rt_bus_msg *m)
{
  struct srv_nats *n = data;
  cleanup_json json_object *o = NULL;
  json_tokener *tok = json_tokener_new ();
  cleanup_free unsigned char *chunk = NULL;
  struct nats_req *x = NULL;
  const char *sid;
  size_t len = 0;
  uint64_t seq;
  bool close_it, drop = false;

  if (tok == NULL)
    return;
  o = json_tokener_parse_ex (tok, m->data, (int) m->len);
  json_tokener_free (tok);
  sid = rt_json_str (o, "stream");
  seq = (uint64_t) rt_json_i64 (o, "seq");
  close_it = json_object_get_boolean (json_object_object_get (o, "close"));
  pthread_mutex_lock (&n->mu);
  for (struct nats_req *s = n->streams; sid && s && !x; s = s->next)
    if (strcmp (s->sid, sid) == 0)
      x = s;
  if (x && close_it)
    drop = stream_unlink (x);
  else if (x)
    {
      pthread_mutex_lock (&x->r->mu);
      x->r->refs++;
      pthread_mutex_unlock (&x->r->mu);
    }
  pthread_mutex_unlock (&n->mu);
  if (x == NULL || close_it)
    {
      if (x == NULL && m->reply)
        rt_bus_publish (n->bus, m->reply, "x", 1, NULL);
      if (drop)
        {
          pthread_mutex_lock (&x->r->mu);
          x->r->gone = true;
          pthread_cond_broadcast (&x->r->cond);
          pthread_mutex_unlock (&x->r->mu);
          srv_req_unref (x->r);
        }
      return;
    }
  pthread_mutex_lock (&x->r->mu);
  x->r->deadline_ms = rt_now_ms () + PULL_IDLE_MS;
  if (m->reply && seq == x->seq && x->last)
    {
      if ((chunk = malloc (x->last_len)))
        memcpy (chunk, x->last, len = x->last_len);
    }
  else if (m->reply && seq == x->seq + 1 && chunk_ready (x->r))
    {
      if (take_chunk (x->r, x, seq) && x->last && (chunk = malloc (x->last_len)))
        memcpy (chunk, x->last, len = x->last_len);
    }
  else if (m->reply && seq == x->seq + 1)
    {
      free (x->waiting);
      x->waiting = strdup (m->reply);
      x->waiting_seq = seq;
    }
  else if (m->reply && (chunk = malloc (1)))
    chunk[0] = 'x', len = 1;
  pthread_mutex_unlock (&x->r->mu);
  if (chunk)
    rt_bus_publish (n->bus, m->reply, chunk, len, NULL);
  srv_req_unref (x->r);
}

/* Pulled streams whose replica stopped pulling: gone.  */
void
srv_nats_tick (struct srv_nats *n)
{
  struct nats_req *idle[64];
  size_t k = 0;
  uint64_t now = rt_now_ms ();

  pthread_mutex_lock (&n->mu);
  for (struct nats_req *s = n->streams, *next; s && k < 64; s = next)
    {
      next = s->next;
      pthread_mutex_lock (&s->r->mu);
      bool late = s->r->deadline_ms && now >= s->r->deadline_ms;
      pthread_mutex_unlock (&s->r->mu);
      if (late && stream_unlink (s))
        idle[k++] = s;
    }
  pthread_mutex_unlock (&n->mu);
  for (size_t i = 0; i < k; i++)
    {
      pthread_mutex_lock (&idle[i]->r->mu);
      idle[i]->r->gone = idle[i]->r->timed_out = true;
      pthread_cond_broadcast (&idle[i]->r->cond);
      pthread_mutex_unlock (&idle[i]->r->mu);
      srv_req_unref (idle[i]->r);
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
  free (x->last);
  free (x->waiting);
  free (x);
}

/* The tenant named by the request, with the limits the replica sends
   (it has the token: nats.h), else from this host's token store: an
   unknown name is refused.  */
static bool
tenant_known (struct srv_nats *n, struct srv_req *r, json_object *o)
{
  const char *name = rt_json_str (o, "tenant");
  json_object *lim = json_object_object_get (o, "limits");

  if (name && rt_tenant_name_ok (name) && json_object_is_type (lim, json_type_object))
    {
      int64_t v[5];
      const char *keys[5] = { "maxSandboxes", "maxVcpu", "rate", "maxSnapshots", "maxCostMicros" };
      for (size_t i = 0; i < 5; i++)
        {
          v[i] = rt_json_i64 (lim, keys[i]);
          if (v[i] < 0 || (i < 4 && v[i] > UINT32_MAX))
            v[i] = 0;
        }
      memset (&r->token, 0, sizeof r->token);
      snprintf (r->token.name, sizeof r->token.name, "%s", name);
      r->token.max_sandboxes = (unsigned) v[0];
      r->token.max_vcpu = (unsigned) v[1];
      r->token.rate = (unsigned) v[2];
      r->token.max_snapshots = (unsigned) v[3];
      r->token.max_cost_micros = v[4];
      return r->authed = true;
    }
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
  struct srv_nats_msg msg;
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
  x->r = r;
  x->chunk = max > 1024 && max - 1024 < PULL_CHUNK ? max - 1024 : PULL_CHUNK;
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
  bool ok = read_message (r, m, &msg);
  /* A replica that pulls the stream's bytes (nats.h).  */
  if (ok && msg.stream)
    {
      unsigned char raw[16];
      x->pull = getrandom (raw, sizeof raw, 0) == sizeof raw;
      rt_hex (raw, sizeof raw, x->sid);
    }
  if (!ok)
    srv_reply_error (r, 400, "invalid_request", "see nats.h for the message", NULL, "the request could not be read");
  else if (stopping)
    srv_reply_error (r, 503, "unavailable", "retry: the node is stopping", NULL, "the node is stopping");
  else if ((r->route = srv_find_route (r)) != NULL
           && ((r->route->flags & SRV_NO_AUTH) || (tenant_known (n, r, msg.root) && within_inflight (n, r))))
    srv_run_route (r);
  srv_nats_msg_clear (&msg);
  /* A worker running it holds a reference of its own.  */
  srv_req_unref (r);
}

int
srv_nats_start (rt_context *ctx, rt_bus *bus, const char *subject, const char *pull_subject, struct srv_nats **out,
                rt_error **err)
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
  s->app = &srv_api_app;
  n->bus = bus;
  if (rt_tokens_open (n->ctx, &s->tokens, err) < 0
      || rt_bus_subscribe (bus, subject, NULL, on_request, n, &n->sub, err) < 0
      || rt_bus_subscribe (bus, pull_subject, NULL, on_pull, n, &n->pull_sub, err) < 0)
    {
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
  rt_bus_unsubscribe (n->pull_sub);
  n->sub = n->pull_sub = NULL;
  /* Pulled streams end: their handlers see gone.  */
  pthread_mutex_lock (&n->mu);
  for (struct nats_req *x = n->streams; x; x = x->next)
    {
      pthread_mutex_lock (&x->r->mu);
      x->r->deadline_ms = 1;
      pthread_mutex_unlock (&x->r->mu);
    }
  pthread_mutex_unlock (&n->mu);
  /* 64 a call: until none is left.  */
  for (;;)
    {
      pthread_mutex_lock (&n->mu);
      bool left = n->streams != NULL;
      pthread_mutex_unlock (&n->mu);
      if (!left)
        break;
      srv_nats_tick (n);
    }
  until = rt_deadline_after (STOP_WAIT_S * 1000);
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
