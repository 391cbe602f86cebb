/* procs.c - spawned processes (see procs.h).  */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <signal.h>
#include <string.h>

#include "common/b64.h"
#include "monitor/channel.h"
#include "monitor/exec.h"
#include "monitor/proc-stdin.h"
#include "monitor/procs.h"
#include "monitor/reply.h"

#define MAX_PROCS 256

/* Takes a `logs -f` reader off its process's list and frees it; its reply
   ends (which also frees a request whose client left).  */
static void
follower_free (struct mon_follow *f)
{
  struct mon_follow **pp;

  for (pp = &f->p->followers; *pp; pp = &(*pp)->next)
    if (*pp == f)
      {
        *pp = f->next;
        break;
      }
  evhttp_send_reply_end (f->req);
  free (f);
}

static void
follower_end (struct mon_follow *f, json_object *last)
{
  if (last)
    mon_send_line (f->req, last, NULL, NULL);
  evhttp_connection_set_closecb (evhttp_request_get_connection (f->req), NULL, NULL);
  follower_free (f);
}

static void
on_follower_gone (struct evhttp_connection *evcon, void *arg)
{
  (void) evcon;
  follower_free (arg);
}

void
mon_proc_exited (struct mon_proc *p, json_object *last)
{
  p->exit = json_object_get (last);
  p->ended_ms = rt_epoch_ms ();
  mon_proc_stdin_end (p);
  while (p->followers)
    follower_end (p->followers, last);
}

/* Keeps a spawned process's output, dropping the oldest beyond LOG_MAX.  */
void
mon_proc_output (struct mon_proc *p, int stream, const uint8_t *data, uint32_t len)
{
  uint8_t hdr[5];
  struct mon_follow *f, *next;
  uint64_t offset = p->total;

  p->total += len;
  hdr[0] = stream;
  rt_put_u32 (hdr + 1, len);
  evbuffer_add (p->log, hdr, sizeof (hdr));
  evbuffer_add (p->log, data, len);
  /* Headers count too: a flood of tiny frames must not grow it forever.  */
  p->log_bytes += sizeof (hdr) + len;
  while (p->log_bytes > LOG_MAX)
    {
      uint32_t n;
      evbuffer_copyout (p->log, hdr, sizeof (hdr));
      n = rt_get_u32 (hdr + 1);
      evbuffer_drain (p->log, sizeof (hdr) + n);
      p->log_bytes -= sizeof (hdr) + n;
      p->dropped += n;
    }
  for (f = p->followers; f; f = next)
    {
      next = f->next;
      /* Spawned output is never held back for a reader: one that stopped
         reading (a pager, ^Z) is let go, not buffered for.  */
      if (evbuffer_get_length (bufferevent_get_output (
              evhttp_connection_get_bufferevent (evhttp_request_get_connection (f->req))))
          > CLIENT_HIGH_WATER)
        follower_end (f, NULL);
      else if (f->offsets)
        mon_send_output_at (f->req, stream == 1 ? "stdout" : "stderr", data, len, offset);
      else
        mon_send_output (f->req, stream == 1 ? "stdout" : "stderr", data, len, NULL, NULL);
    }
}

static char *
join_argv (json_object *argv)
{
  struct evbuffer *b = evbuffer_new ();
  char *out;
  size_t len;

  for (size_t i = 0; b && i < json_object_array_length (argv); i++)
    evbuffer_add_printf (b, "%s%s", i ? " " : "", json_object_get_string (json_object_array_get_idx (argv, i)));
  len = b ? evbuffer_get_length (b) : 0;
  out = malloc (len + 1);
  if (out)
    {
      evbuffer_remove (b, out, len);
      out[len] = '\0';
    }
  if (b)
    evbuffer_free (b);
  return out;
}

struct mon_proc *
mon_proc_find (struct mon *m, int64_t id)
{
  for (struct mon_proc *p = m->procs; p; p = p->next)
    if (p->id == id)
      return p;
  return NULL;
}

static void
proc_free (struct mon_proc *p)
{
  while (p->followers)
    follower_end (p->followers, NULL);
  evbuffer_free (p->log);
  mon_proc_stdin_end (p);
  json_object_put (p->exit);
  free (p->command);
  free (p->cwd);
  free (p);
}

static json_object *
proc_json (struct mon_proc *p)
{
  json_object *o = json_object_new_object (), *v;
  json_object_object_add (o, "process", json_object_new_int64 (p->id));
  json_object_object_add (o, "state", json_object_new_string (p->exit ? "exited" : "running"));
  json_object_object_add (o, "exitCode", p->exit && json_object_object_get_ex (p->exit, "exitCode", &v)
                                            ? json_object_get (v)
                                            : NULL);
  json_object_object_add (o, "command", json_object_new_string (p->command ? p->command : ""));
  json_object_object_add (o, "droppedBytes", json_object_new_int64 (p->dropped));
  /* For the HTTP API's ProcessInfo (docs/API.md).  */
  json_object_object_add (o, "outputBytes", json_object_new_int64 ((int64_t) p->total));
  json_object_object_add (o, "cwd", p->cwd ? json_object_new_string (p->cwd) : NULL);
  json_object_object_add (o, "timeoutMs", json_object_new_int64 (p->timeout_ms));
  json_object_object_add (o, "startedMs", json_object_new_int64 (p->started_ms));
  json_object_object_add (o, "endedMs", p->ended_ms ? json_object_new_int64 (p->ended_ms) : NULL);
  mon_proc_stdin_json (p, o);
  for (const char *const *k = (const char *const[]){ "signal", "timedOut", "error", NULL }; *k; k++)
    if (p->exit && json_object_object_get_ex (p->exit, *k, &v))
      json_object_object_add (o, *k, json_object_get (v));
  return o;
}

static void
reply_proc (struct evhttp_request *req, struct mon_proc *p)
{
  json_object *o = proc_json (p);
  mon_reply_json (req, 200, o);
  json_object_put (o);
}

/* At the cap, forgets the oldest ended processes; false when all run.  */
static bool
make_room (struct mon *m)
{
  struct mon_proc *p, **pp;
  int n = 0;

  for (p = m->procs; p; p = p->next)
    n++;
  for (pp = &m->procs; *pp && n >= MAX_PROCS;)
    if ((*pp)->exit)
      {
        p = *pp;
        *pp = p->next;
        proc_free (p);
        n--;
      }
    else
      pp = &(*pp)->next;
  return n < MAX_PROCS;
}

void
mon_handle_spawn (struct mon *m, struct evhttp_request *req, json_object *body)
{
  struct mon_proc *p, **pp;
  struct mon_exec *e;
  json_object *argv, *v;

  if (!make_room (m))
    return mon_reply_error (req, 409, "quota_exceeded", NULL, "at most %d background processes", MAX_PROCS);
  p = calloc (1, sizeof (*p));
  if (p == NULL || (p->log = evbuffer_new ()) == NULL)
    {
      free (p);
      return mon_reply_error (req, 500, "internal", NULL, "out of memory");
    }
  e = mon_exec_start (m, req, body, true);
  if (e == NULL)
    {
      evbuffer_free (p->log);
      free (p);
      return;
    }
  json_object_object_get_ex (body, "argv", &argv);
  /* Its own number, not its stream's: execs and sessions take streams
     too, and the docs' `logs dev 1` means the first spawn.  */
  p->id = m->next_proc++;
  p->stream = e->stream;
  p->command = join_argv (argv);
  p->cwd = strdup (json_object_object_get_ex (body, "cwd", &v) && v ? json_object_get_string (v)
                   : m->cfg->workdir                               ? m->cfg->workdir
                                                                   : "/workspace");
  p->timeout_ms = json_object_object_get_ex (body, "timeoutMs", &v) ? json_object_get_int64 (v) : 0;
  p->started_ms = rt_epoch_ms ();
  /* The inline stdin, sent already, is the first of its stdin.  */
  mon_proc_stdin_init (p, body, e->stdin_inflight);
  e->proc = p;
  /* Newest last: ps lists them in start order.  */
  for (pp = &m->procs; *pp; pp = &(*pp)->next)
    ;
  *pp = p;
  reply_proc (req, p);
}

void
mon_handle_ps (struct mon *m, struct evhttp_request *req, json_object *body)
{
  json_object *arr = json_object_new_array ();
  (void) body;
  for (struct mon_proc *p = m->procs; p; p = p->next)
    json_object_array_add (arr, proc_json (p));
  mon_reply_json (req, 200, arr);
  json_object_put (arr);
}

/* From a byte cursor (@cursor >= 0): a truncated event when it is older
   than the kept output.  */
static void
send_truncated (struct evhttp_request *req, struct mon_proc *p, uint64_t cursor)
{
  json_object *d = json_object_new_object ();

  json_object_object_add (d, "type", json_object_new_string ("truncated"));
  json_object_object_add (d, "droppedBytes", json_object_new_int64 ((int64_t) (p->dropped - cursor)));
  json_object_object_add (d, "resumeAt", json_object_new_int64 ((int64_t) p->dropped));
  mon_send_line (req, d, NULL, NULL);
  json_object_put (d);
}

/* The kept output, oldest first, after a note of what was dropped; from
   byte @cursor on with offsets when it is not negative.  */
static void
send_log (struct evhttp_request *req, struct mon_proc *p, int64_t cursor)
{
  struct evbuffer_ptr pos;
  uint64_t at = p->dropped;

  if (cursor >= 0 && (uint64_t) cursor < p->dropped)
    send_truncated (req, p, (uint64_t) cursor);
  else if (p->dropped && cursor < 0)
    {
      json_object *d = json_object_new_object ();
      json_object_object_add (d, "type", json_object_new_string ("dropped"));
      json_object_object_add (d, "bytes", json_object_new_int64 (p->dropped));
      mon_send_line (req, d, NULL, NULL);
      json_object_put (d);
    }
  evbuffer_ptr_set (p->log, &pos, 0, EVBUFFER_PTR_SET);
  while (pos.pos + 5 <= (ssize_t) evbuffer_get_length (p->log))
    {
      uint8_t hdr[5];
      uint32_t n;
      uint8_t *data;
      evbuffer_copyout_from (p->log, &pos, hdr, sizeof (hdr));
      n = rt_get_u32 (hdr + 1);
      evbuffer_ptr_set (p->log, &pos, 5, EVBUFFER_PTR_ADD);
      data = malloc (n ? n : 1);
      if (data == NULL)
        break;
      evbuffer_copyout_from (p->log, &pos, data, n);
      evbuffer_ptr_set (p->log, &pos, n, EVBUFFER_PTR_ADD);
      if (cursor < 0)
        mon_send_output (req, hdr[0] == 1 ? "stdout" : "stderr", data, n, NULL, NULL);
      else if (at + n > (uint64_t) cursor)
        {
          /* A record the cursor falls in is sent from the cursor on.  */
          uint32_t skip = (uint64_t) cursor > at ? (uint32_t) ((uint64_t) cursor - at) : 0;
          mon_send_output_at (req, hdr[0] == 1 ? "stdout" : "stderr", data + skip, n - skip, at + skip);
        }
      at += n;
      free (data);
    }
}

void
mon_handle_logs (struct mon *m, struct evhttp_request *req, json_object *body)
{
  struct mon_proc *p;
  struct mon_follow *f;
  json_object *v;
  bool follow = json_object_object_get_ex (body, "follow", &v) && json_object_get_boolean (v);
  int64_t id = json_object_object_get_ex (body, "process", &v) ? json_object_get_int64 (v) : 0;
  bool from = json_object_object_get_ex (body, "cursor", &v) && v;
  int64_t cursor = from ? json_object_get_int64 (v) : -1;

  p = mon_proc_find (m, id);
  if (p == NULL)
    return mon_reply_error (req, 404, "not_found", "runtime sandbox ps lists the processes", "no process %lld",
                            (long long) id);
  /* Nobody can have seen more than there was.  */
  if (from && (cursor < 0 || (uint64_t) cursor > p->total))
    return mon_reply_error (req, 400, "invalid_request", NULL, "cursor must be 0 to %llu, the output's end",
                            (unsigned long long) p->total);
  mon_start_stream (req);
  send_log (req, p, cursor);
  if (p->exit || !follow)
    {
      if (p->exit)
        mon_send_line (req, p->exit, NULL, NULL);
      evhttp_send_reply_end (req);
      return;
    }
  f = calloc (1, sizeof (*f));
  if (f == NULL)
    {
      evhttp_send_reply_end (req);
      return;
    }
  f->p = p;
  f->req = req;
  f->offsets = cursor >= 0;
  f->next = p->followers;
  p->followers = f;
  evhttp_connection_set_closecb (evhttp_request_get_connection (req), on_follower_gone, f);
}

void
mon_handle_kill (struct mon *m, struct evhttp_request *req, json_object *body)
{
  json_object *v;
  int64_t id = json_object_object_get_ex (body, "process", &v) ? json_object_get_int64 (v) : 0;
  int64_t sig = json_object_object_get_ex (body, "signal", &v) ? json_object_get_int64 (v) : SIGTERM;
  struct mon_proc *p = mon_proc_find (m, id);

  if (p == NULL)
    return mon_reply_error (req, 404, "not_found", "runtime sandbox ps lists the processes", "no process %lld",
                            (long long) id);
  if (sig < 1 || sig > 64)
    return mon_reply_error (req, 400, "invalid_request", NULL, "signal must be 1 to 64");
  if (mon_chan_full (m))
    return mon_reply_error (req, 409, "sandbox_not_ready", NULL, "sandbox %s is not reading its channel", m->cfg->id);
  if (p->exit == NULL)
    mon_chan_signal (m, p->stream, (int) sig);
  reply_proc (req, p);
}

/* ---- across a capture (snapshot/saved.h) ------------------------------- */

json_object *
mon_procs_save (struct mon *m)
{
  json_object *arr = json_object_new_array ();

  for (struct mon_proc *p = m->procs; arr && p; p = p->next)
    {
      json_object *o = json_object_new_object ();
      size_t len = evbuffer_get_length (p->log);
      json_object *log = rt_b64_json (evbuffer_pullup (p->log, -1), len);
      struct mon_exec *e = mon_exec_find (m, p->stream);

      if (o == NULL || log == NULL)
        {
          json_object_put (o);
          json_object_put (log);
          json_object_put (arr);
          return NULL;
        }
      json_object_object_add (o, "id", json_object_new_int64 (p->id));
      json_object_object_add (o, "stream", json_object_new_int64 (p->stream));
      json_object_object_add (o, "command", json_object_new_string (p->command ? p->command : ""));
      json_object_object_add (o, "log", log);
      json_object_object_add (o, "dropped", json_object_new_int64 ((int64_t) p->dropped));
      json_object_object_add (o, "cwd", p->cwd ? json_object_new_string (p->cwd) : NULL);
      json_object_object_add (o, "timeoutMs", json_object_new_int64 (p->timeout_ms));
      json_object_object_add (o, "startedMs", json_object_new_int64 (p->started_ms));
      json_object_object_add (o, "endedMs", json_object_new_int64 (p->ended_ms));
      json_object_object_add (o, "exit", json_object_get (p->exit));
      /* Output taken but not yet credited back: the guest believes that
         much of its window used.  */
      json_object_object_add (o, "outstanding", json_object_new_int64 (e && !p->exit ? (int64_t) e->outstanding : -1));
      json_object_object_add (o, "stdin", mon_proc_stdin_save (p, e ? e->stdin_inflight : 0));
      json_object_array_add (arr, o);
    }
  return arr;
}

/* The output bytes in a log's records.  */
static uint64_t
log_data_bytes (struct evbuffer *log)
{
  struct evbuffer_ptr pos;
  uint64_t n = 0;
  uint8_t hdr[5];

  evbuffer_ptr_set (log, &pos, 0, EVBUFFER_PTR_SET);
  while (pos.pos + 5 <= (ssize_t) evbuffer_get_length (log))
    {
      evbuffer_copyout_from (log, &pos, hdr, sizeof (hdr));
      n += rt_get_u32 (hdr + 1);
      if (evbuffer_ptr_set (log, &pos, 5 + rt_get_u32 (hdr + 1), EVBUFFER_PTR_ADD) < 0)
        break;
    }
  return n;
}

static struct mon_proc *
proc_load (json_object *o)
{
  json_object *v;
  struct mon_proc *p = calloc (1, sizeof *p);
  const char *b64;
  cleanup_free uint8_t *raw = NULL;
  size_t len;

  if (p == NULL || (p->log = evbuffer_new ()) == NULL)
    {
      free (p);
      return NULL;
    }
  p->id = json_object_object_get_ex (o, "id", &v) ? (uint32_t) json_object_get_int64 (v) : 0;
  /* Saved before ids had their own sequence, the id was the stream.  */
  p->stream = json_object_object_get_ex (o, "stream", &v) ? (uint32_t) json_object_get_int64 (v) : p->id;
  p->command = strdup (json_object_object_get_ex (o, "command", &v) ? json_object_get_string (v) : "");
  p->dropped = json_object_object_get_ex (o, "dropped", &v) ? (uint64_t) json_object_get_int64 (v) : 0;
  if (json_object_object_get_ex (o, "cwd", &v) && json_object_is_type (v, json_type_string))
    p->cwd = strdup (json_object_get_string (v));
  p->timeout_ms = json_object_object_get_ex (o, "timeoutMs", &v) ? json_object_get_int64 (v) : 0;
  p->started_ms = json_object_object_get_ex (o, "startedMs", &v) ? json_object_get_int64 (v) : 0;
  p->ended_ms = json_object_object_get_ex (o, "endedMs", &v) ? json_object_get_int64 (v) : 0;
  if (json_object_object_get_ex (o, "exit", &v) && json_object_is_type (v, json_type_object))
    p->exit = json_object_get (v);
  b64 = json_object_object_get_ex (o, "log", &v) ? json_object_get_string (v) : "";
  if (rt_b64_decode_alloc (b64, strlen (b64), &raw, &len) == 0 && len > 0)
    {
      evbuffer_add (p->log, raw, len);
      p->log_bytes = len;
    }
  p->total = p->dropped + log_data_bytes (p->log);
  return p;
}

int
mon_procs_load (struct mon *m, json_object *procs, bool reset, rt_error **err)
{
  struct mon_proc **tail = &m->procs;

  for (size_t i = 0; procs && i < json_object_array_length (procs); i++)
    {
      json_object *o = json_object_array_get_idx (procs, i), *v;
      struct mon_proc *p = proc_load (o);
      int64_t outstanding = json_object_object_get_ex (o, "outstanding", &v) ? json_object_get_int64 (v) : -1;
      uint32_t inflight = 0;

      if (p == NULL || p->command == NULL)
        {
          if (p)
            proc_free (p);
          return rt_error_oom (err);
        }
      mon_proc_stdin_load (p, json_object_object_get (o, "stdin"), &inflight);
      *tail = p;
      tail = &p->next;
      if (p->stream >= m->next_stream)
        m->next_stream = p->stream + 1;
      if (p->id >= m->next_proc)
        m->next_proc = p->id + 1;
      /* Still running: its output comes on its stream as before.  */
      if (p->exit == NULL && outstanding >= 0)
        {
          struct mon_exec *e = calloc (1, sizeof *e);
          if (e == NULL)
            return rt_error_oom (err);
          e->m = m;
          e->stream = p->stream;
          e->proc = p;
          e->stdin_fd = -1;
          /* Its stdin the guest holds still counts against the window:
             the agent's queue is in the saved memory.  */
          e->stdin_inflight = inflight;
          /* A child's agent counts its window from zero again; a woken
             one goes on where it was, owed what its output took (a
             process's output is taken as it comes).  */
          if (!reset)
            e->outstanding = e->credit
                = outstanding <= (int64_t) RT_WINDOW_INITIAL ? (uint32_t) outstanding : RT_WINDOW_INITIAL;
          e->next = m->execs;
          m->execs = e;
        }
    }
  return 0;
}

int
mon_procs_streams (struct mon *m, uint32_t **streams, size_t *n, rt_error **err)
{
  size_t count = 0;

  *streams = NULL;
  *n = 0;
  for (struct mon_exec *e = m->execs; e; e = e->next)
    count++;
  if (count == 0)
    return 0;
  *streams = calloc (count, sizeof **streams);
  if (*streams == NULL)
    return rt_error_oom (err);
  for (struct mon_exec *e = m->execs; e; e = e->next)
    if (e->proc)
      (*streams)[(*n)++] = e->stream;
  return 0;
}
