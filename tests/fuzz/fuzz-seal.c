/* fuzz-seal.c - what a node reads first of every NATS message
 * (cluster/seal.h): rt_unseal, then the nonce table, before any byte
 * reaches the request reader of cluster/nats.c.
 *
 * Input: a frame, as any publisher may send one.  Its first byte also
 * picks a mutation for the round trip below.
 *
 * Checked: the input is never taken as a frame of the key (a forgery
 * would need the MAC); the input taken as a payload, sealed, opens to the
 * same bytes on its subject, exactly once through the nonce table (the
 * same frame again is a replay); and it is refused on another subject,
 * under another key, past its deadline, cut short, or with any one byte
 * changed; a value sealed to be kept (rt_seal_value) opens only as one,
 * under its label, and a message never does.
 */
#include <string.h>

#include "cluster/seal.h"
#include "fuzz.h"

#define SUBJECT "runtime.node.fuzz.api"
#define NOW 1700000000000LL

static bool
opens (const struct rt_seal_key *k, const char *subject, int64_t now, const unsigned char *f, size_t len,
       unsigned char **out, size_t *out_len, unsigned char nonce[RT_SEAL_NONCE_LEN], int64_t *deadline)
{
  rt_error *err = NULL;
  int ret = rt_unseal (k, subject, now, f, len, out, out_len, nonce, deadline, &err);

  FUZZ_CHECK ((ret == 0) == (err == NULL));
  FUZZ_CHECK (ret == 0 || strcmp (err->code, "unauthorized") == 0);
  rt_error_free (err);
  return ret == 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static struct rt_seal_key key, other;
  /* One table per input: with the clock standing still, the nonces of
     every input run would stay and fill it (then -1, as a node would).  */
  struct rt_nonce_cache cache;
  static bool ready;
  unsigned char raw[RT_SEAL_KEY_LEN], nonce[RT_SEAL_NONCE_LEN], *frame = NULL, *plain = NULL;
  size_t flen = 0, plen = 0;
  int64_t deadline = 0;
  rt_error *err = NULL;

  if (!ready)
    {
      memset (raw, 7, sizeof raw);
      rt_seal_key_derive (raw, &key);
      raw[0] ^= 1;
      rt_seal_key_derive (raw, &other);
      ready = true;
    }
  FUZZ_CHECK (!opens (&key, SUBJECT, NOW, data, size, &plain, &plen, nonce, &deadline));

  FUZZ_CHECK (rt_seal (&key, SUBJECT, NOW + 1000, data, size, &frame, &flen, &err) == 0);
  FUZZ_CHECK (flen == size + RT_SEAL_OVERHEAD);
  FUZZ_CHECK (opens (&key, SUBJECT, NOW, frame, flen, &plain, &plen, nonce, &deadline));
  FUZZ_CHECK (plen == size && (size == 0 || memcmp (plain, data, size) == 0) && plain[plen] == '\0');
  FUZZ_CHECK (deadline == NOW + 1000);
  free (plain), plain = NULL;
  FUZZ_CHECK (rt_nonce_cache_init (&cache, NULL) == 0);
  FUZZ_CHECK (rt_nonce_seen (&cache, nonce, deadline, NOW) == 0);
  FUZZ_CHECK (rt_nonce_seen (&cache, nonce, deadline, NOW) == 1);
  /* Past its deadline it is free again: the frame is refused by then.  */
  FUZZ_CHECK (rt_nonce_seen (&cache, nonce, deadline, deadline + 1) == 0);
  rt_nonce_cache_fini (&cache);

  FUZZ_CHECK (!opens (&key, "runtime.node.other.api", NOW, frame, flen, &plain, &plen, nonce, &deadline));
  FUZZ_CHECK (!opens (&other, SUBJECT, NOW, frame, flen, &plain, &plen, nonce, &deadline));
  FUZZ_CHECK (!opens (&key, SUBJECT, NOW + 1001, frame, flen, &plain, &plen, nonce, &deadline));
  FUZZ_CHECK (!opens (&key, SUBJECT, NOW - RT_SEAL_MAX_AHEAD_MS, frame, flen, &plain, &plen, nonce, &deadline));
  FUZZ_CHECK (!opens (&key, SUBJECT, NOW, frame, flen - 1 - (size ? data[0] % flen : 0), &plain, &plen, nonce,
                      &deadline));
  /* A message never opens as a value kept at rest, nor a value as a
     message.  */
  FUZZ_CHECK (rt_unseal_value (&key, SUBJECT, frame, flen, &plain, &plen, NULL) < 0);
  free (frame);
  FUZZ_CHECK (rt_seal_value (&key, SUBJECT, data, size, &frame, &flen, NULL) == 0);
  FUZZ_CHECK (!opens (&key, SUBJECT, NOW, frame, flen, &plain, &plen, nonce, &deadline));
  FUZZ_CHECK (rt_unseal_value (&key, SUBJECT, frame, flen, &plain, &plen, NULL) == 0 && plen == size
              && (size == 0 || memcmp (plain, data, size) == 0));
  free (plain), plain = NULL;
  FUZZ_CHECK (rt_unseal_value (&key, "secret:other/x", frame, flen, &plain, &plen, NULL) < 0);
  size_t at = size ? (data[0] * 131u + size) % flen : flen / 2;
  frame[at] ^= (unsigned char) (size > 1 && data[1] ? data[1] : 0x80);
  FUZZ_CHECK (!opens (&key, SUBJECT, NOW, frame, flen, &plain, &plen, nonce, &deadline));
  free (frame);
  return 0;
}
