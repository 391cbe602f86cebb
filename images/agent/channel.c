/* channel.c - frames to the host (the outgoing queue) and the JSON of
   frames from it.  */
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "channel.h"

/* Returns room for n contiguous bytes at the tail, or NULL.  */
uint8_t *
outq_reserve (struct outq *q, size_t n)
{
  if (q->len + n > OUTQ_CAP)
    return NULL;
  if (q->head + q->len + n > OUTQ_CAP)
    {
      memmove (q->buf, q->buf + q->head, q->len);
      q->head = 0;
    }
  return q->buf + q->head + q->len;
}

void
outq_reset (struct agent *ag)
{
  ag->outq.head = ag->outq.len = 0;
  ag->flushable = 0;
}

size_t
outq_writable (const struct agent *ag)
{
  return ag->quiesced ? ag->flushable : ag->outq.len;
}

int
send_frame (struct agent *ag, uint8_t type, uint32_t stream, const void *payload, size_t len)
{
  uint8_t *p;

  if (ag->state != CONN_UP)
    return 0;
  /* Held back by a quiesce, frames must not fill the room input needs, or
     the RESTORE that ends it could never be read.  */
  if (ag->quiesced && OUTQ_CAP - ag->outq.len < RT_FRAME_HEADER + len + CTRL_MAX)
    {
      agent_log ("quiesced: dropped a frame of type %u for stream %u", type, stream);
      return -1;
    }
  p = outq_reserve (&ag->outq, RT_FRAME_HEADER + len);
  if (p == NULL)
    return -1;
  rt_frame_encode_header (p, type, stream, len);
  if (len)
    memcpy (p + RT_FRAME_HEADER, payload, len);
  ag->outq.len += RT_FRAME_HEADER + len;
  return 0;
}

int
send_frame_ahead (struct agent *ag, uint8_t type, uint32_t stream, const void *payload, size_t len)
{
  size_t n = RT_FRAME_HEADER + len, at = outq_writable (ag);
  uint8_t *p;

  if (ag->state != CONN_UP)
    return 0;
  if (outq_reserve (&ag->outq, n) == NULL)
    return -1;
  /* @at is a frame boundary: the frames held back move up, intact.  */
  p = ag->outq.buf + ag->outq.head + at;
  memmove (p + n, p, ag->outq.len - at);
  rt_frame_encode_header (p, type, stream, len);
  if (len)
    memcpy (p + RT_FRAME_HEADER, payload, len);
  ag->outq.len += n;
  if (ag->quiesced)
    ag->flushable += n;
  return 0;
}

int
send_json (struct agent *ag, uint8_t type, uint32_t stream, json_object *o)
{
  const char *s;
  size_t len;

  if (o == NULL)
    return -1;
  s = json_object_to_json_string_length (o, JSON_C_TO_STRING_PLAIN, &len);
  if (s == NULL)
    return -1;
  return send_frame (ag, type, stream, s, len);
}

void RT_PRINTF (4, 5)
send_error (struct agent *ag, uint32_t stream, const char *code, const char *fmt, ...)
{
  cleanup_json json_object *o = json_object_new_object ();
  char msg[512];
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
  if (o == NULL)
    return;
  json_object_object_add (o, "code", json_object_new_string (code));
  json_object_object_add (o, "message", json_object_new_string (msg));
  if (send_json (ag, RT_FRAME_ERROR, stream, o) < 0)
    agent_log ("dropped error for stream %u: %s", stream, msg);
}

void
send_hello (struct agent *ag)
{
  cleanup_json json_object *o = json_object_new_object ();

  if (o == NULL)
    return;
  json_object_object_add (o, "version", json_object_new_int (RT_PROTO_VERSION));
  json_object_object_add (o, "agent", json_object_new_string (AGENT_NAME " " RT_VERSION));
  send_json (ag, RT_FRAME_HELLO, 0, o);
}

/* Parses a control payload; it must be one JSON object.  */
json_object *
parse_object (const uint8_t *p, size_t len)
{
  json_tokener *tok = json_tokener_new_ex (16);
  json_object *o;
  size_t end;

  if (tok == NULL || len > INT_MAX)
    {
      if (tok)
        json_tokener_free (tok);
      return NULL;
    }
  o = json_tokener_parse_ex (tok, (const char *) p, (int) len);
  end = json_tokener_get_parse_end (tok);
  if (o != NULL && json_tokener_get_error (tok) == json_tokener_success)
    for (; end < len; end++)
      if (!isspace (p[end]))
        break;
  json_tokener_free (tok);
  if (o == NULL || end != len || !json_object_is_type (o, json_type_object))
    {
      json_object_put (o);
      return NULL;
    }
  return o;
}

/* A member that is present and not null.  */
json_object *
get_member (json_object *o, const char *key)
{
  json_object *v = NULL;

  json_object_object_get_ex (o, key, &v);
  return json_object_is_type (v, json_type_null) ? NULL : v;
}

bool
is_plain_string (json_object *v)
{
  return json_object_is_type (v, json_type_string)
         && strlen (json_object_get_string (v)) == (size_t) json_object_get_string_len (v);
}
