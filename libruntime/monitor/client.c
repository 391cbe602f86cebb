/* client.c - the client of a monitor's api.sock, with libcurl.  */
#include <curl/curl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>

#include "common/b64.h"
#include "common/exec-result.h"
#include "monitor/client.h"

#define KILL_GRACE_MS 5000
#define CALL_TIMEOUT_MS 60000

struct body
{
  char *buf;
  size_t len;
};

static size_t
collect (char *ptr, size_t size, size_t nmemb, void *data)
{
  struct body *b = data;
  size_t n = size * nmemb;
  char *nb = realloc (b->buf, b->len + n + 1);

  if (nb == NULL)
    return 0;
  b->buf = nb;
  memcpy (b->buf + b->len, ptr, n);
  b->len += n;
  b->buf[b->len] = '\0';
  return n;
}

/* An {"error":{…}} reply becomes the caller's rt_error, code and all.  */
static int
error_from_json (json_object *o, long status, rt_error **err)
{
  if (rt_error_from_json (o, err) < 0)
    return -EIO;
  return rt_error_set (err, EIO, "internal", "the sandbox's monitor answered HTTP %ld", status);
}

static CURL *
easy_for (const char *sock, const char *id, const char *verb, rt_error **err)
{
  CURL *c = curl_easy_init ();
  /* "/network" names a sub-resource, anything else a :verb.  */
  cleanup_free char *url = rt_strdup_printf ("http://localhost/v1/sandboxes/%s%s%s", id,
                                             verb && *verb != '/' ? ":" : "", verb ? verb : "");
  if (c == NULL || url == NULL)
    {
      if (c)
        curl_easy_cleanup (c);
      rt_error_oom (err);
      return NULL;
    }
  curl_easy_setopt (c, CURLOPT_UNIX_SOCKET_PATH, sock);
  curl_easy_setopt (c, CURLOPT_URL, url);
  curl_easy_setopt (c, CURLOPT_NOSIGNAL, 1L);
  return c;
}

static int
curl_failed (CURLcode rc, rt_error **err)
{
  rt_error_set (err, EIO, "sandbox_not_ready", "cannot reach the sandbox's monitor: %s", curl_easy_strerror (rc));
  return rt_error_hint (err, "it may have stopped: runtime sandbox get shows its state");
}

int
rt_api_call (const char *sock, const char *id, const char *verb, json_object *body, json_object **reply,
             rt_error **err)
{
  CURL *c = easy_for (sock, id, verb, err);
  struct curl_slist *hdrs = NULL;
  struct body resp = { 0 };
  const char *payload = NULL;
  long status = 0;
  CURLcode rc;
  json_object *o = NULL;
  int ret = 0;

  if (c == NULL)
    return -ENOMEM;
  curl_easy_setopt (c, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt (c, CURLOPT_WRITEDATA, &resp);
  curl_easy_setopt (c, CURLOPT_TIMEOUT_MS, (long) CALL_TIMEOUT_MS);
  /* A sub-resource without a body is a GET.  */
  if (verb && !(*verb == '/' && body == NULL))
    {
      payload = body ? json_object_to_json_string_ext (body, JSON_C_TO_STRING_PLAIN) : "{}";
      hdrs = curl_slist_append (hdrs, "Content-Type: application/json");
      hdrs = curl_slist_append (hdrs, "Expect:");
      curl_easy_setopt (c, CURLOPT_HTTPHEADER, hdrs);
      curl_easy_setopt (c, CURLOPT_POSTFIELDS, payload);
      if (*verb == '/')
        curl_easy_setopt (c, CURLOPT_CUSTOMREQUEST, "PUT");
    }
  rc = curl_easy_perform (c);
  curl_easy_getinfo (c, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup (c);
  curl_slist_free_all (hdrs);
  if (rc != CURLE_OK)
    {
      free (resp.buf);
      return curl_failed (rc, err);
    }
  o = resp.buf ? json_tokener_parse (resp.buf) : NULL;
  free (resp.buf);
  if (status >= 400)
    ret = error_from_json (o, status, err);
  else if (o == NULL)
    ret = rt_error_set (err, EIO, "internal", "the sandbox's monitor sent no JSON");
  if (ret == 0 && reply)
    *reply = json_object_get (o);
  json_object_put (o);
  return ret;
}

struct exec_stream
{
  const rt_exec_opts *opts;
  rt_exec_result *res;
  rt_error **err;
  char *line;
  size_t len, alloc;
  int64_t exec_id;
  bool ended, output_failed;
  long status;
  /* rt_api_events: every line goes to on_event, and NULL about once a
     second; stopped once it returned <0.  */
  int (*on_event) (void *data, json_object *ev);
  void *event_data;
  bool stopped;
  struct body error_body;
};

static int
handle_event (struct exec_stream *s, json_object *ev)
{
  json_object *v;
  const char *type = json_object_object_get_ex (ev, "type", &v) ? json_object_get_string (v) : "";

  if (strcmp (type, "start") == 0)
    s->exec_id = json_object_object_get_ex (ev, "execId", &v) ? json_object_get_int64 (v) : 0;
  else if (strcmp (type, "stdout") == 0 || strcmp (type, "stderr") == 0)
    {
      const char *b64 = json_object_object_get_ex (ev, "data", &v) ? json_object_get_string (v) : NULL;
      size_t n = b64 ? strlen (b64) : 0;
      unsigned char *data;
      ssize_t len;

      if (n == 0 || n % 4 != 0 || s->output_failed)
        return 0;
      data = malloc (RT_B64_DECODED_MAX (n) + 1);
      if (data == NULL)
        return -1;
      len = rt_b64_decode (b64, n, data);
      if (len > 0 && s->opts->on_output
          && s->opts->on_output (s->opts->data, type[3] == 'o' ? 1 : 2, (const char *) data, len) < 0)
        s->output_failed = true;
      free (data);
      /* Nobody can read the output any more: dropping the connection makes
         the monitor kill the command.  */
      if (s->output_failed)
        return -1;
    }
  else if (strcmp (type, "dropped") == 0)
    {
      char note[96];
      int n = snprintf (note, sizeof (note), "runtime: %lld bytes of older output were dropped (1 MiB kept)\n",
                        json_object_object_get_ex (ev, "bytes", &v) ? (long long) json_object_get_int64 (v) : 0LL);
      if (s->opts->on_output)
        s->opts->on_output (s->opts->data, 2, note, n);
    }
  else if (strcmp (type, "exit") == 0)
    {
      rt_exec_result_from_json (ev, s->res);
      s->ended = true;
    }
  else if (strcmp (type, "error") == 0)
    {
      error_from_json (ev, 500, s->err);
      s->ended = true;
    }
  return 0;
}

/* Output lines come in the exact shape the monitor writes them
   ({"type":"stdout","data":"BASE64"}): decoded straight from the buffer,
   since json-c would copy and scan each 87 KB string.  Anything else goes
   through json-c.  Return: whether the line was handled.  */
static bool
fast_output (struct exec_stream *s, const char *line, size_t len, int *ret)
{
  static const char pre_out[] = "{\"type\":\"stdout\",\"data\":\"", pre_err[] = "{\"type\":\"stderr\",\"data\":\"";
  const size_t pre = sizeof (pre_out) - 1;
  const char *b64;
  size_t n;
  unsigned char *data;
  ssize_t dlen;
  int stream;

  if (len < pre + 2 || memcmp (line + len - 2, "\"}", 2) != 0)
    return false;
  if (memcmp (line, pre_out, pre) == 0)
    stream = 1;
  else if (memcmp (line, pre_err, pre) == 0)
    stream = 2;
  else
    return false;
  b64 = line + pre;
  n = len - pre - 2;
  if (n % 4 != 0 || memchr (b64, '"', n) || memchr (b64, '\\', n))
    return false;
  *ret = 0;
  if (n == 0 || s->output_failed)
    return true;
  data = malloc (RT_B64_DECODED_MAX (n) + 1);
  if (data == NULL)
    {
      *ret = -1;
      return true;
    }
  dlen = rt_b64_decode (b64, n, data);
  if (dlen > 0 && s->opts->on_output && s->opts->on_output (s->opts->data, stream, (const char *) data, dlen) < 0)
    s->output_failed = true;
  free (data);
  if (s->output_failed)
    *ret = -1;
  return true;
}

static size_t
on_stream (char *ptr, size_t size, size_t nmemb, void *data)
{
  struct exec_stream *s = data;
  size_t n = size * nmemb;
  char *nl;

  if (s->status >= 400)
    return collect (ptr, size, nmemb, &s->error_body);
  if (s->len + n + 1 > s->alloc)
    {
      size_t alloc = s->alloc ? s->alloc : 65536;
      char *nb;
      while (alloc < s->len + n + 1)
        alloc *= 2;
      nb = realloc (s->line, alloc);
      if (nb == NULL)
        return 0;
      s->line = nb;
      s->alloc = alloc;
    }
  memcpy (s->line + s->len, ptr, n);
  s->len += n;
  s->line[s->len] = '\0';
  while ((nl = memchr (s->line, '\n', s->len)))
    {
      size_t used = nl - s->line + 1;
      json_object *ev;
      int ret = 0;
      *nl = '\0';
      if (s->on_event)
        {
          if ((ev = json_tokener_parse (s->line)) && json_object_is_type (ev, json_type_object)
              && s->on_event (s->event_data, ev) < 0)
            ret = -1;
          json_object_put (ev);
          s->stopped |= ret < 0;
        }
      else if (fast_output (s, s->line, nl - s->line, &ret))
        ;
      else if ((ev = json_tokener_parse (s->line)))
        {
          ret = handle_event (s, ev);
          json_object_put (ev);
        }
      memmove (s->line, s->line + used, s->len - used);
      s->len -= used;
      if (ret < 0)
        return 0;
    }
  return n;
}

static size_t
on_header (char *buf, size_t size, size_t nitems, void *data)
{
  struct exec_stream *s = data;
  long code;
  if (nitems * size > 9 && strncmp (buf, "HTTP/1.", 7) == 0 && sscanf (buf + 9, "%ld", &code) == 1)
    s->status = code;
  return nitems * size;
}

static void
send_signal (const char *sock, const char *id, int64_t exec_id, int sig)
{
  json_object *b = json_object_new_object ();
  json_object_object_add (b, "execId", json_object_new_int64 (exec_id));
  json_object_object_add (b, "signal", json_object_new_int (sig));
  rt_api_call (sock, id, "signal", b, NULL, NULL);
  json_object_put (b);
}

/* Runs the request to its end, passing the caller's interruption
   (opts->cancel_fd) on as SIGTERM, then SIGKILL after a grace period, like
   a terminal would.  Return: the transfer's result.  */
static CURLcode
follow (CURLM *multi, const char *sock, const char *id, struct exec_stream *s)
{
  const rt_exec_opts *opts = s->opts;
  uint64_t kill_at = 0;
  bool cancelled = false, term_sent = false;
  int running = 1, left;
  CURLMsg *msg;
  CURLcode rc = CURLE_OK;

  while (running)
    {
      struct curl_waitfd cancel = { .fd = opts->cancel_fd, .events = CURL_WAIT_POLLIN };
      bool watch = opts->cancel_fd > 0 && !cancelled;
      uint64_t now;
      int timeout = 1000;

      if (curl_multi_perform (multi, &running) != CURLM_OK || !running)
        break;
      now = rt_now_ms ();
      if (kill_at)
        timeout = kill_at > now ? (int) (kill_at - now) : 0;
      else if (cancelled && !term_sent)
        timeout = 50;
      curl_multi_poll (multi, watch ? &cancel : NULL, watch ? 1 : 0, timeout, NULL);
      if (s->on_event && (s->stopped || s->on_event (s->event_data, NULL) < 0))
        {
          s->stopped = true;
          break;
        }
      now = rt_now_ms ();
      if (watch && (cancel.revents & CURL_WAIT_POLLIN))
        {
          cancelled = true;
          s->res->interrupted = true;
        }
      /* Before the start event there is no command to signal yet: the
         SIGTERM waits for its id.  */
      if (cancelled && !term_sent && s->exec_id > 0)
        {
          send_signal (sock, id, s->exec_id, SIGTERM);
          term_sent = true;
          kill_at = now + KILL_GRACE_MS;
        }
      if (kill_at && now >= kill_at)
        {
          if (s->exec_id > 0)
            send_signal (sock, id, s->exec_id, SIGKILL);
          kill_at = 0;
        }
    }
  while ((msg = curl_multi_info_read (multi, &left)))
    if (msg->msg == CURLMSG_DONE)
      rc = msg->data.result;
  return rc;
}

/* What the stream came to: an error reply, output nobody could take, an
   error event, a lost connection, or (without @ended) no exit event.  */
static int
stream_result (struct exec_stream *s, CURLcode rc, const char *id, bool *ended, rt_error **err)
{
  int ret = 0;

  if (s->status >= 400)
    {
      json_object *o = s->error_body.buf ? json_tokener_parse (s->error_body.buf) : NULL;
      ret = error_from_json (o, s->status, err);
      json_object_put (o);
    }
  else if (s->output_failed)
    ret = rt_error_set (err, EPIPE, "internal", "the command's output could not be written");
  else if (err && *err)
    ret = -EIO;
  else if (rc != CURLE_OK && !s->ended)
    ret = curl_failed (rc, err);
  else if (!s->ended && ended == NULL)
    {
      rt_error_set (err, EPIPE, "internal", "lost the sandbox before the command ended");
      ret = rt_error_hint (err, "runtime sandbox get %s shows what happened", id);
    }
  if (ended)
    *ended = s->ended;
  return ret;
}

/* POSTs @request to :@verb and follows the stream (follow) to its end.  */
static CURLcode
run_stream (struct exec_stream *s, const char *sock, const char *id, const char *verb, json_object *request)
{
  struct curl_slist *hdrs = NULL;
  CURL *c = easy_for (sock, id, verb, s->err);
  CURLM *multi = NULL;
  CURLcode rc = CURLE_OUT_OF_MEMORY;

  if (c == NULL)
    return rc;
  hdrs = curl_slist_append (hdrs, "Content-Type: application/json");
  hdrs = curl_slist_append (hdrs, "Expect:");
  curl_easy_setopt (c, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt (c, CURLOPT_POSTFIELDS, json_object_to_json_string_ext (request, JSON_C_TO_STRING_PLAIN));
  curl_easy_setopt (c, CURLOPT_WRITEFUNCTION, on_stream);
  curl_easy_setopt (c, CURLOPT_WRITEDATA, s);
  curl_easy_setopt (c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt (c, CURLOPT_HEADERDATA, s);
  multi = curl_multi_init ();
  if (multi == NULL || curl_multi_add_handle (multi, c) != CURLM_OK)
    rt_error_oom (s->err);
  else
    rc = follow (multi, sock, id, s);
  if (multi)
    {
      curl_multi_remove_handle (multi, c);
      curl_multi_cleanup (multi);
    }
  curl_easy_cleanup (c);
  curl_slist_free_all (hdrs);
  return rc;
}

int
rt_api_stream (const char *sock, const char *id, const char *verb, json_object *request, const rt_exec_opts *opts,
               rt_exec_result *res, bool *ended, rt_error **err)
{
  struct exec_stream s = { .opts = opts, .res = res, .err = err };
  CURLcode rc;
  int ret;

  memset (res, 0, sizeof (*res));
  rc = run_stream (&s, sock, id, verb, request);
  ret = rc == CURLE_OUT_OF_MEMORY && err && *err ? -ENOMEM : stream_result (&s, rc, id, ended, err);
  free (s.line);
  free (s.error_body.buf);
  return ret;
}

int
rt_api_events (const char *sock, const char *id, const char *verb, json_object *request,
               int (*on_event) (void *data, json_object *ev), void *data, rt_error **err)
{
  const rt_exec_opts none = { .cancel_fd = -1 };
  rt_exec_result res;
  struct exec_stream s = { .opts = &none, .res = &res, .err = err, .on_event = on_event, .event_data = data };
  CURLcode rc = run_stream (&s, sock, id, verb, request);
  int ret = 0;

  if (rc == CURLE_OUT_OF_MEMORY && err && *err)
    ret = -ENOMEM;
  else if (s.status >= 400)
    {
      json_object *o = s.error_body.buf ? json_tokener_parse (s.error_body.buf) : NULL;
      ret = error_from_json (o, s.status, err);
      json_object_put (o);
    }
  else if (rc != CURLE_OK && !s.stopped)
    ret = curl_failed (rc, err);
  free (s.line);
  free (s.error_body.buf);
  return ret;
}
