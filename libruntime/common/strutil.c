/* strutil.c - small string helpers the library and the guest agent share.  */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strutil.h"

char *
rt_strdup_printf (const char *fmt, ...)
{
  va_list ap;
  char *s = NULL;

  va_start (ap, fmt);
  if (vasprintf (&s, fmt, ap) < 0)
    s = NULL;
  va_end (ap);
  return s;
}

bool
rt_env_name_valid (const char *s, size_t len)
{
  if (len == 0 || !(s[0] == '_' || (s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z')))
    return false;
  for (size_t i = 1; i < len; i++)
    if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
      return false;
  return true;
}

/* The length of the UTF-8 sequence at @p (at most @left bytes), 0 when it
   is not one or is a C1 control (U+0080..U+009F: 8-bit CSI and friends).  */
static size_t
utf8_len (const unsigned char *p, size_t left)
{
  size_t n;
  unsigned min;
  unsigned cp;

  if (p[0] >= 0xc2 && p[0] <= 0xdf)
    n = 2, min = 0x80, cp = p[0] & 0x1f;
  else if (p[0] >= 0xe0 && p[0] <= 0xef)
    n = 3, min = 0x800, cp = p[0] & 0x0f;
  else if (p[0] >= 0xf0 && p[0] <= 0xf4)
    n = 4, min = 0x10000, cp = p[0] & 0x07;
  else
    return 0;
  if (left < n)
    return 0;
  for (size_t i = 1; i < n; i++)
    {
      if ((p[i] & 0xc0) != 0x80)
        return 0;
      cp = (cp << 6) | (p[i] & 0x3f);
    }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp <= 0x9f)
    return 0;
  return n;
}

/* A bidirectional formatting control (Unicode's Bidi_Control property):
   U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069.  They reorder
   what follows on the screen, so a name can show as another ("Trojan
   Source", CVE-2021-42574).  @p is a valid sequence of @n bytes.  */
static bool
is_bidi_control (const unsigned char *p, size_t n)
{
  if (n == 2)
    return p[0] == 0xd8 && p[1] == 0x9c;
  if (n != 3 || p[0] != 0xe2)
    return false;
  if (p[1] == 0x80)
    return p[2] == 0x8e || p[2] == 0x8f || (p[2] >= 0xaa && p[2] <= 0xae);
  return p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9;
}

char *
rt_text_escape (const char *text, bool multiline)
{
  const unsigned char *p = (const unsigned char *) (text ? text : "");
  size_t len = strlen ((const char *) p);
  char *out = malloc (len * 4 + 1), *o = out;

  if (out == NULL)
    return NULL;
  for (size_t i = 0; i < len;)
    {
      size_t n = p[i] >= 0x80 ? utf8_len (p + i, len - i) : 1;
      bool plain;

      if (n > 1 && is_bidi_control (p + i, n))
        n = 0;
      plain = n > 1 || (p[i] >= 0x20 && p[i] < 0x7f) || (multiline && (p[i] == '\n' || p[i] == '\t'));
      if (!plain)
        {
          o += sprintf (o, "\\x%02x", p[i]);
          i++;
          continue;
        }
      memcpy (o, p + i, n);
      o += n;
      i += n;
    }
  *o = '\0';
  return out;
}

/* Cuts @s (of @len bytes) to at most @max bytes, the last three of them
   "…", at a character's boundary; returns the new length.  */
static size_t
cut_with_ellipsis (char *s, size_t len, size_t max)
{
  static const char ellipsis[] = "\xe2\x80\xa6";
  size_t keep = max - (sizeof ellipsis - 1);

  if (len <= max)
    return len;
  while (keep > 0 && ((unsigned char) s[keep] & 0xc0) == 0x80)
    keep--;
  while (keep > 0 && s[keep - 1] == ' ')
    keep--;
  memcpy (s + keep, ellipsis, sizeof ellipsis);
  return keep + sizeof ellipsis - 1;
}

char *
rt_text_fold (const char *text, size_t max)
{
  const char *p = text ? text : "";
  char *out = malloc (strlen (p) * 2 + 4), *o = out;
  bool line_break = false, space = false;

  if (out == NULL)
    return NULL;
  for (; *p; p++)
    {
      if (*p == '\n' || *p == '\r')
        line_break = o > out;
      else if (*p == ' ' || *p == '\t' || *p == '\v' || *p == '\f')
        space = o > out;
      else
        {
          if (line_break)
            {
              if (strchr (":;,.", o[-1]) == NULL)
                *o++ = ';';
              *o++ = ' ';
            }
          else if (space)
            *o++ = ' ';
          line_break = space = false;
          *o++ = *p;
        }
    }
  *o = '\0';
  o = out + cut_with_ellipsis (out, (size_t) (o - out), max < 8 ? 8 : max);
  *o = '\0';
  return out;
}
