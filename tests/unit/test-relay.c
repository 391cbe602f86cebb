/* test-relay.c - the orphans of net/relay.c: a closed TLS side still
   writing out what its filter encrypted.  Over socketpairs in one event
   base, no VM and no network: an orphan whose peer reads gets every byte
   then a clean end; past RT_PROXY_MAX_ORPHANS or RT_PROXY_MAX_ORPHAN_BYTES
   the bytes are dropped at once; one whose peer reads a byte now and then
   is ended at its deadline all the same.  Else a guest closing connections
   to its own slow server piles them up in the monitor without end.  */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/relay.h"
#include "tap.h"

#define MANY (RT_PROXY_MAX_ORPHANS + 36)

struct peer
{
  int fd;
  size_t sent; /* what the orphan had left when released */
};

static SSL_CTX *ctx;

static struct rt_proxy *
proxy_new (struct event_base *base, int deadline_s)
{
  struct rt_proxy *px = calloc (1, sizeof *px);

  if (px == NULL)
    abort ();
  px->base = base;
  px->orphan_deadline_s = deadline_s;
  LIST_INIT (&px->orphans);
  return px;
}

/* A TLS side (its handshake begun, never answered) with @payload more
   bytes queued on its socket, released with drain; @p keeps the peer's
   end, which reads nothing unless told.  */
static void
release_one (struct rt_proxy *px, size_t payload, struct peer *p)
{
  int sv[2], small = 4096;
  struct bufferevent *raw, *tls;
  char *junk = malloc (payload);

  if (junk == NULL || socketpair (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
    abort ();
  setsockopt (sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  setsockopt (sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  raw = bufferevent_socket_new (px->base, sv[0], BEV_OPT_CLOSE_ON_FREE);
  tls = raw ? bufferevent_openssl_filter_new (px->base, raw, SSL_new (ctx), BUFFEREVENT_SSL_CONNECTING, 0) : NULL;
  if (tls == NULL)
    abort ();
  memset (junk, 'x', payload);
  evbuffer_add (bufferevent_get_output (raw), junk, payload);
  free (junk);
  p->fd = sv[1];
  p->sent = evbuffer_get_length (bufferevent_get_output (raw));
  rt_relay_release (px, tls, true);
}

/* Reads what is there: the byte count, or -1 once the end (EOF or reset)
   is reached with *@total bytes in all.  */
static ssize_t
drain_peer (struct peer *p, size_t max, size_t *total)
{
  char buf[65536];
  size_t got = 0;

  while (got < max)
    {
      ssize_t n = recv (p->fd, buf, max - got < sizeof buf ? max - got : sizeof buf, MSG_DONTWAIT);
      if (n > 0)
        {
          got += n;
          *total += n;
          continue;
        }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return got;
      return -1;
    }
  return got;
}

/* ---- an orphan whose peer reads ----------------------------------------- */

struct reader
{
  struct peer *p;
  size_t total;
  bool ended, timed_out;
};

static void
give_up (evutil_socket_t fd, short what, void *arg)
{
  struct reader *r = arg;

  (void) fd;
  (void) what;
  r->timed_out = true;
}

static void
on_readable (evutil_socket_t fd, short what, void *arg)
{
  struct reader *r = arg;

  (void) fd;
  (void) what;
  if (drain_peer (r->p, SIZE_MAX, &r->total) < 0)
    r->ended = true;
}

static void
ordinary (struct event_base *base)
{
  struct rt_proxy *px = proxy_new (base, 0);
  struct peer p;
  struct reader r = { &p, 0, false, false };
  struct timeval limit = { 10, 0 };
  struct event *ev, *timer;

  release_one (px, 512 * 1024, &p);
  ok (px->n_orphans == 1, "an orphan with 512 KiB left is kept to write it out");
  ev = event_new (base, p.fd, EV_READ | EV_PERSIST, on_readable, &r);
  timer = evtimer_new (base, give_up, &r);
  event_add (ev, NULL);
  evtimer_add (timer, &limit);
  while (!r.ended && !r.timed_out)
    event_base_loop (base, EVLOOP_ONCE);
  event_free (ev);
  event_free (timer);
  ok (r.ended && r.total == p.sent, "its peer, reading, gets all %zu bytes then the end (got %zu)", p.sent, r.total);
  ok (px->n_orphans == 0 && px->orphan_bytes == 0, "the orphan is gone once written out");
  close (p.fd);
  rt_relay_orphans_free (px);
  free (px);
}

/* ---- a guest piling them up --------------------------------------------- */

static void
sip (evutil_socket_t fd, short what, void *arg)
{
  struct peer *peers = arg;
  size_t total = 0;

  (void) fd;
  (void) what;
  for (int i = 0; i < RT_PROXY_MAX_ORPHANS; i++)
    drain_peer (&peers[i], 1, &total);
}

static void
too_many (struct event_base *base)
{
  struct rt_proxy *px = proxy_new (base, 1);
  struct peer peers[MANY];
  struct timeval every = { 0, 200000 }, wait = { 2, 500000 };
  struct event *slow;
  size_t total;
  int kept_waiting = 0, dropped_ended = 0, cut = 0;

  for (int i = 0; i < MANY; i++)
    release_one (px, 16 * 1024, &peers[i]);
  ok (px->n_orphans == RT_PROXY_MAX_ORPHANS, "%d connections closed by the guest: %zu orphans kept (cap %d)", MANY,
      px->n_orphans, RT_PROXY_MAX_ORPHANS);
  /* libevent closes a freed bufferevent's socket from the loop.  */
  event_base_loop (base, EVLOOP_NONBLOCK);
  for (int i = 0; i < MANY; i++)
    {
      total = 0;
      ssize_t n = drain_peer (&peers[i], SIZE_MAX, &total);
      if (i < RT_PROXY_MAX_ORPHANS)
        kept_waiting += n >= 0;
      else
        dropped_ended += n < 0 && total == 0;
    }
  ok (kept_waiting == RT_PROXY_MAX_ORPHANS, "the kept ones are still writing (%d)", kept_waiting);
  ok (dropped_ended == MANY - RT_PROXY_MAX_ORPHANS, "past the cap, the bytes are dropped and the socket closed (%d)",
      dropped_ended);

  /* Their peers read one byte every 200 ms: progress, which the idle
     timeout (DIAL_TIMEOUT_S) would let live; the deadline does not.  */
  slow = event_new (base, -1, EV_PERSIST, sip, peers);
  event_add (slow, &every);
  event_base_loopexit (base, &wait);
  event_base_dispatch (base);
  event_free (slow);
  ok (px->n_orphans == 0 && px->orphan_bytes == 0, "past their deadline (1 s here) they are all freed, 2.5 s in");
  for (int i = 0; i < RT_PROXY_MAX_ORPHANS; i++)
    {
      total = 0;
      cut += drain_peer (&peers[i], SIZE_MAX, &total) < 0 && total < peers[i].sent;
    }
  ok (cut == RT_PROXY_MAX_ORPHANS, "each slow reader sees its stream end short (%d)", cut);
  for (int i = 0; i < MANY; i++)
    close (peers[i].fd);
  free (px);
}

static void
too_big (struct event_base *base)
{
  struct rt_proxy *px = proxy_new (base, 0);
  struct peer peers[6];
  size_t held = 0;

  for (int i = 0; i < 6; i++)
    release_one (px, 1024 * 1024 + 1, &peers[i]);
  held = px->orphan_bytes;
  ok (px->n_orphans == 3 && held <= RT_PROXY_MAX_ORPHAN_BYTES,
      "six orphans of 1 MiB and a byte: %zu kept, %zu bytes held (cap %d)", px->n_orphans, held,
      RT_PROXY_MAX_ORPHAN_BYTES);
  rt_relay_orphans_free (px);
  ok (px->n_orphans == 0 && px->orphan_bytes == 0, "the proxy's end frees them all");
  for (int i = 0; i < 6; i++)
    close (peers[i].fd);
  free (px);
}

int
main (void)
{
  struct event_base *base = event_base_new ();

  ctx = SSL_CTX_new (TLS_client_method ());
  if (base == NULL || ctx == NULL)
    abort ();
  ordinary (base);
  too_many (base);
  too_big (base);
  SSL_CTX_free (ctx);
  event_base_free (base);
  return tap_done ();
}
