/* conns.c - the listener paused while fds run short (see conns.h).  */
#include <errno.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "serve/conns.h"
#include "serve/gate.h"
#include "serve/listen.h"
#include "serve/server-internal.h"

static struct evconnlistener *
listener_of (struct srv *s)
{
  return s->bound ? evhttp_bound_socket_get_listener (s->bound) : NULL;
}

/* Fewer than SRV_FD_RESERVE fds are free: the lowest free one (where the
   next fd goes) is that close to the limit.  */
static bool
fds_short (struct srv *s, struct evconnlistener *l)
{
  int probe = fcntl (evconnlistener_get_fd (l), F_DUPFD_CLOEXEC, 0);

  if (probe < 0)
    return true;
  close (probe);
  return (unsigned) probe + SRV_FD_RESERVE >= s->fd_limit;
}

static void
pause_accepting (struct srv *s, struct evconnlistener *l)
{
  static const struct timeval again = { 1, 0 };

  if (s->accept_paused)
    return;
  s->accept_paused = true;
  evconnlistener_disable (l);
  evtimer_add (s->accept_timer, &again);
  fprintf (stderr, "runtime serve: few fds left (limit %u): not accepting connections for now\n", s->fd_limit);
}

static void
on_accept_tick (evutil_socket_t fd, short what, void *arg)
{
  static const struct timeval again = { 1, 0 };
  struct srv *s = arg;
  struct evconnlistener *l = listener_of (s);

  (void) fd;
  (void) what;
  if (l == NULL)
    return;
  if (fds_short (s, l))
    {
      evtimer_add (s->accept_timer, &again);
      return;
    }
  s->accept_paused = false;
  evconnlistener_enable (l);
}

static void
on_accept_error (struct evconnlistener *l, void *arg)
{
  struct srv *s = arg;
  int e = errno;

  if (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM)
    pause_accepting (s, l);
}

int
srv_conns_setup (struct srv *s)
{
  struct evconnlistener *l = listener_of (s);
  struct rlimit rl;

  s->fd_limit = getrlimit (RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (1u << 30) ? (unsigned) rl.rlim_cur : 1u << 30;
  s->accept_timer = evtimer_new (s->base, on_accept_tick, s);
  if (l == NULL || s->accept_timer == NULL)
    return -1;
  evconnlistener_set_error_cb (l, on_accept_error);
  return 0;
}

struct bufferevent *
srv_conn_bev (struct event_base *base, void *arg)
{
  struct srv *s = arg;
  struct evconnlistener *l = listener_of (s);
  struct bufferevent *bev;

  if (l && !s->accept_paused && fds_short (s, l))
    pause_accepting (s, l);
  /* Plain: as evhttp makes its own (libevent's http.c,
     evhttp_connection_base_bufferevent_new).  */
  bev = s->ssl ? srv_tls_bev (base, s->ssl) : bufferevent_socket_new (base, -1, 0);
  if (bev && srv_gate_watch (s, bev) < 0)
    {
      bufferevent_free (bev);
      bev = NULL;
    }
  return bev;
}
