/* exec.c - commands in client mode.  An exec is one NDJSON stream (start,
   stdout/stderr with byte offsets, exit); a stream that breaks or ends
   with "continue" is followed again from the bytes seen through
   …/processes/{pid}/output, so no byte is lost or shown twice.  Ctrl-C
   (opts->cancel_fd) becomes :signal SIGTERM, then SIGKILL 5 s later, as
   locally.  */
#include <signal.h>
#include <string.h>
#include <time.h>

#include "common/b64.h"
#include "common/exec-result.h"
#include "remote/exec.h"
#include "remote/http.h"
#include "remote/sandboxes.h"
#include "remote/stdin.h"
#include "sandbox/handle.h"

#define KILL_GRACE_MS 5000

struct stream
{
  rt_sandbox *sb;
  const rt_exec_opts *opts;
  rt_exec_result *res;
  rt_error **err;
  struct rt_ndjson lines;
  char pid[32];        /* the process's id, "" before the start event */
  uint64_t seen;       /* output bytes passed on: the resume cursor */
  bool ended;          /* an exit or error event came */
  bool resume;         /* a continue event came */
  bool output_failed;
  bool only_start;     /* spawn: the stream is left once it named the process */
  bool cancelled, term_sent;
  uint64_t kill_at;
  int abort_fd;        /* >= 0: readable ends the stream at once, unfinished */
  bool aborted;
};

json_object *
rt_remote_signal (int sig)
{
  /* The names the server takes (docs/API.md); any other goes as its
     number.  */
  static const int named[] = { SIGHUP,  SIGINT,  SIGQUIT, SIGKILL, SIGUSR1, SIGUSR2, SIGTERM,
                               SIGCONT, SIGSTOP, SIGTSTP, SIGALRM, SIGPIPE, SIGWINCH };
  char buf[32];

  for (size_t i = 0; i < sizeof (named) / sizeof (named[0]); i++)
    if (named[i] == sig)
      {
        snprintf (buf, sizeof (buf), "SIG%s", sigabbrev_np (sig));
        return json_object_new_string (buf);
      }
  return json_object_new_int (sig);
}

static void
send_signal (struct stream *s, int sig)
{
  cleanup_free char *suffix = rt_strdup_printf ("/processes/%s:signal", s->pid);
  cleanup_free char *path = suffix ? rt_remote_sandbox_path (s->sb->id, suffix) : NULL;
  cleanup_json json_object *b = json_object_new_object ();

  json_object_object_add (b, "signal", rt_remote_signal (sig));
  if (path)
    rt_remote_json (s->sb->ctx, "POST", path, b, NULL, NULL, NULL);
}

/* Passes @len bytes at output offset @off on, minus what was seen.  */
static void
output (struct stream *s, int stream, const char *buf, size_t len, int64_t off)
{
  if (off >= 0 && (uint64_t) off < s->seen)
    {
      uint64_t skip = s->seen - off;
      if (skip >= len)
        return;
      buf += skip;
      len -= skip;
    }
  s->seen += len;
  if (len == 0 || s->output_failed || s->opts->on_output == NULL)
    return;
  if (s->opts->on_output (s->opts->data, stream, buf, len) < 0)
    {
      /* Nobody can read the output any more: stop the command, as a
         dropped local stream does.  */
      s->output_failed = true;
      if (*s->pid)
        send_signal (s, SIGKILL);
    }
}

/* Output as text ("data") or, for bytes that are not text, base64.  */
static void
output_event (struct stream *s, json_object *ev, int stream)
{
  json_object *v;
  int64_t off = json_object_object_get_ex (ev, "offset", &v) ? json_object_get_int64 (v) : -1;

  if (json_object_object_get_ex (ev, "dataBase64", &v) || json_object_object_get_ex (ev, "base64", &v))
    {
      const char *b64 = json_object_get_string (v);
      size_t n = b64 ? strlen (b64) : 0;
      cleanup_free unsigned char *data = malloc (RT_B64_DECODED_MAX (n) + 1);
      ssize_t len = data ? rt_b64_decode (b64, n, data) : -1;

      if (len >= 0)
        output (s, stream, (const char *) data, (size_t) len, off);
    }
  else if (json_object_object_get_ex (ev, "data", &v))
    output (s, stream, json_object_get_string (v), json_object_get_string_len (v), off);
}

static void
exit_event (struct stream *s, json_object *ev)
{
  rt_exec_result *r = s->res;
  json_object *v;

  rt_exec_result_from_json (ev, r);
  r->interrupted = r->interrupted || (json_object_object_get_ex (ev, "interrupted", &v) && json_object_get_boolean (v));
  s->ended = true;
}

static void
handle_event (struct stream *s, json_object *ev)
{
  const char *type = rt_json_str (ev, "type");
  json_object *v;

  if (type == NULL)
    return;
  if (strcmp (type, "start") == 0 && json_object_object_get_ex (ev, "processId", &v))
    snprintf (s->pid, sizeof (s->pid), "%s", json_object_get_string (v));
  else if (strcmp (type, "stdout") == 0 || strcmp (type, "stderr") == 0)
    output_event (s, ev, type[3] == 'o' ? 1 : 2);
  else if (strcmp (type, "truncated") == 0)
    {
      char note[96];
      int n = snprintf (note, sizeof (note), "runtime: %lld bytes of older output were dropped (1 MiB kept)\n",
                        (long long) rt_json_i64 (ev, "droppedBytes"));
      if (s->opts->on_output)
        s->opts->on_output (s->opts->data, 2, note, n);
      if (rt_json_i64 (ev, "resumeAt") > (int64_t) s->seen)
        s->seen = rt_json_i64 (ev, "resumeAt");
    }
  else if (strcmp (type, "continue") == 0)
    {
      if (*s->pid == '\0' && json_object_object_get_ex (ev, "processId", &v))
        snprintf (s->pid, sizeof (s->pid), "%s", json_object_get_string (v));
      s->resume = true;
    }
  else if (strcmp (type, "exit") == 0)
    exit_event (s, ev);
  else if (strcmp (type, "error") == 0)
    {
      if (rt_error_from_json (ev, s->err) == 0)
        rt_error_set (s->err, EIO, "internal", "the command's stream ended with an error");
      s->ended = true;
    }
}

static void
on_line (void *data, char *line)
{
  json_object *ev = json_tokener_parse (line);

  if (ev)
    handle_event (data, ev);
  json_object_put (ev);
}

static int
on_data (void *data, const char *buf, size_t n)
{
  struct stream *s = data;
  return rt_ndjson_feed (&s->lines, buf, n) < 0 || s->output_failed || (s->only_start && *s->pid) ? -1 : 0;
}

/* Ctrl-C: SIGTERM once the process has an id, SIGKILL after the grace.  */
static bool
on_tick (void *data, bool ready)
{
  struct stream *s = data;
  uint64_t now = rt_now_ms ();

  if (ready && !s->cancelled)
    {
      s->cancelled = true;
      s->res->interrupted = true;
    }
  if (s->cancelled && !s->term_sent && *s->pid)
    {
      send_signal (s, SIGTERM);
      s->term_sent = true;
      s->kill_at = now + KILL_GRACE_MS;
    }
  if (s->kill_at && now >= s->kill_at)
    {
      send_signal (s, SIGKILL);
      s->kill_at = 0;
    }
  return !s->cancelled;
}

/* One request of the stream (the exec, or a resume).  */
static int
stream_once (struct stream *s, const char *method, const char *path, const char *body)
{
  struct rt_remote_req req = { .method = method, .path = path, .body = body, .body_len = body ? strlen (body) : 0,
                               .accept = "application/x-ndjson", .on_data = on_data, .data = s, .on_tick = on_tick,
                               .watch_fd = s->opts->cancel_fd > 0 && !s->cancelled ? s->opts->cancel_fd : -1 };
  struct rt_remote_answer ans = { 0 };
  int ret;

  if (s->abort_fd >= 0)
    {
      req.watch_fd = s->abort_fd;
      req.abort_on_watch = true;
    }
  s->lines.len = 0;
  s->resume = false;
  ret = rt_remote_send (s->sb->ctx, &req, &ans, s->err);
  s->aborted = s->aborted || ans.interrupted;
  rt_remote_answer_clear (&ans);
  return ret;
}

/* Follows the stream from the bytes seen until an exit (or, for a
   non-following read, its end).  */
static int
follow (struct stream *s, bool follow_on, int ret)
{
  int quiet = 0;

  while (ret >= 0 && !s->ended && !s->output_failed && !s->aborted && *s->pid && (ret == 1 || s->resume))
    {
      uint64_t before = s->seen;
      cleanup_free char *suffix = rt_strdup_printf ("/processes/%s/output?cursor=%llu%s", s->pid,
                                                    (unsigned long long) s->seen, follow_on ? "&follow=true" : "");
      cleanup_free char *path = suffix ? rt_remote_sandbox_path (s->sb->id, suffix) : NULL;

      if (path == NULL)
        return rt_error_oom (s->err);
      ret = stream_once (s, "GET", path, NULL);
      quiet = s->seen > before || s->ended ? 0 : quiet + 1;
      if (quiet > RT_REMOTE_RECONNECTS)
        break;
    }
  return ret < 0 ? ret : 0;
}

static int
stream_result (struct stream *s, int ret, bool *ended)
{
  if (ret < 0)
    return ret;
  if (s->output_failed)
    return rt_error_set (s->err, EPIPE, "internal", "the command's output could not be written");
  if (s->err && *s->err)
    return -EIO;
  if (ended)
    *ended = s->ended;
  else if (!s->ended)
    {
      rt_error_set (s->err, EPIPE, "internal", "lost the stream of the command before it ended");
      return rt_error_hint (s->err, "runtime sandbox logs %s %s shows what it wrote", s->sb->id,
                            *s->pid ? s->pid : "PROCESS");
    }
  return 0;
}

/* The body of :exec and POST …/processes: the monitor's request
   (sandbox/handle.h, its checks) in the API's names: env an object, stdin
   stdinBase64, no timeoutMs for none.  */
static json_object *
command_body (const char *const argv[], const rt_exec_opts *opts, rt_error **err)
{
  cleanup_json json_object *b = rt_command_request (argv, opts, err);
  json_object *v, *env;

  if (b == NULL || (env = rt_remote_pairs (opts->env, true, err)) == NULL)
    return NULL;
  json_object_object_add (b, "env", env);
  if (json_object_object_get_ex (b, "stdin", &v))
    {
      json_object_object_add (b, "stdinBase64", json_object_get (v));
      json_object_object_del (b, "stdin");
    }
  if (opts->timeout_ms == 0)
    json_object_object_del (b, "timeoutMs");
  return steal_pointer (&b);
}

int
rt_remote_sandbox_exec (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, rt_exec_result *res,
                        rt_error **err)
{
  struct stream s = { .sb = sb, .opts = opts ? opts : &rt_no_exec_opts, .res = res, .err = err,
                      .lines = { .on_line = on_line }, .abort_fd = -1 };
  cleanup_json json_object *body = NULL;
  cleanup_free char *path = rt_remote_sandbox_path (sb->id, ":exec");
  int ret;

  memset (res, 0, sizeof (*res));
  s.lines.data = &s;
  if (path == NULL)
    return rt_error_oom (err);
  body = command_body (argv, s.opts, err);
  if (body == NULL)
    return -EINVAL;
  json_object_object_add (body, "stream", json_object_new_boolean (true));
  ret = stream_once (&s, "POST", path, json_object_to_json_string_ext (body, JSON_C_TO_STRING_PLAIN));
  ret = stream_result (&s, follow (&s, true, ret), NULL);
  free (s.lines.buf);
  return ret;
}

/* A process fed @opts' stdin: POST …/processes takes none, a streamed exec
   does, and its process runs on when the stream is left after its start.  */
static int
spawn_with_stdin (rt_sandbox *sb, json_object *body, const rt_exec_opts *opts, uint32_t *process, rt_error **err)
{
  struct stream s = { .sb = sb, .opts = opts, .res = &(rt_exec_result){ 0 }, .err = err, .only_start = true,
                      .lines = { .on_line = on_line }, .abort_fd = -1 };
  cleanup_free char *path = rt_remote_sandbox_path (sb->id, ":exec");
  int ret;

  s.lines.data = &s;
  if (path == NULL)
    return rt_error_oom (err);
  json_object_object_add (body, "stream", json_object_new_boolean (true));
  ret = stream_once (&s, "POST", path, json_object_to_json_string_ext (body, JSON_C_TO_STRING_PLAIN));
  free (s.lines.buf);
  if (ret >= 0 && *s.pid == '\0' && !(err && *err))
    ret = rt_error_set (err, EIO, "internal", "%s did not name the process", sb->ctx->api_url);
  if (ret < 0 || (err && *err))
    return ret < 0 ? ret : -EIO;
  *process = (uint32_t) strtoul (s.pid, NULL, 10);
  return 0;
}

int
rt_remote_sandbox_spawn (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, uint32_t *process,
                         rt_error **err)
{
  cleanup_json json_object *body = NULL, *info = NULL;
  cleanup_free char *path = rt_remote_sandbox_path (sb->id, "/processes");
  const char *id;
  int ret;

  opts = opts ? opts : &rt_no_exec_opts;
  if ((body = command_body (argv, opts, err)) == NULL)
    return -EINVAL;
  if (path == NULL)
    return rt_error_oom (err);
  if (opts->stdin_len > 0 && !opts->keep_stdin)
    return spawn_with_stdin (sb, body, opts, process, err);
  /* A kept stdin is the API's "pipe"; what it starts with is written.  */
  if (opts->keep_stdin)
    {
      json_object_object_del (body, "keepStdin");
      json_object_object_del (body, "stdinBase64");
      json_object_object_add (body, "stdinMode", json_object_new_string ("pipe"));
    }
  ret = rt_remote_json (sb->ctx, "POST", path, body, NULL, &info, err);
  if (ret < 0)
    return ret;
  id = rt_json_str (info, "id");
  if (id == NULL || *id < '0' || *id > '9')
    return rt_error_set (err, EIO, "internal", "%s did not name the process", sb->ctx->api_url);
  *process = (uint32_t) strtoul (id, NULL, 10);
  for (uint64_t at = 0; ret == 0 && opts->keep_stdin && at < opts->stdin_len;)
    {
      uint64_t before = at;
      ret = rt_remote_sandbox_write (sb, *process, (const char *) opts->stdin_data + at, opts->stdin_len - at, at,
                                     false, NULL, &at, err);
      /* The server holds all it will: the process takes some first.  */
      if (ret == 0 && at == before)
        nanosleep (&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
    }
  /* Its input cut short: it must not run on with part of it.  */
  if (ret < 0)
    rt_remote_sandbox_kill (sb, *process, SIGKILL, NULL, NULL);
  return ret;
}

int
rt_remote_sandbox_ps_json (rt_sandbox *sb, char **json, rt_error **err)
{
  cleanup_free char *path = rt_remote_sandbox_path (sb->id, "/processes");
  cleanup_json json_object *list = NULL, *out = json_object_new_array ();
  int ret;

  if (path == NULL)
    return rt_error_oom (err);
  ret = rt_remote_list (sb->ctx, path, NULL, &list, err);
  if (ret < 0)
    return ret;
  /* ProcessInfo into the local {process, state, exitCode, command,
     droppedBytes}.  */
  for (size_t i = 0; i < json_object_array_length (list); i++)
    {
      json_object *p = json_object_array_get_idx (list, i), *o = json_object_new_object (), *v;
      const char *id = rt_json_str (p, "id"), *st = rt_json_str (p, "state");
      bool running = st && strcmp (st, "running") == 0;

      json_object_object_add (o, "process", json_object_new_int64 (id ? strtoll (id, NULL, 10) : 0));
      json_object_object_add (o, "state", json_object_new_string (running ? "running" : "exited"));
      json_object_object_add (o, "exitCode", json_object_object_get_ex (p, "exitCode", &v) ? json_object_get (v)
                                                                                             : NULL);
      json_object_object_add (o, "command", json_object_new_string (rt_json_str (p, "command") ? rt_json_str (p, "command")
                                                                                              : ""));
      json_object_object_add (o, "droppedBytes", json_object_new_int64 (rt_json_i64 (p, "firstOffset")));
      for (const char *const *k = (const char *const[]){ "pty", "stdinOpen", "stdinOffset", NULL }; *k; k++)
        if (json_object_object_get_ex (p, *k, &v))
          json_object_object_add (o, *k, json_object_get (v));
      json_object_array_add (out, o);
    }
  return rt_remote_text (out, json, err);
}

int
rt_remote_sandbox_logs (rt_sandbox *sb, uint32_t process, bool follow_on, const rt_exec_opts *opts,
                        rt_exec_result *res, bool *exited, rt_error **err)
{
  return rt_remote_follow (sb, process, follow_on, opts, -1, res, exited, err);
}

int
rt_remote_follow (rt_sandbox *sb, uint32_t process, bool follow_on, const rt_exec_opts *opts, int abort_fd,
                  rt_exec_result *res, bool *exited, rt_error **err)
{
  struct stream s = { .sb = sb, .opts = opts ? opts : &rt_no_exec_opts, .res = res, .err = err,
                      .lines = { .on_line = on_line }, .abort_fd = abort_fd };
  cleanup_free char *suffix = rt_strdup_printf ("/processes/%u/output?cursor=0%s", process,
                                                follow_on ? "&follow=true" : "");
  cleanup_free char *path = suffix ? rt_remote_sandbox_path (sb->id, suffix) : NULL;
  int ret;

  memset (res, 0, sizeof (*res));
  s.lines.data = &s;
  if (path == NULL)
    return rt_error_oom (err);
  snprintf (s.pid, sizeof (s.pid), "%u", process);
  ret = stream_once (&s, "GET", path, NULL);
  /* A read that does not follow ends where the output ends: only a broken
     one is taken up again.  */
  ret = stream_result (&s, follow (&s, follow_on, follow_on || ret == 1 ? ret : 0), exited);
  free (s.lines.buf);
  return ret;
}

int
rt_remote_sandbox_kill (rt_sandbox *sb, uint32_t process, int signal, const struct rt_remote_bound *bound,
                        rt_error **err)
{
  cleanup_free char *suffix = rt_strdup_printf ("/processes/%u:signal", process);
  cleanup_free char *path = suffix ? rt_remote_sandbox_path (sb->id, suffix) : NULL;
  cleanup_json json_object *b = json_object_new_object ();

  if (path == NULL)
    return rt_error_oom (err);
  if (signal < 1 || signal >= NSIG)
    return rt_error_set (err, EINVAL, "usage", "no such signal: %d", signal);
  json_object_object_add (b, "signal", rt_remote_signal (signal));
  return rt_remote_json_within (sb->ctx, "POST", path, b, bound, NULL, err);
}
