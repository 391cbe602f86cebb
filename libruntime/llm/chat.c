/* chat.c - the seed's tool-call loop against an OpenAI-compatible API
   (DeepSeek), with every run_python call in a fresh sandbox.  */
#include <curl/curl.h>
#include <poll.h>
#include <regex.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "sandbox/handle.h"
#include "sandbox/store.h"

#define INSTALL_TIMEOUT_S 180
#define RUN_TIMEOUT_S 60
#define CONNECT_TIMEOUT_S 15
#define READ_TIMEOUT_S 120
#define RETRY_AFTER_MAX_S 30
#define OUTPUT_CAP (64 * 1024)
#define MAX_RETRIES 4
#define PACKAGE_RE "^[A-Za-z0-9][A-Za-z0-9._-]*(==[A-Za-z0-9.]+)?$"

static unsigned
or_default (unsigned v, unsigned def)
{
  return v ? v : def;
}

/* Ctrl-C (the caller's signalfd) is pending.  */
static bool
cancelled (const rt_chat_opts *o)
{
  struct pollfd p = { .fd = o->cancel_fd, .events = POLLIN };
  return o->cancel_fd > 0 && poll (&p, 1, 0) > 0;
}

static int
interrupted (rt_error **err)
{
  return rt_error_set (err, EINTR, "interrupted", "interrupted by a signal; the tool call's sandbox, if any, was removed");
}

/* ---- run_python ----------------------------------------------------------- */

static json_object *
tail_string (const char *s, size_t len)
{
  if (s == NULL)
    return json_object_new_string ("");
  /* The end of the output is where the error is.  */
  if (len > OUTPUT_CAP)
    return json_object_new_string_len (s + len - OUTPUT_CAP, OUTPUT_CAP);
  return json_object_new_string_len (s, len);
}

static bool
package_ok (const char *p)
{
  regex_t re;
  bool ok;

  if (regcomp (&re, PACKAGE_RE, REG_EXTENDED | REG_NOSUB) != 0)
    return false;
  ok = strlen (p) <= 200 && regexec (&re, p, 0, NULL, 0) == 0;
  regfree (&re);
  return ok;
}

static int
run_in (rt_sandbox *sb, char *const argv[], const char *input, unsigned timeout_s, int cancel_fd,
        struct rt_captured *c, rt_exec_result *res, rt_error **err)
{
  rt_exec_opts opts = { .cwd = "/workspace", .timeout_ms = timeout_s * 1000ULL, .cancel_fd = cancel_fd,
                        .on_output = rt_capture_output, .data = c };
  int ret;

  if (input)
    {
      opts.stdin_data = input;
      opts.stdin_len = strlen (input);
    }
  memset (res, 0, sizeof *res);
  ret = rt_sandbox_exec (sb, argv, &opts, res, err);
  if (ret == 0 && res->interrupted)
    return interrupted (err);
  return ret;
}

static void
captured_clear (struct rt_captured *c)
{
  free (c->out);
  free (c->err);
  memset (c, 0, sizeof *c);
}

/* The seed's handler, with @o's image, limits and Ctrl-C.  */
static int
run_python (rt_context *ctx, const rt_chat_opts *o, const char *code, char *const *packages, char **result_json,
            int64_t *charged_micros, rt_error **err)
{
  static char *const allow[] = { (char *) "pypi.org", (char *) "*.pythonhosted.org", NULL };
  static char *const write_argv[] = { (char *) "sh", (char *) "-c", (char *) "cat >/workspace/main.py", NULL };
  static char *const run_argv[] = { (char *) "python3", (char *) "main.py", NULL };
  cleanup_json json_object *result = json_object_new_object ();
  cleanup_free char *id = NULL;
  rt_sandbox_config cfg = { .image = o->image, .allow = allow, .ephemeral = true };
  unsigned install_s = or_default (o->install_timeout_s, INSTALL_TIMEOUT_S);
  unsigned run_s = or_default (o->run_timeout_s, RUN_TIMEOUT_S);
  rt_sandbox *sb = NULL;
  struct rt_captured c = { 0 };
  rt_exec_result res;
  size_t n = 0;
  int ret;

  for (char *const *p = packages; p && *p; p++, n++)
    if (!package_ok (*p))
      {
        char msg[300];
        snprintf (msg, sizeof msg, "invalid package name '%.200s': names only, optionally ==VERSION", *p);
        json_object_object_add (result, "error", json_object_new_string (msg));
        goto done;
      }
  ret = rt_sandbox_create (ctx, &cfg, &sb, err);
  if (ret < 0)
    return ret;
  id = strdup (rt_sandbox_id (sb));
  /* The boot is not interruptible; what it made is removed below.  */
  if (cancelled (o))
    {
      ret = interrupted (err);
      goto out;
    }
  if (n > 0)
    {
      /* While only PyPI is reachable.  */
      char **argv = calloc (n + 6, sizeof (char *));
      size_t k = 0;
      if (argv == NULL)
        {
          ret = rt_error_oom (err);
          goto out;
        }
      argv[k++] = (char *) "python3";
      argv[k++] = (char *) "-m";
      argv[k++] = (char *) "pip";
      argv[k++] = (char *) "install";
      argv[k++] = (char *) "--quiet";
      for (char *const *p = packages; *p; p++)
        argv[k++] = *p;
      ret = run_in (sb, argv, NULL, install_s, o->cancel_fd, &c, &res, err);
      free (argv);
      if (ret < 0)
        goto out;
      if (res.exit_code != 0 || res.timed_out || res.signal)
        {
          json_object_object_add (result, "stage", json_object_new_string ("install"));
          if (res.timed_out)
            {
              char msg[64];
              snprintf (msg, sizeof msg, "pip install timed out after %u s", install_s);
              json_object_object_add (result, "stderr", json_object_new_string (msg));
            }
          else
            json_object_object_add (result, "stderr", tail_string (c.err, c.err_len));
          goto out;
        }
      captured_clear (&c);
    }
  /* Then nothing at all.  */
  ret = rt_sandbox_set_network (sb, false, NULL, NULL, NULL, err);
  if (ret == 0)
    ret = run_in (sb, write_argv, code, run_s, o->cancel_fd, &c, &res, err);
  if (ret == 0 && res.exit_code != 0)
    ret = rt_error_set (err, EIO, "internal", "cannot write main.py in the sandbox: %s", c.err ? c.err : "");
  if (ret < 0)
    goto out;
  captured_clear (&c);
  ret = run_in (sb, run_argv, NULL, run_s, o->cancel_fd, &c, &res, err);
  if (ret < 0)
    goto out;
  /* 124 after the timeout, as `runtime sandbox exec` says it.  */
  json_object_object_add (result, "exit_code",
                          json_object_new_int (res.timed_out ? 124 : res.signal ? 128 + res.signal : res.exit_code));
  json_object_object_add (result, "timed_out", json_object_new_boolean (res.timed_out));
  json_object_object_add (result, "stdout", tail_string (c.out, c.out_len));
  json_object_object_add (result, "stderr", tail_string (c.err, c.err_len));
out:
  captured_clear (&c);
  if (sb)
    {
      cleanup_error rt_error *ignored = NULL;
      cleanup_free char *state = NULL;
      /* Always removed; what it cost is read first.  */
      rt_sandbox_destroy (sb, &ignored);
      if (charged_micros && rt_sandbox_get_json (ctx, id, &state, NULL) == 0)
        {
          cleanup_json json_object *st = json_tokener_parse (state);
          json_object *v;
          if (st && json_object_object_get_ex (st, "chargedMicros", &v))
            *charged_micros += json_object_get_int64 (v);
        }
      rt_sandbox_remove (ctx, id, NULL);
    }
  if (ret < 0)
    return ret;
done:
  *result_json = strdup (json_object_to_json_string_ext (result, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *result_json ? 0 : rt_error_oom (err);
}

int
rt_run_python (rt_context *ctx, const char *code, char *const *packages, const char *image, char **result_json,
               int64_t *charged_micros, rt_error **err)
{
  rt_chat_opts o = { .image = image, .cancel_fd = -1 };

  return run_python (ctx, &o, code, packages, result_json, charged_micros, err);
}

/* ---- the API ----------------------------------------------------------------- */

struct reply
{
  char *body;
  size_t len;
  long retry_after;
  /* streaming */
  bool stream;
  char *line;
  size_t line_len;
  json_object *msg;       /* the assistant message being assembled */
  json_object *usage;
  const rt_chat_opts *o;
  bool failed;
  /* The read timeout: bytes seen so far, and since when none came.  */
  curl_off_t seen;
  uint64_t quiet_since_ms, read_ms;
  bool read_timed_out;
};

/* Retry-After: delay-seconds or an HTTP-date (IMF-fixdate); -1 when it
   is neither.  */
static long
retry_after (const char *v, size_t len)
{
  char text[64], *end;
  struct tm tm = { 0 };
  long s;

  while (len > 0 && (*v == ' ' || *v == '\t'))
    v++, len--;
  while (len > 0 && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' '))
    len--;
  if (len == 0 || len >= sizeof text)
    return -1;
  memcpy (text, v, len);
  text[len] = '\0';
  s = strtol (text, &end, 10);
  if (end != text && *end == '\0')
    return s < 0 ? -1 : s;
  end = strptime (text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == NULL || *end != '\0')
    return -1;
  s = (long) (timegm (&tm) - time (NULL));
  return s < 0 ? 0 : s;
}

static size_t
on_header (char *buf, size_t size, size_t n, void *data)
{
  struct reply *r = data;
  size_t len = size * n;

  if (len > 12 && strncasecmp (buf, "Retry-After:", 12) == 0)
    r->retry_after = retry_after (buf + 12, len - 12);
  return len;
}

/* Ctrl-C ends a request at once, however long the model thinks; so does
   silence once the request is sent (curl's own low-speed check averages
   the upload in, so it fires late).  */
static int
on_progress (void *data, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
  struct reply *r = data;
  uint64_t now = rt_now_ms ();

  (void) dltotal;
  (void) ultotal;
  if (cancelled (r->o))
    return 1;
  if (ulnow == 0)
    return 0;
  if (dlnow + ulnow != r->seen || r->quiet_since_ms == 0)
    {
      r->seen = dlnow + ulnow;
      r->quiet_since_ms = now;
    }
  else if (now - r->quiet_since_ms >= r->read_ms)
    {
      r->read_timed_out = true;
      return 1;
    }
  return 0;
}

static void
append_str (json_object *o, const char *key, const char *piece)
{
  const char *old = json_object_object_get_ex (o, key, NULL) && json_object_object_get (o, key)
                        ? json_object_get_string (json_object_object_get (o, key))
                        : "";
  cleanup_free char *joined = rt_strdup_printf ("%s%s", old, piece);
  if (joined)
    json_object_object_add (o, key, json_object_new_string (joined));
}

/* One SSE chunk: choices[0].delta into the message being assembled.  */
static void
stream_chunk (struct reply *r, const char *data)
{
  cleanup_json json_object *chunk = json_tokener_parse (data);
  json_object *choices, *delta, *v, *calls;

  if (chunk == NULL)
    return;
  if (json_object_object_get_ex (chunk, "usage", &v) && v)
    {
      json_object_put (r->usage);
      r->usage = json_object_get (v);
    }
  if (!json_object_object_get_ex (chunk, "choices", &choices) || json_object_array_length (choices) == 0
      || !json_object_object_get_ex (json_object_array_get_idx (choices, 0), "delta", &delta))
    return;
  if (json_object_object_get_ex (delta, "content", &v) && v)
    {
      append_str (r->msg, "content", json_object_get_string (v));
      if (r->o->on_text)
        r->o->on_text (r->o->data, 1, json_object_get_string (v), strlen (json_object_get_string (v)));
    }
  if (json_object_object_get_ex (delta, "reasoning_content", &v) && v)
    append_str (r->msg, "reasoning_content", json_object_get_string (v));
  if (json_object_object_get_ex (delta, "tool_calls", &calls) && calls)
    for (size_t i = 0; i < json_object_array_length (calls); i++)
      {
        json_object *d = json_object_array_get_idx (calls, i), *all, *call, *fn, *dfn;
        size_t idx = json_object_object_get_ex (d, "index", &v) ? (size_t) json_object_get_int (v) : i;
        if (!json_object_object_get_ex (r->msg, "tool_calls", &all))
          json_object_object_add (r->msg, "tool_calls", all = json_object_new_array ());
        while (json_object_array_length (all) <= idx && idx < 64)
          {
            call = json_object_new_object ();
            json_object_object_add (call, "type", json_object_new_string ("function"));
            json_object_object_add (call, "function", json_object_new_object ());
            json_object_array_add (all, call);
          }
        if (idx >= 64)
          continue;
        call = json_object_array_get_idx (all, idx);
        fn = json_object_object_get (call, "function");
        if (json_object_object_get_ex (d, "id", &v) && v)
          json_object_object_add (call, "id", json_object_get (v));
        if (json_object_object_get_ex (d, "function", &dfn))
          {
            if (json_object_object_get_ex (dfn, "name", &v) && v)
              append_str (fn, "name", json_object_get_string (v));
            if (json_object_object_get_ex (dfn, "arguments", &v) && v)
              append_str (fn, "arguments", json_object_get_string (v));
          }
      }
}

static size_t
on_body (char *buf, size_t size, size_t n, void *data)
{
  struct reply *r = data;
  size_t len = size * n;
  char *nb = realloc (r->body, r->len + len + 1);

  if (nb == NULL)
    return 0;
  memcpy (nb + r->len, buf, len);
  r->len += len;
  nb[r->len] = '\0';
  r->body = nb;
  if (!r->stream)
    return len;
  /* Server-sent events: whole lines only.  */
  for (;;)
    {
      char *start = r->body + r->line_len, *eol = strchr (start, '\n');
      if (eol == NULL)
        break;
      *eol = '\0';
      if (eol > start && eol[-1] == '\r')
        eol[-1] = '\0';
      if (strncmp (start, "data:", 5) == 0)
        {
          const char *d = start + 5 + strspn (start + 5, " ");
          if (strcmp (d, "[DONE]") != 0)
            stream_chunk (r, d);
        }
      r->line_len = eol + 1 - r->body;
    }
  return len;
}

/* The API's own words for a failure, into @msg (the caller's buffer: the
   library keeps no state of its own).  */
static const char *
api_message (const char *body, char *msg, size_t size)
{
  cleanup_json json_object *o = body ? json_tokener_parse (body) : NULL;
  json_object *e, *m;

  if (o && json_object_object_get_ex (o, "error", &e) && json_object_object_get_ex (e, "message", &m))
    snprintf (msg, size, "%s", json_object_get_string (m));
  else
    snprintf (msg, size, "%.200s", body && *body ? body : "no details");
  return msg;
}

/* POSTs @req; the assistant message in *msg and the usage in *usage.
   429: waits as Retry-After says; 5xx: backs off; both bounded.  */
static int
api_call (const rt_chat_opts *o, const char *url, json_object *req, json_object **msg, json_object **usage,
          rt_error **err)
{
  const char *payload = json_object_to_json_string_ext (req, JSON_C_TO_STRING_PLAIN);
  cleanup_free char *auth = rt_strdup_printf ("Authorization: Bearer %s", o->api_key);
  unsigned connect_s = or_default (o->connect_timeout_s, CONNECT_TIMEOUT_S);
  unsigned read_s = or_default (o->read_timeout_s, READ_TIMEOUT_S);
  long wait_max = or_default (o->retry_after_max_s, RETRY_AFTER_MAX_S);
  char api_msg[512];

  if (auth == NULL)
    return rt_error_oom (err);
  for (int attempt = 0;; attempt++)
    {
      struct reply r = { .stream = o->stream, .o = o, .retry_after = -1, .read_ms = read_s * 1000ULL };
      struct curl_slist *hdrs = NULL;
      CURL *c = curl_easy_init ();
      curl_off_t connected_us = 0;
      long status = 0;
      CURLcode rc;

      if (c == NULL)
        return rt_error_oom (err);
      r.msg = json_object_new_object ();
      json_object_object_add (r.msg, "role", json_object_new_string ("assistant"));
      hdrs = curl_slist_append (hdrs, "Content-Type: application/json");
      hdrs = curl_slist_append (hdrs, auth);
      hdrs = curl_slist_append (hdrs, "Expect:");
      curl_easy_setopt (c, CURLOPT_URL, url);
      curl_easy_setopt (c, CURLOPT_HTTPHEADER, hdrs);
      curl_easy_setopt (c, CURLOPT_POSTFIELDS, payload);
      curl_easy_setopt (c, CURLOPT_WRITEFUNCTION, on_body);
      curl_easy_setopt (c, CURLOPT_WRITEDATA, &r);
      curl_easy_setopt (c, CURLOPT_HEADERFUNCTION, on_header);
      curl_easy_setopt (c, CURLOPT_HEADERDATA, &r);
      curl_easy_setopt (c, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt (c, CURLOPT_CONNECTTIMEOUT, (long) connect_s);
      /* A reply may take minutes (reasoning); silence may not.  */
      curl_easy_setopt (c, CURLOPT_XFERINFOFUNCTION, on_progress);
      curl_easy_setopt (c, CURLOPT_XFERINFODATA, &r);
      curl_easy_setopt (c, CURLOPT_NOPROGRESS, 0L);
      rc = curl_easy_perform (c);
      curl_easy_getinfo (c, CURLINFO_RESPONSE_CODE, &status);
      curl_easy_getinfo (c, CURLINFO_CONNECT_TIME_T, &connected_us);
      curl_easy_cleanup (c);
      curl_slist_free_all (hdrs);
      if (rc == CURLE_OK && status == 200)
        {
          int ret = 0;
          if (!o->stream)
            {
              cleanup_json json_object *body = json_tokener_parse (r.body ? r.body : "");
              json_object *choices, *m, *u;
              if (body && json_object_object_get_ex (body, "choices", &choices)
                  && json_object_array_length (choices) > 0
                  && json_object_object_get_ex (json_object_array_get_idx (choices, 0), "message", &m))
                {
                  json_object_put (r.msg);
                  r.msg = json_object_get (m);
                  if (json_object_object_get_ex (body, "usage", &u))
                    r.usage = json_object_get (u);
                }
              else
                ret = rt_error_set (err, EIO, "internal", "the API answered without a message: %.200s",
                                    r.body ? r.body : "");
            }
          free (r.body);
          if (ret < 0)
            {
              json_object_put (r.msg);
              json_object_put (r.usage);
              return ret;
            }
          *msg = r.msg;
          *usage = r.usage;
          return 0;
        }
      json_object_put (r.msg);
      json_object_put (r.usage);
      if (rc == CURLE_OK && (status == 429 || status >= 500) && attempt < MAX_RETRIES)
        {
          long wait = status == 429 && r.retry_after >= 0 ? r.retry_after : 1L << attempt;
          struct pollfd p = { .fd = o->cancel_fd, .events = POLLIN };
          if (wait > wait_max)
            wait = wait_max;
          if (o->on_event)
            {
              char line[160];
              snprintf (line, sizeof line, "runtime: the API answered %ld; retrying in %ld s", status, wait);
              o->on_event (o->data, line);
            }
          free (r.body);
          /* The wait, cut short by Ctrl-C.  */
          if (poll (&p, o->cancel_fd > 0 ? 1 : 0, (int) wait * 1000) > 0)
            return interrupted (err);
          continue;
        }
      if (rc == CURLE_OK)
        api_message (r.body, api_msg, sizeof api_msg);
      free (r.body);
      if (rc == CURLE_ABORTED_BY_CALLBACK && !r.read_timed_out)
        return interrupted (err);
      if (rc == CURLE_OPERATION_TIMEDOUT && connected_us == 0)
        {
          rt_error_set (err, ETIMEDOUT, "internal", "cannot connect to the API at %s: no answer within %u s", url,
                        connect_s);
          return rt_error_hint (err, "check --base-url and the network");
        }
      if (r.read_timed_out)
        {
          rt_error_set (err, ETIMEDOUT, "internal", "the API at %s sent nothing for %u s (read timeout)", url, read_s);
          return rt_error_hint (err, "the API may be overloaded; try again later");
        }
      if (rc != CURLE_OK)
        {
          rt_error_set (err, EIO, "internal", "cannot reach the API at %s: %s", url, curl_easy_strerror (rc));
          return rt_error_hint (err, "check --base-url and the network");
        }
      {
        const char *m = api_msg;
        int ret;
        if (status == 401 || status == 403)
          {
            rt_error_set (err, EACCES, "invalid_request", "the API refused the key (HTTP %ld): %s", status, m);
            ret = rt_error_hint (err, "check DEEPSEEK_API_KEY");
          }
        else if (status == 429)
          ret = rt_error_set (err, EAGAIN, "quota_exceeded", "the API is rate limiting (HTTP 429) after %d retries: %s",
                              MAX_RETRIES, m);
        else if (status >= 500)
          ret = rt_error_set (err, EIO, "internal", "the API failed (HTTP %ld) after %d retries: %s", status,
                              MAX_RETRIES, m);
        else
          ret = rt_error_set (err, EINVAL, "invalid_request", "the API refused the request (HTTP %ld): %s", status, m);
        return ret;
      }
    }
}

/* ---- prices -------------------------------------------------------------- */

/* µ$ per million tokens (input, output) off-peak; peak doubles.  */
static bool
model_price (const char *model, int64_t *in, int64_t *out)
{
  if (strcmp (model, "deepseek-flash") == 0)
    {
      *in = 150000;
      *out = 600000;
      return true;
    }
  if (strcmp (model, "deepseek-v4-pro") == 0)
    {
      *in = 660000;
      *out = 1980000;
      return true;
    }
  return false;
}

/* 01:00-04:00 and 06:00-10:00 UTC on weekdays.  */
static bool
peak_at (time_t t)
{
  struct tm tm;

  gmtime_r (&t, &tm);
  if (tm.tm_wday == 0 || tm.tm_wday == 6)
    return false;
  return (tm.tm_hour >= 1 && tm.tm_hour < 4) || (tm.tm_hour >= 6 && tm.tm_hour < 10);
}

/* ---- the loop ---------------------------------------------------------------- */

static json_object *
tool_schema (bool strict)
{
  json_object *tool = json_object_new_object (), *fn = json_object_new_object (), *params = json_object_new_object ();
  json_object *props = json_object_new_object (), *code = json_object_new_object (), *pk = json_object_new_object ();
  json_object *items = json_object_new_object (), *req = json_object_new_array ();

  json_object_object_add (code, "type", json_object_new_string ("string"));
  json_object_object_add (code, "description", json_object_new_string ("the Python 3 program (main.py)"));
  json_object_object_add (items, "type", json_object_new_string ("string"));
  json_object_object_add (pk, "type", json_object_new_string ("array"));
  json_object_object_add (pk, "items", items);
  json_object_object_add (pk, "description", json_object_new_string ("PyPI packages to install first"));
  json_object_object_add (props, "code", code);
  json_object_object_add (props, "packages", pk);
  json_object_array_add (req, json_object_new_string ("code"));
  json_object_array_add (req, json_object_new_string ("packages"));
  json_object_object_add (params, "type", json_object_new_string ("object"));
  json_object_object_add (params, "properties", props);
  json_object_object_add (params, "required", req);
  json_object_object_add (params, "additionalProperties", json_object_new_boolean (0));
  json_object_object_add (fn, "name", json_object_new_string ("run_python"));
  json_object_object_add (fn, "description",
                          json_object_new_string ("Run a Python 3 program in a fresh sandbox: the packages are "
                                                  "installed from PyPI, then the internet is off; 60 s limit. "
                                                  "Returns exit_code, timed_out, stdout, stderr."));
  json_object_object_add (fn, "parameters", params);
  if (strict)
    json_object_object_add (fn, "strict", json_object_new_boolean (1));
  json_object_object_add (tool, "type", json_object_new_string ("function"));
  json_object_object_add (tool, "function", fn);
  return tool;
}

static char **
packages_of (json_object *args)
{
  json_object *p;
  size_t n;
  char **v;

  if (!json_object_object_get_ex (args, "packages", &p) || !json_object_is_type (p, json_type_array))
    return calloc (1, sizeof (char *));
  n = json_object_array_length (p);
  v = calloc (n + 1, sizeof (char *));
  for (size_t i = 0; v && i < n; i++)
    v[i] = strdup (json_object_get_string (json_object_array_get_idx (p, i)) ?: "");
  return v;
}

static void RT_PRINTF (2, 3)
event (const rt_chat_opts *o, const char *fmt, ...)
{
  char line[512];
  va_list ap;

  if (o->on_event == NULL)
    return;
  va_start (ap, fmt);
  vsnprintf (line, sizeof line, fmt, ap);
  va_end (ap);
  o->on_event (o->data, line);
}

/* One tool call: its result message.  */
static int
handle_call (rt_context *ctx, const rt_chat_opts *o, json_object *call, int n, json_object *messages,
             int64_t *sandbox_micros, rt_error **err)
{
  json_object *fn = json_object_object_get (call, "function"), *msg = json_object_new_object ();
  const char *name = fn ? rt_json_str (fn, "name") : NULL, *args_text = fn ? rt_json_str (fn, "arguments") : NULL;
  cleanup_json json_object *args = args_text ? json_tokener_parse (args_text) : NULL;
  cleanup_free char *result = NULL;
  cleanup_strv char **pkgs = NULL;
  int ret = 0;

  json_object_object_add (msg, "role", json_object_new_string ("tool"));
  json_object_object_add (msg, "tool_call_id", json_object_new_string (rt_json_str (call, "id") ?: ""));
  if (name == NULL || strcmp (name, "run_python") != 0 || args == NULL || rt_json_str (args, "code") == NULL)
    {
      result = strdup ("{\"error\":\"unknown tool or bad arguments: call run_python with {code, packages}\"}");
      event (o, "runtime: tool call #%d (%s): refused: unknown tool or bad arguments", n, name ? name : "no name");
    }
  else
    {
      struct timespec t0, t1;
      cleanup_json json_object *r = NULL;
      pkgs = packages_of (args);
      clock_gettime (CLOCK_MONOTONIC, &t0);
      ret = run_python (ctx, o, rt_json_str (args, "code"), pkgs, &result, sandbox_micros, err);
      clock_gettime (CLOCK_MONOTONIC, &t1);
      if (ret < 0)
        {
          json_object_put (msg);
          return ret;
        }
      r = json_tokener_parse (result);
      if (r && json_object_object_get_ex (r, "error", NULL))
        event (o, "runtime: run_python #%d: refused: %s", n, rt_json_str (r, "error"));
      else if (r)
        {
          json_object *p = json_object_object_get (args, "packages");
          size_t np = p && json_object_is_type (p, json_type_array) ? json_object_array_length (p) : 0;
          json_object *to = json_object_object_get (r, "timed_out"), *ec = json_object_object_get (r, "exit_code");
          double took = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
          if (json_object_object_get_ex (r, "stage", NULL))
            event (o, "runtime: run_python #%d (%zu package%s): pip install failed in %.1f s", n, np,
                   np == 1 ? "" : "s", took);
          else
            event (o, "runtime: run_python #%d (%zu package%s): %s %d in %.1f s", n, np, np == 1 ? "" : "s",
                   to && json_object_get_boolean (to) ? "timed out, exit" : "exit",
                   ec ? json_object_get_int (ec) : -1, took);
        }
    }
  if (result == NULL)
    {
      json_object_put (msg);
      return rt_error_oom (err);
    }
  json_object_object_add (msg, "content", json_object_new_string (result));
  json_object_array_add (messages, msg);
  return 0;
}

int
rt_chat (rt_context *ctx, const rt_chat_opts *o, char **transcript, rt_error **err)
{
  cleanup_json json_object *messages = json_object_new_array (), *req = json_object_new_object (), *tools = NULL;
  cleanup_json json_object *out = json_object_new_object ();
  cleanup_free char *url = NULL;
  const char *model = o->model ? o->model : "deepseek-flash", *base = o->base_url ? o->base_url : "https://api.deepseek.com";
  int64_t in_tokens = 0, out_tokens = 0, model_micros = 0, sandbox_micros = 0, pin = 0, pout = 0;
  bool priced = model_price (model, &pin, &pout);
  unsigned max_turns = o->max_turns ? o->max_turns : 8;
  int calls = 0, ret = 0;
  json_object *user = json_object_new_object ();

  if (o->api_key == NULL || *o->api_key == '\0')
    {
      rt_error_set (err, EINVAL, "invalid_request", "DEEPSEEK_API_KEY is not set");
      return rt_error_hint (err, "export DEEPSEEK_API_KEY=… (it is sent to the API only, never into a sandbox)");
    }
  {
    /* One trailing slash in --base-url is no reason to fail.  */
    size_t bl = strlen (base);
    while (bl > 0 && base[bl - 1] == '/')
      bl--;
    url = rt_strdup_printf ("%.*s%s/chat/completions", (int) bl, base, o->strict ? "/beta" : "");
  }
  if (url == NULL)
    return rt_error_oom (err);
  tools = json_object_new_array ();
  json_object_array_add (tools, tool_schema (o->strict));
  json_object_object_add (user, "role", json_object_new_string ("user"));
  json_object_object_add (user, "content", json_object_new_string (o->prompt));
  json_object_array_add (messages, user);
  json_object_object_add (req, "model", json_object_new_string (model));
  json_object_object_add (req, "messages", json_object_get (messages));
  json_object_object_add (req, "tools", json_object_get (tools));
  if (o->stream)
    {
      json_object *so = json_object_new_object ();
      json_object_object_add (req, "stream", json_object_new_boolean (1));
      json_object_object_add (so, "include_usage", json_object_new_boolean (1));
      json_object_object_add (req, "stream_options", so);
    }
  for (unsigned turn = 0; ret == 0; turn++)
    {
      json_object *msg = NULL, *usage = NULL, *tc;
      bool peak = peak_at (o->now ? (time_t) o->now : time (NULL));
      if (turn >= max_turns)
        {
          rt_error_set (err, EINVAL, "invalid_request", "no answer after %u turns: the model still calls run_python",
                        max_turns);
          ret = rt_error_hint (err, "raise --max-turns (at most 64), or ask for less");
          break;
        }
      ret = api_call (o, url, req, &msg, &usage, err);
      if (ret < 0)
        break;
      if (usage)
        {
          int64_t i = json_object_get_int64 (json_object_object_get (usage, "prompt_tokens"));
          int64_t u = json_object_get_int64 (json_object_object_get (usage, "completion_tokens"));
          in_tokens += i;
          out_tokens += u;
          if (priced)
            model_micros += ((i * pin + u * pout) * (peak ? 2 : 1) + 500000) / 1000000;
          json_object_put (usage);
        }
      /* Whole, reasoning_content included: the API wants it back.  */
      json_object_array_add (messages, msg);
      if (!json_object_object_get_ex (msg, "tool_calls", &tc) || tc == NULL || json_object_array_length (tc) == 0)
        {
          json_object_object_add (out, "answer", json_object_get (json_object_object_get (msg, "content")));
          break;
        }
      for (size_t i = 0; ret == 0 && i < json_object_array_length (tc); i++)
        ret = handle_call (ctx, o, json_object_array_get_idx (tc, i), ++calls, messages, &sandbox_micros, err);
    }
  /* A failure midway still says what was spent.  */
  {
    json_object *u = json_object_new_object (), *c = json_object_new_object ();
    json_object_object_add (u, "prompt_tokens", json_object_new_int64 (in_tokens));
    json_object_object_add (u, "completion_tokens", json_object_new_int64 (out_tokens));
    json_object_object_add (c, "model_micros", priced ? json_object_new_int64 (model_micros) : NULL);
    json_object_object_add (c, "sandbox_micros", json_object_new_int64 (sandbox_micros));
    json_object_object_add (out, "model", json_object_new_string (model));
    json_object_object_add (out, "messages", json_object_get (messages));
    json_object_object_add (out, "usage", u);
    json_object_object_add (out, "cost", c);
  }
  *transcript = strdup (json_object_to_json_string_ext (out, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  if (ret < 0)
    return ret;
  return *transcript ? 0 : rt_error_oom (err);
}
