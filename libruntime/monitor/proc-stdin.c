/* proc-stdin.c - a spawned process's stdin and pty (see proc-stdin.h).  */
#include <event2/buffer.h>
#include <string.h>

#include "common/b64.h"
#include "monitor/channel.h"
#include "monitor/exec.h"
#include "monitor/proc-stdin.h"
#include "monitor/procs.h"
#include "monitor/reply.h"

/* STDIN frames are cut to STDIN_CHUNK and go out only while less than
   STDIN_CHAN_LOW waits in the channel: a guest that reads nothing leaves
   the bytes here, within STDIN_PENDING_MAX, not in the channel's queue.  */
#define STDIN_CHUNK (64 * 1024)
#define STDIN_CHAN_LOW (256 * 1024)
/* The last bytes accepted that are kept to tell a retry (the same bytes
   again) from a second writer whose offset is stale (others).  */
#define STDIN_RECENT (64 * 1024)

static size_t
pending_len (const struct mon_proc *p)
{
  return p->stdin_pending ? evbuffer_get_length (p->stdin_pending) : 0;
}

static bool
stdin_open (const struct mon_proc *p)
{
  return p->stdin_kept && !p->stdin_eof && p->exit == NULL;
}

static json_object *
pty_json (const struct mon_proc *p)
{
  json_object *o;

  if (p->pty_cols == 0)
    return NULL;
  o = json_object_new_object ();
  json_object_object_add (o, "cols", json_object_new_int ((int) p->pty_cols));
  json_object_object_add (o, "rows", json_object_new_int ((int) p->pty_rows));
  return o;
}

bool
mon_pty_size (json_object *o, unsigned *cols, unsigned *rows)
{
  json_object *c, *r;

  if (!json_object_is_type (o, json_type_object) || !json_object_object_get_ex (o, "cols", &c)
      || !json_object_object_get_ex (o, "rows", &r) || !json_object_is_type (c, json_type_int)
      || !json_object_is_type (r, json_type_int)
      || !rt_pty_size_ok (json_object_get_int64 (c), json_object_get_int64 (r)))
    return false;
  *cols = (unsigned) json_object_get_int64 (c);
  *rows = (unsigned) json_object_get_int64 (r);
  return true;
}

void
mon_proc_stdin_init (struct mon_proc *p, json_object *body, uint64_t offset)
{
  json_object *v;

  p->stdin_kept = json_object_object_get_ex (body, "keepStdin", &v) && json_object_get_boolean (v);
  p->stdin_offset = offset;
  if (json_object_object_get_ex (body, "pty", &v) && !mon_pty_size (v, &p->pty_cols, &p->pty_rows))
    p->pty_cols = p->pty_rows = 0;
}

void
mon_proc_stdin_end (struct mon_proc *p)
{
  if (p->stdin_pending)
    evbuffer_free (p->stdin_pending);
  p->stdin_pending = NULL;
  free (p->stdin_recent);
  p->stdin_recent = NULL;
  p->stdin_recent_len = 0;
}

void
mon_proc_stdin_json (const struct mon_proc *p, json_object *o)
{
  json_object_object_add (o, "pty", pty_json (p));
  json_object_object_add (o, "stdinOpen", json_object_new_boolean (stdin_open (p)));
  json_object_object_add (o, "stdinOffset", json_object_new_int64 ((int64_t) p->stdin_offset));
}

/* What @p holds goes out within its window; then its end, once asked.  */
static void
pump_one (struct mon *m, struct mon_proc *p)
{
  struct mon_exec *e = p->exit || p->stdin_closed ? NULL : mon_exec_find (m, p->stream);
  size_t n;

  if (e == NULL)
    return;
  while ((n = pending_len (p)) > 0 && e->stdin_inflight < RT_WINDOW_INITIAL
         && mon_chan_waiting (m) < STDIN_CHAN_LOW)
    {
      if (n > RT_WINDOW_INITIAL - e->stdin_inflight)
        n = RT_WINDOW_INITIAL - e->stdin_inflight;
      if (n > STDIN_CHUNK)
        n = STDIN_CHUNK;
      mon_chan_queue (m, RT_FRAME_STDIN, p->stream, evbuffer_pullup (p->stdin_pending, (ssize_t) n), n);
      evbuffer_drain (p->stdin_pending, n);
      e->stdin_inflight += (uint32_t) n;
    }
  if (p->stdin_eof && pending_len (p) == 0)
    {
      /* A pty ignores it (proto.h): its program sees no end unless sent
         0x04.  */
      mon_chan_queue (m, RT_FRAME_STDIN, p->stream, NULL, 0);
      p->stdin_closed = true;
      mon_proc_stdin_end (p);
    }
}

void
mon_procs_stdin_pump (struct mon *m)
{
  /* Frames queued while quiesced would miss the capture; without a
     channel they would be lost.  */
  if (mon_stopping (m) || !mon_chan_sending (m))
    return;
  for (struct mon_proc *p = m->procs; p; p = p->next)
    if (p->stdin_kept)
      pump_one (m, p);
}

static void
reply_write (struct evhttp_request *req, const struct mon_proc *p)
{
  cleanup_json json_object *o = json_object_new_object ();

  json_object_object_add (o, "process", json_object_new_int64 (p->id));
  json_object_object_add (o, "offset", json_object_new_int64 ((int64_t) p->stdin_offset));
  json_object_object_add (o, "stdinOpen", json_object_new_boolean (stdin_open (p)));
  mon_reply_json (req, 200, o);
}

/* How many more bytes @p may hold: its own cap and the monitor's.  */
static size_t
room_for (struct mon *m, const struct mon_proc *p)
{
  size_t all = 0, mine = pending_len (p);

  for (struct mon_proc *q = m->procs; q; q = q->next)
    all += pending_len (q);
  if (mine >= STDIN_PENDING_MAX || all >= STDIN_PENDING_TOTAL)
    return 0;
  return STDIN_PENDING_MAX - mine < STDIN_PENDING_TOTAL - all ? STDIN_PENDING_MAX - mine : STDIN_PENDING_TOTAL - all;
}

/* Whether the bytes of @data before the accepted end are those taken
   there, as far as they are still known: a retry's are, a stale
   writer's (another wrote there since it read the offset) are not.  */
static bool
same_as_taken (const struct mon_proc *p, const uint8_t *data, size_t len, uint64_t offset)
{
  uint64_t known = p->stdin_offset - p->stdin_recent_len;
  uint64_t from = offset > known ? offset : known;
  uint64_t to = offset + len < p->stdin_offset ? offset + len : p->stdin_offset;

  return from >= to || memcmp (data + (from - offset), p->stdin_recent + (from - known), to - from) == 0;
}

/* Keeps the last STDIN_RECENT bytes taken, @data the newest; without
   memory, none (a later check can tell nothing).  */
static void
remember (struct mon_proc *p, const uint8_t *data, size_t len)
{
  size_t keep;

  if (p->stdin_recent == NULL && (p->stdin_recent = malloc (STDIN_RECENT)) == NULL)
    {
      p->stdin_recent_len = 0;
      return;
    }
  if (len >= STDIN_RECENT)
    {
      memcpy (p->stdin_recent, data + len - STDIN_RECENT, STDIN_RECENT);
      p->stdin_recent_len = STDIN_RECENT;
      return;
    }
  keep = p->stdin_recent_len + len > STDIN_RECENT ? STDIN_RECENT - len : p->stdin_recent_len;
  memmove (p->stdin_recent, p->stdin_recent + p->stdin_recent_len - keep, keep);
  memcpy (p->stdin_recent + keep, data, len);
  p->stdin_recent_len = keep + len;
}

/* Takes the bytes of @data from the accepted end on, as many as fit.  */
static int
accept_bytes (struct mon *m, struct mon_proc *p, const uint8_t *data, size_t len, uint64_t offset, bool eof)
{
  size_t skip = p->stdin_offset - offset < len ? (size_t) (p->stdin_offset - offset) : len;
  size_t take = len - skip, room = room_for (m, p);

  if (take > room)
    take = room;
  if (take > 0 && p->stdin_pending == NULL && (p->stdin_pending = evbuffer_new ()) == NULL)
    return -ENOMEM;
  if (take > 0 && evbuffer_add (p->stdin_pending, data + skip, take) < 0)
    return -ENOMEM;
  if (take > 0)
    remember (p, data + skip, take);
  p->stdin_offset += take;
  /* The end only once every byte before it is in.  */
  if (eof && skip + take == len)
    p->stdin_eof = true;
  mon_procs_stdin_pump (m);
  return 0;
}

void
mon_handle_write (struct mon *m, struct evhttp_request *req, json_object *body)
{
  json_object *v;
  int64_t id = json_object_object_get_ex (body, "process", &v) ? json_object_get_int64 (v) : 0;
  struct mon_proc *p = mon_proc_find (m, id);
  bool eof = json_object_object_get_ex (body, "eof", &v) && json_object_get_boolean (v);
  cleanup_free uint8_t *data = NULL;
  size_t len = 0;
  int64_t offset;
  int ret = 0;

  if (p == NULL)
    return mon_reply_error (req, 404, "not_found", "runtime sandbox ps lists the processes", "no process %lld",
                            (long long) id);
  if (!json_object_object_get_ex (body, "offset", &v) || !json_object_is_type (v, json_type_int)
      || (offset = json_object_get_int64 (v)) < 0)
    return mon_reply_error (req, 400, "invalid_request", NULL, "offset must be a byte count (0 or more)");
  if (json_object_object_get_ex (body, "data", &v) && v)
    ret = json_object_is_type (v, json_type_string)
              ? rt_b64_decode_alloc (json_object_get_string (v), (size_t) json_object_get_string_len (v), &data, &len)
              : -EINVAL;
  if (ret == -ENOMEM)
    return mon_reply_error (req, 500, "internal", NULL, "out of memory");
  if (ret < 0)
    return mon_reply_error (req, 400, "invalid_request", NULL, "data must be base64");
  if (!p->stdin_kept)
    return mon_reply_error (req, 409, "stdin_closed", "runtime sandbox spawn --stdin keeps it open",
                            "process %u was not started with its stdin open", p->id);
  if (p->exit)
    return mon_reply_error (req, 409, "stdin_closed", NULL, "process %u has ended", p->id);
  if ((uint64_t) offset > p->stdin_offset)
    return mon_reply_error (req, 409, "invalid_offset", NULL,
                            "offset %lld is past the end of process %u's stdin: the next byte is at %llu",
                            (long long) offset, p->id, (unsigned long long) p->stdin_offset);
  if (!same_as_taken (p, data, len, (uint64_t) offset))
    return mon_reply_error (req, 409, "invalid_offset", "one writer at a time: read stdinOffset again and resend",
                            "process %u's stdin took other bytes at offset %lld: another writer's, written since "
                            "this offset was read (the next byte is at %llu)",
                            p->id, (long long) offset, (unsigned long long) p->stdin_offset);
  /* After the end, only a retry of what came before it.  */
  if (p->stdin_eof && (uint64_t) offset + len > p->stdin_offset)
    return mon_reply_error (req, 409, "stdin_closed", NULL, "process %u's stdin is closed", p->id);
  if (!p->stdin_eof && accept_bytes (m, p, data, len, (uint64_t) offset, eof) < 0)
    return mon_reply_error (req, 500, "internal", NULL, "out of memory");
  reply_write (req, p);
}

void
mon_handle_resize (struct mon *m, struct evhttp_request *req, json_object *body)
{
  json_object *v;
  int64_t id = json_object_object_get_ex (body, "process", &v) ? json_object_get_int64 (v) : 0;
  struct mon_proc *p = mon_proc_find (m, id);
  cleanup_json json_object *size = NULL, *o = NULL;
  unsigned cols, rows;

  if (p == NULL)
    return mon_reply_error (req, 404, "not_found", "runtime sandbox ps lists the processes", "no process %lld",
                            (long long) id);
  if (!mon_pty_size (body, &cols, &rows))
    return mon_reply_error (req, 400, "usage", NULL, "cols and rows must be 1 to %u", RT_PTY_MAX_SIDE);
  if (p->pty_cols == 0)
    return mon_reply_error (req, 400, "usage", NULL, "process %u has no terminal", p->id);
  if (mon_chan_full (m))
    return mon_reply_error (req, 409, "sandbox_not_ready", NULL, "sandbox %s is not reading its channel", m->cfg->id);
  p->pty_cols = cols;
  p->pty_rows = rows;
  size = pty_json (p);
  if (p->exit == NULL)
    mon_chan_queue_json (m, RT_FRAME_RESIZE, p->stream, size);
  o = json_object_new_object ();
  json_object_object_add (o, "process", json_object_new_int64 (p->id));
  json_object_object_add (o, "pty", json_object_get (size));
  mon_reply_json (req, 200, o);
}

/* ---- across a capture (procs.c's mon_procs_save) ----------------------- */

json_object *
mon_proc_stdin_save (const struct mon_proc *p, uint32_t inflight)
{
  size_t len = pending_len (p);
  json_object *o, *pending, *recent;

  if (!p->stdin_kept && p->pty_cols == 0)
    return NULL;
  pending = rt_b64_json (len ? evbuffer_pullup (p->stdin_pending, -1) : NULL, len);
  /* The last bytes taken: a stale writer is still refused after a wake.  */
  recent = pending ? rt_b64_json (p->stdin_recent, p->stdin_recent_len) : NULL;
  o = recent ? json_object_new_object () : NULL;
  if (o == NULL)
    {
      json_object_put (pending);
      json_object_put (recent);
      return NULL;
    }
  json_object_object_add (o, "kept", json_object_new_boolean (p->stdin_kept));
  json_object_object_add (o, "eof", json_object_new_boolean (p->stdin_eof));
  json_object_object_add (o, "closed", json_object_new_boolean (p->stdin_closed));
  json_object_object_add (o, "offset", json_object_new_int64 ((int64_t) p->stdin_offset));
  json_object_object_add (o, "pending", pending);
  json_object_object_add (o, "recent", recent);
  json_object_object_add (o, "inflight", json_object_new_int64 (inflight));
  json_object_object_add (o, "pty", pty_json (p));
  return o;
}

void
mon_proc_stdin_load (struct mon_proc *p, json_object *o, uint32_t *inflight)
{
  cleanup_free uint8_t *data = NULL;
  json_object *v;
  size_t len = 0;
  int64_t n;

  *inflight = 0;
  if (!json_object_is_type (o, json_type_object))
    return;
  p->stdin_kept = json_object_object_get_ex (o, "kept", &v) && json_object_get_boolean (v);
  p->stdin_eof = json_object_object_get_ex (o, "eof", &v) && json_object_get_boolean (v);
  p->stdin_closed = json_object_object_get_ex (o, "closed", &v) && json_object_get_boolean (v);
  n = json_object_object_get_ex (o, "offset", &v) ? json_object_get_int64 (v) : 0;
  p->stdin_offset = n > 0 ? (uint64_t) n : 0;
  n = json_object_object_get_ex (o, "inflight", &v) ? json_object_get_int64 (v) : 0;
  *inflight = n <= 0 ? 0 : n < RT_WINDOW_INITIAL ? (uint32_t) n : RT_WINDOW_INITIAL;
  if (json_object_object_get_ex (o, "pty", &v) && !mon_pty_size (v, &p->pty_cols, &p->pty_rows))
    p->pty_cols = p->pty_rows = 0;
  if (json_object_object_get_ex (o, "pending", &v) && json_object_is_type (v, json_type_string)
      && rt_b64_decode_alloc (json_object_get_string (v), (size_t) json_object_get_string_len (v), &data, &len) == 0 && len > 0
      && len <= STDIN_PENDING_MAX && (p->stdin_pending = evbuffer_new ()) != NULL)
    evbuffer_add (p->stdin_pending, data, len);
  free (steal_pointer (&data));
  /* Older saves have none: the check then starts afresh at the offset.  */
  if (json_object_object_get_ex (o, "recent", &v) && json_object_is_type (v, json_type_string)
      && rt_b64_decode_alloc (json_object_get_string (v), (size_t) json_object_get_string_len (v), &data, &len) == 0 && len > 0
      && len <= STDIN_RECENT && len <= p->stdin_offset)
    remember (p, data, len);
}
