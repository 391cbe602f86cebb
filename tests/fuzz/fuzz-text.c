/* fuzz-text.c - the functions that turn a guest's bytes into text: the
 * terminal escape (common/strutil.h rt_text_escape) and the API's UTF-8
 * text for JSON (api/text.h).
 *
 * Input: byte 0 picks rt_text_escape's @multiline (bit 0); the rest are the
 * guest's bytes (up to the first NUL for rt_text_escape, all of them for
 * the others).
 *
 * Checked with a strict UTF-8 decoder written here from RFC 3629 (not the
 * library's): rt_text_escape's output is valid UTF-8 with no C0 control
 * (but newline and tab when @multiline), no DEL, no C1 control and no
 * bidirectional control, at most 4 times as long as its input, and equal
 * to it when the input had none of those; srv_utf8_text's output is valid
 * UTF-8 of the length it says, equal to the input exactly when it says the
 * input was valid; srv_utf8_complete withholds at most 3 bytes, and only a
 * sequence's start with what follows it.
 */
#include <stdbool.h>
#include <string.h>

#include "api/text.h"
#include "common/strutil.h"
#include "fuzz.h"

/* Decodes the sequence at @s (@n bytes left) into *@cp; its length, or 0
   when it is not valid UTF-8 (RFC 3629 section 4: shortest form, no
   surrogates, at most U+10FFFF).  */
static size_t
decode (const unsigned char *s, size_t n, unsigned *cp)
{
  size_t len;
  unsigned min;

  if (s[0] < 0x80)
    {
      *cp = s[0];
      return 1;
    }
  if ((s[0] & 0xe0) == 0xc0)
    len = 2, min = 0x80, *cp = s[0] & 0x1f;
  else if ((s[0] & 0xf0) == 0xe0)
    len = 3, min = 0x800, *cp = s[0] & 0x0f;
  else if ((s[0] & 0xf8) == 0xf0)
    len = 4, min = 0x10000, *cp = s[0] & 0x07;
  else
    return 0;
  if (n < len)
    return 0;
  for (size_t i = 1; i < len; i++)
    {
      if ((s[i] & 0xc0) != 0x80)
        return 0;
      *cp = *cp << 6 | (s[i] & 0x3f);
    }
  if (*cp < min || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
    return 0;
  return len;
}

static bool
valid_utf8 (const unsigned char *s, size_t n)
{
  unsigned cp;

  for (size_t i = 0, l; i < n; i += l)
    if ((l = decode (s + i, n - i, &cp)) == 0)
      return false;
  return true;
}

/* What a terminal must never be handed raw: C0 (but newline and tab when
   @multiline), DEL, C1, and the Bidi_Control characters of Unicode 15.  */
static bool
unsafe (unsigned cp, bool multiline)
{
  if (cp < 0x20)
    return !(multiline && (cp == '\n' || cp == '\t'));
  return (cp >= 0x7f && cp <= 0x9f) || cp == 0x061c || cp == 0x200e || cp == 0x200f
         || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/* Whether all of @s is valid UTF-8 with nothing @unsafe.  */
static bool
safe_text (const unsigned char *s, size_t n, bool multiline)
{
  unsigned cp;

  for (size_t i = 0, l; i < n; i += l)
    if ((l = decode (s + i, n - i, &cp)) == 0 || unsafe (cp, multiline))
      return false;
  return true;
}

static void
check_escape (const char *in, bool multiline)
{
  size_t n = strlen (in);
  char *out = rt_text_escape (in, multiline);

  FUZZ_CHECK (out != NULL);
  FUZZ_CHECK (strlen (out) <= 4 * n);
  FUZZ_CHECK (safe_text ((const unsigned char *) out, strlen (out), multiline));
  if (safe_text ((const unsigned char *) in, n, multiline))
    FUZZ_CHECK (strcmp (out, in) == 0);
  free (out);
}

static void
check_json_text (const uint8_t *s, size_t n)
{
  size_t len = 0, keep;
  bool valid = false;
  char *out = srv_utf8_text (s, n, &len, &valid);

  FUZZ_CHECK (out != NULL);
  FUZZ_CHECK (len <= 3 * n && out[len] == '\0');
  FUZZ_CHECK (valid_utf8 ((const unsigned char *) out, len));
  FUZZ_CHECK (valid == valid_utf8 (s, n));
  FUZZ_CHECK (!valid || (len == n && memcmp (out, s, n) == 0));
  free (out);

  keep = srv_utf8_complete (s, n);
  FUZZ_CHECK (keep <= n && n - keep <= 3);
  if (keep < n)
    {
      unsigned cp;
      /* Held back: a lead byte whose sequence the end cut short.  */
      FUZZ_CHECK (s[keep] >= 0xc2 && s[keep] <= 0xf4);
      FUZZ_CHECK (decode (s + keep, n - keep, &cp) == 0);
    }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  char *text;

  if (size < 1)
    return 0;
  text = malloc (size);
  FUZZ_CHECK (text != NULL);
  memcpy (text, data + 1, size - 1);
  text[size - 1] = '\0';
  check_escape (text, data[0] & 1);
  free (text);
  check_json_text (data + 1, size - 1);
  return 0;
}
