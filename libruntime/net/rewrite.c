/* rewrite.c - HTTP/1.x request framing and placeholder swapping (see
   rewrite.h).  */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <fnmatch.h>

#include "net/http1.h"
#include "net/rewrite.h"
#include "net/scrub.h"

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
  bool *active;   /* per binding: its rules let this request have the value */
  size_t scanned; /* of the pending head: searched for its end already */
  struct rt_scrub *scrub;
  bool check_only; /* rt_rewrite_checker_new: heads pass as they are */
};

struct rt_rewrite *
rt_rewrite_new (const struct rt_secret_binding *b, size_t n, const char *host, int port)
{
  struct rt_rewrite *rw = calloc (1, sizeof *rw);

  if (rw == NULL || (rw->host = strdup (host)) == NULL || (rw->active = calloc (n + 1, sizeof (bool))) == NULL
      || (rw->scrub = rt_scrub_new (b, n)) == NULL)
    {
      rt_rewrite_free (rw);
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

struct rt_rewrite *
rt_rewrite_checker_new (const char *host, int port)
{
  struct rt_rewrite *rw = rt_rewrite_new (NULL, 0, host, port);

  if (rw)
    rw->check_only = true;
  return rw;
}

void
rt_rewrite_free (struct rt_rewrite *rw)
{
  if (rw)
    {
      free (rw->host);
      free (rw->active);
      rt_scrub_free (rw->scrub);
    }
  free (rw);
}

uint64_t
rt_rewrite_swapped (const struct rt_rewrite *rw)
{
  return rw->swapped;
}

uint64_t
rt_rewrite_scrubbed (const struct rt_rewrite *rw)
{
  return rt_scrub_count (rw->scrub);
}

struct rt_scrub *
rt_rewrite_scrub (struct rt_rewrite *rw)
{
  return rw->scrub;
}

/* Where in a head a placeholder is.  */
enum place
{
  IN_URL,        /* the request line */
  IN_CREDENTIAL, /* a header of credential_header's list */
  IN_OTHER,      /* any other header */
};

/* May binding @i have its placeholder swapped at @where?  Only where it
   was meant to go: a --header secret's value goes into that header, which
   the proxy sets itself, so into no header the guest wrote; any other
   into credential headers only; either into the request line only
   --in-url.  A server that echoes some header (X-Echo, in base64 or cut
   short) must not find a value there.  */
static bool
may_swap (const struct rt_rewrite *rw, size_t i, enum place where)
{
  if (where == IN_URL)
    return rw->b[i].in_url;
  return where == IN_CREDENTIAL && rw->b[i].header == NULL;
}

/* The headers a secret without --header may go into: where APIs take a
   key, and which servers do not echo.  Not Cookie: a site may show a
   cookie's value back (a language, a name), so a cookie secret takes
   --header Cookie --format 'name={value}'.  */
static bool
credential_header (const char *name, size_t n)
{
  static const char *const cred[] = { "Authorization", "X-Api-Key", "Api-Key", "X-Auth-Token", "X-Goog-Api-Key", NULL };

  for (const char *const *c = cred; *c; c++)
    if (rt_http_header_is (name, n, *c))
      return true;
  return false;
}

/* Does @s (@n bytes) hold the placeholder of a binding active for this
   request where it may not be swapped?  Such a request is refused: sent
   on, the server would get a placeholder the guest meant as the key.  */
static bool
misplaced (const struct rt_rewrite *rw, const char *s, size_t n, enum place where)
{
  for (size_t i = 0; i < rw->n; i++)
    if (rw->active[i] && !may_swap (rw, i, where) && memmem (s, n, rw->b[i].placeholder, strlen (rw->b[i].placeholder)))
      return true;
  return false;
}

/* @s (@n bytes) with the placeholder of every binding active for this
   request that may go @where replaced; true when one was.  */
static bool
add_swapped (struct rt_rewrite *rw, struct rt_buf *o, const char *s, size_t n, enum place where)
{
  bool any = false;

  while (n > 0)
    {
      size_t best = n, which = 0;
      for (size_t i = 0; i < rw->n; i++)
        {
          if (!rw->active[i] || !may_swap (rw, i, where))
            continue;
          const char *hit = memmem (s, n, rw->b[i].placeholder, strlen (rw->b[i].placeholder));
          if (hit && (size_t) (hit - s) < best)
            {
              best = hit - s;
              which = i;
            }
        }
      rt_buf_add (o, s, best);
      if (best == n)
        break;
      rt_buf_add (o, rw->b[which].value, strlen (rw->b[which].value));
      best += strlen (rw->b[which].placeholder);
      s += best;
      n -= best;
      any = true;
    }
  return any;
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

#define BAD "bad_request"
#define MISMATCH "host_mismatch"
#define MISPLACED "placeholder_misplaced"

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
    if (!rt_http_is_tchar (*p))
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

/* May the guest's header @name (@n bytes) go out?  Not those that would
   make the answer one the scrubber (scrub.h) cannot read whole: a coded
   body, or a part of one (a value cut in two ranges is no longer found),
   or a websocket whose frames are compressed (permessage-deflate); for
   HTTP/1.0 not a kept-alive connection, since its answer is re-framed to
   end with the connection.  */
static bool
answer_header_ok (const char *name, size_t n, bool http10)
{
  static const char *const dropped[]
      = { "Accept-Encoding", "Range", "If-Range", "TE", "Sec-WebSocket-Extensions", NULL };

  for (const char *const *d = dropped; *d; d++)
    if (rt_http_header_is (name, n, *d))
      return false;
  return !(http10 && (rt_http_header_is (name, n, "Connection") || rt_http_header_is (name, n, "Keep-Alive")));
}

/* Is @name (@n bytes) a header that tells a server behind a front end to
   take another path, host or method than the request line's?  A guest's
   X-Original-URL or X-HTTP-Method-Override would walk past --rule, and an
   X-Forwarded-Host can make the server write its links, with a value in
   them, for another host.  Dropped on intercepted requests: the proxy is
   the only front end there.  */
static bool
forwarding_header (const char *name, size_t n)
{
  static const char *const fwd[] = {
    "Forwarded", "X-Original-URL", "X-Rewrite-URL", "X-HTTP-Method", "X-HTTP-Method-Override", "X-Method-Override", NULL
  };

  if (n > 12 && strncasecmp (name, "X-Forwarded-", 12) == 0)
    return true;
  for (const char *const *f = fwd; *f; f++)
    if (rt_http_header_is (name, n, *f))
      return true;
  return false;
}

/* One header line [@line, @eol): checked, noted in @f, and added to @o
   with its placeholders swapped, or dropped when a secret sets that
   header (or a server could read it as another request: see
   forwarding_header).  NULL when it may pass, else why not.  */
static const char *
take_field (struct rt_rewrite *rw, struct rt_buf *o, const char *line, const char *eol, struct framing *f, bool *any)
{
  const char *colon, *v, *vend;
  enum place where;
  bool drop = false;

  /* No name, obs-fold, a bare CR or LF: the server could read it
     otherwise than we do.  */
  if (!rt_http_field_split (line, eol, &colon, &v, &vend))
    return BAD;
  if (rt_http_header_is (line, colon - line, "Content-Length"))
    {
      if (!rt_http_note_length (v, vend, &f->have_len, &f->length))
        return BAD;
    }
  else if (rt_http_header_is (line, colon - line, "Transfer-Encoding"))
    {
      if (!rt_http_chunked_last (v, vend))
        return BAD;
      f->chunked = true;
    }
  else if (rt_http_header_is (line, colon - line, "Upgrade"))
    f->opaque = true;
  else if (rt_http_header_is (line, colon - line, "Host"))
    {
      if (f->hosts++ > 0 || !authority_ok (rw, v, vend - v))
        return MISMATCH;
    }
  for (size_t i = 0; i < rw->n && !drop; i++)
    drop = rw->active[i] && rw->b[i].header && rt_http_header_is (line, colon - line, rw->b[i].header);
  if (drop)
    {
      *any = true;
      return NULL;
    }
  if (!rw->check_only && (!answer_header_ok (line, colon - line, f->http10) || forwarding_header (line, colon - line)))
    return NULL;
  where = credential_header (line, colon - line) ? IN_CREDENTIAL : IN_OTHER;
  if (misplaced (rw, line, eol - line, where))
    return MISPLACED;
  *any |= add_swapped (rw, o, line, eol + 2 - line, where);
  return NULL;
}

/* The headers the secrets set; true when there was one.  */
static bool
add_secret_headers (const struct rt_rewrite *rw, struct rt_buf *o)
{
  bool any = false;

  for (size_t i = 0; i < rw->n; i++)
    if (rw->active[i] && rw->b[i].header)
      {
        /* Once per header name, from the first secret that sets it.  */
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
          seen = rw->active[j] && rw->b[j].header && strcasecmp (rw->b[j].header, rw->b[i].header) == 0;
        if (seen)
          continue;
        rt_buf_add (o, rw->b[i].header, strlen (rw->b[i].header));
        rt_buf_add (o, ": ", 2);
        rt_buf_add (o, rw->b[i].header_value, strlen (rw->b[i].header_value));
        rt_buf_add (o, "\r\n", 2);
        any = true;
      }
  return any;
}

/* A path that could name another resource than it seems to once the
   server normalises it: no rule matches it.  */
static bool
path_plain (const char *p)
{
  static const char *const odd[] = { "/./", "/../", "//", "\\", "%2e", "%2E", "%2f", "%2F", "%5c", "%5C", NULL };
  size_t n = strlen (p);

  for (const char *const *o = odd; *o; o++)
    if (strstr (p, *o))
      return false;
  return !((n >= 2 && strcmp (p + n - 2, "/.") == 0) || (n >= 3 && strcmp (p + n - 3, "/..") == 0));
}

/* Does "METHOD:/glob" @rule cover @method (@mlen bytes) on @path?  */
static bool
rule_matches (const char *rule, const char *method, size_t mlen, const char *path)
{
  const char *colon = strchr (rule, ':');

  if (colon == NULL)
    return false;
  if (!(colon - rule == 1 && rule[0] == '*') && !((size_t) (colon - rule) == mlen && memcmp (rule, method, mlen) == 0))
    return false;
  return fnmatch (colon + 1, path, 0) == 0;
}

/* Which bindings this request, whose (checked) request line is
   [@line, @eol), may have: those without rules, and those with a rule for
   its method and path (the target without its query).  */
static void
set_active (struct rt_rewrite *rw, const char *line, const char *eol)
{
  const char *sp = memchr (line, ' ', eol - line), *t = sp + 1, *tend = eol - 9, *pend;
  char *path;

  /* absolute-form: the path follows the authority.  */
  if (*t != '/' && *t != '*')
    {
      t = (const char *) memchr (t, ':', tend - t) + 3;
      while (t < tend && *t != '/' && *t != '?' && *t != '#')
        t++;
    }
  for (pend = t; pend < tend && *pend != '?' && *pend != '#'; pend++)
    ;
  /* Out of memory: only the bindings without rules.  */
  path = pend == t ? strdup ("/") : strndup (t, pend - t);
  for (size_t i = 0; i < rw->n; i++)
    {
      rw->active[i] = rw->b[i].rules == NULL;
      for (char **r = rw->b[i].rules; path && r && *r && !rw->active[i]; r++)
        rw->active[i] = path_plain (path) && rule_matches (*r, line, sp - line, path);
    }
  free (path);
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
  struct rt_buf o = { 0 };
  struct framing f = { 0 };
  bool any = false;

  eol = memmem (line, end - line, "\r\n", 2);
  if ((why_not = check_request_line (rw, line, eol, &f.http10)))
    goto fail;
  set_active (rw, line, eol);
  if (misplaced (rw, line, eol - line, IN_URL))
    {
      why_not = MISPLACED;
      goto fail;
    }
  any |= add_swapped (rw, &o, line, eol + 2 - line, IN_URL);

  for (line = eol + 2; line < end; line = eol + 2)
    {
      eol = memmem (line, end + 2 - line, "\r\n", 2);
      if ((why_not = take_field (rw, &o, line, eol, &f, &any)))
        goto fail;
    }
  /* Checking only, a request without Host (HTTP/1.0) goes where the
     address does, as the first one may.  */
  if (f.hosts != 1 && !(rw->check_only && f.hosts == 0))
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
  /* An answer the scrubber can read: no content coding.  */
  if (rw->check_only)
    rt_buf_add (&o, "\r\n", 2);
  else
    rt_buf_add (&o, "Accept-Encoding: identity\r\n\r\n", 29);
  if (o.oom)
    {
      why_not = "out_of_memory";
      goto fail;
    }
  if (!rw->check_only && rt_scrub_expect (rw->scrub, eol - buf >= 5 && memcmp (buf, "HEAD ", 5) == 0, f.http10) < 0)
    {
      why_not = "too_many_requests";
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
      else if (!rt_http_field_line_ok (buf, eol))
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
  /* The bytes before were searched on an earlier step (the same pending
     bytes, grown): only the new ones are, so a head read in many pieces
     costs its length, not its length squared.  */
  size_t from = rw->scanned > 3 && rw->scanned <= look ? rw->scanned - 3 : 0;
  const char *end;
  int r;

  /* Blank lines between requests are allowed (RFC 9112 2.2).  */
  if (len >= 2 && buf[0] == '\r' && buf[1] == '\n')
    return pass (take, 2);
  end = memmem (buf + from, look - from, "\r\n\r\n", 4);
  if (end == NULL)
    {
      if (len >= RT_REWRITE_MAX_HEAD)
        {
          *why = "request_head_too_large";
          return -1;
        }
      rw->scanned = look;
      return RT_REWRITE_MORE;
    }
  rw->scanned = 0;
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

