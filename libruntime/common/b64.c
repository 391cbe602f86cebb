/* b64.c - base64 (b64.h) over OpenSSL's block functions, which take an
   int length and read '=' anywhere as zero bits: the input is checked
   here first and long input goes in pieces.  */
#include <errno.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common/b64.h"

/* Pieces below INT_MAX, whole groups of 3 bytes and 4 characters.  */
#define ENCODE_PIECE ((size_t) 3 << 28)
#define DECODE_PIECE ((size_t) 4 << 28)

size_t
rt_b64_encode_into (char *out, const void *data, size_t len)
{
  const unsigned char *p = data;
  size_t done = 0;

  while (len > 0)
    {
      size_t piece = len < ENCODE_PIECE ? len : ENCODE_PIECE;
      done += (size_t) EVP_EncodeBlock ((unsigned char *) out + done, p, (int) piece);
      p += piece;
      len -= piece;
    }
  out[done] = '\0';
  return done;
}

char *
rt_b64_encode (const void *data, size_t len)
{
  char *out = malloc (RT_B64_ENCODED_LEN (len) + 1);

  if (out)
    rt_b64_encode_into (out, data, len);
  return out;
}

json_object *
rt_b64_json (const void *data, size_t len)
{
  char *b64 = rt_b64_encode (data, len);
  json_object *o = b64 ? json_object_new_string (b64) : NULL;

  free (b64);
  return o;
}

static bool
in_alphabet (unsigned char c)
{
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

ssize_t
rt_b64_decode (const char *s, size_t n, void *out)
{
  unsigned char *o = out;
  size_t pad = 0, done = 0;

  if (n % 4 != 0)
    return -1;
  if (n > 0 && s[n - 1] == '=')
    pad = s[n - 2] == '=' ? 2 : 1;
  for (size_t i = 0; i < n - pad; i++)
    if (!in_alphabet ((unsigned char) s[i]))
      return -1;
  for (size_t at = 0; at < n; at += DECODE_PIECE)
    {
      size_t piece = n - at < DECODE_PIECE ? n - at : DECODE_PIECE;
      int got = EVP_DecodeBlock (o + done, (const unsigned char *) s + at, (int) piece);
      if (got < 0)
        return -1;
      done += (size_t) got;
    }
  /* The block function counts the padding as data.  */
  return (ssize_t) (done - pad);
}

int
rt_b64_decode_alloc (const char *s, size_t n, uint8_t **out, size_t *len)
{
  uint8_t *buf = malloc (RT_B64_DECODED_MAX (n) + 1);
  ssize_t got;

  if (buf == NULL)
    return -ENOMEM;
  got = rt_b64_decode (s, n, buf);
  if (got < 0)
    {
      free (buf);
      return -EINVAL;
    }
  *out = buf;
  *len = (size_t) got;
  return 0;
}
