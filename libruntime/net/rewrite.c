/* rewrite.c - HTTP/1.x request framing and placeholder swapping (see
   rewrite.h).  */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/rewrite.h"

#define MAX_LINE 4096 /* a chunk-size or trailer line */

enum state
{
  ST_HEAD,
  ST_BODY,
  ST_CHUNK_SIZE,
  ST_CHUNK_DATA,
  ST_CHUNK_END,
  ST_TRAILER,
  ST_OPAQUE,
};

struct rt_rewrite
{
  const struct rt_secret_binding *b;
  size_t n;
  char *host; /* the name the server's certificate was checked for */
  int port;
  enum state state;
  uint64_t left; /* ST_BODY, ST_CHUNK_DATA */
  uint64_t swapped;
};

struct out
{
  char *p;
  size_t len, cap;
  bool oom;
};

static void
out_add (struct out *o, const char *s, size_t n)
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

struct rt_rewrite *
rt_rewrite_new (const struct rt_secret_binding *b, size_t n, const char *host, int port)
{
  struct rt_rewrite *rw = calloc (1, sizeof *rw);

  if (rw == NULL || (rw->host = strdup (host)) == NULL)
    {
      free (rw);
      return NULL;
    }
  rw->b = b;
  rw->n = n;
  rw->port = port;
  /* One trailing dot names the same host.  */
  if (strlen (rw->host) > 1 && rw->host[strlen (rw->host) - 1] == '.')
    rw->host[strlen (rw->host) - 1] = '\0';
  return rw;
}

void
rt_rewrite_free (struct rt_rewrite *rw)
{
  if (rw)
    free (rw->host);
  free (rw);
}

uint64_t
rt_rewrite_swapped (const struct rt_rewrite *rw)
{
  return rw->swapped;
}

/* @s (@n bytes) with every placeholder replaced; true when one was.  */
static bool
add_swapped (struct rt_rewrite *rw, struct out *o, const char *s, size_t n)
{
  bool any = false;

  while (n > 0)
    {
      size_t best = n, which = 0;
      for (size_t i = 0; i < rw->n; i++)
        {
          const char *hit = memmem (s, n, rw->b[i].placeholder, strlen (rw->b[i].placeholder));
          if (hit && (size_t) (hit - s) < best)
            {
              best = hit - s;
              which = i;
            }
        }
      out_add (o, s, best);
      if (best == n)
        break;
      out_add (o, rw->b[which].value, strlen (rw->b[which].value));
      best += strlen (rw->b[which].placeholder);
      s += best;
      n -= best;
      any = true;
    }
  return any;
}

static bool
is_tchar (char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr ("!#$%&'*+-.^_`|~", c);
}

static const char *
skip_ows (const char *s, const char *end)
{
  while (s < end && (*s == ' ' || *s == '\t'))
    s++;
  return s;
}

/* A header value without its surrounding whitespace.  */
static void
trim (const char **v, const char **end)
{
  *v = skip_ows (*v, *end);
  while (*end > *v && ((*end)[-1] == ' ' || (*end)[-1] == '\t'))
    (*end)--;
}

static bool
parse_length (const char *v, const char *end, uint64_t *out)
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

/* Transfer-Encoding: chunked must be the last coding (RFC 9112 6.1).  */
static bool
chunked_last (const char *v, const char *end)
{
  const char *comma = end;

  for (const char *p = v; p < end; p++)
    if (*p == ',')
      comma = p;
  if (comma != end)
    v = comma + 1;
  trim (&v, &end);
  return end - v == 7 && strncasecmp (v, "chunked", 7) == 0;
}

static bool
header_is (const char *name, size_t n, const char *want)
{
  return strlen (want) == n && strncasecmp (name, want, n) == 0;
}

/* Is host[:port] (@s, @n bytes) the host this connection was verified
   for?  Anything else could route the request, and the value, elsewhere
   behind the same server (a CDN, a shared front end).  */
static bool
authority_ok (const struct rt_rewrite *rw, const char *s, size_t n)
{
  const char *colon = memrchr (s, ':', n);
  size_t hn = strlen (rw->host);

  if (colon)
    {
      int port = 0;
      if (colon + 1 == s + n || colon + 1 + 5 < s + n)
        return false;
      for (const char *p = colon + 1; p < s + n; p++)
        {
          if (*p < '0' || *p > '9')
            return false;
          port = port * 10 + (*p - '0');
        }
      if (port != rw->port)
        return false;
      n = colon - s;
    }
  if (n > 1 && s[n - 1] == '.')
    n--;
  return n == hn && strncasecmp (s, rw->host, n) == 0;
}

/* name ":" value, the name a token, no control characters but HTAB.  */
static bool
field_line_ok (const char *line, const char *eol)
{
  const char *colon = memchr (line, ':', eol - line);

  if (colon == NULL || colon == line)
    return false;
  for (const char *p = line; p < colon; p++)
    if (!is_tchar (*p))
      return false;
  for (const char *p = colon + 1; p < eol; p++)
    if ((unsigned char) *p < 0x20 && *p != '\t')
      return false;
  return true;
}

#define BAD "bad_request"
#define MISMATCH "host_mismatch"

/* How the head frames what follows it.  */
struct framing
{
  bool have_len, chunked, opaque, http10;
  int hosts;
  uint64_t length;
};

/* The request line [@line, @eol): METHOD SP target SP HTTP/1.x, the target
   naming this very host if it names one.  NULL when it may pass, else
   why not.  */
static const char *
check_request_line (const struct rt_rewrite *rw, const char *line, const char *eol, bool *http10)
{
  const char *sp = memchr (line, ' ', eol - line);

  if (sp == NULL || sp == line)
    return BAD;
  for (const char *p = line; p < sp; p++)
    if (!is_tchar (*p))
      return BAD;
  if (eol - line < 9 || memcmp (eol - 9, " HTTP/1.", 8) != 0 || (eol[-1] != '0' && eol[-1] != '1'))
    return BAD;
  if (memchr (line, '\0', eol - line) || memchr (line, '\n', eol - line) || memchr (line, '\r', eol - line))
    return BAD;
  for (const char *p = line; p < eol; p++)
    if ((unsigned char) *p < 0x20)
      return BAD;
  /* A tunnel inside the tunnel would take the value anywhere.  */
  if (sp - line == 7 && memcmp (line, "CONNECT", 7) == 0)
    return MISMATCH;
  {
    const char *target = sp + 1, *tend = eol - 9;
    if (tend <= target)
      return BAD;
    *http10 = eol[-1] == '0';
    /* origin-form, "*", or absolute-form naming this very host.  */
    if (*target != '/' && !(tend - target == 1 && *target == '*'))
      {
        const char *auth, *aend;
        if (tend - target > 8 && strncasecmp (target, "https://", 8) == 0)
          auth = target + 8;
        else if (tend - target > 7 && strncasecmp (target, "http://", 7) == 0)
          auth = target + 7;
        else
          return BAD;
        for (aend = auth; aend < tend && *aend != '/' && *aend != '?' && *aend != '#'; aend++)
          ;
        if (!authority_ok (rw, auth, aend - auth))
          return MISMATCH;
      }
  }
  return NULL;
}

/* One header line [@line, @eol): checked, noted in @f, and added to @o
   with its placeholders swapped, or dropped when a secret sets that
   header.  NULL when it may pass, else why not.  */
static const char *
take_field (struct rt_rewrite *rw, struct out *o, const char *line, const char *eol, struct framing *f, bool *any)
{
  const char *colon, *v, *vend;
  bool drop = false;

  /* No name, obs-fold, a bare CR or LF: the server could read it
     otherwise than we do.  */
  if (!field_line_ok (line, eol))
    return BAD;
  colon = memchr (line, ':', eol - line);
  v = colon + 1;
  vend = eol;
  trim (&v, &vend);
  if (header_is (line, colon - line, "Content-Length"))
    {
      uint64_t l;
      if (!parse_length (v, vend, &l) || (f->have_len && l != f->length))
        return BAD;
      f->have_len = true;
      f->length = l;
    }
  else if (header_is (line, colon - line, "Transfer-Encoding"))
    {
      if (!chunked_last (v, vend))
        return BAD;
      f->chunked = true;
    }
  else if (header_is (line, colon - line, "Upgrade"))
    f->opaque = true;
  else if (header_is (line, colon - line, "Host"))
    {
      if (f->hosts++ > 0 || !authority_ok (rw, v, vend - v))
        return MISMATCH;
    }
  for (size_t i = 0; i < rw->n && !drop; i++)
    drop = rw->b[i].header && header_is (line, colon - line, rw->b[i].header);
  if (drop)
    {
      *any = true;
      return NULL;
    }
  *any |= add_swapped (rw, o, line, eol + 2 - line);
  return NULL;
}

/* The headers the secrets set; true when there was one.  */
static bool
add_secret_headers (const struct rt_rewrite *rw, struct out *o)
{
  bool any = false;

  for (size_t i = 0; i < rw->n; i++)
    if (rw->b[i].header)
      {
        /* Once per header name, from the first secret that sets it.  */
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
          seen = rw->b[j].header && strcasecmp (rw->b[j].header, rw->b[i].header) == 0;
        if (seen)
          continue;
        out_add (o, rw->b[i].header, strlen (rw->b[i].header));
        out_add (o, ": ", 2);
        out_add (o, rw->b[i].header_value, strlen (rw->b[i].header_value));
        out_add (o, "\r\n", 2);
        any = true;
      }
  return any;
}

/* What follows the head, as @f frames it.  */
static void
set_body_state (struct rt_rewrite *rw, const struct framing *f)
{
  if (f->opaque)
    rw->state = ST_OPAQUE;
  else if (f->chunked)
    rw->state = ST_CHUNK_SIZE;
  else if (f->have_len && f->length > 0)
    {
      rw->state = ST_BODY;
      rw->left = f->length;
    }
  else
    rw->state = ST_HEAD;
}

/* Parses and rewrites the head @buf[0..len) (ending in CRLF CRLF); sets the
   state for what follows.  */
static int
do_head (struct rt_rewrite *rw, const char *buf, size_t len, char **head, size_t *head_len, const char **why)
{
  const char *end = buf + len - 2; /* the last header line's CRLF is kept */
  const char *line = buf, *eol, *why_not;
  struct out o = { 0 };
  struct framing f = { 0 };
  bool any = false;

  eol = memmem (line, end - line, "\r\n", 2);
  if ((why_not = check_request_line (rw, line, eol, &f.http10)))
    goto fail;
  any |= add_swapped (rw, &o, line, eol + 2 - line);

  for (line = eol + 2; line < end; line = eol + 2)
    {
      eol = memmem (line, end + 2 - line, "\r\n", 2);
      if ((why_not = take_field (rw, &o, line, eol, &f, &any)))
        goto fail;
    }
  if (f.hosts != 1)
    {
      why_not = MISMATCH;
      goto fail;
    }
  /* Both, or chunked in HTTP/1.0: a server may frame it otherwise
     (RFC 9112 6.1, 6.3), and read a head we rewrote as a body.  */
  if (f.chunked && (f.have_len || f.http10))
    {
      why_not = BAD;
      goto fail;
    }
  any |= add_secret_headers (rw, &o);
  out_add (&o, "\r\n", 2);
  if (o.oom)
    {
      why_not = "out_of_memory";
      goto fail;
    }
  if (any)
    rw->swapped++;
  set_body_state (rw, &f);
  *head = o.p;
  *head_len = o.len;
  return RT_REWRITE_HEAD;
fail:
  *why = why_not;
  if (o.p)
    explicit_bzero (o.p, o.len);
  free (o.p);
  return -1;
}

static int
pass (size_t *take, size_t n)
{
  *take = n;
  return RT_REWRITE_PASS;
}

static int
bad (const char **why)
{
  *why = BAD;
  return -1;
}

/* A chunk-size line (ST_CHUNK_SIZE) or a trailer line (ST_TRAILER).  */
static int
step_chunk_line (struct rt_rewrite *rw, const char *buf, size_t len, size_t *take, const char **why)
{
  const char *eol = memmem (buf, len < MAX_LINE ? len : MAX_LINE, "\r\n", 2);
  uint64_t size = 0;
  const char *p = buf;

  if (eol == NULL)
    {
      if (len >= MAX_LINE)
        return bad (why);
      return RT_REWRITE_MORE;
    }
  if (rw->state == ST_TRAILER)
    {
      if (eol == buf)
        rw->state = ST_HEAD;
      else if (!field_line_ok (buf, eol))
        return bad (why);
      return pass (take, eol + 2 - buf);
    }
  for (; p < eol && strchr ("0123456789abcdefABCDEF", *p); p++)
    {
      if (size >> 59)
        return bad (why);
      size = size * 16 + (*p <= '9' ? *p - '0' : (*p | 0x20) - 'a' + 10);
    }
  /* Digits, then nothing or an extension: printable, no bare CR or
     LF that a server could end the line at.  */
  if (p == buf)
    return bad (why);
  while (p < eol && (*p == ' ' || *p == '\t'))
    p++;
  if (p < eol && *p != ';')
    return bad (why);
  for (; p < eol; p++)
    if (((unsigned char) *p < 0x20 && *p != '\t') || *p == 0x7f)
      return bad (why);
  if (size == 0)
    rw->state = ST_TRAILER;
  else
    {
      rw->state = ST_CHUNK_DATA;
      rw->left = size;
    }
  return pass (take, eol + 2 - buf);
}

/* ST_HEAD: a whole head, else more bytes.  */
static int
step_head (struct rt_rewrite *rw, const char *buf, size_t len, size_t *take, char **head, size_t *head_len,
           const char **why)
{
  size_t look = len < RT_REWRITE_MAX_HEAD ? len : RT_REWRITE_MAX_HEAD;
  const char *end;
  int r;

  /* Blank lines between requests are allowed (RFC 9112 2.2).  */
  if (len >= 2 && buf[0] == '\r' && buf[1] == '\n')
    return pass (take, 2);
  end = memmem (buf, look, "\r\n\r\n", 4);
  if (end == NULL)
    {
      if (len >= RT_REWRITE_MAX_HEAD)
        {
          *why = "request_head_too_large";
          return -1;
        }
      return RT_REWRITE_MORE;
    }
  r = do_head (rw, buf, end + 4 - buf, head, head_len, why);
  if (r > 0)
    *take = end + 4 - buf;
  return r;
}

int
rt_rewrite_step (struct rt_rewrite *rw, const char *buf, size_t len, size_t *take, char **head, size_t *head_len,
                 const char **why)
{
  *take = 0;
  *head = NULL;
  *head_len = 0;
  if (len == 0)
    return RT_REWRITE_MORE;
  switch (rw->state)
    {
    case ST_OPAQUE:
      return pass (take, len);

    case ST_BODY:
    case ST_CHUNK_DATA:
      {
        size_t n = rw->left < len ? (size_t) rw->left : len;
        rw->left -= n;
        if (rw->left == 0)
          rw->state = rw->state == ST_BODY ? ST_HEAD : ST_CHUNK_END;
        return pass (take, n);
      }

    case ST_CHUNK_END:
      if (len < 2)
        return RT_REWRITE_MORE;
      if (buf[0] != '\r' || buf[1] != '\n')
        return bad (why);
      rw->state = ST_CHUNK_SIZE;
      return pass (take, 2);

    case ST_CHUNK_SIZE:
    case ST_TRAILER:
      return step_chunk_line (rw, buf, len, take, why);

    case ST_HEAD:
      return step_head (rw, buf, len, take, head, head_len, why);
    }
  return bad (why);
}

