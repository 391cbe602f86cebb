/* fuzz-node-answer.c - a replica's reader of a node's answers
 * (cluster/replica-answer.c) against whatever a broken-into node replies.
 *
 * Input: the reply message, as it comes off NATS (cluster/nats.h's JSON).
 *
 * Checked: the read succeeds or sets one error line ("bad_gateway" for
 * what is no answer) and leaves the answer empty; what it takes, written
 * the way libevent writes an answer (a Content-Length only when the
 * status has a body, the body always), is one well-framed HTTP/1.1
 * answer: a status of 200-599, a 204 or 304 without a body or stream, and
 * only the headers the API sets (this file's own list, not the reader's),
 * each a name and value no header line could be split or ended by.
 */
#include <string.h>
#include <strings.h>

#include "cluster/replica.h"
#include "fuzz.h"

#define INPUT_MAX (256u * 1024u)

static const char *const may[] = { "Retry-After", "Idempotency-Replayed", "x-content-length", "x-content-sha256" };

/* 1..256 bytes of 0x20-0x7e, no space at either end.  */
static bool
header_safe (const char *v)
{
  size_t n = strlen (v);

  if (n == 0 || n > 256 || v[0] == ' ' || v[n - 1] == ' ')
    return false;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char) v[i] < 0x20 || (unsigned char) v[i] > 0x7e)
      return false;
  return true;
}

static void
check_error (rt_error *err, const struct srv_node_answer *a)
{
  FUZZ_CHECK (err && err->code && err->msg && strlen (err->msg) < 200);
  FUZZ_CHECK (strchr (err->msg, '\n') == NULL);
  FUZZ_CHECK (a->status == 0 && a->body == NULL && a->ctype == NULL && a->headers == NULL && a->stream[0] == '\0');
}

/* The head the replica's server would write for @a.  */
static void
check_framing (const struct srv_node_answer *a)
{
  bool needs_body = a->status != 204 && a->status != 304;
  size_t names = 0;

  FUZZ_CHECK (a->status >= 200 && a->status <= 599);
  /* libevent writes the body after a head without a length: the client
     would read it as the next answer.  */
  FUZZ_CHECK (needs_body || (a->len == 0 && a->stream[0] == '\0'));
  FUZZ_CHECK (a->ctype && header_safe (a->ctype));
  FUZZ_CHECK (json_object_is_type (a->headers, json_type_object));
  json_object_object_foreach (a->headers, k, v)
  {
    bool known = false;
    for (size_t i = 0; i < sizeof may / sizeof *may; i++)
      known |= strcmp (k, may[i]) == 0;
    FUZZ_CHECK (known);
    FUZZ_CHECK (json_object_is_type (v, json_type_string) && header_safe (json_object_get_string (v)));
    FUZZ_CHECK (srv_node_header_allowed (k) != NULL);
    names++;
  }
  FUZZ_CHECK (names <= sizeof may / sizeof *may);
  FUZZ_CHECK (strspn (a->stream, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == strlen (a->stream));
  FUZZ_CHECK (a->len == 0 || a->body[a->len] == '\0');
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct srv_node_answer a;
  rt_error *err = NULL;
  int ret;

  if (size > INPUT_MAX)
    return 0;
  ret = srv_node_answer_read ((const char *) data, size, &a, &err);
  FUZZ_CHECK ((ret == 0) == (err == NULL));
  if (ret < 0)
    check_error (err, &a);
  else
    check_framing (&a);
  /* The names a client could be sent are the API's only.  */
  FUZZ_CHECK (srv_node_header_allowed ("Transfer-Encoding") == NULL && srv_node_header_allowed ("content-length") == NULL
              && srv_node_header_allowed ("Connection") == NULL && srv_node_header_allowed (NULL) == NULL);
  srv_node_answer_clear (&a);
  rt_error_free (err);
  return 0;
}
