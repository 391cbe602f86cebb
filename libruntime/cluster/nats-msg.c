/* nats-msg.c - a request message read into its parts (see nats-msg.h).  */
#include <stdlib.h>
#include <string.h>

#include "cluster/nats-msg.h"
#include "cluster/nats.h"
#include "common/b64.h"
#include "common/util.h"
#include "serve/server.h"

/* {NAME: VALUE or [VALUE…]}, every VALUE a string; or absent.  */
static bool
pairs_ok (json_object *o)
{
  if (o == NULL)
    return true;
  if (!json_object_is_type (o, json_type_object))
    return false;
  json_object_object_foreach (o, key, val)
  {
    bool arr = json_object_is_type (val, json_type_array);
    size_t n = arr ? json_object_array_length (val) : 1;
    (void) key;
    for (size_t i = 0; i < n; i++)
      if (!json_object_is_type (arr ? json_object_array_get_idx (val, i) : val, json_type_string))
        return false;
  }
  return true;
}

/* @b64 decoded into m->body; false when it is not base64 or too big.  */
static bool
take_body (struct srv_nats_msg *m, const char *b64)
{
  size_t n = strlen (b64);
  ssize_t got;

  if (n == 0)
    return true;
  if (n % 4 != 0 || RT_B64_DECODED_MAX (n) > SRV_MAX_BODY || (m->body = malloc (RT_B64_DECODED_MAX (n) + 1)) == NULL)
    return false;
  got = rt_b64_decode (b64, n, m->body);
  if (got < 0)
    return false;
  m->body_len = (size_t) got;
  m->body[m->body_len] = '\0';
  return true;
}

int
srv_nats_msg_parse (const void *data, size_t len, struct srv_nats_msg *m)
{
  json_tokener *tok = json_tokener_new ();
  const char *body;

  memset (m, 0, sizeof *m);
  if (tok == NULL || len > INT32_MAX)
    {
      if (tok)
        json_tokener_free (tok);
      return -1;
    }
  m->root = json_tokener_parse_ex (tok, data, (int) len);
  json_tokener_free (tok);
  if (!json_object_is_type (m->root, json_type_object))
    return -1;
  m->method = rt_json_str (m->root, "method");
  m->path = rt_json_str (m->root, "path");
  m->query = json_object_object_get (m->root, "query");
  m->headers = json_object_object_get (m->root, "headers");
  body = rt_json_str (m->root, "body");
  if (m->method == NULL || m->path == NULL || m->path[0] != '/' || !pairs_ok (m->query) || !pairs_ok (m->headers)
      || (body && !take_body (m, body)))
    return -1;
  m->timeout_ms = json_object_object_get (m->root, "timeoutMs") ? rt_json_i64 (m->root, "timeoutMs") : SRV_NATS_DEADLINE_MS;
  if (m->timeout_ms <= 0 || m->timeout_ms > SRV_NATS_MAX_DEADLINE_MS)
    m->timeout_ms = m->timeout_ms <= 0 ? SRV_NATS_DEADLINE_MS : SRV_NATS_MAX_DEADLINE_MS;
  m->stream = json_object_get_boolean (json_object_object_get (m->root, "stream"));
  return 0;
}

void
srv_nats_msg_clear (struct srv_nats_msg *m)
{
  json_object_put (m->root);
  free (m->body);
  memset (m, 0, sizeof *m);
}
