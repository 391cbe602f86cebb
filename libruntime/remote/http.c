/* http.c - one request to the server of client mode, with libcurl: the
   transport rules of docs/API.md as a client keeps them.  */
#include <curl/curl.h>
#include <poll.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "common/sys.h"
#include "remote/http.h"

#define CONNECT_TIMEOUT_MS 15000

struct exchange
{
  const struct rt_remote_req *req;
  struct rt_remote_answer *ans;
  CURL *curl;
  off_t sent;              /* of req->body_fd */
  long retry_after_s;      /* -1: none given */
};

void
rt_remote_answer_clear (struct rt_remote_answer *a)
{
  free (a->body);
  memset (a, 0, sizeof (*a));
}

int
rt_remote_unsupported (rt_error **err, const char *what)
{
  rt_error_set (err, ENOTSUP, "unsupported_remote", "%s is not available through RUNTIME_API_URL", what);
  return rt_error_hint (err, "unset RUNTIME_API_URL to run it on this machine");
}

/* The host of an http(s) URL, lower-cased, without port or brackets'
   content changed ("[::1]" stays bracketed).  */
static char *
url_host (const char *url)
{
  const char *p = strstr (url, "://"), *end, *at;
  char *host;

  if (p == NULL)
    return NULL;
  p += 3;
  end = p + strcspn (p, "/?#");
  at = memchr (p, '@', end - p);
  if (at)
    p = at + 1;
  if (*p == '[')
    {
      const char *close = memchr (p, ']', end - p);
      end = close ? close + 1 : end;
    }
  else
    end = p + strcspn (p, ":/?#");
  host = strndup (p, end - p);
  for (char *h = host; h && *h; h++)
    *h = (char) (*h >= 'A' && *h <= 'Z' ? *h - 'A' + 'a' : *h);
  return host;
}

int
rt_remote_check (rt_context *ctx, rt_error **err)
{
  static const char *const loopback[] = { "localhost", "127.0.0.1", "[::1]", "runtime.internal", NULL };
  cleanup_free char *host = NULL;

  if (ctx->api_key == NULL)
    {
      rt_error_set (err, EACCES, "unauthorized", "RUNTIME_API_URL is set but RUNTIME_API_KEY is not");
      return rt_error_hint (err, "set RUNTIME_API_KEY to a token of that server (runtime token create NAME there), "
                                 "or unset RUNTIME_API_URL to use this machine");
    }
  if (strncasecmp (ctx->api_url, "https://", 8) == 0)
    return 0;
  host = url_host (ctx->api_url);
  if (strncasecmp (ctx->api_url, "http://", 7) == 0 && host)
    for (const char *const *l = loopback; *l; l++)
      if (strcmp (host, *l) == 0)
        return 0;
  rt_error_set (err, EINVAL, "invalid_request", "RUNTIME_API_URL '%s' is refused: only https:// may leave this machine",
                ctx->api_url);
  return rt_error_hint (err, "plain http:// is for localhost, 127.0.0.1, [::1] and runtime.internal");
}

char *
rt_remote_escape (const char *s)
{
  static const char hex[] = "0123456789ABCDEF";
  char *out = malloc (strlen (s) * 3 + 1), *o = out;

  if (out == NULL)
    return NULL;
  for (const unsigned char *p = (const unsigned char *) s; *p; p++)
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr ("-._~", *p))
      *o++ = (char) *p;
    else
      {
        *o++ = '%';
        *o++ = hex[*p >> 4];
        *o++ = hex[*p & 15];
      }
  *o = '\0';
  return out;
}

/* A version 4 UUID (RFC 9562) for Idempotency-Key.  */
static int
uuid4 (char out[37], rt_error **err)
{
  unsigned char r[16];

  if (getrandom (r, sizeof (r), 0) != sizeof (r))
    return rt_error_set (err, errno, "internal", "getrandom: %s", strerror (errno));
  r[6] = (r[6] & 0x0f) | 0x40;
  r[8] = (r[8] & 0x3f) | 0x80;
  snprintf (out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3],
            r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15]);
  return 0;
}

static int
collect (struct rt_remote_answer *a, const char *buf, size_t n)
{
  char *nb = realloc (a->body, a->len + n + 1);

  if (nb == NULL)
    return -1;
  a->body = nb;
  memcpy (a->body + a->len, buf, n);
  a->len += n;
  a->body[a->len] = '\0';
  return 0;
}

static size_t
on_write (char *ptr, size_t size, size_t nmemb, void *data)
{
  struct exchange *x = data;
  size_t n = size * nmemb;

  curl_easy_getinfo (x->curl, CURLINFO_RESPONSE_CODE, &x->ans->status);
  /* Error answers and plain answers are kept whole (bounded: 16 MiB is
     far past any object of the API).  */
  if (x->ans->status >= 300 || x->req->on_data == NULL)
    return x->ans->len + n <= 16 * 1024 * 1024 && collect (x->ans, ptr, n) == 0 ? n : 0;
  x->ans->streamed = true;
  if (x->req->on_data (x->req->data, ptr, n) < 0)
    {
      x->ans->stopped = true;
      return 0;
    }
  return n;
}

static size_t
on_header (char *buf, size_t size, size_t nitems, void *data)
{
  struct exchange *x = data;
  size_t n = size * nitems;

  if (n > 12 && strncasecmp (buf, "retry-after:", 12) == 0)
    x->retry_after_s = strtol (buf + 12, NULL, 10);
  return n;
}

static size_t
on_read (char *buf, size_t size, size_t nitems, void *data)
{
  struct exchange *x = data;
  size_t want = size * nitems;
  ssize_t n;

  if ((off_t) x->req->body_len - x->sent < (off_t) want)
    want = x->req->body_len - x->sent;
  if (want == 0)
    return 0;
  n = pread (x->req->body_fd, buf, want, x->req->body_off + x->sent);
  if (n <= 0)
    return CURL_READFUNC_ABORT;
  x->sent += n;
  return n;
}

static struct curl_slist *
headers_for (rt_context *ctx, const struct rt_remote_req *req, const char *key)
{
  struct curl_slist *h = NULL;
  char line[512];

  snprintf (line, sizeof (line), "Authorization: Bearer %s", ctx->api_key);
  h = curl_slist_append (h, line);
  explicit_bzero (line, sizeof (line));
  snprintf (line, sizeof (line), "X-Runtime-Client: runtime-cli/%s", rt_version ());
  h = curl_slist_append (h, line);
  snprintf (line, sizeof (line), "Accept: %s", req->accept ? req->accept : "application/json");
  h = curl_slist_append (h, line);
  if (key)
    {
      snprintf (line, sizeof (line), "Idempotency-Key: %s", key);
      h = curl_slist_append (h, line);
    }
  if (req->prefer)
    {
      snprintf (line, sizeof (line), "Prefer: %s", req->prefer);
      h = curl_slist_append (h, line);
    }
  if (req->body || req->body_fd > 0 || strcmp (req->method, "GET") != 0)
    {
      snprintf (line, sizeof (line), "Content-Type: %s", req->content_type ? req->content_type : "application/json");
      h = curl_slist_append (h, line);
    }
  return curl_slist_append (h, "Expect:");
}

/* Runs the transfer; one with a tick or a watched fd runs in a multi
   loop that calls the tick and looks at the fd.  */
static CURLcode
perform (CURL *c, const struct rt_remote_req *req, struct rt_remote_answer *ans)
{
  CURLM *multi;
  CURLMsg *msg;
  CURLcode rc = CURLE_OK;
  int running = 1, left;
  bool watch = req->watch_fd >= 0;

  if (req->on_tick == NULL && !watch)
    return curl_easy_perform (c);
  multi = curl_multi_init ();
  if (multi == NULL || curl_multi_add_handle (multi, c) != CURLM_OK)
    {
      if (multi)
        curl_multi_cleanup (multi);
      return CURLE_OUT_OF_MEMORY;
    }
  while (running)
    {
      struct curl_waitfd w = { .fd = req->watch_fd, .events = CURL_WAIT_POLLIN };

      if (curl_multi_perform (multi, &running) != CURLM_OK || !running)
        break;
      curl_multi_poll (multi, watch ? &w : NULL, watch ? 1 : 0, 100, NULL);
      if (watch && (w.revents & CURL_WAIT_POLLIN) && req->abort_on_watch)
        {
          ans->interrupted = true;
          break;
        }
      if (req->on_tick)
        watch = req->on_tick (req->data, watch && (w.revents & CURL_WAIT_POLLIN)) && watch;
    }
  while ((msg = curl_multi_info_read (multi, &left)))
    if (msg->msg == CURLMSG_DONE)
      rc = msg->data.result;
  curl_multi_remove_handle (multi, c);
  curl_multi_cleanup (multi);
  return rc;
}

/* One try of @req with Idempotency-Key @key, at most @timeout_ms (0:
   no limit).  */
static CURLcode
try_once (rt_context *ctx, const struct rt_remote_req *req, const char *key, long timeout_ms, struct exchange *x)
{
  cleanup_free char *url = rt_strdup_printf ("%s%s", ctx->api_url, req->path);
  struct curl_slist *hdrs = headers_for (ctx, req, key);
  CURL *c = curl_easy_init ();
  CURLcode rc;

  x->curl = c;
  x->sent = 0;
  x->retry_after_s = -1;
  if (c == NULL || url == NULL || hdrs == NULL)
    {
      if (c)
        curl_easy_cleanup (c);
      curl_slist_free_all (hdrs);
      return CURLE_OUT_OF_MEMORY;
    }
  curl_easy_setopt (c, CURLOPT_URL, url);
  curl_easy_setopt (c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt (c, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt (c, CURLOPT_CUSTOMREQUEST, req->method);
  curl_easy_setopt (c, CURLOPT_CONNECTTIMEOUT_MS, (long) CONNECT_TIMEOUT_MS);
  curl_easy_setopt (c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt (c, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt (c, CURLOPT_WRITEDATA, x);
  curl_easy_setopt (c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt (c, CURLOPT_HEADERDATA, x);
  if (timeout_ms > 0)
    curl_easy_setopt (c, CURLOPT_TIMEOUT_MS, timeout_ms);
  if (req->body_fd > 0)
    {
      curl_easy_setopt (c, CURLOPT_UPLOAD, 1L);
      curl_easy_setopt (c, CURLOPT_READFUNCTION, on_read);
      curl_easy_setopt (c, CURLOPT_READDATA, x);
      curl_easy_setopt (c, CURLOPT_INFILESIZE_LARGE, (curl_off_t) req->body_len);
    }
  else if (req->body || strcmp (req->method, "POST") == 0)
    {
      curl_easy_setopt (c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) (req->body ? req->body_len : 2));
      curl_easy_setopt (c, CURLOPT_POSTFIELDS, req->body ? req->body : "{}");
    }
  rc = perform (c, req, x->ans);
  curl_easy_getinfo (c, CURLINFO_RESPONSE_CODE, &x->ans->status);
  curl_easy_cleanup (c);
  curl_slist_free_all (hdrs);
  return rc;
}

/* Whether a 429 is a limit that ends by waiting (rate_limited, with
   Retry-After): a quota_exceeded stays until something is freed, so it
   is answered at once rather than after minutes of tries.  */
static bool
transient_429 (const struct rt_remote_answer *a)
{
  cleanup_json json_object *o = a->body ? json_tokener_parse (a->body) : NULL;
  json_object *e = NULL;
  const char *code;

  if (o == NULL || !json_object_object_get_ex (o, "error", &e))
    return true;
  code = rt_json_str (e, "code");
  return code == NULL || strcmp (code, "quota_exceeded") != 0;
}

/* Whether a failed try is tried again, and after how long (ms).  */
static bool
retry_after (const struct rt_remote_req *req, const struct exchange *x, CURLcode rc, int tries, long *delay_ms)
{
  long s = x->ans->status;
  bool transport = rc != CURLE_OK && !x->ans->stopped && s == 0;
  bool unsent = rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST;

  if (tries > RT_REMOTE_RETRIES || x->ans->streamed || x->ans->interrupted || rc == CURLE_OUT_OF_MEMORY)
    return false;
  /* A stream is not kept for its Idempotency-Key: a streamed change (an
     exec) whose request may have arrived is not sent again.  */
  if (transport && req->on_data && strcmp (req->method, "GET") != 0 && !unsent)
    return false;
  if (!transport && s != 429 && s != 502 && s != 503 && s != 504)
    return false;
  if (s == 429 && !transient_429 (x->ans))
    return false;
  *delay_ms = 250L << (tries - 1); /* 250 ms, 0.5 s, 1 s, 2 s */
  if (x->retry_after_s >= 0)
    *delay_ms = (x->retry_after_s > RT_REMOTE_RETRY_AFTER_MAX_S ? RT_REMOTE_RETRY_AFTER_MAX_S : x->retry_after_s)
                * 1000L;
  return true;
}

/* Waits @ms, or less when @watch_fd becomes readable (Ctrl-C).  */
static bool
backoff (const struct rt_remote_req *req, long ms)
{
  struct pollfd p = { .fd = req->watch_fd, .events = POLLIN };
  int r;

  do
    r = poll (&p, 1, (int) ms);
  while (r < 0 && errno == EINTR);
  return r <= 0;
}

static int
answer_error (rt_context *ctx, const struct rt_remote_answer *a, rt_error **err)
{
  cleanup_json json_object *o = a->body ? json_tokener_parse (a->body) : NULL;
  const char *code;

  if (rt_error_from_json (o, err) < 0)
    {
      if (a->status == 401 && err && *err && (*err)->hint == NULL)
        rt_error_hint (err, "RUNTIME_API_KEY is not a token of %s", ctx->api_url);
      return -EIO;
    }
  code = a->status == 401   ? "unauthorized"
         : a->status == 403 ? "permission_denied"
         : a->status == 404 ? "not_found"
         : a->status == 409 ? "conflict"
         : a->status == 413 ? "payload_too_large"
         : a->status == 429 ? "rate_limited"
         : a->status == 503 ? "unavailable"
         : a->status >= 500 ? "internal"
                            : "invalid_request";
  return rt_error_set (err, EIO, code, "%s answered HTTP %ld", ctx->api_url, a->status);
}

int
rt_remote_send (rt_context *ctx, const struct rt_remote_req *req, struct rt_remote_answer *ans, rt_error **err)
{
  struct exchange x = { .req = req, .ans = ans };
  char key[37];
  bool keyed = strcmp (req->method, "GET") != 0;
  CURLcode rc;
  long delay = 0;
  int ret = rt_remote_check (ctx, err);
  uint64_t deadline = req->timeout_ms > 0 ? rt_now_ms () + (uint64_t) req->timeout_ms : 0;

  memset (ans, 0, sizeof (*ans));
  if (ret < 0 || (keyed && (ret = uuid4 (key, err)) < 0))
    return ret;
  for (int tries = 1;; tries++)
    {
      uint64_t now = rt_now_ms ();
      rt_remote_answer_clear (ans);
      rc = try_once (ctx, req, keyed ? key : NULL, deadline ? (deadline > now ? (long) (deadline - now) : 1L) : 0, &x);
      if (!retry_after (req, &x, rc, tries, &delay))
        break;
      /* No try that could not end in time.  */
      if (deadline && rt_now_ms () + (uint64_t) delay + 1 >= deadline)
        break;
      if (!backoff (req, delay))
        break;
    }
  if (rc == CURLE_OUT_OF_MEMORY)
    return rt_error_oom (err);
  if (ans->stopped || ans->interrupted)
    return 0;
  if (ans->status >= 300)
    return answer_error (ctx, ans, err);
  if (rc != CURLE_OK)
    {
      ans->transport = rc;
      if (ans->streamed)
        return 1;
      if (rc == CURLE_OPERATION_TIMEDOUT && deadline)
        return rt_error_set (err, ETIMEDOUT, "unavailable", "%s did not answer %s %s within %ld s", ctx->api_url,
                             req->method, req->path, (req->timeout_ms + 999) / 1000);
      rt_error_set (err, EIO, "unavailable", "cannot reach %s: %s", ctx->api_url, curl_easy_strerror (rc));
      return rt_error_hint (err, "is `runtime serve` running there? (or unset RUNTIME_API_URL to use this machine)");
    }
  return 0;
}

int
rt_remote_text (json_object *o, char **text, rt_error **err)
{
  *text = strdup (json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *text ? 0 : rt_error_oom (err);
}

int
rt_remote_get_text (rt_context *ctx, const char *path, char **json, rt_error **err)
{
  cleanup_json json_object *o = NULL;
  int ret = rt_remote_json (ctx, "GET", path, NULL, NULL, &o, err);
  return ret < 0 ? ret : rt_remote_text (o, json, err);
}

int
rt_remote_list_text (rt_context *ctx, const char *path, const char *key, char **json, rt_error **err)
{
  cleanup_json json_object *arr = NULL;
  int ret = rt_remote_list (ctx, path, key, &arr, err);
  return ret < 0 ? ret : rt_remote_text (arr, json, err);
}

json_object *
rt_remote_strings (const char *const *list)
{
  json_object *a = json_object_new_array ();
  for (const char *const *p = list; p && *p; p++)
    json_object_array_add (a, json_object_new_string (*p));
  return a;
}

int
rt_ndjson_feed (struct rt_ndjson *j, const char *buf, size_t n)
{
  char *nl;

  if (j->len + n + 1 > j->alloc)
    {
      size_t alloc = j->alloc ? j->alloc : 65536;
      char *nb;
      while (alloc < j->len + n + 1)
        alloc *= 2;
      if (alloc > 64 * 1024 * 1024 || (nb = realloc (j->buf, alloc)) == NULL)
        return -1;
      j->buf = nb;
      j->alloc = alloc;
    }
  memcpy (j->buf + j->len, buf, n);
  j->len += n;
  j->buf[j->len] = '\0';
  while ((nl = memchr (j->buf, '\n', j->len)))
    {
      size_t used = nl - j->buf + 1;
      *nl = '\0';
      j->on_line (j->data, j->buf);
      memmove (j->buf, j->buf + used, j->len - used);
      j->len -= used;
    }
  return 0;
}

/* @req (its method, path, prefer, bounds) with @body, as rt_remote_json.  */
static int
json_call (rt_context *ctx, struct rt_remote_req *req, json_object *body, json_object **reply, rt_error **err)
{
  const char *text = body ? json_object_to_json_string_ext (body, JSON_C_TO_STRING_PLAIN) : NULL;
  struct rt_remote_answer ans = { 0 };
  json_object *o;
  bool interrupted;
  int ret;

  req->body = text;
  req->body_len = text ? strlen (text) : 0;
  ret = rt_remote_send (ctx, req, &ans, err);
  if (ret < 0)
    {
      rt_remote_answer_clear (&ans);
      return ret;
    }
  interrupted = ans.interrupted;
  o = ans.body && !interrupted ? json_tokener_parse (ans.body) : NULL;
  rt_remote_answer_clear (&ans);
  if (interrupted)
    return rt_error_set (err, EINTR, "interrupted", "%s %s was cut short", req->method, req->path);
  if (o == NULL && reply)
    return rt_error_set (err, EIO, "internal", "%s answered %s %s without JSON", ctx->api_url, req->method,
                         req->path);
  if (json_object_is_type (o, json_type_object))
    json_object_object_del (o, "replayed");
  if (reply)
    *reply = o;
  else
    json_object_put (o);
  return 0;
}

int
rt_remote_json (rt_context *ctx, const char *method, const char *path, json_object *body, const char *prefer,
                json_object **reply, rt_error **err)
{
  struct rt_remote_req req = { .method = method, .path = path, .prefer = prefer, .watch_fd = -1 };
  return json_call (ctx, &req, body, reply, err);
}

int
rt_remote_json_within (rt_context *ctx, const char *method, const char *path, json_object *body,
                       const struct rt_remote_bound *bound, json_object **reply, rt_error **err)
{
  struct rt_remote_req req = { .method = method, .path = path, .watch_fd = -1 };

  if (bound)
    {
      req.timeout_ms = bound->timeout_ms;
      req.watch_fd = bound->abort_fd;
      req.abort_on_watch = bound->abort_fd >= 0;
    }
  return json_call (ctx, &req, body, reply, err);
}

int
rt_remote_list (rt_context *ctx, const char *path, const char *key, json_object **out, rt_error **err)
{
  cleanup_json json_object *all = json_object_new_array ();
  cleanup_free char *cursor = NULL;

  for (int pages = 0; pages < 10000; pages++)
    {
      cleanup_json json_object *page = NULL;
      cleanup_free char *esc = cursor ? rt_remote_escape (cursor) : NULL;
      cleanup_free char *url = rt_strdup_printf ("%s%s%s%s", path, cursor ? (strchr (path, '?') ? "&" : "?") : "",
                                                 cursor ? "cursor=" : "", esc ? esc : "");
      json_object *data, *next;
      int ret;

      if (url == NULL || (cursor && esc == NULL))
        return rt_error_oom (err);
      ret = rt_remote_json (ctx, "GET", url, NULL, NULL, &page, err);
      if (ret < 0)
        return ret;
      if (json_object_is_type (page, json_type_array))
        data = page;
      else if (!json_object_object_get_ex (page, key ? key : "data", &data)
               || !json_object_is_type (data, json_type_array))
        return rt_error_set (err, EIO, "internal", "%s answered GET %s without a list", ctx->api_url, path);
      for (size_t i = 0; i < json_object_array_length (data); i++)
        json_object_array_add (all, json_object_get (json_object_array_get_idx (data, i)));
      free (cursor);
      cursor = NULL;
      if (json_object_is_type (page, json_type_object) && json_object_object_get_ex (page, "nextCursor", &next)
          && json_object_is_type (next, json_type_string) && *json_object_get_string (next))
        cursor = strdup (json_object_get_string (next));
      if (cursor == NULL)
        break;
    }
  *out = steal_pointer (&all);
  return 0;
}
