/* replica-answer.c - a replica's reader of a node's answer (cluster/nats.h's
   reply JSON) into what its client is sent (cluster/replica.h).  A node
   may be broken into: what it answers must not decide how the replica
   frames its own HTTP answer.  So only the headers the API's handlers
   set (libruntime/serve, libruntime/api) pass, each value checked, and a
   status with no body in HTTP (1xx, 204, 304) that comes with one is no
   answer: libevent writes such a body after a head without a length,
   and the client would read it as the answer to its next request.
   Pure (json-c and the library's helpers): tests/fuzz/fuzz-node-answer.c
   links it alone.  (no header of its own: cluster/replica.h declares
   these.)  */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cluster/replica.h"
#include "common/b64.h"
#include "common/cleanup.h"
#include "common/util.h"

/* A value longer is none of the API's (a number, a hash, a media type).  */
#define VALUE_MAX 256
#define ID_CHARS "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

/* The node's headers a client may see, as the API's handlers set them:
   Retry-After (serve/quota.c, api/images.c), Idempotency-Replayed
   (serve/server.c), x-content-length and x-content-sha256 (api/files.c).
   Content-Type comes as the answer's contentType; framing (Content-Length,
   Transfer-Encoding, Connection) is the replica's own.  */
static const char *const allowed[] = { "Retry-After", "Idempotency-Replayed", "x-content-length", "x-content-sha256" };

const char *
srv_node_header_allowed (const char *name)
{
  for (size_t i = 0; name && i < sizeof allowed / sizeof *allowed; i++)
    if (strcasecmp (name, allowed[i]) == 0)
      return allowed[i];
  return NULL;
}

/* 1..VALUE_MAX visible ASCII bytes, spaces inside: nothing that could end
   a header line or read differently by another parser.  */
static bool
value_sane (const char *v)
{
  size_t n = v ? strlen (v) : 0;

  if (n == 0 || n > VALUE_MAX || v[0] == ' ' || v[n - 1] == ' ')
    return false;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char) v[i] < 0x20 || (unsigned char) v[i] > 0x7e)
      return false;
  return true;
}

void
srv_node_answer_clear (struct srv_node_answer *a)
{
  free (a->ctype);
  json_object_put (a->headers);
  free (a->body);
  memset (a, 0, sizeof *a);
}

static int
refuse (struct srv_node_answer *a, rt_error **err, const char *why)
{
  /* Nothing of it is taken: a caller reads a->status as "answered".  */
  srv_node_answer_clear (a);
  if (why == NULL)
    return rt_error_oom (err);
  return rt_error_set (err, EPROTO, "bad_gateway", "the node's answer is not one: %s", why);
}

/* The allowed ones of @h (the node's {NAME: VALUE}) into a->headers.  */
static int
take_headers (json_object *h, struct srv_node_answer *a, rt_error **err)
{
  a->headers = json_object_new_object ();
  if (a->headers == NULL)
    return refuse (a, err, NULL);
  if (!json_object_is_type (h, json_type_object))
    return 0;
  json_object_object_foreach (h, k, v)
  {
    const char *name = srv_node_header_allowed (k);
    if (name == NULL)
      continue;
    if (!json_object_is_type (v, json_type_string) || !value_sane (json_object_get_string (v)))
      return refuse (a, err, "a header with bytes no header has");
    json_object_object_add (a->headers, name, json_object_new_string (json_object_get_string (v)));
  }
  return 0;
}

int
srv_node_answer_read (const char *text, size_t len, struct srv_node_answer *a, rt_error **err)
{
  json_tokener *tok = json_tokener_new ();
  cleanup_json json_object *o = NULL;
  json_object *st;
  const char *body, *ctype, *stream;
  int64_t status;

  memset (a, 0, sizeof *a);
  if (tok == NULL)
    return rt_error_oom (err);
  o = json_tokener_parse_ex (tok, text, (int) len);
  json_tokener_free (tok);
  body = rt_json_str (o, "body");
  ctype = rt_json_str (o, "contentType");
  stream = rt_json_str (o, "stream");
  st = json_object_object_get (o, "status");
  status = json_object_is_type (st, json_type_int) ? json_object_get_int64 (st) : 0;
  if (!json_object_is_type (o, json_type_object))
    return refuse (a, err, "no JSON object");
  /* 1xx is HTTP's own (the replica answers it, never a node).  */
  if (status < 200 || status > 599)
    return refuse (a, err, "a status out of 200-599");
  a->status = (int) status;
  if (body && *body && rt_b64_decode_alloc (body, strlen (body), &a->body, &a->len) < 0)
    return refuse (a, err, "a body not base64");
  if ((status == 204 || status == 304) && (a->len || (stream && *stream)))
    return refuse (a, err, "a body with a status that has none");
  /* The id goes into the replica's pull requests (replica.c): letters
     and digits only.  */
  if (stream && (strlen (stream) >= sizeof a->stream || strspn (stream, ID_CHARS) != strlen (stream)))
    return refuse (a, err, "a stream id that is none");
  if (ctype && !value_sane (ctype))
    return refuse (a, err, "a content type with bytes no header has");
  /* Read as text (JSON) by callers: the spare byte ends it.  */
  if (a->body)
    a->body[a->len] = '\0';
  a->ctype = strdup (ctype ? ctype : "application/json");
  if (a->ctype == NULL)
    return refuse (a, err, NULL);
  if (take_headers (json_object_object_get (o, "headers"), a, err) < 0)
    return -EPROTO;
  a->truncated = json_object_get_boolean (json_object_object_get (o, "truncated"));
  if (stream)
    snprintf (a->stream, sizeof a->stream, "%s", stream);
  return 0;
}
