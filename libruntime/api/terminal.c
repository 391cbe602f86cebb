/* terminal.c - GET /v1/sandboxes/{id}/terminal, a shell (or a command) on
   a pseudo-terminal in the sandbox over a WebSocket (the withruntime
   SDK's sandbox.terminal(); docs/API.md "Terminal"): binary messages are
   bytes both ways, text messages JSON ({"type":"resize",cols,rows} from
   the client; "ready", "exit" and "error" to it).  The session is the one
   `runtime sandbox tty` drives (rt_sandbox_attach; cli/sandbox-tty.c).
   (no header of its own: handlers.h declares it.)  */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "api/handlers.h"
#include "common/util.h"
#include "runtime.h"
#include "sandbox/handle.h"
#include "serve/ws.h"

#define TERM_BUF 16384

/* A side of the terminal from the query: @def when absent; 0 after
   answering 400.  */
static unsigned
side_param (struct srv_req *r, const char *name, unsigned def)
{
  const char *v = srv_query (r, name);
  char *end;
  long n;

  if (v == NULL)
    return def;
  errno = 0;
  n = strtol (v, &end, 10);
  if (*v == '\0' || *end != '\0' || errno || n < 1 || n > RT_MAX_PTY_SIDE)
    {
      srv_reply_error (r, 400, "invalid_request", NULL, NULL, "%s must be a whole number from 1 to %d", name,
                       RT_MAX_PTY_SIDE);
      return 0;
    }
  return (unsigned) n;
}

static void
send_json (struct srv_req *r, json_object *o)
{
  size_t len;
  const char *s = json_object_to_json_string_length (o, JSON_C_TO_STRING_PLAIN, &len);

  srv_ws_send (r, SRV_WS_TEXT, s, len);
  json_object_put (o);
}

/* {"type":"error","error":{code,message}}, then the close.  */
void
srv_ws_fail (struct srv_req *r, const rt_error *err, unsigned close_code)
{
  json_object *o = json_object_new_object (), *e = json_object_new_object ();

  json_object_object_add (e, "code", json_object_new_string (err && err->code ? err->code : "internal"));
  json_object_object_add (e, "message", json_object_new_string (err && err->msg ? err->msg : "failed"));
  json_object_object_add (o, "type", json_object_new_string ("error"));
  json_object_object_add (o, "error", e);
  send_json (r, o);
  srv_ws_close (r, close_code, err && err->code ? err->code : "internal");
}

/* A text message: a resize, or refused (unknown JSON closes nothing: a
   newer client's message this server does not know is told, and
   skipped).  */
static int
on_text (struct srv_req *r, rt_session *s, const uint8_t *data, size_t len, rt_error **err)
{
  cleanup_free char *text = strndup ((const char *) data, len);
  cleanup_json json_object *o = text ? json_tokener_parse (text) : NULL;
  json_object *type = o ? json_object_object_get (o, "type") : NULL;
  json_object *cols = o ? json_object_object_get (o, "cols") : NULL, *rows = o ? json_object_object_get (o, "rows") : NULL;

  if (type && strcmp (json_object_get_string (type), "resize") == 0 && json_object_is_type (cols, json_type_int)
      && json_object_is_type (rows, json_type_int))
    {
      int64_t c = json_object_get_int64 (cols), w = json_object_get_int64 (rows);
      if (c >= 1 && c <= RT_MAX_PTY_SIDE && w >= 1 && w <= RT_MAX_PTY_SIDE)
        return rt_session_resize (s, (unsigned) c, (unsigned) w, err);
    }
  json_object *e = json_object_new_object (), *m = json_object_new_object ();
  json_object_object_add (e, "code", json_object_new_string ("invalid_request"));
  json_object_object_add (e, "message", json_object_new_string ("a text message is {\"type\":\"resize\",\"cols\":1-"
                                                                "1000,\"rows\":1-1000}; input goes in binary ones"));
  json_object_object_add (m, "type", json_object_new_string ("error"));
  json_object_object_add (m, "error", e);
  send_json (r, m);
  return 0;
}

/* The terminal until its command ends or the client goes: 1 when the
   command ended (its result readable), 0 when the client went, -1 on
   the session's error (@err).  */
static int
pump (struct srv_req *r, rt_session *s, rt_error **err)
{
  uint8_t *pending = NULL; /* input the session had no room for yet */
  size_t pending_len = 0, pending_at = 0;
  char buf[TERM_BUF];
  int ret = 0;

  for (;;)
    {
      struct srv_ws_msg m;
      struct pollfd fds[2] = { { rt_session_fd (s), POLLIN, 0 }, { pending_len ? -1 : srv_ws_fd (r), POLLIN, 0 } };
      long n;
      int got;

      /* Its output first: all there is now.  */
      for (;;)
        {
          int stream = 1;
          n = rt_session_read (s, &stream, buf, sizeof buf, err);
          if (n == -EAGAIN)
            break;
          if (n <= 0)
            {
              ret = n == 0 ? 1 : -1;
              goto out;
            }
          if (srv_ws_send (r, SRV_WS_BINARY, buf, (size_t) n) < 0)
            goto out;
        }
      if (pending_len)
        {
          size_t room = rt_session_writable (s), k = pending_len - pending_at;
          if (room < k)
            k = room;
          if (k && rt_session_write (s, pending + pending_at, k, err) < 0)
            {
              ret = -1;
              goto out;
            }
          if ((pending_at += k) == pending_len)
            pending_len = pending_at = 0;
        }
      while (pending_len == 0 && (got = srv_ws_read (r, &m)) != 0)
        {
          if (got < 0)
            goto out;
          if (m.opcode == SRV_WS_TEXT)
            {
              if (on_text (r, s, m.data, m.len, err) < 0)
                {
                  ret = -1;
                  goto out;
                }
              continue;
            }
          /* Binary: typed, as much as the session takes now.  */
          size_t room = rt_session_writable (s), k = m.len < room ? m.len : room;
          if (k && rt_session_write (s, m.data, k, err) < 0)
            {
              ret = -1;
              goto out;
            }
          if (k < m.len)
            {
              uint8_t *p = realloc (pending, m.len - k);
              if (p == NULL)
                {
                  ret = rt_error_oom (err);
                  goto out;
                }
              pending = p;
              memcpy (pending, m.data + k, m.len - k);
              pending_len = m.len - k;
              pending_at = 0;
            }
        }
      if (srv_gone (r))
        goto out;
      /* A second at most: the server's stopping is seen.  */
      if (poll (fds, 2, 1000) < 0 && errno != EINTR)
        {
          ret = rt_error_set (err, errno, "internal", "poll: %s", strerror (errno));
          goto out;
        }
    }
out:
  free (pending);
  return ret;
}

void
srv_terminal (struct srv_req *r)
{
  cleanup_error rt_error *err = NULL;
  cleanup_sandbox rt_sandbox *sb = NULL;
  rt_session *s = NULL;
  const char *command = srv_query (r, "command");
  const char *shell[] = { "/bin/sh", "-c",
                          "if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi", NULL };
  rt_exec_opts opts = { .cwd = srv_query (r, "cwd"), .cancel_fd = -1 };
  rt_exec_result res = { 0 };
  json_object *o;
  int ret;

  if ((opts.pty_cols = side_param (r, "cols", 80)) == 0
      || (opts.pty_rows = side_param (r, "rows", 24)) == 0)
    return;
  if (command && (*command == '\0' || strlen (command) > 65536))
    return srv_reply_error (r, 400, "invalid_request", NULL, NULL, "command must be 1 to 65536 bytes");
  if (command)
    shell[2] = command;
  if ((sb = srv_sandbox_open (r)) == NULL)
    return;
  if (rt_sandbox_attach (sb, shell, &opts, &s, &err) < 0)
    return srv_reply_rt_error (r, err);
  if (srv_ws_accept (r) < 0)
    {
      rt_session_free (s);
      return;
    }
  o = json_object_new_object ();
  json_object_object_add (o, "type", json_object_new_string ("ready"));
  json_object_object_add (o, "cols", json_object_new_int ((int) opts.pty_cols));
  json_object_object_add (o, "rows", json_object_new_int ((int) opts.pty_rows));
  send_json (r, o);
  ret = pump (r, s, &err);
  if (ret > 0 && rt_session_result (s, &res, &err) < 0)
    ret = -1;
  if (ret == 0)
    /* The client went: its shell hangs up, as a terminal's does.  */
    rt_session_signal (s, SIGHUP, NULL);
  rt_session_free (s);
  if (ret < 0)
    return srv_ws_fail (r, err, SRV_WS_INTERNAL);
  if (ret > 0)
    {
      o = json_object_new_object ();
      json_object_object_add (o, "type", json_object_new_string ("exit"));
      json_object_object_add (o, "exitCode", res.signal ? NULL : json_object_new_int (res.exit_code));
      if (res.signal)
        json_object_object_add (o, "signal", json_object_new_int (res.signal));
      send_json (r, o);
    }
  srv_ws_close (r, SRV_WS_NORMAL, NULL);
}
