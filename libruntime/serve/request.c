/* request.c - a request as its handler sees it, and its answer on the way
   back to the loop thread (see server.h).
   (no header of its own: server.h and server-internal.h declare it).  */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/sys.h"
#include "serve/server-internal.h"

const char *
srv_method_name (int method)
{
  switch (method)
    {
    case EVHTTP_REQ_GET:
      return "GET";
    case EVHTTP_REQ_POST:
      return "POST";
    case EVHTTP_REQ_PUT:
      return "PUT";
    case EVHTTP_REQ_DELETE:
      return "DELETE";
    case EVHTTP_REQ_HEAD:
      return "HEAD";
    case EVHTTP_REQ_PATCH:
      return "PATCH";
    case EVHTTP_REQ_OPTIONS:
      return "OPTIONS";
    default:
      return "OTHER";
    }
}

int
srv_method_code (const char *name)
{
  static const int codes[] = { EVHTTP_REQ_GET,    EVHTTP_REQ_POST, EVHTTP_REQ_PUT,
                               EVHTTP_REQ_DELETE, EVHTTP_REQ_HEAD, EVHTTP_REQ_PATCH, EVHTTP_REQ_OPTIONS };

  for (size_t i = 0; name && i < sizeof codes / sizeof codes[0]; i++)
    if (strcmp (srv_method_name (codes[i]), name) == 0)
      return codes[i];
  return -1;
}

static void
on_wake (evutil_socket_t fd, short what, void *arg)
{
  (void) fd;
  (void) what;
  srv_req_flush (arg);
}

struct srv_req *
srv_req_new (struct srv *s, struct evhttp_request *req)
{
  struct srv_req *r = calloc (1, sizeof (*r));

  if (r == NULL)
    return NULL;
  r->srv = s;
  r->req = req;
  r->refs = 1;
  r->loop_ref = true;
  r->status = 500;
  r->ws_efd = -1;
  pthread_mutex_init (&r->mu, NULL);
  pthread_cond_init (&r->cond, NULL);
  TAILQ_INIT (&r->out_headers);
  TAILQ_INIT (&r->query);
  TAILQ_INIT (&r->headers);
  r->out = evbuffer_new ();
  r->wake = s->base ? event_new (s->base, -1, 0, on_wake, r) : NULL;
  r->t0_ms = rt_now_ms ();
  if (r->out == NULL || (s->base && r->wake == NULL))
    {
      srv_req_unref (r);
      return NULL;
    }
  return r;
}

void
srv_req_unref (struct srv_req *r)
{
  bool last;

  pthread_mutex_lock (&r->mu);
  last = --r->refs == 0;
  pthread_mutex_unlock (&r->mu);
  if (!last)
    return;
  if (r->transport_free)
    r->transport_free (r->transport);
  if (r->wake)
    event_free (r->wake);
  if (r->out)
    evbuffer_free (r->out);
  if (r->ws_in)
    evbuffer_free (r->ws_in);
  if (r->ws_efd >= 0)
    close (r->ws_efd);
  srv_ws_reader_free (&r->ws_rd);
  evhttp_clear_headers (&r->out_headers);
  evhttp_clear_headers (&r->query);
  evhttp_clear_headers (&r->headers);
  for (size_t i = 0; i < r->nparams; i++)
    {
      free (r->pnames[i]);
      free (r->pvals[i]);
    }
  rt_context_free (r->ctx);
  free (r->ctype);
  free (r->path);
  free (r->body);
  free (r->idem_id);
  pthread_cond_destroy (&r->cond);
  pthread_mutex_destroy (&r->mu);
  free (r);
}

void
srv_req_wake (struct srv_req *r)
{
  if (r->on_answer)
    r->on_answer (r);
  else
    event_active (r->wake, 0, 0);
}

/* The request.  */

const char *
srv_param (struct srv_req *r, const char *name)
{
  for (size_t i = 0; i < r->nparams; i++)
    if (strcmp (r->pnames[i], name) == 0)
      return r->pvals[i];
  return NULL;
}

const char *
srv_query (struct srv_req *r, const char *name)
{
  return evhttp_find_header (&r->query, name);
}

bool
srv_query_known (struct srv_req *r)
{
  const struct srv_query_names *q = r->srv->app->queries;
  struct evkeyval *kv;

  for (; q && q->pattern; q++)
    if (q->method == r->method && strcmp (q->pattern, r->route->pattern) == 0)
      break;
  if (q == NULL || q->pattern == NULL)
    return true;
  TAILQ_FOREACH (kv, &r->query, next)
  {
    size_t n = strlen (kv->key);
    const char *at = q->names;

    while (n && (at = strstr (at, kv->key)) && !((at == q->names || at[-1] == ' ') && (at[n] == ' ' || !at[n])))
      at += n;
    if (n == 0 || at == NULL)
      {
        cleanup_free char *hint = *q->names ? rt_strdup_printf ("it takes: %s", q->names) : NULL;
        srv_reply_error (r, 400, "invalid_request", hint ? hint : "it takes no query parameters", NULL,
                         "unknown query parameter '%s' on %s %s", kv->key, srv_method (r), r->route->pattern);
        return false;
      }
  }
  return true;
}

size_t
srv_query_all (struct srv_req *r, const char *name, const char **vals, size_t max)
{
  struct evkeyval *kv;
  size_t n = 0;

  TAILQ_FOREACH (kv, &r->query, next)
  if (strcmp (kv->key, name) == 0 && n < max)
    vals[n++] = kv->value;
  return n;
}

const char *
srv_header (struct srv_req *r, const char *name)
{
  return evhttp_find_header (&r->headers, name);
}

const char *
srv_method (struct srv_req *r)
{
  return srv_method_name (r->method);
}

const char *
srv_path (struct srv_req *r)
{
  return r->path;
}

const char *
srv_request_id (struct srv_req *r)
{
  return r->request_id;
}

const struct rt_token_info *
srv_token (struct srv_req *r)
{
  return r->authed ? &r->token : NULL;
}

bool
srv_tls (struct srv_req *r)
{
  return r->srv->ssl != NULL;
}

/* A context of the host's, acting as the token's tenant when there is
   one (always on an authenticated route), quiet.  */
static int
ctx_make (struct srv_req *r, rt_context **out, rt_error **err)
{
  rt_context *ctx = NULL;

  if (rt_context_dup (r->srv->ctx, &ctx, err) < 0 || (r->authed && rt_context_set_tenant (ctx, r->token.name, err) < 0))
    {
      rt_context_free (ctx);
      return -1;
    }
  /* The library's progress lines are a person's, not the request log's.  */
  rt_context_set_progress (ctx, NULL, NULL);
  *out = ctx;
  return 0;
}

rt_context *
srv_ctx (struct srv_req *r)
{
  cleanup_error rt_error *err = NULL;

  if (r->ctx == NULL && ctx_make (r, &r->ctx, &err) < 0)
    {
      srv_reply_rt_error (r, err);
      return NULL;
    }
  return r->ctx;
}

int
srv_ctx_new (struct srv_req *r, rt_context **out, rt_error **err)
{
  /* Never the host's view for a thread acting for a request.  */
  if (!r->authed)
    return rt_error_set (err, EPERM, "internal", "no tenant for %s %s", srv_method (r), r->path);
  return ctx_make (r, out, err);
}

rt_sandbox *
srv_sandbox_open (struct srv_req *r)
{
  cleanup_error rt_error *err = NULL;
  rt_context *ctx = srv_ctx (r);
  rt_sandbox *sb = NULL;

  /* Each of its callers may wake the sandbox (autoWake) or runs in it.  */
  if (ctx == NULL || srv_quota_spend (r) < 0)
    return NULL;
  if (rt_sandbox_open (ctx, srv_param (r, "id"), &sb, &err) < 0)
    {
      srv_reply_rt_error (r, err);
      return NULL;
    }
  return sb;
}

const void *
srv_body (struct srv_req *r, size_t *len)
{
  *len = r->body_len;
  return r->body ? r->body : (const unsigned char *) "";
}

int
srv_prefer_wait (struct srv_req *r)
{
  const char *p = srv_header (r, "Prefer");
  char *end;
  long n;

  if (p == NULL || (p = strstr (p, "wait=")) == NULL)
    return -1;
  n = strtol (p + 5, &end, 10);
  if (end == p + 5 || n < 0)
    return -1;
  return n > 120 ? 120 : (int) n;
}

bool
srv_gone (struct srv_req *r)
{
  bool gone;

  pthread_mutex_lock (&r->mu);
  if (!r->gone && r->deadline_ms && rt_now_ms () >= r->deadline_ms)
    {
      r->gone = r->timed_out = true;
      pthread_cond_broadcast (&r->cond);
    }
  gone = r->gone;
  pthread_mutex_unlock (&r->mu);
  return gone || srv_stopping (r);
}

bool
srv_stopping (struct srv_req *r)
{
  bool stopping;

  pthread_mutex_lock (&r->srv->mu);
  stopping = r->srv->stopping;
  pthread_mutex_unlock (&r->srv->mu);
  return stopping;
}

/* One issue of a body: {path, message}.  */
static void
add_issue (json_object *issues, const char *path, const char *message)
{
  json_object *o = json_object_new_object ();

  json_object_object_add (o, "path", json_object_new_string (path));
  json_object_object_add (o, "message", json_object_new_string (message));
  json_object_array_add (issues, o);
}

static const char *
type_name (json_type t)
{
  switch (t)
    {
    case json_type_boolean:
      return "must be a boolean";
    case json_type_double:
    case json_type_int:
      return "must be a number";
    case json_type_object:
      return "must be an object";
    case json_type_array:
      return "must be an array";
    case json_type_string:
      return "must be a string";
    case json_type_null:
    default:
      return "has the wrong type";
    }
}

static bool
type_ok (json_object *v, json_type want)
{
  json_type t = json_object_get_type (v);

  if (want == json_type_null || t == json_type_null)
    return true; /* null: as if absent, the handler decides */
  if (want == json_type_double)
    return t == json_type_double || t == json_type_int;
  return t == want;
}

json_object *
srv_body_json_into (struct srv_req *r, const struct srv_field *fields, json_object *issues)
{
  json_tokener *tok;
  json_object *body;

  if (r->body_len > SRV_MAX_JSON_BODY)
    {
      srv_reply_error (r, 413, "payload_too_large", NULL, NULL, "the body is over %u bytes", SRV_MAX_JSON_BODY);
      return NULL;
    }
  if (r->body_len == 0)
    return json_object_new_object ();
  tok = json_tokener_new ();
  body = json_tokener_parse_ex (tok, (const char *) r->body, (int) r->body_len);
  if (body && json_tokener_get_parse_end (tok) != r->body_len)
    {
      /* Trailing bytes other than white space.  */
      for (size_t i = json_tokener_get_parse_end (tok); i < r->body_len; i++)
        if (!strchr (" \t\r\n", r->body[i]))
          {
            json_object_put (body);
            body = NULL;
            break;
          }
    }
  json_tokener_free (tok);
  if (body == NULL || !json_object_is_type (body, json_type_object))
    {
      json_object_put (body);
      srv_reply_error (r, 400, "invalid_request", "send one JSON object", NULL, "the body is not a JSON object");
      return NULL;
    }
  srv_fields_check (body, fields, NULL, issues);
  return body;
}

void
srv_fields_check (json_object *o, const struct srv_field *fields, const char *prefix, json_object *issues)
{
  json_object_object_foreach (o, key, val)
  {
    const struct srv_field *f;
    cleanup_free char *path = prefix ? rt_strdup_printf ("%s.%s", prefix, key) : NULL;

    for (f = fields; f && f->name; f++)
      if (strcmp (f->name, key) == 0)
        break;
    if (f == NULL || f->name == NULL)
      add_issue (issues, path ? path : key, "unknown field");
    else if (!type_ok (val, f->type))
      add_issue (issues, path ? path : key, type_name (f->type));
  }
}

json_object *
srv_body_json (struct srv_req *r, const struct srv_field *fields)
{
  cleanup_json json_object *issues = json_object_new_array ();
  json_object *body = srv_body_json_into (r, fields, issues);

  if (body == NULL)
    return NULL;
  if (json_object_array_length (issues) > 0)
    {
      json_object *details = json_object_new_object ();
      size_t n = json_object_array_length (issues);
      const char *first = rt_json_str (json_object_array_get_idx (issues, 0), "path");

      json_object_object_add (details, "issues", json_object_get (issues));
      json_object_put (body);
      srv_reply_error (r, 400, "invalid_request", "see details.issues", details, "%zu wrong field%s: %s%s", n,
                       n == 1 ? "" : "s", first, n > 1 ? ", …" : "");
      return NULL;
    }
  return body;
}

/* Answers.  */

void
srv_add_header (struct srv_req *r, const char *name, const char *value)
{
  pthread_mutex_lock (&r->mu);
  evhttp_add_header (&r->out_headers, name, value);
  pthread_mutex_unlock (&r->mu);
}

/* The answer @data; what its Idempotency-Key keeps, @kept.  */
static void
reply_kept (struct srv_req *r, int status, const char *ctype, const void *data, size_t len, const void *kept,
            size_t kept_len)
{
  bool first;

  pthread_mutex_lock (&r->mu);
  first = !r->whole && !r->started;
  pthread_mutex_unlock (&r->mu);
  /* Kept here, off the loop thread (an fsync), before the loop can send
     the answer and let a retry waiting for it read it.  The loop reads
     idem_id only once the answer is there.  */
  if (first && r->idem_id && srv_idem_keepable (status, ctype, kept_len))
    srv_idem_store (r->srv->idem, r->idem_id, r->body_sha, status, ctype, kept, kept_len);
  pthread_mutex_lock (&r->mu);
  if (!r->whole && !r->started)
    {
      r->whole = true;
      r->status = status;
      free (r->ctype);
      r->ctype = strdup (ctype);
      evbuffer_add (r->out, data, len);
    }
  pthread_mutex_unlock (&r->mu);
  srv_req_wake (r);
}

void
srv_reply_bytes (struct srv_req *r, int status, const char *ctype, const void *data, size_t len)
{
  reply_kept (r, status, ctype, data, len, data, len);
}

void
srv_reply_json_once (struct srv_req *r, int status, json_object *o, const char *field)
{
  const int flags = JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE;
  char *whole = strdup (json_object_to_json_string_ext (o, flags));
  size_t len;
  const char *kept;

  json_object_object_add (o, field, NULL);
  kept = json_object_to_json_string_length (o, flags, &len);
  if (whole == NULL)
    srv_reply_error (r, 500, "internal", NULL, NULL, "out of memory");
  else
    reply_kept (r, status, "application/json", whole, strlen (whole), kept, len);
  if (whole)
    explicit_bzero (whole, strlen (whole));
  free (whole);
  json_object_put (o);
}

void
srv_reply_json_text (struct srv_req *r, int status, const char *json)
{
  srv_reply_bytes (r, status, "application/json", json, strlen (json));
}

void
srv_reply_json (struct srv_req *r, int status, json_object *o)
{
  size_t len;
  const char *s = json_object_to_json_string_length (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);

  srv_reply_bytes (r, status, "application/json", s, len);
  json_object_put (o);
}

void
srv_reply_error (struct srv_req *r, int status, const char *code, const char *hint, json_object *details,
                 const char *fmt, ...)
{
  json_object *o = json_object_new_object (), *e = json_object_new_object ();
  cleanup_free char *msg = NULL;
  va_list ap;

  va_start (ap, fmt);
  if (vasprintf (&msg, fmt, ap) < 0)
    msg = NULL;
  va_end (ap);
  json_object_object_add (e, "code", json_object_new_string (code));
  json_object_object_add (e, "status", json_object_new_int (status));
  json_object_object_add (e, "message", json_object_new_string (msg ? msg : code));
  json_object_object_add (e, "hint", hint ? json_object_new_string (hint) : NULL);
  json_object_object_add (e, "details", details ? details : json_object_new_object ());
  json_object_object_add (e, "requestId", json_object_new_string (r->request_id));
  json_object_object_add (o, "error", e);
  srv_reply_json (r, status, o);
}

int
srv_status_for (const char *code)
{
  static const struct
  {
    const char *code;
    int status;
  } table[] = {
    { "unauthorized", 401 },
    { "permission_denied", 403 },
    { "not_found", 404 },
    { "file_not_found", 404 },
    { "image_not_found", 404 },
    { "snapshot_not_found", 404 },
    { "name_taken", 409 },
    { "idempotency_conflict", 409 },
    { "not_paused", 409 },
    { "sandbox_not_ready", 409 },
    { "sandbox_stopped", 409 },
    { "sandbox_paused", 409 },
    { "busy", 409 },
    { "image_in_use", 409 },
    { "conflict", 409 },
    { "payload_too_large", 413 },
    { "upload_incomplete", 409 },
    { "trial_busy", 409 },
    { "stdin_closed", 409 },
    { "invalid_offset", 409 },
    { "quota_exceeded", 429 },
    { "rate_limited", 429 },
    { "internal", 500 },
    { "startup_failed", 500 },
    { "cleanup_failed", 500 },
    { "build_failed", 500 },
    { "interrupted", 503 },
    { "download_incomplete", 502 },
    { "insufficient_storage", 507 },
    { "unavailable", 503 },
    { "cluster_unavailable", 503 },
    { "node_unreachable", 503 },
    { "bad_gateway", 502 },
  };

  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp (table[i].code, code) == 0)
      return table[i].status;
  return 400;
}

void
srv_reply_rt_error (struct srv_req *r, const rt_error *err)
{
  const char *code = err && err->code ? err->code : "internal";
  int status = srv_status_for (code);

  if (status == 429 || status == 503)
    srv_add_header (r, "Retry-After", "1");
  srv_reply_error (r, status, code, err ? err->hint : NULL, NULL, "%s",
                   err && err->msg ? err->msg : "failed");
}

void
srv_reply_page (struct srv_req *r, json_object *items)
{
  const char *lq = srv_query (r, "limit"), *cq = srv_query (r, "cursor");
  json_object *o, *data;
  size_t n = json_object_array_length (items), from = 0, limit = 50;
  char *end;

  if (lq)
    {
      unsigned long v = strtoul (lq, &end, 10);
      if (*lq == '\0' || *end || v < 1 || v > 100)
        {
          json_object_put (items);
          return srv_reply_error (r, 400, "invalid_request", "limit is 1 to 100", NULL, "bad limit '%s'", lq);
        }
      limit = v;
    }
  if (cq && *cq)
    {
      /* The cursor is the index of the next item, as text: opaque to the
         client, and a list that changed in between only shifts it.  */
      unsigned long v = strtoul (cq, &end, 10);
      if (*end || v > n)
        {
          json_object_put (items);
          return srv_reply_error (r, 400, "invalid_request", "pass back a nextCursor", NULL, "bad cursor");
        }
      from = v;
    }
  o = json_object_new_object ();
  data = json_object_new_array ();
  for (size_t i = from; i < n && i < from + limit; i++)
    json_object_array_add (data, json_object_get (json_object_array_get_idx (items, i)));
  json_object_object_add (o, "data", data);
  if (from + limit < n)
    {
      char next[24];
      snprintf (next, sizeof next, "%zu", from + limit);
      json_object_object_add (o, "nextCursor", json_object_new_string (next));
    }
  else
    json_object_object_add (o, "nextCursor", NULL);
  json_object_put (items);
  srv_reply_json (r, 200, o);
}

/* Streams.  */

int
srv_stream_start (struct srv_req *r, int status, const char *ctype)
{
  int ret = 0;

  pthread_mutex_lock (&r->mu);
  if (r->whole || r->started)
    ret = -1;
  else
    {
      r->started = true;
      r->status = status;
      free (r->ctype);
      r->ctype = strdup (ctype);
    }
  pthread_mutex_unlock (&r->mu);
  srv_req_wake (r);
  return ret;
}

int
srv_stream_write (struct srv_req *r, const void *data, size_t len)
{
  int ret = 0;

  pthread_mutex_lock (&r->mu);
  while (!r->gone && evbuffer_get_length (r->out) + r->inflight > SRV_STREAM_HIGH)
    pthread_cond_wait (&r->cond, &r->mu);
  if (r->gone || !r->started || r->ended)
    ret = -1;
  else
    evbuffer_add (r->out, data, len);
  pthread_mutex_unlock (&r->mu);
  if (ret == 0)
    srv_req_wake (r);
  return ret;
}

int
srv_stream_line (struct srv_req *r, json_object *o)
{
  size_t len;
  const char *s = json_object_to_json_string_length (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
  cleanup_free char *line = malloc (len + 1);
  int ret = -1;

  if (line)
    {
      memcpy (line, s, len);
      line[len] = '\n';
      ret = srv_stream_write (r, line, len + 1);
    }
  json_object_put (o);
  return ret;
}

void
srv_stream_end (struct srv_req *r)
{
  pthread_mutex_lock (&r->mu);
  r->ended = true;
  pthread_mutex_unlock (&r->mu);
  srv_req_wake (r);
}
