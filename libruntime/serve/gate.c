/* gate.c - a connection's request heads looked at before evhttp reads
   them: the token, the body's size, the header timeout, the cap per
   source (see gate.h).  */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "serve/gate.h"
#include "serve/server-internal.h"

#define REFUSED "/.refused/"
#define SOURCE_BUCKETS 1024
#define GATE_BUCKETS 4096

static const struct timeval now = { 0, 0 };

/* Why a head was refused: the path's number in the request put in its
   place.  */
enum
{
  R_HEAD,
  R_NO_TOKEN,
  R_BAD_TOKEN,
  R_METHOD,
  R_CHUNKED,
  R_TOO_LARGE,
  R_CROWDED,
  R_COUNT,
};

static const struct refusal
{
  int status;
  const char *code, *hint, *msg;
} refusals[R_COUNT] = {
  [R_HEAD] = { 400, "invalid_request", "send HTTP/1.1 lines, each header once unfolded, Content-Length as digits",
               "the request's head could not be read" },
  [R_NO_TOKEN] = { 401, "unauthorized", "send Authorization: Bearer <token> (runtime token create)", "no token given" },
  [R_BAD_TOKEN]
  = { 401, "unauthorized", "send Authorization: Bearer <token> (runtime token create)", "the token is not valid" },
  [R_METHOD] = { 405, "method_not_allowed", "see docs/API.md", "this method is not served" },
  [R_CHUNKED] = { 400, "invalid_request", "send Content-Length (a chunked body only to uploads and archives)",
                  "a chunked body is refused here" },
  [R_TOO_LARGE] = { 413, "payload_too_large", "POST …/uploads takes larger files in chunks",
                    "the body is over this route's limit: 1 MiB (64 MiB to uploads and archives)" },
  [R_CROWDED] = { 429, "rate_limited", "send the token, or open fewer connections at once",
                  "this address has too many connections without a token" },
};

struct source
{
  unsigned char key[16];
  unsigned n; /* its connections not yet authorised */
  bool warned;
  struct source *next;
};

enum gate_state
{
  G_HEAD,  /* a request's head awaited */
  G_BODY,  /* its body passing */
  G_OPEN,  /* after a chunked body: everything passes */
  G_DROP,  /* refused: evhttp answers and closes, the rest is dropped */
  G_CLOSE, /* to close at once (the timer) */
};

struct gate
{
  struct srv *srv;
  struct bufferevent *bev;         /* evhttp's, one reference ours */
  struct evhttp_connection *evcon; /* once evhttp made it */
  struct evbuffer_cb_entry *cb;    /* on bev's input */
  struct evbuffer *hold;           /* read, not yet given to evhttp */
  struct event *timer;             /* admission at once, then the header timeout */
  enum gate_state state;
  bool admitted, timing, giving;
  bool probation;     /* over its source's cap: a token in its first head, soon */
  struct source *src; /* counted in it while not authorised */
  size_t scan;        /* of the head: bytes looked at for its end */
  size_t left;        /* G_BODY: bytes still to give */
  /* The server's own close callback of the connection (on_close).  */
  void (*on_close) (struct evhttp_connection *evcon, void *arg);
  void *close_arg;
  struct gate *next; /* in its bucket of gates */
};

struct srv_gates
{
  struct source *sources[SOURCE_BUCKETS];
  struct gate *gates[GATE_BUCKETS]; /* by evcon */
};

int
srv_gate_setup (struct srv *s)
{
  const char *t = getenv ("RUNTIME_SERVE_HEADER_TIMEOUT");
  long v = t ? strtol (t, NULL, 10) : 0;

  s->header_timeout_s = v >= 1 && v <= 300 ? (unsigned) v : SRV_HEADER_TIMEOUT_S;
  s->gates = calloc (1, sizeof *s->gates);
  return s->gates ? 0 : -1;
}

void
srv_gate_free (struct srv *s)
{
  if (s->gates == NULL)
    return;
  for (size_t i = 0; i < SOURCE_BUCKETS; i++)
    for (struct source *e = s->gates->sources[i], *next; e; e = next)
      {
        next = e->next;
        free (e);
      }
  free (s->gates);
  s->gates = NULL;
}

/* The peer's source: an IPv4 address (also when v4-mapped), an IPv6 /64
   (one host often holds all of one).  */
static bool
source_key (int fd, unsigned char key[16])
{
  struct sockaddr_storage ss;
  socklen_t len = sizeof ss;

  memset (key, 0, 16);
  if (fd < 0 || getpeername (fd, (struct sockaddr *) &ss, &len) < 0)
    return false;
  if (ss.ss_family == AF_INET)
    {
      key[10] = key[11] = 0xff;
      memcpy (key + 12, &((struct sockaddr_in *) &ss)->sin_addr, 4);
      return true;
    }
  if (ss.ss_family != AF_INET6)
    return false;
  memcpy (key, &((struct sockaddr_in6 *) &ss)->sin6_addr, 16);
  if (!IN6_IS_ADDR_V4MAPPED ((struct in6_addr *) key))
    memset (key + 8, 0, 8);
  return true;
}

static struct source **
source_slot (struct srv *s, const unsigned char key[16])
{
  uint32_t h = 2166136261u ^ s->seed;
  struct source **pp;

  for (int i = 0; i < 16; i++)
    h = (h ^ key[i]) * 16777619u;
  for (pp = &s->gates->sources[h % SOURCE_BUCKETS]; *pp && memcmp ((*pp)->key, key, 16) != 0; pp = &(*pp)->next)
    ;
  return pp;
}

/* The connection no longer counts against its source.  */
static void
uncount (struct gate *g)
{
  struct source *e = g->src, **pp;

  if (e == NULL)
    return;
  g->src = NULL;
  if (--e->n > 0)
    return;
  pp = source_slot (g->srv, e->key);
  *pp = e->next;
  free (e);
}

/* Counts the new connection against its source, or, when that has
   SRV_MAX_UNAUTHED already, puts it on probation; false when the peer
   cannot be told.  */
static bool
admit (struct gate *g)
{
  unsigned char key[16];
  struct source **pp, *e;
  char shown[INET6_ADDRSTRLEN];

  g->admitted = true;
  if (!source_key (bufferevent_getfd (g->bev), key))
    return false;
  pp = source_slot (g->srv, key);
  if ((e = *pp) == NULL)
    {
      if ((e = *pp = calloc (1, sizeof *e)) == NULL)
        return false;
      memcpy (e->key, key, 16);
    }
  if (e->n >= SRV_MAX_UNAUTHED)
    {
      if (!e->warned)
        fprintf (stderr, "runtime serve: %s has %u connections without a token: its new ones must send one at once\n",
                 inet_ntop (AF_INET6, key, shown, sizeof shown) ? shown : "a source", e->n);
      e->warned = true;
      g->probation = true;
      return true;
    }
  e->n++;
  g->src = e;
  return true;
}

static struct gate **
gate_slot (struct srv *s, const struct evhttp_connection *evcon)
{
  struct gate **pp = &s->gates->gates[((uintptr_t) evcon >> 4) % GATE_BUCKETS];

  while (*pp && (*pp)->evcon != evcon)
    pp = &(*pp)->next;
  return pp;
}

/* The gate goes, with its connection (or before evhttp kept it).  */
static void
gate_end (struct gate *g)
{
  if (g->evcon)
    *gate_slot (g->srv, g->evcon) = g->next;
  uncount (g);
  evbuffer_remove_cb_entry (bufferevent_get_input (g->bev), g->cb);
  bufferevent_decref (g->bev);
  event_free (g->timer);
  evbuffer_free (g->hold);
  free (g);
}

static void
on_conn_close (struct evhttp_connection *evcon, void *arg)
{
  struct gate *g = arg;

  if (g->on_close)
    g->on_close (evcon, g->close_arg);
  gate_end (g);
}

/* Its evhttp connection (the argument of the bufferevent's callbacks,
   set by libevent's http.c once srv_conn_bev returned): false when evhttp
   has freed it already (callbacks cleared), and the gate ended.  */
static bool
gate_bind (struct gate *g)
{
  bufferevent_data_cb rd = NULL;
  void *arg = NULL;
  struct gate **pp;

  if (g->evcon)
    return true;
  bufferevent_getcb (g->bev, &rd, NULL, NULL, &arg);
  if (rd == NULL || arg == NULL)
    {
      gate_end (g);
      return false;
    }
  g->evcon = arg;
  pp = gate_slot (g->srv, g->evcon);
  g->next = *pp;
  *pp = g;
  evhttp_connection_set_closecb (g->evcon, on_conn_close, g);
  return true;
}

/* The time a head has: SRV_PROBATION_MS on probation.  */
static struct timeval
head_time (const struct gate *g)
{
  if (g->probation)
    return (struct timeval){ SRV_PROBATION_MS / 1000, SRV_PROBATION_MS % 1000 * 1000 };
  return (struct timeval){ g->srv->header_timeout_s, 0 };
}

static void
on_timer (evutil_socket_t fd, short what, void *arg)
{
  struct gate *g = arg;
  struct timeval tv;

  (void) fd;
  (void) what;
  if (!gate_bind (g))
    return;
  if (!g->admitted && g->state == G_HEAD && admit (g))
    {
      tv = head_time (g);
      g->timing = true;
      evtimer_add (g->timer, &tv);
      return;
    }
  /* Its source unknown, or a head not whole in time: evhttp frees the
     connection as if its client had gone (and the gate with it).  */
  g->state = G_CLOSE;
  bufferevent_trigger_event (g->bev, BEV_EVENT_EOF | BEV_EVENT_READING, 0);
}

/* Where the head in @src ends (past its empty line), 0 while it does not
   yet; g->scan keeps where to look again (each byte looked at about once,
   however slowly the head comes).  */
static size_t
head_end (struct gate *g, struct evbuffer *src)
{
  size_t len = evbuffer_get_length (src), at, avail;
  struct evbuffer_ptr p;
  char next[2];

  if (evbuffer_ptr_set (src, &p, g->scan, EVBUFFER_PTR_SET) < 0)
    return 0;
  for (;;)
    {
      p = evbuffer_search (src, "\n", 1, &p);
      if (p.pos < 0)
        {
          g->scan = len;
          return 0;
        }
      g->scan = at = (size_t) p.pos;
      avail = len - at - 1;
      if (avail == 0 || evbuffer_ptr_set (src, &p, 1, EVBUFFER_PTR_ADD) < 0
          || evbuffer_copyout_from (src, &p, next, avail < 2 ? avail : 2) < 1)
        return 0;
      if (next[0] == '\n')
        return at + 2;
      if (next[0] == '\r' && avail < 2)
        return 0;
      if (next[0] == '\r' && next[1] == '\n')
        return at + 3;
    }
}

/* What the gate reads of a head; the first of each header, as evhttp's
   evhttp_find_header.  */
struct head
{
  char *method, *target;
  const char *auth, *length, *te;
  bool bad;
};

static void
head_field (struct head *h, char *line)
{
  char *colon = strchr (line, ':'), *v, *end;

  if (*line == ' ' || *line == '\t' || colon == NULL || colon == line)
    {
      h->bad = true; /* folded, or no name */
      return;
    }
  *colon = '\0';
  for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
    ;
  for (end = v + strlen (v); end > v && (end[-1] == ' ' || end[-1] == '\t'); end--)
    ;
  *end = '\0';
  if (strcasecmp (line, "Authorization") == 0 && h->auth == NULL)
    h->auth = v;
  else if (strcasecmp (line, "Content-Length") == 0)
    {
      /* Twice: evhttp takes the first, a proxy in front may the last.  */
      h->bad |= h->length != NULL;
      h->length = v;
    }
  else if (strcasecmp (line, "Transfer-Encoding") == 0)
    {
      h->bad |= h->te != NULL;
      h->te = v;
    }
}

/* @blk: the head, NUL-terminated, cut in place.  */
static void
head_parse (struct head *h, char *blk)
{
  char *line, *save = NULL, *version;
  bool first = true;

  for (line = strtok_r (blk, "\n", &save); line && !h->bad; line = strtok_r (NULL, "\n", &save))
    {
      size_t n = strlen (line);

      if (n && line[n - 1] == '\r')
        line[--n] = '\0';
      if (n == 0)
        break;
      if (!first)
        {
          head_field (h, line);
          continue;
        }
      first = false;
      h->method = line;
      h->target = strchr (line, ' ');
      version = h->target ? strchr (h->target + 1, ' ') : NULL;
      if (version == NULL || strchr (version + 1, ' ') || strncmp (version + 1, "HTTP/1.", 7) != 0)
        h->bad = true;
      else
        {
          *h->target++ = '\0';
          *version = '\0';
        }
    }
  h->bad |= h->method == NULL;
}

/* The body's length as evhttp will read it (none for HEAD, whatever its
   Content-Length); -1 when the gate and evhttp might disagree.  */
static long long
body_length (const struct head *h, int method)
{
  size_t n = h->length ? strlen (h->length) : 0;

  if (method == EVHTTP_REQ_HEAD || h->length == NULL)
    return 0;
  if (n == 0 || n > 18 || strspn (h->length, "0123456789") != n)
    return -1;
  return strtoll (h->length, NULL, 10);
}

/* The refusal (R_*) of the head in @blk, or -1 to pass it; *@body its
   body's length, *@open when the rest of the connection is to pass.  */
static int
judge (struct gate *g, char *blk, size_t *body, bool *open, bool *authed_out)
{
  struct head h = { 0 };
  struct evhttp_uri *uri = NULL;
  const struct srv_route *rt;
  struct rt_token_info info;
  struct srv_session ss;
  const char *bearer;
  bool authed, big;
  int sess;
  long long n;
  int method;

  head_parse (&h, blk);
  if (h.bad || (uri = evhttp_uri_parse_with_flags (h.target, EVHTTP_URI_NONCONFORMANT)) == NULL)
    return R_HEAD;
  method = srv_method_code (h.method);
  rt = method < 0 ? NULL
                  : srv_route_lookup (g->srv->app->routes, method,
                                      evhttp_uri_get_path (uri) ? evhttp_uri_get_path (uri) : "/");
  evhttp_uri_free (uri);
  if (method < 0)
    return R_METHOD;
  /* An active session counts as a token here; what it may reach is
     srv_session_admit's to say, once the request is read.  One that
     ended passes as a tokenless request does (a small body, timed), so
     that its 401 carries its page's CORS (sessions.h).  */
  bearer = h.auth && strncasecmp (h.auth, "Bearer ", 7) == 0 ? h.auth + 7 : NULL;
  authed = bearer && rt_tokens_check (g->srv->tokens, bearer, &info) == 1;
  sess = bearer && !authed ? srv_sessions_check (g->srv, bearer, &ss) : 0;
  authed |= sess == 1;
  if (g->probation && !authed)
    return R_CROWDED;
  g->probation = false;
  if (rt && !(rt->flags & SRV_NO_AUTH) && !authed && sess != -1)
    return h.auth ? R_BAD_TOKEN : R_NO_TOKEN;
  *authed_out = authed;
  if (authed)
    uncount (g);
  big = rt && (rt->flags & SRV_BIG_BODY);
  if (h.te)
    {
      if (strcasecmp (h.te, "chunked") != 0 || h.length)
        return R_HEAD;
      if (!big || !authed)
        return R_CHUNKED;
      *open = true;
      return -1;
    }
  if ((n = body_length (&h, method)) < 0)
    return R_HEAD;
  if ((unsigned long long) n > (!authed ? SRV_GATE_TOKENLESS_BODY : big ? SRV_MAX_BODY : SRV_MAX_JSON_BODY))
    return R_TOO_LARGE;
  *body = (size_t) n;
  return -1;
}

/* The head in g->hold (@end bytes) given to evhttp (@in), or a request
   of the gate's own in its place.  */
static void
look (struct gate *g, struct evbuffer *in, size_t end)
{
  const char *p = end ? (const char *) evbuffer_pullup (g->hold, (ev_ssize_t) end) : NULL;
  cleanup_free char *blk = p && !memchr (p, '\0', end) ? strndup (p, end) : NULL;
  size_t body = 0;
  bool open = false, authed = false;
  int why = blk ? judge (g, blk, &body, &open, &authed) : R_HEAD;
  struct timeval tv = head_time (g);

  g->scan = 0;
  g->timing = false;
  evtimer_del (g->timer);
  if (why >= 0)
    {
      evbuffer_drain (g->hold, evbuffer_get_length (g->hold));
      evbuffer_add_printf (in, "GET " REFUSED "%d HTTP/1.1\r\nConnection: close\r\n\r\n", why);
      g->state = G_DROP;
      return;
    }
  evbuffer_remove_buffer (g->hold, in, end);
  g->left = body;
  g->state = open ? G_OPEN : body ? G_BODY : G_HEAD;
  /* A tokenless body (an unknown route's, health's) is timed as a head
     is: dribbled, it would hold its fd and its bytes for the idle timeout.  */
  if (!authed && body)
    {
      g->timing = true;
      evtimer_add (g->timer, &tv);
    }
}

/* Empty lines before a request line are ignored (RFC 9112, 2.2), not
   taken for an empty head.  */
static void
skip_empty_lines (struct gate *g)
{
  unsigned char c;

  while (g->scan == 0 && evbuffer_copyout (g->hold, &c, 1) == 1 && (c == '\r' || c == '\n'))
    evbuffer_drain (g->hold, 1);
}

/* What g->hold has that may go to evhttp goes.  */
static void
give (struct gate *g, struct evbuffer *in)
{
  struct timeval tv = head_time (g);
  size_t len, end;

  while ((len = evbuffer_get_length (g->hold)) > 0)
    {
      if (g->state == G_OPEN)
        evbuffer_add_buffer (in, g->hold);
      else if (g->state == G_DROP || g->state == G_CLOSE)
        evbuffer_drain (g->hold, len);
      else if (g->state == G_BODY)
        {
          size_t n = len < g->left ? len : g->left;
          evbuffer_remove_buffer (g->hold, in, n);
          if ((g->left -= n) == 0)
            {
              g->state = G_HEAD;
              g->timing = false;
              evtimer_del (g->timer);
            }
        }
      else if (skip_empty_lines (g), evbuffer_get_length (g->hold) == 0)
        break;
      else if ((end = head_end (g, g->hold)) > 0)
        look (g, in, end);
      else
        {
          /* A head too long for evhttp too (evhttp_set_max_headers_size).  */
          if (g->scan >= SRV_GATE_MAX_HEAD)
            look (g, in, 0);
          else if (!g->timing)
            {
              g->timing = true;
              evtimer_add (g->timer, &tv);
            }
          break;
        }
    }
}

/* Bytes were read into evhttp's input (@in): those new ones are taken
   into g->hold (what is before them the gate gave already and evhttp has
   not read yet), and what may go goes back.  This runs inside the read,
   before evhttp's read callback (libevent's bufferevent_sock.c,
   bufferevent_readcb).  */
static void
on_input (struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg)
{
  struct gate *g = arg;
  struct evbuffer *given;

  if (g->giving || info->n_added == 0 || g->state == G_OPEN)
    return;
  if (!gate_bind (g))
    return;
  g->giving = true;
  if (!g->admitted && !admit (g))
    {
      g->state = G_CLOSE;
      evtimer_add (g->timer, &now);
    }
  if (info->orig_size == 0)
    evbuffer_add_buffer (g->hold, in);
  else if ((given = evbuffer_new ()))
    {
      evbuffer_remove_buffer (in, given, info->orig_size);
      evbuffer_add_buffer (g->hold, in);
      evbuffer_add_buffer (in, given);
      evbuffer_free (given);
    }
  give (g, in);
  g->giving = false;
}

int
srv_gate_watch (struct srv *s, struct bufferevent *bev)
{
  struct gate *g = calloc (1, sizeof *g);

  if (g == NULL || (g->hold = evbuffer_new ()) == NULL || (g->timer = evtimer_new (s->base, on_timer, g)) == NULL
      || (g->cb = evbuffer_add_cb (bufferevent_get_input (bev), on_input, g)) == NULL)
    {
      if (g && g->timer)
        event_free (g->timer);
      if (g && g->hold)
        evbuffer_free (g->hold);
      free (g);
      return -1;
    }
  g->srv = s;
  g->bev = bev;
  /* Kept until the connection's close callback: a connection evhttp
     frees before the gate knew it leaves the gate a live bufferevent.  */
  bufferevent_incref (bev);
  /* Its fd is set once srv_conn_bev returns (libevent's http.c,
     evhttp_get_request_connection): its source is looked up on the
     loop's next turn, or at its first bytes.  */
  evtimer_add (g->timer, &now);
  return 0;
}

void
srv_gate_set_close (struct srv *s, struct evhttp_connection *evcon,
                    void (*cb) (struct evhttp_connection *evcon, void *arg), void *arg)
{
  struct gate *g = s->gates ? *gate_slot (s, evcon) : NULL;

  if (g == NULL)
    return evhttp_connection_set_closecb (evcon, cb, arg);
  g->on_close = cb;
  g->close_arg = arg;
}

void
srv_gate_open (struct srv *s, struct evhttp_connection *evcon)
{
  struct gate *g = s->gates ? *gate_slot (s, evcon) : NULL;

  if (g == NULL)
    return;
  g->state = G_OPEN;
  g->timing = false;
  evtimer_del (g->timer);
  evbuffer_add_buffer (bufferevent_get_input (g->bev), g->hold);
}

bool
srv_gate_answer (struct srv_req *r)
{
  const struct refusal *f;
  char *end;
  long why;

  if (strncmp (r->path, REFUSED, strlen (REFUSED)) != 0)
    return false;
  why = strtol (r->path + strlen (REFUSED), &end, 10);
  f = &refusals[*end == '\0' && why >= 0 && why < R_COUNT ? why : R_HEAD];
  srv_reply_error (r, f->status, f->code, f->hint, NULL, "%s", f->msg);
  return true;
}
