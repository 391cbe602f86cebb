/* test-b64.c - rt_b64_*: RFC 4648's vectors both ways, the empty input,
   padding, and what is not base64 (refused, never read as zero bits).  */
#include <string.h>

#include "common/b64.h"
#include "common/util.h"
#include "tap.h"

static void
round_trip (const char *raw, const char *enc)
{
  cleanup_free char *got = rt_b64_encode (raw, strlen (raw));
  uint8_t buf[64];
  ssize_t n = rt_b64_decode (enc, strlen (enc), buf);

  ok (got && strcmp (got, enc) == 0, "'%s' encodes to '%s'", raw, enc);
  ok (n == (ssize_t) strlen (raw) && memcmp (buf, raw, strlen (raw)) == 0, "'%s' decodes to '%s'", enc, raw);
}

static void
refused (const char *enc, const char *what)
{
  uint8_t buf[64];
  uint8_t *out = NULL;
  size_t len = 99;

  ok (rt_b64_decode (enc, strlen (enc), buf) == -1 && rt_b64_decode_alloc (enc, strlen (enc), &out, &len) == -EINVAL
          && out == NULL && len == 99,
      "refused: %s", what);
}

int
main (void)
{
  static const char *const vec[][2] = { { "", "" },         { "f", "Zg==" },         { "fo", "Zm8=" },
                                        { "foo", "Zm9v" },  { "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" },
                                        { "foobar", "Zm9vYmFy" } };
  uint8_t all[256], back[256];
  char enc[RT_B64_ENCODED_LEN (256) + 1];
  uint8_t *out = NULL;
  size_t len = 0;

  for (size_t i = 0; i < sizeof (vec) / sizeof (vec[0]); i++)
    round_trip (vec[i][0], vec[i][1]);

  for (int i = 0; i < 256; i++)
    all[i] = (uint8_t) i;
  ok (rt_b64_encode_into (enc, all, sizeof (all)) == RT_B64_ENCODED_LEN (256) && enc[RT_B64_ENCODED_LEN (256)] == '\0',
      "every byte value: the encoded length, NUL-terminated");
  ok (rt_b64_decode (enc, strlen (enc), back) == 256 && memcmp (all, back, 256) == 0, "… and back");
  {
    cleanup_free char *e = rt_b64_encode ("\xfb\xff", 2);
    ok (e && strcmp (e, "+/8=") == 0 && rt_b64_decode ("+/8=", 4, back) == 2 && back[0] == 0xfb,
        "'+' and '/' are the alphabet's 62 and 63 (not the URL one's)");
  }

  {
    cleanup_free char *e = rt_b64_encode (NULL, 0);
    cleanup_json json_object *j = rt_b64_json (NULL, 0);
    ok (e && *e == '\0', "no bytes (NULL): the empty string");
    ok (j && json_object_get_string_len (j) == 0, "… and the empty JSON string");
  }
  ok (rt_b64_decode_alloc ("", 0, &out, &len) == 0 && out && len == 0, "the empty string decodes to no bytes");
  free (out);
  out = NULL;
  ok (rt_b64_decode_alloc ("AAEC/w==", 8, &out, &len) == 0 && len == 4 && out[0] == 0 && out[3] == 0xff,
      "decode_alloc: binary bytes");
  free (out);
  {
    cleanup_json json_object *j = rt_b64_json ("\0\xff", 2);
    ok (j && strcmp (json_object_get_string (j), "AP8=") == 0, "rt_b64_json: NUL and 0xff");
  }
  ok (rt_b64_decode ("Zm9vYmFyCg==", 8, back) == 6, "a length given stops there (a buffer need not end in NUL)");

  refused ("Zg=", "a length that is not a multiple of 4");
  refused ("Z", "one character");
  refused ("Zg", "padding left off");
  refused ("====", "padding alone");
  refused ("Z===", "three '='");
  refused ("Zg=A", "'=' inside");
  refused ("=Zm9", "'=' first");
  refused ("Zm9vYg==Zm9v", "'=' then more");
  refused (" Zm9", "leading space");
  refused ("Zm9v\n", "a newline");
  refused ("Zm 9", "a space inside");
  refused ("Zm9-", "the URL alphabet's '-'");
  refused ("Zm9_", "the URL alphabet's '_'");
  refused ("Zm9\xc3", "a byte past ASCII");
  {
    const char nul[] = { 'Z', 'm', '\0', 'v' };
    ok (rt_b64_decode (nul, 4, back) == -1, "refused: a NUL inside");
  }
  return tap_done ();
}
