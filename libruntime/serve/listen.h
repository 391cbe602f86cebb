/* listen.h - where `runtime serve` listens: the listening socket (plain
   HTTP only on a loopback address) and its TLS.  */
#ifndef RT_SERVE_LISTEN_H
#define RT_SERVE_LISTEN_H

#include <event2/bufferevent.h>
#include <openssl/ssl.h>
#include <stdbool.h>

#include "runtime.h"

/* A listening socket for opts->listen (printing "listening on URL"); an
   address other than loopback only with @tls.  */
int srv_listen (const rt_serve_opts *opts, bool tls, int *fd, rt_error **err);
/* The server's TLS context from opts->tls_cert and opts->tls_key.  */
SSL_CTX *srv_tls_context (const rt_serve_opts *opts, rt_error **err);
/* evhttp's bufferevent maker for TLS connections (@arg the SSL_CTX).  */
struct bufferevent *srv_tls_bev (struct event_base *base, void *arg);

#endif
