/* test-serve-text.c - a guest's output as JSON text: valid UTF-8 kept as
   it is, anything else U+FFFD (and said so), and a character cut by a
   chunk's end held for the next chunk, never split.  */
#include <string.h>

#include "common/util.h"
#include "api/text.h"
#include "tap.h"

static void
is_text_n (const char *in, size_t n, const char *want, size_t want_len, bool want_valid, const char *what)
{
  size_t len = 0;
  bool valid = !want_valid;
  cleanup_free char *got = srv_utf8_text ((const uint8_t *) in, n, &len, &valid);

  ok (got && len == want_len && memcmp (got, want, len) == 0 && valid == want_valid, "%s", what);
}

static void
is_text (const char *in, size_t n, const char *want, bool want_valid, const char *what)
{
  is_text_n (in, n, want, strlen (want), want_valid, what);
}

int
main (void)
{
  static const char emoji[] = "a\xf0\x9f\x98\x80";

  is_text ("hello\n", 6, "hello\n", true, "ASCII is kept");
  is_text ("caf\xc3\xa9 \xe6\x97\xa5", 9, "caf\xc3\xa9 \xe6\x97\xa5", true, "2- and 3-byte UTF-8 is kept");
  is_text (emoji, 5, emoji, true, "a 4-byte character is kept");
  is_text_n ("a\0b", 3, "a\0b", 3, true, "NUL is text (json-c escapes it)");
  is_text ("\xff\xfe", 2, "\xef\xbf\xbd\xef\xbf\xbd", false, "stray bytes become U+FFFD each");
  is_text ("\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd", false, "an overlong '/' is not text");
  is_text ("\xed\xa0\x80", 3, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", false, "a surrogate is not text");
  is_text ("\xf4\x90\x80\x80", 4, "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd", false,
           "past U+10FFFF is not text");
  is_text ("x\xe6\x97", 3, "x\xef\xbf\xbd\xef\xbf\xbd", false, "a character cut short is not text");
  ok (srv_utf8_complete ((const uint8_t *) emoji, 5) == 5, "a whole character is sent");
  ok (srv_utf8_complete ((const uint8_t *) emoji, 4) == 1, "3 bytes of 4 wait for the rest");
  ok (srv_utf8_complete ((const uint8_t *) emoji, 2) == 1, "1 byte of 4 waits for the rest");
  ok (srv_utf8_complete ((const uint8_t *) "ab\xc3", 3) == 2, "a 2-byte lead at the end waits");
  ok (srv_utf8_complete ((const uint8_t *) "ab\xff", 3) == 3, "a byte no sequence starts with does not wait");
  ok (srv_utf8_complete ((const uint8_t *) "ab\xe0\x80", 4) == 4, "a lead whose next byte rules it out does not wait");
  ok (srv_utf8_complete ((const uint8_t *) "", 0) == 0, "nothing is nothing");
  return tap_done ();
}
