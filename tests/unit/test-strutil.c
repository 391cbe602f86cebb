/* test-strutil.c - rt_text_escape: what a guest puts in a file name, a
   command line or a log line reaches the terminal as text, never as an
   escape sequence; ordinary text, UTF-8 included, is shown as it is.
   rt_text_fold and rt_error_set: every error is one line, cut.  */
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

static void
is_folded (const char *in, size_t max, const char *want, const char *what)
{
  cleanup_free char *got = rt_text_fold (in, max);

  ok (got && strcmp (got, want) == 0, "%s", what);
  if (got && strcmp (got, want) != 0)
    printf ("# got '%s', want '%s'\n", got, want);
}

/* rt_text_fold, and the errors it is for: no message or hint of any
   rt_error holds a newline, however many lines went in.  */
static void
test_fold (void)
{
  rt_error *err = NULL;
  char big[3000];

  is_folded ("plain text", 100, "plain text", "one line is kept");
  is_folded ("the sandbox did not start:\n  [ 0.1] Kernel panic\n\n  not syncing\n", 100,
             "the sandbox did not start: [ 0.1] Kernel panic; not syncing", "lines joined, blank ones and indents dropped");
  is_folded ("a\r\nb\tc  d", 100, "a; b c d", "CRLF, tabs and runs of spaces");
  is_folded ("a;\nb.\nc,\nd", 100, "a; b. c, d", "no '; ' after punctuation");
  is_folded ("\n\n  x  \n", 100, "x", "ends trimmed");
  is_folded ("0123456789abcdef", 12, "012345678\xe2\x80\xa6", "cut to 12 bytes with an ellipsis");
  is_folded ("01234567\xc3\xa9xyz", 12, "01234567\xe2\x80\xa6", "cut before a character, not inside it");
  is_folded (NULL, 100, "", "NULL is the empty string");
  memset (big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  for (size_t i = 50; i < sizeof big - 1; i += 50)
    big[i] = '\n';
  rt_error_set (&err, EIO, "internal", "%s", big);
  rt_error_hint (&err, "last lines:\n%s", big);
  ok (err && strchr (err->msg, '\n') == NULL && strchr (err->hint, '\n') == NULL,
      "rt_error_set and rt_error_hint fold a message and a hint to one line");
  ok (err && strlen (err->msg) <= 1000 && strlen (err->hint) <= 500, "… and cut them (1000 and 500 bytes)");
  rt_error_free (err);
}

int
main (void)
{
  test_fold ();
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
  {
    /* Every bidirectional control, in a name that would read as another
       (U+202E turns "txt.exe" into what shows as "exe.txt").  */
    static const struct
    {
      const char *in, *want;
    } bidi[] = {
      { "\xd8\x9c", "\\xd8\\x9c" },             /* U+061C ARABIC LETTER MARK */
      { "\xe2\x80\x8e", "\\xe2\\x80\\x8e" },   /* U+200E LRM */
      { "\xe2\x80\x8f", "\\xe2\\x80\\x8f" },   /* U+200F RLM */
      { "\xe2\x80\xaa", "\\xe2\\x80\\xaa" },   /* U+202A LRE */
      { "\xe2\x80\xab", "\\xe2\\x80\\xab" },   /* U+202B RLE */
      { "\xe2\x80\xac", "\\xe2\\x80\\xac" },   /* U+202C PDF */
      { "\xe2\x80\xad", "\\xe2\\x80\\xad" },   /* U+202D LRO */
      { "\xe2\x80\xae", "\\xe2\\x80\\xae" },   /* U+202E RLO */
      { "\xe2\x81\xa6", "\\xe2\\x81\\xa6" },   /* U+2066 LRI */
      { "\xe2\x81\xa7", "\\xe2\\x81\\xa7" },   /* U+2067 RLI */
      { "\xe2\x81\xa8", "\\xe2\\x81\\xa8" },   /* U+2068 FSI */
      { "\xe2\x81\xa9", "\\xe2\\x81\\xa9" },   /* U+2069 PDI */
      { "report\xe2\x80\xaetxt.exe", "report\\xe2\\x80\\xaetxt.exe" },
      /* Their neighbours are ordinary text: U+061B, U+200D, U+2010,
         U+202F, U+2065, U+206A.  */
      { "\xd8\x9b\xe2\x80\x8d\xe2\x80\x90\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa",
        "\xd8\x9b\xe2\x80\x8d\xe2\x80\x90\xe2\x80\xaf\xe2\x81\xa5\xe2\x81\xaa" },
    };
    for (size_t i = 0; i < sizeof bidi / sizeof bidi[0]; i++)
      is_escaped (bidi[i].in, false, bidi[i].want, i + 1 < sizeof bidi / sizeof bidi[0]
                  ? "a bidirectional control is escaped byte by byte" : "the characters next to them are kept");
  }
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
