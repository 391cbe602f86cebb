/* conns.h - fds kept for the server's work under a flood of connections.
   libevent 2.1's evhttp has no cap on connections, and its listener, out
   of fds (EMFILE), warns and retries at once, forever.  Here the listener
   pauses (new clients wait in the kernel's backlog) while fewer than
   SRV_FD_RESERVE fds below the process's limit (RLIMIT_NOFILE) are free,
   and looks again every second.  Loop thread only.  */
#ifndef RT_SERVE_CONNS_H
#define RT_SERVE_CONNS_H

#include <event2/bufferevent.h>

/* Fds kept for the requests' work (sandboxes' sockets, files, pipes).  */
#define SRV_FD_RESERVE 256

struct srv;
/* Sets the limit, the listener's error callback and the timer.  */
int srv_conns_setup (struct srv *s);
/* evhttp's bufferevent maker (@arg the server): pauses the listener when
   fds run short; a TLS or plain socket's bufferevent, watched by the
   gate (gate.h).  */
struct bufferevent *srv_conn_bev (struct event_base *base, void *arg);

#endif
