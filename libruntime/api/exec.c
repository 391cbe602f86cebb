/* exec.c - exec (JSON and NDJSON streams) and background processes
   (docs/API.md "Exec and processes").

   A JSON exec is the monitor's exec (rt_sandbox_exec): its output comes
   under flow control, the first OUT_MAX bytes of each stream are kept and
   the rest only counted.  A streamed exec is a background process
   (rt_sandbox_spawn), whose output the monitor keeps (its latest 1 MiB),
   followed from byte 0 (rt_sandbox_output): a client that goes away
   does not end it, and resumes from its byte cursor with
   GET …/processes/{pid}/output.
   (no header of its own: handlers.h declares its routes).  */
#include <signal.h>
#include <string.h>

#include "common/b64.h"
#include "common/sys.h"
#include "common/util.h"
#include "sandbox/handle.h"
#include "api/handlers.h"
#include "api/text.h"

/* A JSON exec keeps this much of each stream.  */
#define OUT_MAX (1u << 20)
/* A stream ends with a continue event after this long.  */
#define STREAM_MAX_MS (10 * 60 * 1000)
/* Reconnects to the monitor in a row that brought nothing new.  */
#define MAX_IDLE_RECONNECTS 4

const struct srv_field srv_fields_exec[] = {
  { "argv", json_type_array },    { "command", json_type_string }, { "cwd", json_type_string },
  { "env", json_type_object },    { "stdin", json_type_string },   { "stdinBase64", json_type_string },
  { "timeoutMs", json_type_int }, { "stream", json_type_boolean }, { "user", json_type_string },
  { NULL, 0 },
};

const struct srv_field srv_fields_spawn[] = {
  { "argv", json_type_array },    { "command", json_type_string },   { "cwd", json_type_string },
  { "env", json_type_object },    { "timeoutMs", json_type_int },    { "stdinMode", json_type_string },
  { "pty", json_type_null },      { "user", json_type_string },      { "stdin", json_type_string },
  { "stdinBase64", json_type_string }, { NULL, 0 },
};

/* A command request, checked.  */
struct command
{
  char **argv, **env;
  uint8_t *input;
  size_t input_len;
  rt_exec_opts opts;
};

static void
command_clear (struct command *c)
{
  cleanup_strvp (&c->argv);
  cleanup_strvp (&c->env);
  free (c->input);
}
#define cleanup_command __attribute__ ((cleanup (command_clear)))

#define bad_request(r, ...) (srv_reply_error (r, 400, "invalid_request", NULL, NULL, __VA_ARGS__), false)

static bool
parse_argv (struct srv_req *r, json_object *body, struct command *c)
{
  json_object *argv = json_object_object_get (body, "argv");
  const char *command = rt_json_str (body, "command");

  if (argv && command)
    return bad_request (r, "give argv or command, not both");
  if (command)
    {
      if (*command == '\0')
        return bad_request (r, "command must not be empty");
      c->argv = calloc (6, sizeof (char *));
      if (c->argv == NULL || !(c->argv[0] = strdup ("/bin/sh")) || !(c->argv[1] = strdup ("-c"))
          || !(c->argv[2] = strdup (RT_SHELL_SCRIPT)) || !(c->argv[3] = strdup ("sh"))
          || !(c->argv[4] = strdup (command)))
        return (srv_reply_error (r, 500, "internal", NULL, NULL, "out of memory"), false);
      return true;
    }
  if (argv == NULL || json_object_array_length (argv) == 0)
    return bad_request (r, "argv must be a non-empty array of strings (or give command)");
  c->argv = calloc (json_object_array_length (argv) + 1, sizeof (char *));
  for (size_t i = 0; c->argv && i < json_object_array_length (argv); i++)
    {
      json_object *a = json_object_array_get_idx (argv, i);
      if (!json_object_is_type (a, json_type_string))
        return bad_request (r, "argv[%zu] must be a string", i);
      if ((c->argv[i] = strdup (json_object_get_string (a))) == NULL)
        break;
    }
  if (c->argv == NULL || c->argv[json_object_array_length (argv) - 1] == NULL)
    return (srv_reply_error (r, 500, "internal", NULL, NULL, "out of memory"), false);
  return true;
}

/* env {K: V} as "K=V" strings (the monitor checks the names).  */
static bool
parse_env (struct srv_req *r, json_object *body, struct command *c)
{
  json_object *env = json_object_object_get (body, "env");
  size_t i = 0;

  if (env == NULL)
    return true;
  c->env = calloc (json_object_object_length (env) + 1, sizeof (char *));
  if (c->env == NULL)
    return (srv_reply_error (r, 500, "internal", NULL, NULL, "out of memory"), false);
  json_object_object_foreach (env, key, val)
  {
    if (!json_object_is_type (val, json_type_string))
      return bad_request (r, "env.%s must be a string", key);
    if ((c->env[i++] = rt_strdup_printf ("%s=%s", key, json_object_get_string (val))) == NULL)
      return (srv_reply_error (r, 500, "internal", NULL, NULL, "out of memory"), false);
  }
  return true;
}

bool
srv_parse_bytes (struct srv_req *r, json_object *body, const char *text_key, const char *b64_key, uint8_t **out,
                 size_t *len)
{
  const char *text = rt_json_str (body, text_key), *b64 = rt_json_str (body, b64_key);
  size_t n;
  ssize_t got;

  *out = NULL;
  *len = 0;
  if (text && b64)
    return bad_request (r, "give %s or %s, not both", text_key, b64_key);
  if (text)
    {
      /* Text may hold NUL (\u0000).  */
      *len = (size_t) json_object_get_string_len (json_object_object_get (body, text_key));
      if ((*out = malloc (*len + 1)) == NULL)
        return (srv_reply_error (r, 500, "internal", NULL, NULL, "out of memory"), false);
      memcpy (*out, text, *len);
    }
  else if (b64 && (n = strlen (b64)) > 0)
    {
      if (n % 4 != 0 || RT_B64_DECODED_MAX (n) > RT_MAX_STDIN + 3
          || (*out = malloc (RT_B64_DECODED_MAX (n) + 1)) == NULL)
        return bad_request (r, "%s must be base64 of at most 1 MiB", b64_key);
      got = rt_b64_decode (b64, n, *out);
      if (got < 0)
        return bad_request (r, "%s must be base64 of at most 1 MiB", b64_key);
      *len = (size_t) got;
    }
  if (*len > RT_MAX_STDIN)
    return bad_request (r, "%s is over 1 MiB", text_key);
  return true;
}

static bool
parse_command (struct srv_req *r, json_object *body, struct command *c)
{
  json_object *v;

  c->opts.cancel_fd = -1;
  if (!parse_argv (r, body, c) || !parse_env (r, body, c)
      || !srv_parse_bytes (r, body, "stdin", "stdinBase64", &c->input, &c->input_len))
    return false;
  c->opts.stdin_data = c->input;
  c->opts.stdin_len = c->input_len;
  c->opts.env = (const char *const *) c->env;
  c->opts.cwd = rt_json_str (body, "cwd");
  c->opts.user = rt_json_str (body, "user");
  if (json_object_object_get_ex (body, "timeoutMs", &v) && v)
    {
      if (json_object_get_int64 (v) < 0)
        return bad_request (r, "timeoutMs must not be negative");
      c->opts.timeout_ms = (uint64_t) json_object_get_int64 (v);
    }
  return true;
}

/* ---- JSON exec --------------------------------------------------------- */

struct kept
{
  uint8_t *buf;
  size_t len;
  uint64_t total;
};

static int
keep_output (void *data, int stream, const char *buf, size_t len)
{
  struct kept *k = (struct kept *) data + (stream == 2);
  size_t take = len < OUT_MAX - k->len ? len : OUT_MAX - k->len;

  k->total += len;
  if (take == 0)
    return 0;
  if (k->buf == NULL && (k->buf = malloc (OUT_MAX)) == NULL)
    return -1;
  memcpy (k->buf + k->len, buf, take);
  k->len += take;
  return 0;
}

/* The kept bytes as text; cut at a whole character when truncated.  */
static json_object *
kept_text (struct kept *k)
{
  size_t n = k->total > k->len ? srv_utf8_complete (k->buf, k->len) : k->len, len;
  bool valid;
  cleanup_free char *text = srv_utf8_text (k->buf ? k->buf : (uint8_t *) "", n, &len, &valid);

  return text ? json_object_new_string_len (text, (int) len) : NULL;
}

static void
exec_json (struct srv_req *r, rt_sandbox *sb, struct command *c)
{
  cleanup_error rt_error *err = NULL;
  struct kept out[2] = { { 0 } };
  rt_exec_result res;
  json_object *o;

  c->opts.on_output = keep_output;
  c->opts.data = out;
  if (rt_sandbox_exec (sb, (const char *const *) c->argv, &c->opts, &res, &err) < 0)
    {
      free (out[0].buf);
      free (out[1].buf);
      return srv_reply_rt_error (r, err);
    }
  o = json_object_new_object ();
  json_object_object_add (o, "exitCode", json_object_new_int (res.exit_code));
  json_object_object_add (o, "stdout", kept_text (&out[0]));
  json_object_object_add (o, "stderr", kept_text (&out[1]));
  json_object_object_add (o, "timedOut", json_object_new_boolean (res.timed_out));
  json_object_object_add (o, "stdoutTruncated", json_object_new_boolean (out[0].total > out[0].len));
  json_object_object_add (o, "stderrTruncated", json_object_new_boolean (out[1].total > out[1].len));
  json_object_object_add (o, "durationMs", json_object_new_int64 ((int64_t) res.duration_ms));
  json_object_object_add (o, "processId", NULL);
  json_object_object_add (o, "signal", res.signal ? json_object_new_int (res.signal) : NULL);
  free (out[0].buf);
  free (out[1].buf);
  srv_reply_json (r, 200, o);
}

/* ---- following a process's output -------------------------------------- */

struct follow
{
  struct srv_req *r;
  uint32_t pid;
  uint64_t cursor;       /* the bytes the client has been sent */
  uint64_t deadline;     /* rt_now_ms: then a continue event */
  uint8_t tail[4];       /* a character cut by a chunk's end, at cursor */
  size_t tail_len;
  int tail_stream;
  bool started, ended, gone, cont;
};

static void
start (struct follow *f)
{
  if (f->started)
    return;
  f->started = true;
  if (srv_stream_start (f->r, 200, "application/x-ndjson") < 0)
    f->gone = true;
}

static int
emit (struct follow *f, json_object *o)
{
  start (f);
  if (f->gone || srv_stream_line (f->r, o) < 0)
    {
      if (f->gone)
        json_object_put (o);
      f->gone = true;
      return -1;
    }
  return 0;
}

/* {"type":stdout|stderr,"data":TEXT,"offset":N}, with dataBase64 too when
   the bytes are not all UTF-8 (data then has U+FFFD for them).  */
static int
emit_bytes (struct follow *f, int stream, const uint8_t *data, size_t n, uint64_t offset)
{
  cleanup_free char *text = NULL;
  json_object *o;
  size_t len;
  bool valid;

  if (n == 0)
    return 0;
  if ((text = srv_utf8_text (data, n, &len, &valid)) == NULL)
    return -1;
  o = json_object_new_object ();
  json_object_object_add (o, "type", json_object_new_string (stream == 2 ? "stderr" : "stdout"));
  json_object_object_add (o, "data", json_object_new_string_len (text, (int) len));
  json_object_object_add (o, "offset", json_object_new_int64 ((int64_t) offset));
  if (!valid)
    {
      json_object_object_add (o, "dataBase64", rt_b64_json (data, n));
    }
  f->cursor = offset + n;
  return emit (f, o);
}

/* A held character that no more bytes will complete goes as it is.  */
static int
flush_tail (struct follow *f)
{
  size_t n = f->tail_len;

  f->tail_len = 0;
  return emit_bytes (f, f->tail_stream, f->tail, n, f->cursor);
}

static int
on_output (struct follow *f, json_object *ev, int stream)
{
  const char *b64 = rt_json_str (ev, "data");
  int64_t offset = rt_json_i64 (ev, "offset");
  size_t n = b64 ? strlen (b64) : 0, len, whole;
  cleanup_free uint8_t *buf = malloc (f->tail_len + RT_B64_DECODED_MAX (n) + 1);
  ssize_t dl;

  if (buf == NULL || n % 4 != 0 || offset < 0)
    return -1;
  if (f->tail_len && (stream != f->tail_stream || (uint64_t) offset != f->cursor + f->tail_len) && flush_tail (f) < 0)
    return -1;
  memcpy (buf, f->tail, f->tail_len);
  dl = rt_b64_decode (b64, n, buf + f->tail_len);
  if (dl < 0)
    return -1;
  len = f->tail_len + (size_t) dl;
  if (f->tail_len)
    offset = (int64_t) f->cursor;
  whole = srv_utf8_complete (buf, len);
  f->tail_len = len - whole;
  f->tail_stream = stream;
  memcpy (f->tail, buf + whole, f->tail_len);
  if (whole == 0)
    {
      f->cursor = (uint64_t) offset;
      return 0;
    }
  return emit_bytes (f, stream, buf, whole, (uint64_t) offset);
}

/* The monitor's exit line as the API's exit event.  */
static json_object *
exit_event (json_object *ev)
{
  json_object *o = json_object_new_object (), *v;
  bool timed_out = json_object_object_get_ex (ev, "timedOut", &v) && json_object_get_boolean (v);
  int64_t sig = rt_json_i64 (ev, "signal");

  json_object_object_add (o, "type", json_object_new_string ("exit"));
  json_object_object_add (o, "exitCode", timed_out ? json_object_new_int (124)
                                         : json_object_object_get_ex (ev, "exitCode", &v) ? json_object_get (v)
                                                                                          : NULL);
  json_object_object_add (o, "state", json_object_new_string (timed_out ? "timed_out" : sig > 0 ? "killed" : "exited"));
  json_object_object_add (o, "timedOut", json_object_new_boolean (timed_out));
  json_object_object_add (o, "durationMs", json_object_new_int64 (rt_json_i64 (ev, "durationMs")));
  json_object_object_add (o, "signal", sig > 0 ? json_object_new_int64 (sig) : NULL);
  json_object_object_add (o, "interrupted", json_object_new_boolean (false));
  return o;
}

static json_object *
error_event (const char *code, const char *msg, const char *hint, const char *request_id)
{
  json_object *o = json_object_new_object (), *e = json_object_new_object ();

  json_object_object_add (e, "code", json_object_new_string (code ? code : "internal"));
  json_object_object_add (e, "status", json_object_new_int (srv_status_for (code ? code : "internal")));
  json_object_object_add (e, "message", json_object_new_string (msg ? msg : "failed"));
  json_object_object_add (e, "hint", hint ? json_object_new_string (hint) : NULL);
  json_object_object_add (e, "details", NULL);
  json_object_object_add (e, "requestId", json_object_new_string (request_id));
  json_object_object_add (o, "type", json_object_new_string ("error"));
  json_object_object_add (o, "error", e);
  return o;
}

static int
on_event (void *data, json_object *ev)
{
  struct follow *f = data;
  const char *type = ev ? rt_json_str (ev, "type") : NULL;

  if (ev == NULL)
    {
      f->cont = srv_stopping (f->r) || rt_now_ms () >= f->deadline;
      f->gone = !f->cont && srv_gone (f->r);
      return f->cont || f->gone ? -1 : 0;
    }
  if (type == NULL)
    return 0;
  if (strcmp (type, "stdout") == 0 || strcmp (type, "stderr") == 0)
    return on_output (f, ev, type[3] == 'e' ? 2 : 1);
  if (strcmp (type, "truncated") == 0)
    {
      f->tail_len = 0;
      f->cursor = (uint64_t) rt_json_i64 (ev, "resumeAt");
      return emit (f, json_object_get (ev));
    }
  if (strcmp (type, "exit") == 0 || strcmp (type, "error") == 0)
    {
      json_object *err = json_object_object_get (ev, "error");
      if (f->tail_len && flush_tail (f) < 0)
        return -1;
      f->ended = true;
      return emit (f, strcmp (type, "exit") == 0 ? exit_event (ev)
                          : error_event (rt_json_str (err, "code"), rt_json_str (err, "message"),
                                         rt_json_str (err, "hint"), srv_request_id (f->r)));
    }
  return 0;
}

static void
emit_continue (struct follow *f)
{
  json_object *o = json_object_new_object ();
  char id[16];

  snprintf (id, sizeof (id), "%u", f->pid);
  json_object_object_add (o, "type", json_object_new_string ("continue"));
  json_object_object_add (o, "processId", json_object_new_string (id));
  json_object_object_add (o, "cursor", json_object_new_int64 ((int64_t) f->cursor));
  emit (f, o);
}

/* Sends process @f->pid's output from f->cursor, to its end with @follow
   (across the monitor letting a slow reader go: it follows again from
   the cursor), and ends the stream; before any of it, an error is the
   answer.  */
static void
follow_output (struct follow *f, rt_sandbox *sb, bool follow)
{
  int idle = 0;

  f->deadline = rt_now_ms () + STREAM_MAX_MS;
  for (;;)
    {
      cleanup_error rt_error *err = NULL;
      uint64_t from = f->cursor;

      f->tail_len = 0;
      if (rt_sandbox_output (sb, f->pid, f->cursor, follow, on_event, f, &err) < 0)
        {
          if (!f->started)
            return srv_reply_rt_error (f->r, err);
          emit (f, error_event (err->code, err->msg, err->hint, srv_request_id (f->r)));
          break;
        }
      if (f->gone || f->ended)
        break;
      if (f->cont)
        {
          emit_continue (f);
          break;
        }
      if (!follow)
        {
          if (f->tail_len)
            flush_tail (f);
          break;
        }
      idle = f->cursor == from ? idle + 1 : 0;
      if (idle >= MAX_IDLE_RECONNECTS)
        {
          emit (f, error_event ("internal", "the process's output stopped coming", NULL, srv_request_id (f->r)));
          break;
        }
    }
  start (f);
  srv_stream_end (f->r);
}

/* ---- the routes ---------------------------------------------------------- */

static void
exec_stream (struct srv_req *r, rt_sandbox *sb, struct command *c)
{
  cleanup_error rt_error *err = NULL;
  struct follow f = { .r = r };
  json_object *o;
  char id[16];

  if (rt_sandbox_spawn (sb, (const char *const *) c->argv, &c->opts, &f.pid, &err) < 0)
    return srv_reply_rt_error (r, err);
  snprintf (id, sizeof (id), "%u", f.pid);
  o = json_object_new_object ();
  json_object_object_add (o, "type", json_object_new_string ("start"));
  json_object_object_add (o, "processId", json_object_new_string (id));
  emit (&f, o);
  follow_output (&f, sb, true);
}

void
srv_exec (struct srv_req *r)
{
  cleanup_json json_object *body = srv_body_json (r, srv_fields_exec);
  cleanup_command struct command c = { 0 };
  rt_sandbox *sb;
  json_object *v;

  if (body == NULL || !parse_command (r, body, &c) || (sb = srv_sandbox_open (r)) == NULL)
    return;
  if (json_object_object_get_ex (body, "stream", &v) && json_object_get_boolean (v))
    exec_stream (r, sb, &c);
  else
    exec_json (r, sb, &c);
  rt_sandbox_close (sb);
}

/* {pid} as a process number; 0 (after answering 404) when it is none.  */
uint32_t
srv_pid_param (struct srv_req *r)
{
  const char *s = srv_param (r, "pid");
  uint64_t v = 0;
  size_t i;

  for (i = 0; s && s[i] >= '0' && s[i] <= '9' && i < 10; i++)
    v = v * 10 + (uint64_t) (s[i] - '0');
  if (s == NULL || i == 0 || s[i] != '\0' || v == 0 || v > UINT32_MAX)
    {
      srv_reply_error (r, 404, "not_found", "GET …/processes lists them", NULL, "no process %s", s ? s : "");
      return 0;
    }
  return (uint32_t) v;
}

static json_object *
time_or_null (int64_t ms)
{
  char when[32];

  if (ms <= 0)
    return NULL;
  rt_format_time (ms, when);
  return json_object_new_string (when);
}

/* The monitor's ps entry as a ProcessInfo (docs/API.md).  */
static json_object *
process_info (json_object *p)
{
  json_object *o = json_object_new_object (), *v;
  const char *state = rt_json_str (p, "state");
  bool running = state && strcmp (state, "running") == 0;
  bool timed_out = json_object_object_get_ex (p, "timedOut", &v) && json_object_get_boolean (v);
  char id[24];

  snprintf (id, sizeof (id), "%lld", (long long) rt_json_i64 (p, "process"));
  json_object_object_add (o, "id", json_object_new_string (id));
  json_object_object_add (o, "kind", json_object_new_string ("process"));
  json_object_object_add (o, "state", json_object_new_string (running     ? "running"
                                                                : timed_out ? "timed_out"
                                                                : rt_json_i64 (p, "signal") > 0
                                                                        || json_object_object_get (p, "error")
                                                                    ? "killed"
                                                                    : "exited"));
  json_object_object_add (o, "exitCode", timed_out ? json_object_new_int (124)
                                                   : json_object_get (json_object_object_get (p, "exitCode")));
  json_object_object_add (o, "command", json_object_get (json_object_object_get (p, "command")));
  json_object_object_add (o, "cwd", json_object_get (json_object_object_get (p, "cwd")));
  json_object_object_add (o, "pty", json_object_get (json_object_object_get (p, "pty")));
  json_object_object_add (o, "stdinOpen", json_object_new_boolean (json_object_get_boolean (
                                              json_object_object_get (p, "stdinOpen"))));
  json_object_object_add (o, "stdinOffset", json_object_new_int64 (rt_json_i64 (p, "stdinOffset")));
  json_object_object_add (o, "startedAt", time_or_null (rt_json_i64 (p, "startedMs")));
  json_object_object_add (o, "endedAt", time_or_null (rt_json_i64 (p, "endedMs")));
  json_object_object_add (o, "timeoutMs",
                          rt_json_i64 (p, "timeoutMs") > 0 ? json_object_new_int64 (rt_json_i64 (p, "timeoutMs")) : NULL);
  json_object_object_add (o, "outputBytes", json_object_new_int64 (rt_json_i64 (p, "outputBytes")));
  json_object_object_add (o, "firstOffset", json_object_new_int64 (rt_json_i64 (p, "droppedBytes")));
  return o;
}

/* Process @pid's ProcessInfo, or (@pid 0) every one's as an array; NULL
   after answering the error.  */
static json_object *
processes (struct srv_req *r, rt_sandbox *sb, uint32_t pid)
{
  cleanup_error rt_error *err = NULL;
  cleanup_free char *text = NULL;
  cleanup_json json_object *all = NULL;
  json_object *out;

  if (rt_sandbox_ps_json (sb, &text, &err) < 0)
    return srv_reply_rt_error (r, err), NULL;
  all = json_tokener_parse (text);
  out = pid ? NULL : json_object_new_array ();
  for (size_t i = 0; all && i < json_object_array_length (all); i++)
    {
      json_object *p = json_object_array_get_idx (all, i);
      if (pid == 0)
        json_object_array_add (out, process_info (p));
      else if (rt_json_i64 (p, "process") == pid)
        return process_info (p);
    }
  if (out == NULL)
    srv_reply_error (r, 404, "not_found", "GET …/processes lists them", NULL, "no process %u", pid);
  return out;
}

void
srv_process_spawn (struct srv_req *r)
{
  cleanup_json json_object *body = srv_body_json (r, srv_fields_spawn);
  cleanup_command struct command c = { 0 };
  cleanup_error rt_error *err = NULL;
  const char *mode;
  json_object *info;
  rt_sandbox *sb;
  uint32_t pid;

  if (body == NULL)
    return;
  mode = rt_json_str (body, "stdinMode");
  if (mode && strcmp (mode, "closed") != 0 && strcmp (mode, "pipe") != 0)
    return (void) bad_request (r, "stdinMode must be \"closed\" or \"pipe\"");
  /* Given stdin is written once, then closed: not with a pipe kept open.  */
  if (mode && strcmp (mode, "pipe") == 0
      && (json_object_object_get (body, "stdin") || json_object_object_get (body, "stdinBase64")))
    return (void) bad_request (r, "give stdin or stdinMode \"pipe\", not both");
  if (!parse_command (r, body, &c) || !srv_parse_pty (r, json_object_object_get (body, "pty"), &c.opts))
    return;
  c.opts.keep_stdin = mode && strcmp (mode, "pipe") == 0;
  if ((sb = srv_sandbox_open (r)) == NULL)
    return;
  if (rt_sandbox_spawn (sb, (const char *const *) c.argv, &c.opts, &pid, &err) < 0)
    srv_reply_rt_error (r, err);
  else if ((info = processes (r, sb, pid)))
    srv_reply_json (r, 201, info);
  rt_sandbox_close (sb);
}

void
srv_process_list (struct srv_req *r)
{
  rt_sandbox *sb = srv_sandbox_open (r);
  json_object *all;

  if (sb == NULL)
    return;
  if ((all = processes (r, sb, 0)))
    srv_reply_page (r, all);
  rt_sandbox_close (sb);
}

void
srv_process_get (struct srv_req *r)
{
  rt_sandbox *sb = srv_sandbox_open (r);
  uint32_t pid;
  json_object *info;

  if (sb == NULL)
    return;
  if ((pid = srv_pid_param (r)) && (info = processes (r, sb, pid)))
    srv_reply_json (r, 200, info);
  rt_sandbox_close (sb);
}

/* ?cursor= as a byte count; false after answering 400.  */
static bool
cursor_query (struct srv_req *r, uint64_t *cursor)
{
  const char *s = srv_query (r, "cursor");
  uint64_t v = 0;
  size_t i;

  *cursor = 0;
  if (s == NULL || *s == '\0')
    return true;
  for (i = 0; s[i] >= '0' && s[i] <= '9'; i++)
    {
      if (v > (UINT64_MAX - 9) / 10 || i >= 19)
        return bad_request (r, "cursor must be a byte offset the output has reached");
      v = v * 10 + (uint64_t) (s[i] - '0');
    }
  if (s[i] != '\0')
    return bad_request (r, "cursor must be a byte offset the output has reached");
  *cursor = v;
  return true;
}

void
srv_process_output (struct srv_req *r)
{
  const char *fl = srv_query (r, "follow");
  struct follow f = { .r = r };
  rt_sandbox *sb;

  if (fl && strcmp (fl, "true") != 0 && strcmp (fl, "false") != 0 && strcmp (fl, "1") != 0 && strcmp (fl, "0") != 0)
    return (void) bad_request (r, "follow must be true or false");
  if (!cursor_query (r, &f.cursor) || (sb = srv_sandbox_open (r)) == NULL)
    return;
  if ((f.pid = srv_pid_param (r)))
    follow_output (&f, sb, fl && (strcmp (fl, "true") == 0 || strcmp (fl, "1") == 0));
  rt_sandbox_close (sb);
}

static const struct
{
  const char *name;
  int sig;
} signals[] = {
  { "HUP", SIGHUP },   { "INT", SIGINT },   { "QUIT", SIGQUIT }, { "KILL", SIGKILL }, { "USR1", SIGUSR1 },
  { "USR2", SIGUSR2 }, { "TERM", SIGTERM }, { "CONT", SIGCONT }, { "STOP", SIGSTOP }, { "TSTP", SIGTSTP },
  { "ALRM", SIGALRM }, { "PIPE", SIGPIPE }, { "WINCH", SIGWINCH },
};

/* {signal: "SIGTERM" | "TERM" | N}: its number, 0 when it is none.  */
static int
signal_of (json_object *v)
{
  const char *s;

  if (v == NULL)
    return SIGTERM;
  if (json_object_is_type (v, json_type_int))
    return json_object_get_int64 (v) >= 1 && json_object_get_int64 (v) <= 64 ? (int) json_object_get_int64 (v) : 0;
  if (!json_object_is_type (v, json_type_string))
    return 0;
  s = json_object_get_string (v);
  if (strncmp (s, "SIG", 3) == 0)
    s += 3;
  for (size_t i = 0; i < sizeof (signals) / sizeof (signals[0]); i++)
    if (strcmp (s, signals[i].name) == 0)
      return signals[i].sig;
  return 0;
}

const struct srv_field srv_fields_signal[] = { { "signal", json_type_null }, { NULL, 0 } };

void
srv_process_signal (struct srv_req *r)
{
  cleanup_json json_object *body = srv_body_json (r, srv_fields_signal);
  cleanup_error rt_error *err = NULL;
  rt_sandbox *sb;
  uint32_t pid;
  int sig;

  if (body == NULL)
    return;
  if ((sig = signal_of (json_object_object_get (body, "signal"))) == 0)
    return (void) bad_request (r, "signal must be a name like \"SIGTERM\" or a number 1 to 64");
  if ((sb = srv_sandbox_open (r)) == NULL)
    return;
  if ((pid = srv_pid_param (r)) && rt_sandbox_kill (sb, pid, sig, &err) < 0)
    srv_reply_rt_error (r, err);
  else if (pid)
    srv_reply_json (r, 200, json_object_new_object ());
  rt_sandbox_close (sb);
}
