/* text.c - a sandbox's output as JSON text (see text.h).  */
#include <stdlib.h>
#include <string.h>

#include "api/text.h"

/* The length of the UTF-8 sequence at @p (@left bytes there): 1 to 4; 0
   when it is not one (overlong, surrogate, past U+10FFFF, a stray
   continuation byte); -1 when it may be one cut short by the end.  */
static int
seq_len (const uint8_t *p, size_t left)
{
  uint8_t c = p[0], lo = 0x80, hi = 0xbf;
  int n;

  if (c < 0x80)
    return 1;
  if (c >= 0xc2 && c <= 0xdf)
    n = 2;
  else if (c >= 0xe0 && c <= 0xef)
    {
      n = 3;
      lo = c == 0xe0 ? 0xa0 : 0x80;
      hi = c == 0xed ? 0x9f : 0xbf;
    }
  else if (c >= 0xf0 && c <= 0xf4)
    {
      n = 4;
      lo = c == 0xf0 ? 0x90 : 0x80;
      hi = c == 0xf4 ? 0x8f : 0xbf;
    }
  else
    return 0;
  for (int i = 1; i < n; i++)
    {
      if ((size_t) i >= left)
        return -1;
      if (i == 1 ? p[i] < lo || p[i] > hi : (p[i] & 0xc0) != 0x80)
        return 0;
    }
  return n;
}

size_t
srv_utf8_complete (const uint8_t *s, size_t n)
{
  for (size_t i = n > 3 ? n - 3 : 0; i < n; i++)
    if (s[i] >= 0xc0 && seq_len (s + i, n - i) < 0)
      return i;
  return n;
}

char *
srv_utf8_text (const uint8_t *s, size_t n, size_t *len, bool *valid)
{
  char *out = malloc (n * 3 + 1), *o = out;

  *valid = true;
  if (out == NULL)
    return NULL;
  for (size_t i = 0; i < n;)
    {
      int l = seq_len (s + i, n - i);
      if (l <= 0)
        {
          memcpy (o, "\xef\xbf\xbd", 3);
          o += 3;
          i++;
          *valid = false;
          continue;
        }
      memcpy (o, s + i, l);
      o += l;
      i += l;
    }
  *o = '\0';
  *len = o - out;
  return out;
}
