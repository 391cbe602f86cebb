/* tunnel.c - GET /v1/sandboxes/{id}/tunnel: TCP connections to ports on
   the sandbox's loopback, many over one WebSocket (the withruntime SDK's
   sandbox.tunnel() and forwardPort(); docs/API.md "Tunnel").  Each is the
   session `runtime sandbox forward` opens (rt_sandbox_connect;
   cli/sandbox-forward.c).  After a text {"type":"ready"}, every message
   is binary: a kind byte, a stream number (4 bytes, big-endian), the
   rest: 'o' open ("tcp PORT" from the client; empty back when opened),
   'd' data, 'e' end of one side's bytes, 'c' close (a reason back: "done",
   "closed" for a port nobody listens on), and 'a' from us, the bytes of
   data taken so far (8 bytes, big-endian), which the client's window of
   TUNNEL_WINDOW waits on.
   (no header of its own: handlers.h declares it.)  */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/handlers.h"
#include "common/util.h"
#include "runtime.h"
#include "sandbox/handle.h"
#include "serve/ws.h"

#define TUNNEL_STREAMS 16
#define TUNNEL_CHUNK 65536

enum
{
  T_OPEN = 'o',
  T_DATA = 'd',
  T_END = 'e',
  T_CLOSE = 'c',
  T_ACK = 'a',
};

struct stream
{
  uint32_t id;
  rt_session *s;
  bool got_bytes, ended_in, ended_out;
};

struct tunnel
{
  struct srv_req *r;
  rt_sandbox *sb;
  struct stream st[TUNNEL_STREAMS];
  size_t n;
  uint64_t taken, acked;
  uint8_t *pending; /* a data message's bytes its session had no room for */
  size_t pending_len, pending_at;
  uint32_t pending_id;
};

static int
send_frame (struct tunnel *t, int kind, uint32_t id, const void *data, size_t len)
{
  uint8_t head[5] = { (uint8_t) kind, (uint8_t) (id >> 24), (uint8_t) (id >> 16), (uint8_t) (id >> 8), (uint8_t) id };
  cleanup_free uint8_t *msg = malloc (5 + len);

  if (msg == NULL)
    return -1;
  memcpy (msg, head, 5);
  if (len)
    memcpy (msg + 5, data, len);
  return srv_ws_send (t->r, SRV_WS_BINARY, msg, 5 + len);
}

static struct stream *
find (struct tunnel *t, uint32_t id)
{
  for (size_t i = 0; i < t->n; i++)
    if (t->st[i].id == id)
      return &t->st[i];
  return NULL;
}

/* The stream goes, with a close carrying @reason (NULL: none sent).  */
static void
drop (struct tunnel *t, struct stream *st, const char *reason)
{
  if (reason)
    send_frame (t, T_CLOSE, st->id, reason, strlen (reason));
  rt_session_free (st->s);
  *st = t->st[--t->n];
}

static void
on_open (struct tunnel *t, uint32_t id, const uint8_t *p, size_t len)
{
  cleanup_error rt_error *err = NULL;
  char target[32];
  unsigned port = 0;
  int used = 0;

  if (len >= sizeof target || find (t, id))
    {
      send_frame (t, T_CLOSE, id, "invalid", 7);
      return;
    }
  memcpy (target, p, len);
  target[len] = '\0';
  if (sscanf (target, "tcp %5u%n", &port, &used) != 1 || (size_t) used != len || port < 1 || port > 65535)
    {
      /* "ssh KEY" too: no SSH server here.  */
      const char *why = strncmp (target, "ssh ", 4) == 0 ? "unsupported" : "invalid";
      send_frame (t, T_CLOSE, id, why, strlen (why));
      return;
    }
  if (t->n == TUNNEL_STREAMS)
    {
      send_frame (t, T_CLOSE, id, "too-many", 8);
      return;
    }
  struct stream *st = &t->st[t->n];
  memset (st, 0, sizeof *st);
  if (rt_sandbox_connect (t->sb, port, &st->s, &err) < 0)
    {
      send_frame (t, T_CLOSE, id, err->code, strlen (err->code));
      return;
    }
  st->id = id;
  t->n++;
  send_frame (t, T_OPEN, id, NULL, 0);
}

/* Bytes for a stream: as many as its session takes now, the rest kept
   (and no more messages read) until it takes them.  */
static int
give (struct tunnel *t, struct stream *st, const uint8_t *p, size_t len)
{
  cleanup_error rt_error *err = NULL;
  size_t room = rt_session_writable (st->s), k = len < room ? len : room;

  if (k && rt_session_write (st->s, p, k, &err) < 0)
    {
      drop (t, st, err->code);
      return 0;
    }
  t->taken += k;
  if (k < len)
    {
      uint8_t *q = malloc (len - k);
      if (q == NULL)
        return -1;
      memcpy (q, p + k, len - k);
      free (t->pending);
      t->pending = q;
      t->pending_len = len - k;
      t->pending_at = 0;
      t->pending_id = st->id;
    }
  return 0;
}

static int
on_message (struct tunnel *t, const uint8_t *m, size_t len)
{
  uint32_t id;
  struct stream *st;

  if (len < 5)
    return 0;
  id = (uint32_t) m[1] << 24 | (uint32_t) m[2] << 16 | (uint32_t) m[3] << 8 | m[4];
  if (m[0] == T_OPEN)
    {
      on_open (t, id, m + 5, len - 5);
      return 0;
    }
  if ((st = find (t, id)) == NULL)
    return 0;
  if (m[0] == T_DATA && !st->ended_in)
    return give (t, st, m + 5, len - 5);
  if (m[0] == T_END && !st->ended_in)
    {
      st->ended_in = true;
      if (rt_session_close_input (st->s, NULL) < 0)
        drop (t, st, "closed");
      else if (st->ended_out)
        drop (t, st, "done");
    }
  else if (m[0] == T_CLOSE)
    drop (t, st, NULL);
  return 0;
}

/* What each session has: data, and its end.  */
static void
drain (struct tunnel *t)
{
  uint8_t buf[TUNNEL_CHUNK];

  for (size_t i = 0; i < t->n; i++)
    {
      struct stream *st = &t->st[i];
      for (;;)
        {
          int stream = 1;
          cleanup_error rt_error *err = NULL;
          long n = st->ended_out ? -EAGAIN : rt_session_read (st->s, &stream, buf, sizeof buf, &err);
          if (n == -EAGAIN)
            break;
          if (n > 0)
            {
              st->got_bytes = true;
              send_frame (t, T_DATA, st->id, buf, (size_t) n);
              continue;
            }
          rt_exec_result res;
          if (n == 0 && rt_session_result (st->s, &res, &err) == 0)
            {
              st->ended_out = true;
              send_frame (t, T_END, st->id, NULL, 0);
              if (st->ended_in)
                drop (t, st, "done"), i--;
              break;
            }
          /* Refused in the guest (nobody listens), or the session failed.  */
          drop (t, st, err && strcmp (err->code, "connection_refused") == 0 ? "closed" : err ? err->code : "closed");
          i--;
          break;
        }
    }
}

static void
run (struct tunnel *t)
{
  for (;;)
    {
      struct pollfd fds[1 + TUNNEL_STREAMS];
      struct srv_ws_msg m;
      int got;

      drain (t);
      if (t->pending_len)
        {
          struct stream *st = find (t, t->pending_id);
          size_t room = st ? rt_session_writable (st->s) : t->pending_len, k = t->pending_len - t->pending_at;
          if (room < k)
            k = room;
          if (st && k && rt_session_write (st->s, t->pending + t->pending_at, k, NULL) < 0)
            drop (t, st, "closed");
          t->taken += k;
          if ((t->pending_at += k) == t->pending_len || find (t, t->pending_id) == NULL)
            t->pending_len = t->pending_at = 0;
        }
      while (t->pending_len == 0 && (got = srv_ws_read (t->r, &m)) != 0)
        {
          if (got < 0 || (m.opcode == SRV_WS_BINARY && on_message (t, m.data, m.len) < 0))
            return;
        }
      if (t->taken > t->acked)
        {
          uint8_t n[8];
          for (int i = 0; i < 8; i++)
            n[i] = (uint8_t) (t->taken >> (56 - 8 * i));
          send_frame (t, T_ACK, 0, n, 8);
          t->acked = t->taken;
        }
      if (srv_gone (t->r))
        return;
      fds[0] = (struct pollfd){ t->pending_len ? -1 : srv_ws_fd (t->r), POLLIN, 0 };
      for (size_t i = 0; i < t->n; i++)
        fds[1 + i] = (struct pollfd){ rt_session_fd (t->st[i].s), POLLIN, 0 };
      if (poll (fds, 1 + t->n, 1000) < 0 && errno != EINTR)
        return;
    }
}


void
srv_tunnel (struct srv_req *r)
{
  cleanup_sandbox rt_sandbox *sb = NULL;
  struct tunnel t = { .r = r };
  static const char ready[] = "{\"type\":\"ready\"}";

  if ((sb = srv_sandbox_open (r)) == NULL)
    return;
  if (srv_ws_accept (r) < 0)
    return;
  t.sb = sb;
  srv_ws_send (r, SRV_WS_TEXT, ready, sizeof ready - 1);
  run (&t);
  while (t.n)
    drop (&t, &t.st[0], NULL);
  free (t.pending);
  srv_ws_close (r, SRV_WS_NORMAL, NULL);
}
