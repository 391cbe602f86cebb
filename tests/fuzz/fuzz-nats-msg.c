/* fuzz-nats-msg.c - the node's reader of a request message
 * (cluster/nats-msg.h), what cluster/nats.c makes into a srv_req once the
 * bus has opened the frame (fuzz-seal).
 *
 * Input: a request message, JSON (cluster/nats.h).
 *
 * Checked: one taken has a method, a path starting with '/', a query and
 * headers of strings only, a body no larger than SRV_MAX_BODY that ends
 * in a NUL, a timeout within 1 … SRV_NATS_MAX_DEADLINE_MS; and reading
 * the same bytes again gives the same parts.
 */
#include <string.h>

#include "cluster/nats-msg.h"
#include "cluster/nats.h"
#include "fuzz.h"
#include "serve/server.h"

static void
check_pairs (json_object *o)
{
  if (o == NULL)
    return;
  FUZZ_CHECK (json_object_is_type (o, json_type_object));
  json_object_object_foreach (o, key, val)
  {
    bool arr = json_object_is_type (val, json_type_array);
    FUZZ_CHECK (key != NULL);
    for (size_t i = 0; i < (arr ? json_object_array_length (val) : 1); i++)
      FUZZ_CHECK (json_object_is_type (arr ? json_object_array_get_idx (val, i) : val, json_type_string));
  }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct srv_nats_msg a, b;
  int ra = srv_nats_msg_parse (data, size, &a), rb = srv_nats_msg_parse (data, size, &b);

  FUZZ_CHECK (ra == rb);
  if (ra == 0)
    {
      FUZZ_CHECK (a.method && a.path && a.path[0] == '/');
      check_pairs (a.query);
      check_pairs (a.headers);
      FUZZ_CHECK (a.body_len <= SRV_MAX_BODY && (a.body_len == 0 || a.body != NULL));
      FUZZ_CHECK (a.body == NULL || a.body[a.body_len] == '\0');
      FUZZ_CHECK (a.timeout_ms >= 1 && a.timeout_ms <= SRV_NATS_MAX_DEADLINE_MS);
      FUZZ_CHECK (strcmp (a.method, b.method) == 0 && strcmp (a.path, b.path) == 0 && a.body_len == b.body_len
                  && a.timeout_ms == b.timeout_ms && a.stream == b.stream);
      FUZZ_CHECK (a.body_len == 0 || memcmp (a.body, b.body, a.body_len) == 0);
    }
  srv_nats_msg_clear (&a);
  srv_nats_msg_clear (&b);
  return 0;
}
