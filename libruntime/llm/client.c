/* client.c - the OpenAI-compatible chat/completions call (DeepSeek): one
   POST with curl, streamed (server-sent events) or not, with timeouts,
   Ctrl-C and bounded retries.  */
#include <curl/curl.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include "llm/chat.h"
#include "llm/client.h"

#define CONNECT_TIMEOUT_S 15
#define READ_TIMEOUT_S 120
#define RETRY_AFTER_MAX_S 30
#define MAX_RETRIES 4

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
  if (rt_chat_cancelled (r->o))
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

/* A short excerpt of a body that is not the API's JSON (a proxy's HTML
   page, say) into @msg: an HTML page's <title>, else its text without the
   tags, on one line and cut.  */
static void
body_excerpt (const char *body, char *msg, size_t size)
{
  enum
  {
    EXCERPT_MAX = 120
  };
  const char *title = strcasestr (body, "<title>"), *end = title ? strcasestr (title, "</title>") : NULL;
  cleanup_free char *text = NULL, *folded = NULL;
  char *o;

  if (title && end)
    body = title + 7;
  else
    end = body + strlen (body);
  text = strndup (body, (size_t) (end - body));
  if (text == NULL)
    {
      snprintf (msg, size, "no details");
      return;
    }
  /* Tags out, each one a space.  */
  o = text;
  for (const char *p = text; *p; p++)
    if (*p == '<')
      {
        const char *close = strchr (p, '>');
        *o++ = ' ';
        if (close == NULL)
          break;
        p = close;
      }
    else
      *o++ = *p;
  *o = '\0';
  folded = rt_text_fold (text, size < EXCERPT_MAX ? size : EXCERPT_MAX);
  snprintf (msg, size, "%s", folded && *folded ? folded : "no details");
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
    body_excerpt (body ? body : "", msg, size);
  return msg;
}

int
rt_chat_api_url (const char *base, bool strict, char **url, rt_error **err)
{
  CURLU *u = curl_url ();
  char *scheme = NULL, *host = NULL;
  const char *slashes = strstr (base, "://");
  bool good;
  size_t bl = strlen (base);

  if (u == NULL)
    return rt_error_oom (err);
  /* curl reads "http:///v1" as the host v1: no host is no URL here.  */
  good = slashes && slashes[3] != '/' && curl_url_set (u, CURLUPART_URL, base, 0) == CURLUE_OK && curl_url_get (u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK
         && (strcmp (scheme, "http") == 0 || strcmp (scheme, "https") == 0)
         && curl_url_get (u, CURLUPART_HOST, &host, 0) == CURLUE_OK && *host;
  curl_free (scheme);
  curl_free (host);
  curl_url_cleanup (u);
  if (!good)
    {
      rt_error_set (err, EINVAL, "invalid_request", "--base-url '%s' is not an http or https URL with a host", base);
      return rt_error_hint (err, "for example --base-url https://api.deepseek.com or http://127.0.0.1:8000");
    }
  /* One trailing slash in --base-url is no reason to fail.  */
  while (bl > 0 && base[bl - 1] == '/')
    bl--;
  *url = rt_strdup_printf ("%.*s%s/chat/completions", (int) bl, base, strict ? "/beta" : "");
  return *url ? 0 : rt_error_oom (err);
}

/* What every attempt of one call shares.  */
struct call
{
  const rt_chat_opts *o;
  const char *url;
  const char *payload;
  const char *auth;
  unsigned connect_s, read_s;
  long wait_max;
};

/* One attempt: the reply into @r (its message started), the HTTP status
   and the time connecting took (0: never connected).  */
static int
perform (const struct call *k, struct reply *r, long *status, curl_off_t *connected_us, CURLcode *rc, rt_error **err)
{
  struct curl_slist *hdrs = NULL;
  CURL *c = curl_easy_init ();

  if (c == NULL)
    return rt_error_oom (err);
  r->msg = json_object_new_object ();
  json_object_object_add (r->msg, "role", json_object_new_string ("assistant"));
  hdrs = curl_slist_append (hdrs, "Content-Type: application/json");
  hdrs = curl_slist_append (hdrs, k->auth);
  hdrs = curl_slist_append (hdrs, "Expect:");
  curl_easy_setopt (c, CURLOPT_URL, k->url);
  curl_easy_setopt (c, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt (c, CURLOPT_POSTFIELDS, k->payload);
  curl_easy_setopt (c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt (c, CURLOPT_WRITEDATA, r);
  curl_easy_setopt (c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt (c, CURLOPT_HEADERDATA, r);
  curl_easy_setopt (c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt (c, CURLOPT_CONNECTTIMEOUT, (long) k->connect_s);
  /* A reply may take minutes (reasoning); silence may not.  */
  curl_easy_setopt (c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt (c, CURLOPT_XFERINFODATA, r);
  curl_easy_setopt (c, CURLOPT_NOPROGRESS, 0L);
  *rc = curl_easy_perform (c);
  curl_easy_getinfo (c, CURLINFO_RESPONSE_CODE, status);
  curl_easy_getinfo (c, CURLINFO_CONNECT_TIME_T, connected_us);
  curl_easy_cleanup (c);
  curl_slist_free_all (hdrs);
  return 0;
}

/* A 200: the message and usage out of @r (consumed), from the body
   unless it was streamed.  */
static int
take_reply (const rt_chat_opts *o, struct reply *r, json_object **msg, json_object **usage, rt_error **err)
{
  int ret = 0;

  if (!o->stream)
    {
      cleanup_json json_object *body = json_tokener_parse (r->body ? r->body : "");
      json_object *choices, *m, *u;
      if (body && json_object_object_get_ex (body, "choices", &choices) && json_object_array_length (choices) > 0
          && json_object_object_get_ex (json_object_array_get_idx (choices, 0), "message", &m))
        {
          json_object_put (r->msg);
          r->msg = json_object_get (m);
          if (json_object_object_get_ex (body, "usage", &u))
            r->usage = json_object_get (u);
        }
      else
        ret = rt_error_set (err, EIO, "internal", "the API answered without a message: %.200s",
                            r->body ? r->body : "");
    }
  free (r->body);
  if (ret < 0)
    {
      json_object_put (r->msg);
      json_object_put (r->usage);
      return ret;
    }
  *msg = r->msg;
  *usage = r->usage;
  return 0;
}

/* A status worth another try: a rate limit or a server that may be back
   soon.  Other 4xx and 501 answer the same every time.  */
static bool
retried (long status)
{
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

/* Waits before retrying a 429 or 5xx: as Retry-After says, else backing
   off, at most wait_max; true when Ctrl-C cut it short.  */
static bool
wait_to_retry (const struct call *k, long status, long after, int attempt)
{
  const rt_chat_opts *o = k->o;
  long wait = status == 429 && after >= 0 ? after : 1L << attempt;
  struct pollfd p = { .fd = o->cancel_fd, .events = POLLIN };

  if (wait > k->wait_max)
    wait = k->wait_max;
  if (o->on_event)
    {
      char line[160];
      snprintf (line, sizeof line, "runtime: the API answered %ld; retrying in %ld s", status, wait);
      o->on_event (o->data, line);
    }
  /* The wait, cut short by Ctrl-C.  */
  return poll (&p, o->cancel_fd > 0 ? 1 : 0, (int) wait * 1000) > 0;
}

/* The error for a failed attempt that is not retried (@r's body
   consumed).  */
static int
call_failed (const struct call *k, struct reply *r, CURLcode rc, long status, curl_off_t connected_us,
             rt_error **err)
{
  char api_msg[512];

  if (rc == CURLE_OK)
    api_message (r->body, api_msg, sizeof api_msg);
  free (r->body);
  if (rc == CURLE_ABORTED_BY_CALLBACK && !r->read_timed_out)
    return rt_chat_interrupted (err);
  if (rc == CURLE_OPERATION_TIMEDOUT && connected_us == 0)
    {
      rt_error_set (err, ETIMEDOUT, "unavailable", "cannot connect to the API at %s: no answer within %u s", k->url,
                    k->connect_s);
      return rt_error_hint (err, "check --base-url and the network");
    }
  if (r->read_timed_out)
    {
      rt_error_set (err, ETIMEDOUT, "unavailable", "the API at %s sent nothing for %u s (read timeout)", k->url,
                    k->read_s);
      return rt_error_hint (err, "the API may be overloaded; try again later");
    }
  if (rc != CURLE_OK)
    {
      rt_error_set (err, EIO, "unavailable", "cannot reach the API at %s: %s", k->url, curl_easy_strerror (rc));
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
    else if (retried (status))
      ret = rt_error_set (err, EIO, "unavailable", "the API failed (HTTP %ld) after %d retries: %s", status,
                          MAX_RETRIES, m);
    else if (status >= 500)
      ret = rt_error_set (err, EIO, "unavailable", "the API failed (HTTP %ld): %s", status, m);
    else
      ret = rt_error_set (err, EINVAL, "invalid_request", "the API refused the request (HTTP %ld): %s", status, m);
    return ret;
  }
}

int
rt_chat_api_call (const rt_chat_opts *o, const char *url, json_object *req, json_object **msg, json_object **usage,
                  rt_error **err)
{
  cleanup_free char *auth = rt_strdup_printf ("Authorization: Bearer %s", o->api_key);
  struct call k = {
    .o = o,
    .url = url,
    .payload = json_object_to_json_string_ext (req, JSON_C_TO_STRING_PLAIN),
    .auth = auth,
    .connect_s = rt_or_default (o->connect_timeout_s, CONNECT_TIMEOUT_S),
    .read_s = rt_or_default (o->read_timeout_s, READ_TIMEOUT_S),
    .wait_max = rt_or_default (o->retry_after_max_s, RETRY_AFTER_MAX_S),
  };

  if (auth == NULL)
    return rt_error_oom (err);
  for (int attempt = 0;; attempt++)
    {
      struct reply r = { .stream = o->stream, .o = o, .retry_after = -1, .read_ms = k.read_s * 1000ULL };
      curl_off_t connected_us = 0;
      long status = 0;
      CURLcode rc = CURLE_OK;
      int ret = perform (&k, &r, &status, &connected_us, &rc, err);

      if (ret < 0)
        return ret;
      if (rc == CURLE_OK && status == 200)
        return take_reply (o, &r, msg, usage, err);
      json_object_put (r.msg);
      json_object_put (r.usage);
      if (rc == CURLE_OK && retried (status) && attempt < MAX_RETRIES)
        {
          free (r.body);
          if (wait_to_retry (&k, status, r.retry_after, attempt))
            return rt_chat_interrupted (err);
          continue;
        }
      return call_failed (&k, &r, rc, status, connected_us, err);
    }
}
