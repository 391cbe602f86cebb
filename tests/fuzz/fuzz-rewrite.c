/* fuzz-rewrite.c - libFuzzer target for the request rewriter (rewrite.h),
   which reads what a hostile guest sends.  Build and run with clang (not
   part of the suite: a fuzzer runs for minutes):

     clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Ilibruntime -Ibuild \
       $(pkg-config --cflags json-c) tests/fuzz/fuzz-rewrite.c libruntime/net/rewrite.c -o fuzz-rewrite
     ./fuzz-rewrite -max_total_time=300 -max_len=70000

   The first input byte picks how the rest is cut into pieces, so that
   every split of a head, a chunk line or a body is tried.  Checked: no
   crash, every step consumes within what it was given, and the value
   never appears in output that was not produced by a head (a body or an
   opaque stream passes byte for byte).  */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/rewrite.h"

static struct rt_secret_binding b[] = {
  { "rtsec_00112233445566778899aabbccddeeff", "VALUE-1", NULL, NULL },
  { "rtsec_ffeeddccbbaa99887766554433221100", "VALUE-2", "Authorization", "Bearer VALUE-2" },
};

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct rt_rewrite *rw;
  size_t step, fed = 0, plen = 0;
  bool had_value;
  char *pending;

  if (size < 1)
    return 0;
  step = data[0] % 17 + 1;
  data++;
  size--;
  had_value = memmem (data, size, "VALUE-", 6) != NULL;
  rw = rt_rewrite_new (b, 2, "a.test", 443);
  pending = malloc (size + 1);
  if (rw == NULL || pending == NULL)
    abort ();
  for (;;)
    {
      for (;;)
        {
          size_t take = 0, hlen = 0;
          char *head = NULL;
          const char *why = NULL;
          int r = rt_rewrite_step (rw, pending, plen, &take, &head, &hlen, &why);
          if (r < 0)
            {
              if (why == NULL)
                abort ();
              goto done;
            }
          if (r == RT_REWRITE_MORE)
            break;
          if (take == 0 || take > plen)
            abort ();
          if (r == RT_REWRITE_HEAD && (head == NULL || hlen < 4 || memcmp (head + hlen - 4, "\r\n\r\n", 4) != 0))
            abort ();
          if (r == RT_REWRITE_PASS && head != NULL)
            abort ();
          /* Values come out of heads only, never out of what passes.  */
          if (r == RT_REWRITE_PASS && !had_value && memmem (pending, take, "VALUE-", 6))
            abort ();
          free (head);
          memmove (pending, pending + take, plen - take);
          plen -= take;
        }
      if (fed == size)
        break;
      {
        size_t chunk = size - fed < step ? size - fed : step;
        memcpy (pending + plen, data + fed, chunk);
        plen += chunk;
        fed += chunk;
      }
    }
done:
  free (pending);
  rt_rewrite_free (rw);
  return 0;
}
