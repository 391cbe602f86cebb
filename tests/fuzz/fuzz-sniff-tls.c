/* fuzz-sniff-tls.c - the SNI of a TLS ClientHello (rt_sniff_name,
 * net/sniff.h) out of the first bytes of a hostile guest's connection.
 *
 * Input: when byte 0 is 0x16 (a handshake record), the input is those
 * first bytes as they are.  Otherwise byte 0 picks a record size (1 to 128,
 * or a multiple of 128 up to 16384) and the rest is a handshake message,
 * cut here into records of that size: the record layer is then always
 * right, and the fuzzer spends its time in the ClientHello.
 *
 * Checked (sniff-check.c): an answer of -1, 0, 1 or RT_SNIFF_UNREADABLE, a
 * sane name exactly on 1, and answers on prefixes that more bytes never
 * change.  Here: a message
 * cut into records gives the same answer and name as the same message in
 * one record, as long as the records fit in RT_SNIFF_MAX bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "net/sniff.h"
#include "sniff-check.h"

#define RECORD_MAX 16384

/* @msg in records of @rec bytes: 5-byte header each (version 3.1 first,
   3.3 after, as browsers send).  Returns the length written to @out.  */
static size_t
records (const uint8_t *msg, size_t len, size_t rec, unsigned char *out)
{
  size_t n = 0;

  for (size_t off = 0; off < len; off += rec)
    {
      size_t take = len - off < rec ? len - off : rec;
      out[n++] = 0x16;
      out[n++] = 3;
      out[n++] = off == 0 ? 1 : 3;
      out[n++] = take >> 8;
      out[n++] = take & 0xff;
      memcpy (out + n, msg + off, take);
      n += take;
    }
  return n;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  size_t rec, len, split_len, one_len;
  unsigned char *split, *one;
  char *name = NULL, *one_name = NULL;
  int ret, one_ret;

  if (size < 1)
    return 0;
  if (data[0] == 0x16)
    {
      sniff_name_checked (data, size, &name);
      free (name);
      return 0;
    }
  rec = data[0] < 0x80 ? data[0] + 1u : (data[0] - 0x7fu) * 128u;
  len = size - 1;
  /* Each record adds 5 bytes.  */
  split = calloc (1, len + 5 * (len / rec + 1));
  one = calloc (1, len + 5);
  FUZZ_CHECK (split != NULL && one != NULL);
  split_len = records (data + 1, len, rec, split);
  ret = sniff_name_checked (split, split_len, &name);
  if (len > 0 && len <= RECORD_MAX && split_len < RT_SNIFF_MAX)
    {
      one_len = records (data + 1, len, RECORD_MAX, one);
      one_ret = sniff_name_checked (one, one_len, &one_name);
      FUZZ_CHECK (one_ret == ret);
      FUZZ_CHECK (ret != 1 || strcmp (name, one_name) == 0);
    }
  free (one_name);
  free (name);
  free (split);
  free (one);
  return 0;
}
