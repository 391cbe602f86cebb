/* reply.c - the monitor's answers on api.sock (see reply.h).  */
#include <event2/buffer.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/b64.h"
#include "monitor/reply.h"

void
mon_reply_json (struct evhttp_request *req, int code, json_object *obj)
{
  struct evbuffer *buf = evbuffer_new ();
  size_t len;
  const char *s = json_object_to_json_string_length (obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
                                                     &len);
  evbuffer_add (buf, s, len);
  evhttp_add_header (evhttp_request_get_output_headers (req), "Content-Type", "application/json");
  evhttp_send_reply (req, code, rt_http_reason (code), buf);
  evbuffer_free (buf);
}

json_object *
mon_error_object (const char *code, const char *msg, const char *hint)
{
  json_object *o = json_object_new_object (), *e = json_object_new_object ();
  json_object_object_add (e, "code", json_object_new_string (code));
  json_object_object_add (e, "message", json_object_new_string (msg));
  json_object_object_add (e, "hint", hint ? json_object_new_string (hint) : NULL);
  json_object_object_add (o, "error", e);
  return o;
}

json_object *
mon_error_line (const char *code, const char *msg)
{
  json_object *line = json_object_new_object (), *err = mon_error_object (code, msg, NULL), *v;

  json_object_object_add (line, "type", json_object_new_string ("error"));
  json_object_object_get_ex (err, "error", &v);
  json_object_object_add (line, "error", json_object_get (v));
  json_object_put (err);
  return line;
}

void
mon_reply_error (struct evhttp_request *req, int http, const char *code, const char *hint, const char *fmt, ...)
{
  cleanup_free char *msg = NULL;
  json_object *o;
  va_list ap;

  va_start (ap, fmt);
  if (vasprintf (&msg, fmt, ap) < 0)
    msg = NULL;
  va_end (ap);
  o = mon_error_object (code, msg ? msg : code, hint);
  mon_reply_json (req, http, o);
  json_object_put (o);
}

void
mon_start_stream (struct evhttp_request *req)
{
  evhttp_add_header (evhttp_request_get_output_headers (req), "Content-Type", "application/x-ndjson");
  evhttp_send_reply_start (req, 200, rt_http_reason (200));
}

void
mon_send_line (struct evhttp_request *req, json_object *obj, void (*cb) (struct evhttp_connection *, void *),
               void *arg)
{
  struct evbuffer *buf = evbuffer_new ();
  size_t len;
  const char *s = json_object_to_json_string_length (obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
                                                     &len);
  evbuffer_add (buf, s, len);
  evbuffer_add (buf, "\n", 1);
  evhttp_send_reply_chunk_with_cb (req, buf, cb, arg);
  evbuffer_free (buf);
}

/* The hottest line the monitor writes, {"type":…,"data":BASE64}, is built
   straight into the evbuffer: base64 never needs JSON escaping, and
   json-c copied and scanned every 87 KB string twice (a third of the
   monitor's CPU on a large copy).  */
static void
send_output (struct evhttp_request *req, const char *type, const uint8_t *data, uint32_t len, int64_t offset,
             void (*cb) (struct evhttp_connection *, void *), void *arg)
{
  struct evbuffer *buf = evbuffer_new ();
  struct evbuffer_iovec v;
  size_t b64 = RT_B64_ENCODED_LEN (len);

  if (buf == NULL)
    return;
  evbuffer_add_printf (buf, "{\"type\":\"%s\",\"data\":\"", type);
  if (evbuffer_reserve_space (buf, b64 + 1, &v, 1) == 1)
    {
      v.iov_len = rt_b64_encode_into (v.iov_base, data, len);
      evbuffer_commit_space (buf, &v, 1);
    }
  if (offset >= 0)
    evbuffer_add_printf (buf, "\",\"offset\":%lld}\n", (long long) offset);
  else
    evbuffer_add (buf, "\"}\n", 3);
  evhttp_send_reply_chunk_with_cb (req, buf, cb, arg);
  evbuffer_free (buf);
}

void
mon_send_output (struct evhttp_request *req, const char *type, const uint8_t *data, uint32_t len,
                 void (*cb) (struct evhttp_connection *, void *), void *arg)
{
  send_output (req, type, data, len, -1, cb, arg);
}

void
mon_send_output_at (struct evhttp_request *req, const char *type, const uint8_t *data, uint32_t len, uint64_t offset)
{
  send_output (req, type, data, len, (int64_t) offset, NULL, NULL);
}
