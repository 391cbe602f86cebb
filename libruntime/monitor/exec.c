/* exec.c - commands in the guest (see exec.h).  */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/b64.h"
#include "common/exec-result.h"
#include "core/command.h"
#include "monitor/channel.h"
#include "monitor/exec.h"
#include "monitor/proc-stdin.h"
#include "monitor/procs.h"
#include "monitor/reply.h"
#include "monitor/session.h"

#define reply_error_false(r, ...) (mon_refuse (r, __VA_ARGS__), false)

bool
mon_refuse (struct mon_refusal *r, int status, const char *code, const char *hint, const char *fmt, ...)
{
  va_list ap;

  r->status = status;
  r->code = code;
  r->hint = hint;
  va_start (ap, fmt);
  vsnprintf (r->msg, sizeof (r->msg), fmt, ap);
  va_end (ap);
  return false;
}

static void
reply_refusal (struct evhttp_request *req, const struct mon_refusal *r)
{
  mon_reply_error (req, r->status, r->code, r->hint, "%s", r->msg);
}

/* A command request, checked (core/command.h: the library's rules), with
   what only the monitor knows: its defaults and a streamed stdin.  */
struct command
{
  struct rt_command cmd;      /* argv, env, options; inline stdin decoded */
  const char *cwd, *user;     /* the request's, else the sandbox's defaults */
  int stdin_fd;               /* stdinPath, or -1 */
  bool live_stdin;            /* a session's: its client sends stdin */
  bool spawn;                 /* :spawn's, a background process */
};

static void
command_clear (struct command *c)
{
  rt_command_clear (&c->cmd);
  if (c->stdin_fd >= 0)
    close (c->stdin_fd);
}
#define cleanup_command __attribute__ ((cleanup (command_clear)))

struct mon_exec *
mon_exec_find (struct mon *m, uint32_t stream)
{
  for (struct mon_exec *e = m->execs; e; e = e->next)
    if (e->stream == stream)
      return e;
  return NULL;
}

static void
stdin_close (struct mon_exec *e)
{
  if (e->ev_stdin)
    event_free (e->ev_stdin);
  e->ev_stdin = NULL;
  if (e->stdin_fd >= 0)
    close (e->stdin_fd);
  e->stdin_fd = -1;
}

/* Streams a stdinPath into the guest, never more than the window ahead of
   what the command has taken (the agent's WINDOW frames).  */
static void
on_stdin_ready (evutil_socket_t fd, short what, void *arg)
{
  struct mon_exec *e = arg;
  uint8_t buf[65536];
  (void) what;

  while (e->stdin_inflight < RT_WINDOW_INITIAL)
    {
      size_t want = RT_WINDOW_INITIAL - e->stdin_inflight;
      ssize_t n = read (fd, buf, want < sizeof (buf) ? want : sizeof (buf));
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && errno == EAGAIN)
        return;
      if (n <= 0)
        {
          mon_chan_queue (e->m, RT_FRAME_STDIN, e->stream, NULL, 0);
          stdin_close (e);
          return;
        }
      mon_chan_queue (e->m, RT_FRAME_STDIN, e->stream, buf, n);
      e->stdin_inflight += n;
    }
  event_del (e->ev_stdin);
}

static void
exec_free (struct mon_exec *e)
{
  struct mon_exec **p;
  stdin_close (e);
  if (e->held)
    evbuffer_free (e->held);
  json_object_put (e->last);
  for (p = &e->m->execs; *p; p = &(*p)->next)
    if (*p == e)
      {
        *p = e->next;
        break;
      }
  free (e);
}

static size_t
client_backlog (struct evhttp_request *req)
{
  return evbuffer_get_length (bufferevent_get_output (evhttp_connection_get_bufferevent (
      evhttp_request_get_connection (req))));
}

/* Keeps output the client cannot take yet: its raw bytes stay within the
   guest's window (they are not credited back until sent), and the lines
   they become are made only as the client drains, so a guest sending
   one-byte frames cannot turn its window into 40 times that in NDJSON.  */
static void
hold_output (struct mon_exec *e, uint8_t stream, const uint8_t *data, uint32_t len)
{
  uint8_t hdr[5];

  if (e->held == NULL && (e->held = evbuffer_new ()) == NULL)
    return;
  hdr[0] = stream;
  rt_put_u32 (hdr + 1, len);
  evbuffer_add (e->held, hdr, sizeof (hdr));
  evbuffer_add (e->held, data, len);
}

/* Takes up to sizeof (@buf) bytes of held output of one stream (adjacent
   records merged into one line).  Return: the bytes, 0 when none held.  */
static size_t
take_held (struct mon_exec *e, uint8_t *buf, size_t size, uint8_t *stream)
{
  size_t n = 0;
  uint8_t hdr[5];

  while (n < size && evbuffer_copyout (e->held, hdr, sizeof (hdr)) == sizeof (hdr))
    {
      uint32_t len = rt_get_u32 (hdr + 1), take;
      if (n > 0 && hdr[0] != *stream)
        break;
      *stream = hdr[0];
      take = len < size - n ? len : (uint32_t) (size - n);
      evbuffer_drain (e->held, sizeof (hdr));
      evbuffer_remove (e->held, buf + n, take);
      n += take;
      if (take < len)
        {
          /* The rest of the record stays first.  */
          rt_put_u32 (hdr + 1, len - take);
          evbuffer_prepend (e->held, hdr, sizeof (hdr));
        }
    }
  return n;
}

static void exec_finish (struct mon_exec *e, json_object *last);

static void on_flushed (struct evhttp_connection *evcon, void *arg);

/* Sends held output while the client's buffer is under the high-water
   mark; the exit line follows the last of it.  */
static void
send_held (struct mon_exec *e)
{
  uint8_t buf[65536];
  uint8_t stream = 1;
  uint32_t sent = 0;
  size_t n;

  while (e->held && client_backlog (e->req) < CLIENT_HIGH_WATER
         && (n = take_held (e, buf, sizeof (buf), &stream)) > 0)
    {
      mon_send_output (e->req, stream == 1 ? "stdout" : "stderr", buf, n, on_flushed, e);
      e->lines++;
      sent += n;
    }
  /* All of it taken and the client keeping up: credit at once, as for
     output sent as it came.  */
  if (evbuffer_get_length (e->held) == 0 && client_backlog (e->req) < CLIENT_HIGH_WATER)
    mon_chan_credit (e->m, e, sent);
  else
    e->sent += sent;
  if (e->last && evbuffer_get_length (e->held) == 0)
    {
      json_object *last = steal_pointer (&e->last);
      exec_finish (e, last);
      json_object_put (last);
    }
}

/* Called when everything handed to the client so far has been written to
   its socket: only then may the guest send more (end-to-end flow control,
   so a client that does not read cannot make the monitor buffer).  */
static void
on_flushed (struct evhttp_connection *evcon, void *arg)
{
  struct mon_exec *e = arg;
  (void) evcon;
  if (e->sent)
    mon_chan_credit (e->m, e, e->sent);
  e->sent = 0;
  e->lines = 0;
  if (e->req && e->held)
    send_held (e);
}

/* What the client will not see is owed back to the guest at once.  */
static void
drop_held (struct mon_exec *e)
{
  uint32_t held = 0;
  uint8_t hdr[5];

  while (e->held && evbuffer_remove (e->held, hdr, sizeof (hdr)) == sizeof (hdr))
    {
      uint32_t len = rt_get_u32 (hdr + 1);
      evbuffer_drain (e->held, len);
      held += len;
    }
  if (held + e->sent)
    mon_chan_credit (e->m, e, held + e->sent);
  e->sent = 0;
}

static void
on_client_gone (struct evhttp_connection *evcon, void *arg)
{
  struct mon_exec *e = arg;
  (void) evcon;
  /* Nobody will see the output: the command must not run on unseen.  */
  struct evhttp_request *req = e->req;
  e->req = NULL;
  mon_chan_signal (e->m, e->stream, SIGKILL);
  drop_held (e);
  /* libevent unlinks a streaming request whose client left but does not
     free it: ending the reply does (its connection is gone).  */
  if (req)
    evhttp_send_reply_end (req);
  if (e->last)
    exec_free (e);
}

static void
exec_finish (struct mon_exec *e, json_object *last)
{
  if (e->proc)
    mon_proc_exited (e->proc, last);
  if (e->req && e->held && evbuffer_get_length (e->held) > 0 && !mon_stopping (e->m))
    {
      /* The client still has output to take: the exit line waits for it
         (send_held).  */
      e->last = json_object_get (last);
      return;
    }
  if (e->req)
    {
      struct evhttp_connection *evcon = evhttp_request_get_connection (e->req);
      mon_send_line (e->req, last, NULL, NULL);
      evhttp_connection_set_closecb (evcon, NULL, NULL);
      evhttp_send_reply_end (e->req);
    }
  exec_free (e);
}

void
mon_exec_fail_all (struct mon *m, const char *code, const char *msg)
{
  mon_session_end_all (m, code, msg);
  while (m->execs)
    {
      json_object *line = mon_error_line (code, msg);
      exec_finish (m->execs, line);
      json_object_put (line);
    }
}

void
mon_exec_fail_clients (struct mon *m, const char *code, const char *msg)
{
  mon_session_end_all (m, code, msg);
  for (bool again = true; again;)
    {
      again = false;
      for (struct mon_exec *e = m->execs; e; e = e->next)
        if (e->req && !e->proc && !e->last)
          {
            json_object *line = mon_error_line (code, msg);
            exec_finish (e, line);
            json_object_put (line);
            again = true;
            break;
          }
    }
}

static void
exec_output (struct mon *m, struct mon_exec *e, uint8_t stream, const uint8_t *data, uint32_t len)
{
  if (e->sess)
    return mon_session_output (e->sess, stream, data, len);
  if (e->proc)
    {
      mon_proc_output (e->proc, stream, data, len);
      mon_chan_credit (m, e, len);
      return;
    }
  if (e->req == NULL)
    {
      mon_chan_credit (m, e, len);
      return;
    }
  /* Sent and credited at once while the client keeps up (its buffer under
     the high-water mark): crediting only on a full drain made every window
     stop and go.  Past the mark, output is held and its credit waits for
     the flush, so a client that does not read holds the guest back instead
     of filling the monitor's memory.  Lines count too: each costs libevent
     a buffer of its own (1 KiB or more), so a flood of one-byte frames is
     held and merged into large lines.  */
  if ((e->held == NULL || evbuffer_get_length (e->held) == 0) && client_backlog (e->req) < CLIENT_HIGH_WATER
      && e->lines < CLIENT_MAX_LINES)
    {
      mon_send_output (e->req, stream == 1 ? "stdout" : "stderr", data, len, on_flushed, e);
      e->lines++;
      mon_chan_credit (m, e, len);
    }
  else
    hold_output (e, stream, data, len);
}

static json_object *
parse_payload (const uint8_t *payload, uint32_t len)
{
  json_tokener *tok = json_tokener_new ();
  json_object *obj = tok ? json_tokener_parse_ex (tok, (const char *) payload, len) : NULL;
  if (obj && (json_tokener_get_error (tok) != json_tokener_success || !json_object_is_type (obj, json_type_object)))
    {
      json_object_put (obj);
      obj = NULL;
    }
  json_tokener_free (tok);
  return obj;
}

/* The last line of an exec from the agent's EXIT or ERROR frame.  */
static json_object *
last_line (const struct rt_frame_header *h, const uint8_t *payload)
{
  cleanup_json json_object *in = parse_payload (payload, h->len);
  json_object *line, *v;
  const char *code = "internal", *msg = "the agent refused the command";

  if (h->type == RT_FRAME_EXIT)
    {
      rt_exec_result res = { 0 };
      line = json_object_new_object ();
      json_object_object_add (line, "type", json_object_new_string ("exit"));
      rt_exec_result_from_json (in, &res);
      rt_exec_result_to_json (&res, line);
      return line;
    }
  if (in && json_object_object_get_ex (in, "code", &v) && json_object_is_type (v, json_type_string))
    code = json_object_get_string (v);
  if (in && json_object_object_get_ex (in, "message", &v) && json_object_is_type (v, json_type_string))
    msg = json_object_get_string (v);
  /* Only codes the product documents reach the user.  */
  if (strcmp (code, "file_not_found") != 0 && strcmp (code, "invalid_env") != 0
      && strcmp (code, "invalid_request") != 0)
    code = "internal";
  return mon_error_line (code, msg);
}

void
mon_exec_on_output (struct mon_exec *e, const struct rt_frame_header *h, const uint8_t *payload)
{
  if (h->len == 0)
    return;
  /* Output beyond the window (what it sent less the credit it was given)
     is a guest that ignores the protocol: nothing it sends can be trusted
     to stay bounded.  */
  if (h->len > RT_WINDOW_INITIAL - e->outstanding)
    {
      mon_stop (e->m, "guest_protocol_error");
      return;
    }
  e->outstanding += h->len;
  exec_output (e->m, e, h->type == RT_FRAME_STDOUT ? 1 : 2, payload, h->len);
}

void
mon_exec_on_window (struct mon_exec *e, const struct rt_frame_header *h, const uint8_t *payload)
{
  uint32_t n;

  if (h->len != 4)
    return;
  n = rt_get_u32 (payload);
  e->stdin_inflight -= n < e->stdin_inflight ? n : e->stdin_inflight;
  if (e->ev_stdin && !event_pending (e->ev_stdin, EV_READ, NULL))
    event_add (e->ev_stdin, NULL);
  if (e->proc)
    mon_procs_stdin_pump (e->m);
}

void
mon_exec_on_end (struct mon_exec *e, const struct rt_frame_header *h, const uint8_t *payload)
{
  json_object *line = last_line (h, payload);

  exec_finish (e, line);
  json_object_put (line);
}

/* A refusal keeps its code as a pointer: one of these.  */
static const char *
static_code (const char *code)
{
  static const char *const codes[] = { "invalid_request", "invalid_env", "usage", "internal" };

  for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
    if (strcmp (code, codes[i]) == 0)
      return codes[i];
  return "invalid_request";
}

/* The request read and checked by the library's own rules
   (rt_command_parse), as what it is: a spawn, a session or an exec.  */
static bool
check_command (struct mon_refusal *req, json_object *body, struct command *c)
{
  enum rt_command_kind kind = c->spawn ? RT_COMMAND_SPAWN : c->live_stdin ? RT_COMMAND_ATTACH : RT_COMMAND_EXEC;
  cleanup_error rt_error *err = NULL;
  const char *code;

  if (rt_command_parse (body, kind, &c->cmd, &err) < 0)
    {
      code = static_code (err->code);
      return reply_error_false (req, strcmp (code, "internal") == 0 ? 500 : 400, code,
                                strcmp (code, "invalid_env") == 0 ? "names are [A-Za-z_][A-Za-z0-9_]*" : NULL, "%s",
                                err->msg);
    }
  if (c->cmd.opts.cwd)
    c->cwd = c->cmd.opts.cwd;
  if (c->cmd.opts.user)
    c->user = c->cmd.opts.user;
  /* A session's stdin is its client's, however the request says.  */
  if (c->live_stdin)
    c->cmd.opts.stdin_len = 0;
  return true;
}

/* stdinPath: a stream too large for the request body, a FIFO or file the
   client made in this sandbox's own directory (nowhere else).  */
static bool
check_stdin_path (struct mon *m, struct mon_refusal *req, json_object *body, struct command *c)
{
  json_object *v;

  if (json_object_object_get_ex (body, "stdinPath", &v) && v)
    {
      const char *path = json_object_get_string (v);
      size_t dl = strlen (m->cfg->dir);
      if (c->cmd.opts.stdin_len > 0 || c->cmd.opts.keep_stdin || path == NULL || strncmp (path, m->cfg->dir, dl) != 0
          || strncmp (path + dl, "/upload-", 8) != 0 || strchr (path + dl + 1, '/') != NULL)
        return reply_error_false (req, 400, "invalid_request", NULL, "stdinPath must be an upload in the sandbox's dir");
      c->stdin_fd = open (path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
      if (c->stdin_fd < 0)
        return reply_error_false (req, 400, "invalid_request", NULL, "cannot open '%s': %s", path, strerror (errno));
    }
  return true;
}

/* The EXEC frame's payload: the image's and the sandbox's env first.  */
static json_object *
exec_request (struct mon *m, const struct command *c)
{
  json_object *exec = json_object_new_object (), *all = json_object_new_array (), *argv = json_object_new_array ();
  const rt_exec_opts *o = &c->cmd.opts;

  for (const char **a = c->cmd.argv; a && *a; a++)
    json_object_array_add (argv, json_object_new_string (*a));
  json_object_object_add (exec, "argv", argv);
  for (char **p = m->cfg->env; p && *p; p++)
    json_object_array_add (all, json_object_new_string (*p));
  for (const char **e = c->cmd.env; e && *e; e++)
    json_object_array_add (all, json_object_new_string (*e));
  json_object_object_add (exec, "env", all);
  json_object_object_add (exec, "cwd", json_object_new_string (c->cwd));
  json_object_object_add (exec, "user", json_object_new_string (c->user));
  json_object_object_add (exec, "timeoutMs", json_object_new_int64 ((int64_t) o->timeout_ms));
  json_object_object_add (exec, "stdin", json_object_new_boolean (o->stdin_len > 0 || c->stdin_fd >= 0 || o->keep_stdin
                                                                || c->live_stdin));
  if (o->pty_cols)
    {
      json_object *pty = json_object_new_object ();
      json_object_object_add (pty, "cols", json_object_new_int ((int) o->pty_cols));
      json_object_object_add (pty, "rows", json_object_new_int ((int) o->pty_rows));
      json_object_object_add (exec, "pty", pty);
    }
  return exec;
}

struct mon_exec *
mon_exec_new (struct mon *m)
{
  struct mon_exec *e = calloc (1, sizeof (*e));

  if (e == NULL)
    return NULL;
  e->m = m;
  e->stream = m->next_stream++;
  e->stdin_fd = -1;
  e->next = m->execs;
  m->execs = e;
  return e;
}

void
mon_exec_free (struct mon_exec *e)
{
  exec_free (e);
}

/* What refuses any new stream: a paused sandbox, a guest not reading.  */
bool
mon_exec_refused (struct mon *m, struct mon_refusal *r)
{
  if (mon_stopping (m))
    return !mon_refuse (r, 409, "sandbox_stopped", NULL, "sandbox %s stopped", m->cfg->id);
  if (m->phase == MON_PAUSED)
    return !mon_refuse (r, 409, "sandbox_paused", "runtime sandbox wake wakes it", "sandbox %s is paused",
                        m->cfg->id);
  if (mon_chan_full (m))
    return !mon_refuse (r, 409, "sandbox_not_ready", NULL, "sandbox %s is not reading its channel", m->cfg->id);
  return false;
}

/* Checks @body (stdin and stdinPath too unless @c->live_stdin) and sends
   the EXEC.  Return: the exec, or NULL with @r set.  */
static struct mon_exec *
command_start (struct mon *m, json_object *body, struct command *c, struct mon_refusal *r)
{
  cleanup_json json_object *exec = NULL;
  struct mon_exec *e;

  if (mon_exec_refused (m, r))
    return NULL;
  if (!check_command (r, body, c) || (!c->live_stdin && !check_stdin_path (m, r, body, c)))
    return NULL;
  exec = exec_request (m, c);
  if (strlen (json_object_to_json_string_ext (exec, JSON_C_TO_STRING_PLAIN)) > RT_FRAME_MAX_PAYLOAD)
    return (mon_refuse (r, 400, "invalid_request", NULL, "the command and its environment are too large"), NULL);
  e = mon_exec_new (m);
  if (e == NULL)
    return (mon_refuse (r, 500, "internal", NULL, "out of memory"), NULL);
  mon_chan_queue_json (m, RT_FRAME_EXEC, e->stream, exec);
  return e;
}

struct mon_exec *
mon_exec_open (struct mon *m, json_object *body, struct mon_refusal *r)
{
  cleanup_command struct command c = { .cwd = m->cfg->workdir ? m->cfg->workdir : "/workspace",
                                       .user = "runtime",
                                       .stdin_fd = -1,
                                       .live_stdin = true };
  return command_start (m, body, &c, r);
}

struct mon_exec *
mon_exec_start (struct mon *m, struct evhttp_request *req, json_object *body, bool spawn)
{
  cleanup_command struct command c = {
    .cwd = m->cfg->workdir ? m->cfg->workdir : "/workspace", .user = "runtime", .stdin_fd = -1, .spawn = spawn
  };
  struct mon_refusal r;
  struct mon_exec *e = command_start (m, body, &c, &r);

  if (e == NULL)
    return (reply_refusal (req, &r), NULL);
  e->stdin_fd = steal_fd (&c.stdin_fd);
  for (size_t off = 0; off < c.cmd.opts.stdin_len; off += 65536)
    mon_chan_queue (m, RT_FRAME_STDIN, e->stream, c.cmd.stdin_buf + off,
                    c.cmd.opts.stdin_len - off < 65536 ? c.cmd.opts.stdin_len - off : 65536);
  /* Counted in flight: a kept stdin's writes follow it within the window.  */
  e->stdin_inflight = (uint32_t) c.cmd.opts.stdin_len;
  if (c.cmd.opts.stdin_len && !c.cmd.opts.keep_stdin)
    mon_chan_queue (m, RT_FRAME_STDIN, e->stream, NULL, 0);
  if (e->stdin_fd >= 0)
    {
      e->ev_stdin = event_new (m->base, e->stdin_fd, EV_READ | EV_PERSIST, on_stdin_ready, e);
      if (e->ev_stdin)
        event_add (e->ev_stdin, NULL);
    }
  return e;
}

void
mon_handle_exec (struct mon *m, struct evhttp_request *req, json_object *body)
{
  struct mon_exec *e = mon_exec_start (m, req, body, false);
  json_object *start;

  if (e == NULL)
    return;
  e->req = req;
  mon_start_stream (req);
  evhttp_connection_set_closecb (evhttp_request_get_connection (req), on_client_gone, e);
  start = json_object_new_object ();
  json_object_object_add (start, "type", json_object_new_string ("start"));
  json_object_object_add (start, "execId", json_object_new_int64 (e->stream));
  mon_send_line (req, start, NULL, NULL);
  json_object_put (start);
}

void
mon_handle_signal (struct mon *m, struct evhttp_request *req, json_object *body)
{
  json_object *v;
  int64_t id = 0, sig = 0;

  if (json_object_object_get_ex (body, "execId", &v))
    id = json_object_get_int64 (v);
  if (json_object_object_get_ex (body, "signal", &v))
    sig = json_object_get_int64 (v);
  if (sig < 1 || sig > 64)
    return mon_reply_error (req, 400, "invalid_request", NULL, "signal must be 1 to 64");
  if (id <= 0 || id > UINT32_MAX || mon_exec_find (m, (uint32_t) id) == NULL)
    return mon_reply_error (req, 404, "not_found", NULL, "no running command %lld", (long long) id);
  if (mon_chan_full (m))
    return mon_reply_error (req, 409, "sandbox_not_ready", NULL, "sandbox %s is not reading its channel", m->cfg->id);
  mon_chan_signal (m, (uint32_t) id, (int) sig);
  mon_reply_json (req, 200, m->state);
}
