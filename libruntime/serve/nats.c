/* nats.c - the route handlers over NATS (see nats.h): a request message
   made into a srv_req (request.c) as server.c makes one of an HTTP
   request, the same route table, token check and worker threads
   (workers.c), and the answer sent back as the reply when it is whole.  */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/strutil.h"
#include "common/util.h"
#include "serve/nats.h"
#include "serve/server-internal.h"
#include "serve/tokens.h"
#include "serve/workers.h"

/* How long stopping waits for the handlers running.  */
#define STOP_WAIT_S 10

struct srv_nats
{
  struct srv *srv;
  rt_bus *bus;
  rt_bus_sub *sub;
};

/* What a request of ours carries besides the srv_req.  */
struct nats_req
{
  rt_bus *bus;
  char *reply;
  bool sent, truncated;
};

static char *
b64_encode (const void *data, size_t len)
{
  char *out = malloc (4 * ((len + 2) / 3) + 1);

  if (out)
    EVP_EncodeBlock ((unsigned char *) out, len ? data : (const void *) "", (int) len);
  return out;
}

/* @b64 decoded into r->body; false when it is not base64.  */
static bool
set_body (struct srv_req *r, const char *b64)
{
  size_t n = strlen (b64);
  int got;

  if (n == 0)
    return true;
  if (n % 4 != 0 || n / 4 * 3 > SRV_MAX_BODY || (r->body = malloc (n / 4 * 3 + 1)) == NULL)
    return false;
  got = EVP_DecodeBlock (r->body, (const unsigned char *) b64, (int) n);
  if (got < 0)
    return false;
  /* EVP_DecodeBlock counts the padding as data.  */
  r->body_len = (size_t) got - (b64[n - 1] == '=') - (b64[n - 2] == '=');
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
read_message (struct srv_req *r, const struct rt_bus_msg *m)
{
  cleanup_json json_object *o = NULL;
  json_tokener *tok = json_tokener_new ();
  const char *method, *path, *body, *token;

  if (tok == NULL)
    return false;
  o = json_tokener_parse_ex (tok, m->data, (int) m->len);
  json_tokener_free (tok);
  method = rt_json_str (o, "method");
  path = rt_json_str (o, "path");
  body = rt_json_str (o, "body");
  token = rt_json_str (o, "token");
  if (o == NULL || (r->method = srv_method_code (method)) < 0 || path == NULL || path[0] != '/'
      || (r->path = strdup (path)) == NULL || !set_pairs (&r->query, json_object_object_get (o, "query"))
      || !set_pairs (&r->headers, json_object_object_get (o, "headers")) || (body && !set_body (r, body)))
    return false;
  if (token)
    {
      cleanup_free char *bearer = rt_strdup_printf ("Bearer %s", token);
      evhttp_remove_header (&r->headers, "Authorization");
      if (bearer == NULL || evhttp_add_header (&r->headers, "Authorization", bearer) < 0)
        return false;
    }
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
  cleanup_free char *b64 = b64_encode (evbuffer_pullup (r->out, -1), len);
  struct evkeyval *kv;
  char *text;

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
  json_object_object_add (o, "truncated", json_object_new_boolean (x->truncated));
  text = strdup (json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return text;
}

/* request.c calls this whenever the handler queued something: the reply
   goes once the answer is whole (a stream: ended); a stream past
   SRV_STREAM_HIGH is cut, since nobody drains it before its end.  */
static void
on_answer (struct srv_req *r)
{
  struct nats_req *x = r->transport;
  cleanup_free char *text = NULL;

  pthread_mutex_lock (&r->mu);
  if (!x->sent && r->started && !r->ended && evbuffer_get_length (r->out) > SRV_STREAM_HIGH)
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
  if (text && x->reply)
    rt_bus_publish (x->bus, x->reply, text, strlen (text), NULL);
}

static void
nats_req_free (void *data)
{
  struct nats_req *x = data;

  if (x == NULL)
    return;
  free (x->reply);
  free (x);
}

/* One request message, on the subscription's thread: read, routed,
   authenticated, then run on a worker (workers.c) like an HTTP one.  */
static void
on_request (void *data, const struct rt_bus_msg *m)
{
  struct srv_nats *n = data;
  struct srv_req *r;
  struct nats_req *x;
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
  x->bus = n->bus;
  r->transport = x;
  r->transport_free = nats_req_free;
  r->on_answer = on_answer;
  pthread_mutex_lock (&n->srv->mu);
  stopping = n->srv->stopping;
  pthread_mutex_unlock (&n->srv->mu);
  if (!read_message (r, m))
    srv_reply_error (r, 400, "invalid_request", "see nats.h for the message", NULL, "the request could not be read");
  else if (stopping)
    srv_reply_error (r, 503, "unavailable", "retry: the node is stopping", NULL, "the node is stopping");
  else if ((r->route = srv_find_route (r)) != NULL && ((r->route->flags & SRV_NO_AUTH) || srv_authenticate (r)))
    srv_run_route (r);
  /* A worker running it holds a reference of its own.  */
  srv_req_unref (r);
}

int
srv_nats_start (rt_context *ctx, rt_bus *bus, const char *subject, struct srv_nats **out, rt_error **err)
{
  struct srv_nats *n = calloc (1, sizeof *n);
  struct srv *s = n ? srv_alloc (ctx) : NULL;

  if (s == NULL)
    {
      free (n);
      return rt_error_oom (err);
    }
  n->srv = s;
  n->bus = bus;
  if (rt_tokens_open (ctx, &s->tokens, err) < 0
      || rt_bus_subscribe (bus, subject, NULL, on_request, n, &n->sub, err) < 0)
    {
      n->sub = NULL;
      srv_nats_stop (n);
      return -1;
    }
  *out = n;
  return 0;
}

void
srv_nats_stop (struct srv_nats *n)
{
  struct srv *s;
  struct timespec until;
  bool idle;

  if (n == NULL)
    return;
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
  free (n);
  /* A handler still running past the wait holds the server: left to the
     process's exit, as runtime serve does.  */
  if (!idle)
    return;
  srv_workers_end (s);
  srv_free (s);
}
