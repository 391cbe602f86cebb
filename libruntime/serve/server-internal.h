/* server-internal.h - the server and a request as server.c, request.c and
   idem.c share them (route handlers see only serve/server.h).  */
#ifndef RT_SERVE_SERVER_INTERNAL_H
#define RT_SERVE_SERVER_INTERNAL_H

#include <event2/event.h>
#include <event2/http.h>
#include <sys/queue.h>

#include <event2/keyvalq_struct.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <time.h>

#include "serve/idem.h"
#include "serve/server.h"
#include "serve/sessions.h"
#include "serve/ws.h"

#define SRV_MAX_PARAMS 4
/* Requests queued or answered by worker threads at once (and threads);
   more are answered 503.  */
#define SRV_MAX_WORKERS 512
#define SRV_MAX_BUCKETS 1024

/* Requests of one token being answered (or waiting for their key's first
   answer) at once; more are answered 429, so one token cannot hold every
   worker.  */
#define SRV_MAX_INFLIGHT 64

struct srv_bucket
{
  char name[33];
  unsigned inflight;
  double tokens;
  double last_s;
};

/* A tenant's sandbox creates and snapshots in progress (quota.c): not yet in the
   library's usage, counted so concurrent creates do not overshoot.  */
struct srv_pending
{
  char name[33];
  unsigned sandboxes, vcpu, snapshots;
};

struct srv
{
  rt_context *ctx; /* the host's view: the loop thread's own */
  const struct srv_app *app;      /* what it serves: routes, hooks */
  void *app_data;                 /* app->start's, for app->stop */
  struct event_base *base;
  struct evhttp *http;
  SSL_CTX *ssl;
  struct rt_tokens *tokens;
  struct srv_sessions *sessions; /* sessions.c */
  struct srv_idem *idem;
  struct evhttp_bound_socket *bound;
  struct event *sigterm, *sigint, *stop_timer, *sweep_timer;
  struct event *spend_timer; /* spend.c: tenants at their --max-cost paused */
  double stop_deadline;
  struct srv_req *waiters; /* for the first answer to their key */
  unsigned serial;          /* of request ids */
  struct event *accept_timer; /* conns.c: fds short, accepting paused */
  unsigned fd_limit;
  bool accept_paused;
  struct srv_gates *gates; /* gate.c: connections, and unauthorised ones per source */
  unsigned header_timeout_s;
  uint32_t seed;
  struct srv_bucket buckets[SRV_MAX_BUCKETS];
  size_t nbuckets;
  pthread_mutex_t mu; /* from here to `pending` */
  pthread_cond_t idle; /* a request or a thread ended */
  pthread_cond_t work; /* a request was queued */
  struct srv_req *queue, *queue_tail;
  unsigned workers;  /* requests queued or running */
  unsigned nthreads; /* worker threads */
  unsigned nidle;    /* of them waiting for work */
  unsigned nqueued;  /* requests in the queue */
  bool stopping, exiting;
  bool sweeping;                               /* a sweep thread runs (sweep.c) */
  bool spending;                               /* a spend round runs (spend.c) */
  struct srv_pending pending[SRV_MAX_BUCKETS]; /* creates in progress, per tenant */
};

struct srv_req
{
  struct srv *srv;
  /* Loop thread only: NULL once the request is answered or its client
     gone.  */
  struct evhttp_request *req;
  struct event *wake; /* a worker wakes the loop to flush */
  struct event *peer; /* loop thread: the client's end closing (EV_CLOSED) */
  pthread_mutex_t mu; /* everything from here to `request` */
  pthread_cond_t cond;
  int refs;
  bool gone;     /* client left (or never answered: closing) */
  bool timed_out; /* gone since deadline_ms passed */
  bool whole;    /* a whole answer waits in out */
  bool started;  /* a stream's head waits or went */
  bool ended;    /* a stream's end waits or went */
  int status;
  char *ctype;
  struct evkeyvalq out_headers;
  struct evbuffer *out;
  size_t inflight; /* handed to evhttp, not yet written */
  /* Loop thread only.  */
  bool start_sent, end_sent, loop_ref, logged, waiting_idem;
  struct srv_req *next_waiter;
  struct srv_req *next_queued; /* under srv->mu */

  /* The request, read on the loop thread before the handler runs.  */
  int method;
  char *path;
  struct evkeyvalq query;
  struct evkeyvalq headers;
  unsigned char *body;
  size_t body_len;
  char *pnames[SRV_MAX_PARAMS], *pvals[SRV_MAX_PARAMS];
  size_t nparams;
  const struct srv_route *route;
  struct rt_token_info token;
  bool authed;
  bool session;             /* authed by a session (sess), acting as its token */
  struct srv_session sess;
  char idem_owner[72]; /* a session's: its Idempotency-Keys are its own, not its token's */
  struct srv_bucket *bucket; /* loop thread: its token's, while in flight */
  char request_id[72];
  uint64_t t0_ms; /* CLOCK_MONOTONIC: its start */
  rt_context *ctx;
  char *idem_id;        /* the stored answer's id, when kept */
  char body_sha[65];

  /* Another transport than evhttp (cluster/nats.c): called instead of
     waking the loop whenever a handler queued something (a whole answer,
     a stream's start, bytes, its end), on the handler's thread, without
     r->mu held.  */
  void (*on_answer) (struct srv_req *r);
  void *transport;
  /* CLOCK_MONOTONIC ms after which the request counts as gone (srv_gone),
     0 for none: a transport without a client that can leave (nats.c).  */
  uint64_t deadline_ms;
  void (*transport_free) (void *transport); /* with the request */

  /* WebSocket (wsconn.c), from srv_ws_accept on: under mu but ws_rd (the
     handler's) and ws_accept (set before the handler runs).  */
  bool ws;            /* accepted: the loop takes the connection over */
  bool ws_closed;     /* our close frame queued */
  bool ws_paused;     /* loop: reading stopped, ws_in full */
  bool ws_up;         /* loop only: the connection is taken over */
  unsigned ws_idle;   /* loop: read timeouts in a row (a ping each) */
  int ws_efd;         /* eventfd: bytes in ws_in, or gone */
  struct evbuffer *ws_in; /* read, for the handler */
  struct srv_ws_reader ws_rd;
  char ws_accept[SRV_WS_ACCEPT_LEN + 1];
};

/* server.c: a server's common part (its locks, request id seed, @ctx),
   and its end (what it has of libevent, tokens, idempotency store).  */
struct srv *srv_alloc (rt_context *ctx);
void srv_free (struct srv *s);
/* The route for the request (its params filled), NULL after
   answering 404 or 405; its Bearer token checked, false after answering
   401; r->request_id from x-request-id when sane, else a new one.  */
const struct srv_route *srv_find_route (struct srv_req *r);
/* Whether every query parameter of @r is one its route takes (its app's
   queries); else answers 400 and returns false.  */
bool srv_query_known (struct srv_req *r);
bool srv_authenticate (struct srv_req *r);
/* The route of @routes for @method on @path, its params not kept; NULL
   for none (gate.c looks before a request is made).  */
const struct srv_route *srv_route_lookup (const struct srv_route *routes, int method, const char *path);
void srv_set_request_id (struct srv_req *r);
/* The loop lets go of a request that is answered or whose client left
   (logged with @status).  */
void srv_loop_release (struct srv_req *r, int status);
/* wsconn.c: a SRV_WEBSOCKET request's Upgrade headers, checked on the
   loop before it is dispatched; false after answering 400 or 426.  The
   loop's side of an accepted one: srv_req_flush calls srv_ws_flush.  */
bool srv_ws_check (struct srv_req *r);
void srv_ws_flush (struct srv_req *r);

/* request.c; a request of a server without an event base (cluster/nats.c)
   has no wake event and needs on_answer.  */
struct srv_req *srv_req_new (struct srv *s, struct evhttp_request *req);
void srv_req_unref (struct srv_req *r);
/* The loop's side: send what a handler queued.  */
void srv_req_flush (struct srv_req *r);
void srv_req_wake (struct srv_req *r);
const char *srv_method_name (int method);
/* The evhttp_cmd_type of "GET", "POST"…, or -1.  */
int srv_method_code (const char *name);

#endif
