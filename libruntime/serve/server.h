/* server.h - `runtime serve`: what the route handlers see of a request
   (docs/API.md is the contract).

   The event loop (server.c) reads a request, authenticates its token,
   applies the rate limit and the idempotency store, matches a route, and
   hands the request to a worker thread (or runs an SRV_INLINE handler on
   the loop itself).  A handler calls the library as that token's tenant
   (srv_ctx) and answers with exactly one srv_reply_* or one stream
   (srv_stream_start … srv_stream_end).  Every srv_* function here may be
   called from the handler's thread; none touches libevent's request, which
   only the loop thread owns.  */
#ifndef RT_SERVE_SERVER_H
#define RT_SERVE_SERVER_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/context.h"
#include "serve/tokens.h"

/* A JSON body's limit, and a file body's (PUT files/content).  */
#define SRV_MAX_JSON_BODY (1u << 20)
#define SRV_MAX_FILE_BODY (1u << 20)
/* A body to a SRV_BIG_BODY route (archives, upload chunks); every other
   route's is at most SRV_MAX_JSON_BODY (serve/gate.h: refused 413 at the
   head, before any of it is read).  */
#define SRV_MAX_BODY (64u << 20)
/* A stream's writer waits while this much is queued for a slow client.  */
#define SRV_STREAM_HIGH (1u << 20)

struct srv_req;
typedef void (*srv_handler) (struct srv_req *r);

enum
{
  SRV_INLINE = 1 << 0,   /* quick and non-blocking: run on the loop thread */
  SRV_NO_AUTH = 1 << 1, /* answered without a token (none yet) */
  SRV_OWN_IDEM = 1 << 2, /* keeps Idempotency-Key itself (cluster/replica-routes.c) */
  SRV_BIG_BODY = 1 << 3, /* takes a body up to SRV_MAX_BODY, not SRV_MAX_JSON_BODY */
  SRV_SESSION = 1 << 4,  /* a session of its sandbox may use it (serve/sessions.h) */
  /* A GET upgraded to WebSocket (srv_ws_accept): its Upgrade headers are
     checked with its token, before the handler runs.  */
  SRV_WEBSOCKET = 1 << 5,
};

struct srv_route
{
  int method;          /* enum evhttp_cmd_type */
  const char *pattern; /* "/v1/sandboxes/{id}:exec": {name} is one path
                          segment up to '/' or ':' */
  srv_handler fn;
  unsigned flags;
};

struct srv;

/* The query parameters a route takes, as a space-separated list of
   names ("" takes none): one not listed is refused with 400
   invalid_request naming it, so a client's misspelt or unsupported
   filter is never silently ignored.  */
struct srv_query_names
{
  int method;
  const char *pattern; /* as in its srv_route */
  const char *names;
};

/* What a server serves: its route table (NULL-pattern terminated), and
   what runs around its life: @start before it listens (a failure ends
   it, nothing served), @stop once it stopped (also after a failed
   start: @data may be NULL).  The API of this machine's sandboxes
   (api/routes.c) and a replica over a cluster (cluster/replica.h) are
   the two.  */
struct srv_app
{
  const char *banner;  /* a line on stderr once listening, or NULL */
  const struct srv_route *routes;
  /* NULL-pattern terminated, or NULL; a route not in it is not checked.  */
  const struct srv_query_names *queries;
  int (*start) (struct srv *s, const rt_serve_opts *opts, void **data, rt_error **err);
  void (*stop) (void *data);
};

/* Answers @app's routes as rt_serve says (include/runtime.h) until SIGTERM
   or SIGINT.  */
int srv_run (rt_context *ctx, const rt_serve_opts *opts, const struct srv_app *app, rt_error **err);
/* The app data of the server answering @r (srv_app.start's).  */
void *srv_app_data (struct srv_req *r);

/* The request.  */
const char *srv_param (struct srv_req *r, const char *name);
const char *srv_query (struct srv_req *r, const char *name);
/* Every value of a repeatable query parameter, at most @max; their count.  */
size_t srv_query_all (struct srv_req *r, const char *name, const char **vals, size_t max);
const char *srv_header (struct srv_req *r, const char *name);
const char *srv_method (struct srv_req *r);
const char *srv_path (struct srv_req *r);
const char *srv_request_id (struct srv_req *r);
const struct rt_token_info *srv_token (struct srv_req *r);
/* True when the server answers over TLS.  */
bool srv_tls (struct srv_req *r);
/* A context acting as the token's tenant, made on first use and freed with
   the request; NULL after replying the error.  */
rt_context *srv_ctx (struct srv_req *r);
/* Another such context, the caller's (rt_context_free), for a thread of
   the handler's own that may outlive the request; refused for a request
   without a token: such a thread never acts as the host.  */
int srv_ctx_new (struct srv_req *r, rt_context **out, rt_error **err);
/* The live sandbox `{id}` names, the tenant's; NULL after replying the
   error (404 for anyone else's; 429 when the token spent its --max-cost,
   srv_quota_spend).  Close it with rt_sandbox_close.  */
rt_sandbox *srv_sandbox_open (struct srv_req *r);
const void *srv_body (struct srv_req *r, size_t *len);

/* A body field a route accepts: its name and JSON type (json_type_null:
   any type; json_type_double accepts integers too).  */
struct srv_field
{
  const char *name;
  json_type type;
};
/* The body as a JSON object whose fields are all in @fields (NULL-name
   terminated); NULL after replying 400 (naming every wrong field in
   details.issues) or 413.  The caller owns the object.  */
json_object *srv_body_json (struct srv_req *r, const struct srv_field *fields);
/* The same, the wrong fields added to @issues instead of answered, so that
   a route may add those of nested objects and answer them all at once
   (srv_reply_issues); NULL after replying a body that is no JSON object
   or is too large.  */
json_object *srv_body_json_into (struct srv_req *r, const struct srv_field *fields, json_object *issues);
/* The check srv_body_json_into makes, of a nested object @o: its wrong
   fields added to @issues, each path "@prefix.name" (the name alone
   without @prefix).  */
void srv_fields_check (json_object *o, const struct srv_field *fields, const char *prefix, json_object *issues);
/* Prefer: wait=N as N (0–120), or -1 when absent or malformed.  */
int srv_prefer_wait (struct srv_req *r);
/* The client has gone or the server is stopping: a stream should end.  */
bool srv_gone (struct srv_req *r);
bool srv_stopping (struct srv_req *r);

/* The token's limits (srv_token) for @sandboxes more sandboxes of @vcpu
   vCPUs in all, against what its tenant holds and the creates it has in
   progress: 0 and the reservation counted until srv_quota_release, or -1
   after replying 429 quota_exceeded (quota.c).  */
int srv_quota_reserve (struct srv_req *r, unsigned sandboxes, unsigned vcpu);
/* The same, but 1 with nothing replied nor reserved when a limit is
   reached (the caller may still answer without creating).  */
int srv_quota_try (struct srv_req *r, unsigned sandboxes, unsigned vcpu);
void srv_quota_release (struct srv_req *r, unsigned sandboxes, unsigned vcpu);
/* The token's --max-cost against what its tenant was charged in all: 0
   while under it, else -1 after replying 429 quota_exceeded as a create
   would (limit maxCostMicros).  For every verb that runs or wakes a
   sandbox (:wake, :extend, exec and every route that may wake it,
   srv_sandbox_open); :stop, :pause and DELETE stay open.  */
int srv_quota_spend (struct srv_req *r);
/* One more snapshot for the token: at most its max_snapshots
   (RT_TOKEN_DEFAULT_SNAPSHOTS when 0) with those being made; 0 and counted
   as being made until srv_quota_snapshot_done, or -1 after replying 429
   quota_exceeded.  */
int srv_quota_snapshot (struct srv_req *r);
void srv_quota_snapshot_done (struct srv_req *r);

/* Answers.  Exactly one per request; a handler that returns without one
   answers 500.  */
void srv_add_header (struct srv_req *r, const char *name, const char *value);
/* Takes ownership of @o.  */
void srv_reply_json (struct srv_req *r, int status, json_object *o);
/* The same, but what an Idempotency-Key keeps of it has @field null: a
   secret answered once (a session's token), never written to disk.  */
void srv_reply_json_once (struct srv_req *r, int status, json_object *o, const char *field);
/* @json is a serialized object or array (copied).  */
void srv_reply_json_text (struct srv_req *r, int status, const char *json);
void srv_reply_bytes (struct srv_req *r, int status, const char *ctype, const void *data, size_t len);
void srv_reply_error (struct srv_req *r, int status, const char *code, const char *hint, json_object *details,
                      const char *fmt, ...) RT_PRINTF (6, 7);
/* The library's error, its status from its code (srv_status_for).  */
void srv_reply_rt_error (struct srv_req *r, const rt_error *err);
int srv_status_for (const char *code);
/* {"data":[…],"nextCursor":…} of @items (a JSON array, owned) after
   `cursor` and up to `limit` (docs/API.md); 400 for a bad limit.  */
void srv_reply_page (struct srv_req *r, json_object *items);

/* Streams.  srv_stream_write blocks while SRV_STREAM_HIGH bytes wait for a
   slow client; <0 when the client has gone (stop then, and end).  */
int srv_stream_start (struct srv_req *r, int status, const char *ctype);
int srv_stream_write (struct srv_req *r, const void *data, size_t len);
/* One NDJSON line; takes ownership of @o.  */
int srv_stream_line (struct srv_req *r, json_object *o);
void srv_stream_end (struct srv_req *r);

/* WebSocket, on a SRV_WEBSOCKET route (serve/wsconn.c; frames:
   serve/ws.h).  srv_ws_accept answers 101 (before it, the handler may
   still answer an error as any route does); after it, only these.  -1
   when the client has gone, or the request came by another transport
   than HTTP (answered 400 then).  */
#define SRV_WS_MAX_MESSAGE ((1u << 20) + 64)
struct srv_ws_msg;
int srv_ws_accept (struct srv_req *r);
/* To poll() for POLLIN: the client sent something, or left.  */
int srv_ws_fd (struct srv_req *r);
/* The client's next text or binary message in @m (valid until the next
   call): 1; 0 when none is whole yet; -1 once the connection closes (a
   close from the client, answered; a client that broke the protocol,
   closed with the code it earned; gone).  Pings are answered here.  */
int srv_ws_read (struct srv_req *r, struct srv_ws_msg *m);
/* A message; blocks while SRV_STREAM_HIGH bytes wait for a slow client.  */
int srv_ws_send (struct srv_req *r, int opcode, const void *data, size_t len);
/* The close frame (@reason: at most 120 bytes of it go), and the
   connection's end once it is written.  Once only; later sends fail.  */
void srv_ws_close (struct srv_req *r, unsigned code, const char *reason);

#endif
