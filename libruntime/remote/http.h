/* http.h - one request to the server of client mode (RUNTIME_API_URL,
   docs/API.md): Bearer auth, the client marker, an Idempotency-Key on every
   call that changes something, retries, the error object as rt_error.  */
#ifndef RT_REMOTE_HTTP_H
#define RT_REMOTE_HTTP_H

#include "core/context.h"

/* Retries of one call after its first try (transport failures, 429, 502,
   503, 504), and the longest Retry-After honoured.  */
#define RT_REMOTE_RETRIES 4
#define RT_REMOTE_RETRY_AFTER_MAX_S 30
/* Reconnects in a row without a new byte before a followed stream (exec
   output, a build's log) is given up.  */
#define RT_REMOTE_RECONNECTS 4
/* A call a session makes in its caller's stead (a signal, :write,
   :resize) ends within this, retries included, answered or not.  */
#define RT_REMOTE_CALL_TIMEOUT_MS 10000

struct rt_remote_req
{
  const char *method;       /* GET, POST, PUT or DELETE */
  const char *path;         /* "/v1/…", query included, escaped */
  const char *body;         /* the body, or NULL (none; "{}" for a POST) */
  size_t body_len;
  int body_fd;              /* > 0: the body is this file's @body_len bytes */
  const char *content_type; /* of the body; default application/json */
  const char *accept;       /* default application/json */
  const char *prefer;       /* a Prefer header's value ("wait=0"), or NULL */
  long timeout_ms;          /* the whole exchange, retries included; 0: none */
  /* A streamed answer: a 2xx answer's bytes as they arrive; <0 stops the
     transfer.  NULL: the answer is collected.  */
  int (*on_data) (void *data, const char *buf, size_t len);
  void *data;
  /* Called about every 100 ms while a streamed answer runs, with whether
     @watch_fd became readable; returns whether to go on watching it.  */
  bool (*on_tick) (void *data, bool watch_ready);
  int watch_fd;        /* >= 0, or -1: none (0 is stdin, not none) */
  bool abort_on_watch; /* @watch_fd readable ends the transfer at once
                          (ans->interrupted) */
  off_t body_off;      /* where the @body_fd bytes start */
};

struct rt_remote_answer
{
  long status;       /* HTTP status; 0 when none came */
  char *body;        /* a collected or error answer, NUL-terminated */
  size_t len;
  bool streamed;     /* bytes of a 2xx answer went to on_data */
  bool stopped;      /* on_data asked to stop */
  bool interrupted;  /* @watch_fd ended it (abort_on_watch) */
  int transport;     /* the CURLcode of a failed transfer, else 0 */
};

void rt_remote_answer_clear (struct rt_remote_answer *a);

/* Client mode is usable: a key, and https:// or a loopback http://.  */
int rt_remote_check (rt_context *ctx, rt_error **err);

/* Sends @req (retried as the header says) and fills @ans.  A 4xx/5xx
   answer becomes @err with the server's code, message and hint; a
   transfer that failed after bytes were streamed returns 1 with
   ans->transport set (the caller resumes), else an "unavailable" error.
   Return: 0, 1, or <0 with @err set.  */
int rt_remote_send (rt_context *ctx, const struct rt_remote_req *req, struct rt_remote_answer *ans, rt_error **err);

/* A JSON call: @body (NULL: none) to @method @path; the answer's object
   in *reply (NULL allowed), without the "replayed" mark.  */
int rt_remote_json (rt_context *ctx, const char *method, const char *path, json_object *body, const char *prefer,
                    json_object **reply, rt_error **err);

/* What ends a call early: its time, retries included (0: none), and an
   fd whose readability cuts it short, "interrupted" (-1: none).  */
struct rt_remote_bound
{
  long timeout_ms;
  int abort_fd;
};

/* rt_remote_json within @bound (NULL: none), without Prefer.  */
int rt_remote_json_within (rt_context *ctx, const char *method, const char *path, json_object *body,
                           const struct rt_remote_bound *bound, json_object **reply, rt_error **err);

/* Every item of a list: the pages' "data" (or @key's array) from
   GET @path, following nextCursor, as one array.  */
int rt_remote_list (rt_context *ctx, const char *path, const char *key, json_object **out, rt_error **err);

/* @o as the library prints JSON (plain, slashes unescaped), in *text.  */
int rt_remote_text (json_object *o, char **text, rt_error **err);
/* GET @path's object, or rt_remote_list's array, as that text.  */
int rt_remote_get_text (rt_context *ctx, const char *path, char **json, rt_error **err);
int rt_remote_list_text (rt_context *ctx, const char *path, const char *key, char **json, rt_error **err);
/* A NULL-terminated string list as a JSON array.  */
json_object *rt_remote_strings (const char *const *list);

/* An NDJSON answer cut into lines: each whole line (NUL-terminated, the
   newline gone) goes to @on_line.  */
struct rt_ndjson
{
  void (*on_line) (void *data, char *line);
  void *data;
  char *buf;
  size_t len, alloc;
};
/* Takes @n more bytes; <0 when a line grows past 64 MiB or memory runs
   out.  */
int rt_ndjson_feed (struct rt_ndjson *j, const char *buf, size_t n);

/* @s percent-encoded for a path segment or a query value; NULL when out
   of memory.  */
char *rt_remote_escape (const char *s);

/* "unsupported_remote": @what needs this machine.  */
int rt_remote_unsupported (rt_error **err, const char *what);

#endif
