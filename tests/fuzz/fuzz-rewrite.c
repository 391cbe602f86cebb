/* fuzz-rewrite.c - the request rewriter (net/rewrite.h), which reads what
 * a hostile guest sends to a secret's host, and the response scrubber
 * (net/scrub.h), which reads what that host answers (a guest can make it
 * answer almost anything: an echo).
 *
 * Input: byte 0 picks how the rest is cut into pieces (1 to 17 bytes), so
 * that every split of a head, a chunk line or a body is tried; the rest is
 * the guest's stream.  Run it with -max_len=70000 now and then: heads go
 * up to RT_REWRITE_MAX_HEAD.
 *
 * Checked: every step consumes within what it was given; a head comes back
 * whole (ending in the blank line), with a value only in the request line
 * (--in-url) or a credential header; a refusal says why; a value never
 * appears in bytes that pass untouched unless the guest sent it (a body or
 * an opaque stream passes byte for byte); and the pieces do not matter: the
 * stream fed at once gives the same bytes upstream and the same refusal.
 * The same bytes as a server's answers, in the same pieces: nothing the
 * scrubber lets out holds a value (or the base64 of one), refused or not.  The same stream
 * through the checker (rt_rewrite_checker_new): what goes upstream is
 * exactly a prefix of the stream, whatever the pieces.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "net/rewrite.h"
#include "net/scrub.h"

static char *rules[] = { "GET:/v1/*", NULL };
static const struct rt_secret_binding bindings[] = {
  { "rtsec_00112233445566778899aabbccddeeff", "VALUE-1", NULL, NULL, true, NULL },
  { "rtsec_ffeeddccbbaa99887766554433221100", "VALUE-2-0123456789", "Authorization", "Bearer VALUE-2-0123456789", false,
    rules },
};
#define VALUE2_B64 "VkFMVUUtMi0wMTIzNDU2Nzg5" /* its base64, scrubbed too */

/* Every line of a rewritten head that holds a value is the request line
   (VALUE-1 is --in-url) or a credential header (rewrite.c's list), the
   one the proxy set for VALUE-2 among them: never a header a server might
   echo.  */
static bool
values_placed (const char *head, size_t len)
{
  static const char *const cred[]
      = { "Authorization:", "X-Api-Key:", "Api-Key:", "X-Auth-Token:", "X-Goog-Api-Key:", NULL };
  const char *end = head + len;
  bool first = true;

  for (const char *line = head, *eol; line < end; line = eol + 2, first = false)
    {
      bool good = first;
      eol = memmem (line, end - line, "\r\n", 2);
      if (eol == NULL || !memmem (line, eol - line, "VALUE-", 6))
        {
          if (eol == NULL)
            break;
          continue;
        }
      for (const char *const *c = cred; *c && !good; c++)
        good = (size_t) (eol - line) > strlen (*c) && strncasecmp (line, *c, strlen (*c)) == 0;
      if (!good)
        return false;
    }
  return true;
}

struct result
{
  char *out; /* what went upstream */
  size_t len;
  const char *why; /* NULL unless refused */
};

/* Everything the rewriter can take of @pending, appended to @res: false
   once it refused.  */
static bool
take_all (struct rt_rewrite *rw, char *pending, size_t *plen, bool had_value, struct result *res)
{
  for (;;)
    {
      size_t take = 0, hlen = 0;
      char *head = NULL;
      const char *why = NULL;
      int r = rt_rewrite_step (rw, pending, *plen, &take, &head, &hlen, &why);

      if (r < 0)
        {
          FUZZ_CHECK (why != NULL && head == NULL);
          res->why = why;
          return false;
        }
      FUZZ_CHECK (r == RT_REWRITE_MORE || r == RT_REWRITE_PASS || r == RT_REWRITE_HEAD);
      if (r == RT_REWRITE_MORE)
        return true;
      FUZZ_CHECK (take > 0 && take <= *plen);
      if (r == RT_REWRITE_HEAD)
        {
          FUZZ_CHECK (head != NULL && hlen >= 4 && memcmp (head + hlen - 4, "\r\n\r\n", 4) == 0);
          FUZZ_CHECK (had_value || values_placed (head, hlen));
        }
      if (r == RT_REWRITE_PASS)
        {
          FUZZ_CHECK (head == NULL);
          /* Values come out of heads only, never out of what passes.  */
          FUZZ_CHECK (had_value || memmem (pending, take, "VALUE-", 6) == NULL);
        }
      res->out = realloc (res->out, res->len + (head ? hlen : take) + 1);
      FUZZ_CHECK (res->out != NULL);
      memcpy (res->out + res->len, head ? head : pending, head ? hlen : take);
      res->len += head ? hlen : take;
      free (head);
      memmove (pending, pending + take, *plen - take);
      *plen -= take;
    }
}

/* Feeds @data in pieces of @step bytes, to the rewriter or (@check) the
   checker.  */
static void
run (const uint8_t *data, size_t size, size_t step, struct result *res, bool check)
{
  struct rt_rewrite *rw = check ? rt_rewrite_checker_new ("a.test", 443) : rt_rewrite_new (bindings, 2, "a.test", 443);
  char *pending = malloc (size + 1);
  bool had_value = memmem (data, size, "VALUE-", 6) != NULL;
  size_t fed = 0, plen = 0;

  FUZZ_CHECK (rw != NULL && pending != NULL);
  while (take_all (rw, pending, &plen, had_value, res) && fed < size)
    {
      size_t chunk = size - fed < step ? size - fed : step;
      memcpy (pending + plen, data + fed, chunk);
      plen += chunk;
      fed += chunk;
    }
  free (pending);
  rt_rewrite_free (rw);
}

static void
collect (void *arg, const char *p, size_t n)
{
  struct result *res = arg;

  res->out = realloc (res->out, res->len + n + 1);
  FUZZ_CHECK (res->out != NULL);
  memcpy (res->out + res->len, p, n);
  res->len += n;
}

/* @data as a server's answers to three requests (HEAD, GET, HTTP/1.0),
   in pieces of @step bytes.  */
static void
scrub_run (const uint8_t *data, size_t size, size_t step)
{
  struct rt_scrub *s = rt_scrub_new (bindings, 2);
  struct result res = { NULL, 0, NULL };
  const char *why = NULL;
  size_t fed = 0;
  int r = 0;

  FUZZ_CHECK (s != NULL);
  rt_scrub_expect (s, true, false);
  rt_scrub_expect (s, false, false);
  rt_scrub_expect (s, false, true);
  while (r == 0 && fed < size)
    {
      size_t chunk = size - fed < step ? size - fed : step;
      r = rt_scrub_feed (s, (const char *) data + fed, chunk, collect, &res, &why);
      fed += chunk;
    }
  if (r == 0)
    r = rt_scrub_end (s, collect, &res, &why);
  FUZZ_CHECK (r == 0 || why != NULL);
  FUZZ_CHECK (res.len == 0
              || (memmem (res.out, res.len, "VALUE-1", 7) == NULL
                  && memmem (res.out, res.len, "VALUE-2-0123456789", 18) == NULL
                  && memmem (res.out, res.len, VALUE2_B64, strlen (VALUE2_B64)) == NULL));
  free (res.out);
  rt_scrub_free (s);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct result pieces = { NULL, 0, NULL }, whole = { NULL, 0, NULL };

  if (size < 1)
    return 0;
  for (int check = 0; check < 2; check++)
    {
      run (data + 1, size - 1, data[0] % 17 + 1, &pieces, check);
      run (data + 1, size - 1, size, &whole, check);
      FUZZ_CHECK (pieces.len == whole.len && (pieces.len == 0 || memcmp (pieces.out, whole.out, whole.len) == 0));
      FUZZ_CHECK ((pieces.why == NULL) == (whole.why == NULL));
      FUZZ_CHECK (pieces.why == NULL || strcmp (pieces.why, whole.why) == 0);
      /* The checker changes nothing.  */
      FUZZ_CHECK (!check || (whole.len <= size - 1 && (whole.len == 0 || memcmp (whole.out, data + 1, whole.len) == 0)));
      free (pieces.out);
      free (whole.out);
      pieces = (struct result) { NULL, 0, NULL };
      whole = (struct result) { NULL, 0, NULL };
    }
  scrub_run (data + 1, size - 1, data[0] % 17 + 1);
  return 0;
}
