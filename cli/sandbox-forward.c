/* sandbox-forward.c - `runtime sandbox forward ID [[ADDR:]LOCAL:]REMOTE`:
   a host port whose connections each become a session to 127.0.0.1:REMOTE
   in the sandbox (rt_sandbox_connect), relayed by one poll() loop.  Each
   direction holds at most one buffer: a side is read only when the other
   took what was read before, so a slow peer slows its own connection
   only.  Connections are capped by the fds the process may open; past the
   cap, or when accept() runs out of fds, new ones wait in the listen
   backlog (the listener is not polled) until one ends.  */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sandbox.h"

#define MAX_CONNS 512
#define BUF_SIZE (64 * 1024)
/* Fds kept for all but the connections (stdio, the listener, the
   signalfd, the library's look at the sandbox); each connection takes
   two (its TCP socket, its session's).  */
#define FD_RESERVE 16
#define FDS_PER_CONN 2
/* How often the sandbox's state is looked at, to end with it.  */
#define CHECK_MS 1000

struct conn
{
  int tcp;
  rt_session *s;
  uint8_t *up, *down; /* host → sandbox, sandbox → host */
  size_t up_off, up_len, down_off, down_len;
  bool tcp_eof;      /* the host side sent all it will */
  bool input_closed; /* and the sandbox side was told */
  bool ended;        /* the sandbox side ended */
  bool hup;          /* poll() said POLLHUP of the host side */
};

struct forward
{
  rt_context *ctx;
  rt_sandbox *sb;
  const char *ref;
  unsigned remote;
  int listener, sigfd;
  struct conn *conns[MAX_CONNS];
  size_t n, max;        /* open connections, and how many the fds allow */
  bool accept_paused;   /* accept() ran out of fds: not polled until one ends */
  bool check_now;       /* a session failed: look at the sandbox at once */
  rt_error *fatal;      /* a library error that ends the forward */
  const char *end_code; /* or the sandbox's end: code, message, hint */
  char end_msg[160], end_hint[160];
};

struct spec
{
  char addr[64];
  unsigned local, remote;
};

static bool
parse_port (const char *s, size_t len, unsigned min, unsigned *out)
{
  unsigned long v = 0;

  if (len == 0 || len > 5)
    return false;
  for (size_t i = 0; i < len; i++)
    {
      if (s[i] < '0' || s[i] > '9')
        return false;
      v = v * 10 + (unsigned long) (s[i] - '0');
    }
  *out = (unsigned) v;
  return v >= min && v <= 65535;
}

/* [[ADDR:]LOCAL:]REMOTE; LOCAL left out is REMOTE, 0 a free port.  */
static int
parse_spec (const char *arg, struct spec *sp)
{
  const char *last = strrchr (arg, ':'), *mid;
  struct in_addr in;

  snprintf (sp->addr, sizeof (sp->addr), "127.0.0.1");
  if (!parse_port (last ? last + 1 : arg, strlen (last ? last + 1 : arg), 1, &sp->remote))
    return -1;
  if (last == NULL)
    return (sp->local = sp->remote), 0;
  for (mid = last; mid > arg && mid[-1] != ':'; mid--)
    ;
  if (!parse_port (mid, last - mid, 0, &sp->local))
    return -1;
  if (mid == arg)
    return 0;
  if ((size_t) (mid - 1 - arg) >= sizeof (sp->addr))
    return -1;
  memcpy (sp->addr, arg, mid - 1 - arg);
  sp->addr[mid - 1 - arg] = '\0';
  if (strcmp (sp->addr, "localhost") == 0)
    snprintf (sp->addr, sizeof (sp->addr), "127.0.0.1");
  return inet_pton (AF_INET, sp->addr, &in) == 1 ? 0 : -1;
}

static int
listen_on (struct spec *sp)
{
  struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) sp->local) };
  socklen_t len = sizeof (sin);
  int one = 1, fd = socket (AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

  inet_pton (AF_INET, sp->addr, &sin.sin_addr);
  if (fd < 0)
    return cli_fail ("internal", NULL, "socket: %s", strerror (errno)), -1;
  setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof (one));
  if (bind (fd, (struct sockaddr *) &sin, sizeof (sin)) < 0 || listen (fd, 128) < 0)
    {
      int e = errno;
      close (fd);
      if (e == EADDRINUSE)
        return cli_usage_error ("pick another LOCAL port, or 0 for a free one", "%s:%u is in use", sp->addr, sp->local),
               -1;
      return cli_fail ("usage", NULL, "cannot listen on %s:%u: %s", sp->addr, sp->local, strerror (e)), -1;
    }
  getsockname (fd, (struct sockaddr *) &sin, &len);
  sp->local = ntohs (sin.sin_port);
  return fd;
}

static void
conn_free (struct conn *c)
{
  if (c == NULL)
    return;
  rt_session_free (c->s);
  if (c->tcp >= 0)
    {
      /* Bytes left unread make close() reset the connection, and the
         client may then lose the end it was sent (a refused connection's
         request is often there): up to 1 MiB of them is read and dropped.  */
      uint8_t sink[16384];
      for (int i = 0; i < 64 && read (c->tcp, sink, sizeof (sink)) > 0; i++)
        ;
      close (c->tcp);
    }
  free (c->up);
  free (c->down);
  free (c);
}

static void
on_accept (struct forward *f)
{
  rt_error *err = NULL;
  struct conn *c;
  int fd;

  while (f->n < f->max)
    {
      fd = accept4 (f->listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0)
        {
          /* Out of fds: the pending connection stays readable, so polling
             the listener again would spin.  */
          if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
            f->accept_paused = true;
          return;
        }
      c = calloc (1, sizeof (*c));
      if (c == NULL || (c->up = malloc (BUF_SIZE)) == NULL || (c->down = malloc (BUF_SIZE)) == NULL)
        {
          close (fd);
          conn_free (c);
          continue;
        }
      c->tcp = fd;
      if (rt_sandbox_connect (f->sb, f->remote, &c->s, &err) < 0)
        {
          /* This connection cannot go on; the forward may (the sandbox
             decides: f->check_now), unless nothing ever can.  */
          if (strcmp (err->code, "unsupported_remote") == 0 || strcmp (err->code, "not_found") == 0)
            {
              f->fatal = err;
              err = NULL;
            }
          else
            fprintf (stderr, "runtime: a connection was closed: %s\n", err->msg);
          rt_error_free (err);
          err = NULL;
          conn_free (c);
          if (f->fatal)
            return;
          f->check_now = true;
          continue;
        }
      f->conns[f->n++] = c;
    }
}

/* Sandbox → host: read the session only into an empty buffer.  */
static int
pump_down (struct forward *f, struct conn *c)
{
  for (;;)
    {
      rt_error *err = NULL;
      rt_exec_result res;
      int stream;
      long n;

      while (c->down_off < c->down_len)
        {
          ssize_t w = write (c->tcp, c->down + c->down_off, c->down_len - c->down_off);
          if (w < 0 && errno == EAGAIN)
            return 0;
          if (w < 0 && errno != EINTR)
            return -1;
          c->down_off += w > 0 ? (size_t) w : 0;
        }
      c->down_off = c->down_len = 0;
      if (c->ended)
        return -1;
      n = rt_session_read (c->s, &stream, c->down, BUF_SIZE, &err);
      if (n == -EAGAIN)
        return 0;
      if (n > 0)
        {
          c->down_len = (size_t) n;
          continue;
        }
      c->ended = true;
      if (n == 0 && rt_session_result (c->s, &res, &err) == 0)
        {
          /* A connection that failed in the guest (refused after bytes
             were sent to it, reset) ends with exit code 1.  */
          if (res.exit_code != 0)
            fprintf (stderr,
                     "runtime: a connection was closed: the connection to port %u in the sandbox failed "
                     "(nothing listens there?)\n",
                     f->remote);
          continue;
        }
      fprintf (stderr, "runtime: a connection was closed: %s\n", err ? err->msg : "the session failed");
      if (err == NULL || strcmp (err->code, "connection_refused") != 0)
        f->check_now = true;
      rt_error_free (err);
    }
}

/* Host → sandbox: as much as the session's window takes.  */
static int
pump_up (struct conn *c)
{
  rt_error *err = NULL;

  for (;;)
    {
      size_t room = rt_session_writable (c->s), n;
      if (c->up_off < c->up_len)
        {
          n = c->up_len - c->up_off < room ? c->up_len - c->up_off : room;
          if (n == 0)
            return 0;
          if (rt_session_write (c->s, c->up + c->up_off, n, &err) < 0)
            return rt_error_free (err), -1;
          c->up_off += n;
          continue;
        }
      c->up_off = c->up_len = 0;
      if (c->tcp_eof)
        {
          if (!c->input_closed && rt_session_close_input (c->s, &err) < 0)
            return rt_error_free (err), -1;
          c->input_closed = true;
          return 0;
        }
      ssize_t r = read (c->tcp, c->up, BUF_SIZE);
      if (r < 0 && errno == EAGAIN)
        return 0;
      if (r < 0 && errno != EINTR)
        return -1;
      if (r == 0)
        c->tcp_eof = true;
      c->up_len = r > 0 ? (size_t) r : 0;
    }
}

/* Return: false when @c is done (the sandbox side ended and all of it was
   written, or the host side broke).  */
static bool
pump (struct forward *f, struct conn *c)
{
  if (pump_down (f, c) < 0)
    return false;
  if (!c->ended && pump_up (c) < 0)
    return false;
  /* The window may have opened while output waited: the session's fd is
     polled only with room for output.  */
  return pump_down (f, c) == 0;
}

/* Ends the forward when the sandbox is gone, stopped, or paused for good.  */
static void
check_sandbox (struct forward *f)
{
  cleanup_free char *json = NULL;
  cleanup_json json_object *o = NULL;
  rt_error *err = NULL;
  const char *st;
  json_object *v;

  f->check_now = false;
  if (rt_sandbox_get_json (f->ctx, f->ref, &json, &err) < 0)
    {
      f->fatal = err;
      return;
    }
  o = json_tokener_parse (json);
  st = o ? cli_jstr (o, "state") : NULL;
  if (st == NULL || cli_state_is (st, RT_SANDBOX_STOPPING) || cli_state_is (st, RT_SANDBOX_STOPPED))
    {
      f->end_code = "sandbox_not_ready";
      snprintf (f->end_msg, sizeof (f->end_msg), "sandbox %s stopped: the forward ends", f->ref);
    }
  else if (cli_state_is (st, RT_SANDBOX_PAUSED)
           && !(json_object_object_get_ex (o, "autoWake", &v) && json_object_get_boolean (v)))
    {
      f->end_code = "sandbox_paused";
      snprintf (f->end_msg, sizeof (f->end_msg), "sandbox %s paused: the forward ends", f->ref);
      snprintf (f->end_hint, sizeof (f->end_hint), "runtime sandbox wake %s, then forward again", f->ref);
    }
}

static int
forward_end (struct forward *f)
{
  if (f->fatal)
    return cli_error (f->fatal);
  return cli_fail (f->end_code, f->end_hint[0] ? f->end_hint : NULL, "%s", f->end_msg);
}

static size_t
fill_pollfds (struct forward *f, struct pollfd *p)
{
  size_t k = 0;

  p[k++] = (struct pollfd){ .fd = f->sigfd, .events = POLLIN };
  p[k++] = (struct pollfd){ .fd = f->n < f->max && !f->accept_paused ? f->listener : -1, .events = POLLIN };
  for (size_t i = 0; i < f->n; i++)
    {
      struct conn *c = f->conns[i];
      short tcp = (c->down_len > c->down_off ? POLLOUT : 0) | (!c->tcp_eof && c->up_len == 0 ? POLLIN : 0);
      /* POLLHUP comes whatever is asked: a hung-up side is left out
         while it is waited for (the window shut), or poll() would spin.  */
      p[k++] = (struct pollfd){ .fd = c->hup && tcp == 0 ? -1 : c->tcp, .events = tcp };
      p[k++] = (struct pollfd){ .fd = c->ended || c->down_len ? -1 : rt_session_fd (c->s), .events = POLLIN };
    }
  return k;
}

/* Return: the exit code, on Ctrl-C (0) or when the sandbox ended (1).  */
static int
relay (struct forward *f)
{
  struct pollfd p[2 + 2 * MAX_CONNS];
  int64_t next_check = 0;

  for (;;)
    {
      size_t k = fill_pollfds (f, p), n = f->n;
      int64_t now;
      int r = poll (p, k, CHECK_MS);
      struct timespec ts;

      if (r < 0 && errno != EINTR)
        return cli_fail ("internal", NULL, "poll: %s", strerror (errno));
      if (r > 0 && p[0].revents)
        return 0;
      /* Connections first: one may end and the last move in.  A host side
         that broke (an error) gives no more: after one pump its
         connection ends.  One that hung up may still hold bytes (in the
         socket, or waiting for the window): it is read until its EOF,
         then ends as a half-closed one does (its next write fails).  */
      for (size_t i = n; i-- > 0;)
        {
          short tcp = r > 0 ? p[2 + 2 * i].revents : 0;
          if (tcp & POLLHUP)
            f->conns[i]->hup = true;
          if ((tcp || (r > 0 && p[3 + 2 * i].revents))
              && (!pump (f, f->conns[i]) || (tcp & (POLLERR | POLLNVAL))))
            {
              conn_free (f->conns[i]);
              f->conns[i] = f->conns[--f->n];
              f->accept_paused = false;
            }
        }
      if (r > 0 && p[1].revents)
        on_accept (f);
      clock_gettime (CLOCK_MONOTONIC, &ts);
      now = (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
      if (f->fatal == NULL && f->end_code == NULL && (f->check_now || now >= next_check))
        {
          /* Fds freed elsewhere: accept() is tried again at each check.  */
          if (now >= next_check)
            f->accept_paused = false;
          check_sandbox (f);
          next_check = now + CHECK_MS;
        }
      if (f->fatal || f->end_code)
        return forward_end (f);
    }
}

/* The open-files limit raised to its hard limit.  Return: how many
   connections it leaves room for (at least one).  */
static size_t
conns_allowed (void)
{
  struct rlimit rl;
  rlim_t fds;

  if (getrlimit (RLIMIT_NOFILE, &rl) < 0)
    return MAX_CONNS;
  if (rl.rlim_cur < rl.rlim_max)
    {
      rl.rlim_cur = rl.rlim_max;
      if (setrlimit (RLIMIT_NOFILE, &rl) < 0)
        getrlimit (RLIMIT_NOFILE, &rl);
    }
  fds = rl.rlim_cur == RLIM_INFINITY ? (rlim_t) MAX_CONNS * FDS_PER_CONN + FD_RESERVE : rl.rlim_cur;
  if (fds < FD_RESERVE + FDS_PER_CONN)
    return 1;
  fds = (fds - FD_RESERVE) / FDS_PER_CONN;
  return fds < MAX_CONNS ? (size_t) fds : MAX_CONNS;
}

static void
print_bound (const struct spec *sp, const char *id, bool json)
{
  if (json)
    {
      json_object *o = json_object_new_object ();
      json_object_object_add (o, "address", json_object_new_string (sp->addr));
      json_object_object_add (o, "port", json_object_new_int (sp->local));
      json_object_object_add (o, "remote", json_object_new_int (sp->remote));
      cli_print_json (o);
      json_object_put (o);
    }
  else
    printf ("Forwarding %s:%u to port %u in sandbox %s (Ctrl-C stops)\n", sp->addr, sp->local, sp->remote, id);
  fflush (stdout);
}

int
cli_sandbox_forward (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a = { 0 };
  cleanup_context rt_context *ctx = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  struct forward f = { .listener = -1, .sigfd = -1 };
  struct spec sp;
  sigset_t mask;
  int code;

  rt_error *err = NULL;
  rt_session *probe = NULL;

  if (!cli_start (cmd, argc, argv, &a, &ctx, &code))
    return code;
  if (parse_spec (a.pos[1], &sp) < 0)
    return cli_usage_error ("[[ADDR:]LOCAL:]REMOTE, e.g. 8000, 8080:8000 or 0.0.0.0:8080:8000; ADDR an IPv4 "
                            "address, LOCAL 0 a free port",
                            "bad port spec '%s'", a.pos[1]);
  if (rt_sandbox_open (ctx, a.pos[0], &sb, &err) < 0)
    return cli_lib_fail (err);
  f = (struct forward){
    .ctx = ctx, .sb = sb, .ref = rt_sandbox_id (sb), .remote = sp.remote, .listener = -1, .sigfd = -1, .max = conns_allowed ()
  };
  /* A client that resets its connection must not end the forward: a write
     to it fails with EPIPE instead.  */
  signal (SIGPIPE, SIG_IGN);
  /* Port 0 is refused before anything is opened, "unsupported_remote"
     first: a forward that could never carry a connection says so now.  */
  if (rt_sandbox_connect (sb, 0, &probe, &err) < 0 && strcmp (err->code, "unsupported_remote") == 0)
    return cli_lib_fail (err);
  rt_session_free (probe);
  rt_error_free (err);
  err = NULL;
  check_sandbox (&f);
  if (f.fatal || f.end_code)
    {
      code = forward_end (&f);
      rt_error_free (f.fatal);
      return code;
    }
  if ((f.listener = listen_on (&sp)) < 0)
    return 1;
  if (strncmp (sp.addr, "127.", 4) != 0)
    fprintf (stderr,
             "runtime: warning: %s is not a loopback address: anyone who reaches it reaches port %u in "
             "the sandbox\n",
             sp.addr, sp.remote);
  cli_block_stop_signals (&mask);
  f.sigfd = signalfd (-1, &mask, SFD_CLOEXEC);
  print_bound (&sp, rt_sandbox_id (sb), a.json);
  code = f.sigfd < 0 ? cli_fail ("internal", NULL, "signalfd: %s", strerror (errno)) : relay (&f);
  for (size_t i = 0; i < f.n; i++)
    conn_free (f.conns[i]);
  close (f.listener);
  if (f.sigfd >= 0)
    close (f.sigfd);
  rt_error_free (f.fatal);
  return code;
}
