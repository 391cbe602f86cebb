/* gate.h - a connection's bytes looked at before evhttp reads them, so
   that a client without a token costs the server a few KiB and seconds,
   not a 64 MiB body and 300 s of an fd.

   libevent 2.1's evhttp has no hook between a server request's headers
   and its body: evhttp_request_set_header_cb is for requests a client
   makes, and a server's requests are made inside libevent's http.c
   (evhttp_associate_new_request_with_connection); only 2.2 has
   evhttp_set_newreqcb.  (A bufferevent filter in front of evhttp loses
   answers in 2.1: its output is not flushed when evhttp enables writing,
   and evhttp frees it with the answer still queued.)  So a callback on
   each connection's input buffer (srv_conn_bev made the bufferevent),
   run as bytes are read and before evhttp's read callback, takes them
   and holds a request's head until it is whole (at most SRV_GATE_MAX_HEAD
   bytes, within the header timeout), then gives it and exactly its
   Content-Length body back to evhttp, or, refusing it, gives instead a bodiless request of its own
   for "/.refused/N" with `Connection: close` and drops every later byte:
   evhttp answers that in order (after any request still being answered
   on the connection), srv_gate_answer makes it the JSON error, and the
   connection closes.  Refused at the head: a route that needs a token
   without a valid one (401), a Content-Length over the route's limit
   (413: SRV_MAX_JSON_BODY, SRV_MAX_BODY for SRV_BIG_BODY routes,
   SRV_GATE_TOKENLESS_BODY without a valid token, whose body must also
   come within the header timeout), a
   chunked body anywhere but a SRV_BIG_BODY route with a token (400; one
   there lets the rest of its connection through unlooked-at), and what
   evhttp and the gate might read differently (folded or NUL-holding
   lines, a Transfer-Encoding but chunked, a malformed Content-Length,
   400).

   A connection that has not yet shown a valid token counts against its
   source (an IPv4 address, an IPv6 /64).  One over SRV_MAX_UNAUTHED is on
   probation: its first head must come within SRV_PROBATION_MS and carry a
   valid token, else it is closed (a tokenless head answered 429 first).
   So a flood from one source holds an fd a second each, while a client
   opening many connections at once with its token loses none (100 from
   one address in tests/integration/serve/90-load.sh).  A head not whole
   SRV_HEADER_TIMEOUT_S after the connection (or its first byte, for a
   later request on it) closes the connection (RUNTIME_SERVE_HEADER_TIMEOUT,
   in seconds, sets another).
   Loop thread only.  */
#ifndef RT_SERVE_GATE_H
#define RT_SERVE_GATE_H

#include <event2/bufferevent.h>
#include <stdbool.h>

#define SRV_HEADER_TIMEOUT_S 10
#define SRV_MAX_UNAUTHED 32
#define SRV_PROBATION_MS 1000
#define SRV_GATE_MAX_HEAD (64u << 10)
/* The most body a request without a valid token may send (to a route
   that needs none, or to no route), within the header timeout.  */
#define SRV_GATE_TOKENLESS_BODY (4u << 10)

struct srv;
struct srv_req;
struct evhttp_connection;
/* The source table and the header timeout; <0 out of memory.  */
int srv_gate_setup (struct srv *s);
void srv_gate_free (struct srv *s);
/* Watches @bev, evhttp's bufferevent for a new connection (its fd not
   yet set); <0 out of memory.  */
int srv_gate_watch (struct srv *s, struct bufferevent *bev);
/* evhttp_connection_set_closecb for @evcon, whose own close callback is
   the gate's.  */
void srv_gate_set_close (struct srv *s, struct evhttp_connection *evcon,
                         void (*cb) (struct evhttp_connection *evcon, void *arg), void *arg);
/* @evcon's client speaks another protocol from here on (a WebSocket:
   serve/wsconn.c): every byte passes, held ones first, and the header
   timeout is off.  */
void srv_gate_open (struct srv *s, struct evhttp_connection *evcon);
/* A request the gate put in place of one it refused: answered (the JSON
   error) and true; false for any other.  */
bool srv_gate_answer (struct srv_req *r);

#endif
