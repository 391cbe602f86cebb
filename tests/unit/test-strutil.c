/* test-strutil.c - rt_text_escape: what a guest puts in a file name, a
   command line or a log line reaches the terminal as text, never as an
   escape sequence; ordinary text, UTF-8 included, is shown as it is.  */
#include <string.h>

#include "common/strutil.h"
#include "common/util.h"
#include "tap.h"

static void
is_escaped (const char *in, bool multiline, const char *want, const char *what)
{
  cleanup_free char *got = rt_text_escape (in, multiline);

  ok (got && strcmp (got, want) == 0, "%s", what);
  if (got && strcmp (got, want) != 0)
    printf ("# got '%s', want '%s'\n", got, want);
}

int
main (void)
{
  is_escaped ("report.txt", false, "report.txt", "plain ASCII is kept");
  is_escaped ("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", false, "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80",
              "UTF-8 (2, 3 and 4 bytes) is kept");
  is_escaped ("\x1b]0;pwned\x07", false, "\\x1b]0;pwned\\x07", "an OSC title sequence: ESC and BEL escaped");
  is_escaped ("\x1b[2J\x1b[H", false, "\\x1b[2J\\x1b[H", "a clear-screen sequence is escaped");
  is_escaped ("a\nb\tc\rd", false, "a\\x0ab\\x09c\\x0dd", "one line: newline, tab and CR escaped");
  is_escaped ("a\nb\tc\rd", true, "a\nb\tc\\x0dd", "multiline: newline and tab kept, CR escaped");
  is_escaped ("x\x7fy", false, "x\\x7fy", "DEL is escaped");
  is_escaped ("\xc2\x9b" "31m", false, "\\xc2\\x9b31m", "a C1 CSI (U+009B) is escaped");
  is_escaped ("\x9b" "31m", false, "\\x9b31m", "a raw 8-bit CSI byte is escaped");
  is_escaped ("\xc0\xaf \xed\xa0\x80 \xf5\x80\x80\x80", false, "\\xc0\\xaf \\xed\\xa0\\x80 \\xf5\\x80\\x80\\x80",
              "overlong, surrogate and out-of-range sequences are escaped byte by byte");
  is_escaped ("\xe6\x97", false, "\\xe6\\x97", "a sequence cut short at the end is escaped");
  is_escaped ("back\\slash", false, "back\\slash", "a backslash is kept");
  is_escaped (NULL, false, "", "NULL is the empty string");
  {
    char big[4097];
    cleanup_free char *got = NULL;
    memset (big, 0x1b, sizeof big - 1);
    big[sizeof big - 1] = '\0';
    got = rt_text_escape (big, false);
    ok (got && strlen (got) == 4 * 4096 && strncmp (got, "\\x1b\\x1b", 8) == 0, "the worst case grows 4 times");
  }
  return tap_done ();
}
