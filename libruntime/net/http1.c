/* http1.c - shared HTTP/1.x syntax (see http1.h).  */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/http1.h"

void
rt_buf_add (struct rt_buf *o, const char *s, size_t n)
{
  if (o->oom)
    return;
  if (o->len + n + 1 > o->cap)
    {
      size_t cap = (o->len + n + 1) * 2;
      char *p = malloc (cap);
      if (p == NULL)
        {
          o->oom = true;
          return;
        }
      if (o->p)
        {
          memcpy (p, o->p, o->len);
          explicit_bzero (o->p, o->len);
          free (o->p);
        }
      o->p = p;
      o->cap = cap;
    }
  memcpy (o->p + o->len, s, n);
  o->len += n;
  o->p[o->len] = '\0';
}

void
rt_buf_clear (struct rt_buf *o)
{
  if (o->p)
    explicit_bzero (o->p, o->cap);
  free (o->p);
  o->p = NULL;
  o->len = o->cap = 0;
  o->oom = false;
}

bool
rt_http_is_tchar (char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
         || (c && strchr ("!#$%&'*+-.^_`|~", c));
}

void
rt_http_trim (const char **v, const char **end)
{
  while (*v < *end && (**v == ' ' || **v == '\t'))
    (*v)++;
  while (*end > *v && ((*end)[-1] == ' ' || (*end)[-1] == '\t'))
    (*end)--;
}

bool
rt_http_parse_length (const char *v, const char *end, uint64_t *out)
{
  uint64_t n = 0;

  if (v == end)
    return false;
  for (; v < end; v++)
    {
      if (*v < '0' || *v > '9' || n > (UINT64_MAX - 9) / 10)
        return false;
      n = n * 10 + (*v - '0');
    }
  *out = n;
  return true;
}

bool
rt_http_chunked_last (const char *v, const char *end)
{
  const char *comma = end;

  for (const char *p = v; p < end; p++)
    if (*p == ',')
      comma = p;
  if (comma != end)
    v = comma + 1;
  rt_http_trim (&v, &end);
  return end - v == 7 && strncasecmp (v, "chunked", 7) == 0;
}

bool
rt_http_header_is (const char *name, size_t n, const char *want)
{
  return strlen (want) == n && strncasecmp (name, want, n) == 0;
}

bool
rt_http_field_line_ok (const char *line, const char *eol)
{
  const char *colon = memchr (line, ':', eol - line);

  if (colon == NULL || colon == line)
    return false;
  for (const char *p = line; p < colon; p++)
    if (!rt_http_is_tchar (*p))
      return false;
  for (const char *p = colon + 1; p < eol; p++)
    if ((unsigned char) *p < 0x20 && *p != '\t')
      return false;
  return true;
}

bool
rt_http_field_split (const char *line, const char *eol, const char **colon, const char **v, const char **vend)
{
  if (!rt_http_field_line_ok (line, eol))
    return false;
  *colon = memchr (line, ':', eol - line);
  *v = *colon + 1;
  *vend = eol;
  rt_http_trim (v, vend);
  return true;
}

bool
rt_http_note_length (const char *v, const char *vend, bool *have, uint64_t *length)
{
  uint64_t l;

  if (!rt_http_parse_length (v, vend, &l) || (*have && l != *length))
    return false;
  *have = true;
  *length = l;
  return true;
}

bool
rt_http_chunk_size (const char *buf, const char *eol, uint64_t *size)
{
  const char *p = buf;

  *size = 0;
  for (; p < eol && strchr ("0123456789abcdefABCDEF", *p) && *p; p++)
    {
      if (*size >> 59)
        return false;
      *size = *size * 16 + (*p <= '9' ? *p - '0' : (*p | 0x20) - 'a' + 10);
    }
  /* Digits, then nothing or an extension: printable, no bare CR or LF
     that a server could end the line at.  */
  if (p == buf)
    return false;
  while (p < eol && (*p == ' ' || *p == '\t'))
    p++;
  if (p < eol && *p != ';')
    return false;
  for (; p < eol; p++)
    if (((unsigned char) *p < 0x20 && *p != '\t') || *p == 0x7f)
      return false;
  return true;
}
