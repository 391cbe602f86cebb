/* scrub.c - HTTP/1.x response framing and value scrubbing (see scrub.h).  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/b64.h"
#include "net/http1.h"
#include "net/scrub.h"

#define MAX_LINE 4096 /* a chunk-size or trailer line */
#define P_HEAD 1
#define P_HTTP10 2

enum state
{
  R_HEAD,
  R_BODY, /* Content-Length: left */
  R_CHUNK_SIZE,
  R_CHUNK_DATA, /* left */
  R_CHUNK_END,
  R_TRAILER,
  R_CLOSE, /* until the server's end */
  R_DONE,  /* after an HTTP/1.0 answer: the guest waits for the end */
};

/* A string to find (a value, or a form of it a server may write) and the
   placeholder it becomes.  */
struct form
{
  struct rt_buf v;
  const char *ph;
};

#define FORMS 14 /* at most, per value: see add_forms */
/* A value shorter than this has no base64 form: so few characters
   would be found in ordinary text (every "Y" for a 1-byte value).  */
#define MIN_CODED 8

struct rt_scrub
{
  struct form *f;
  size_t n;    /* forms */
  size_t maxv; /* the longest form */
  size_t hm;   /* body bytes always kept back: maxv - 1 */
  enum state state;
  uint64_t left;
  bool out_chunked;   /* the body goes out chunked */
  struct rt_buf line; /* a head or line read in pieces */
  struct rt_buf body; /* this feed's scrubbed body, not out yet */
  char *hold;         /* body bytes kept back: a value may begin there */
  size_t hold_len;
  char *tmp; /* hold + the next bytes */
  uint8_t pending[RT_SCRUB_MAX_PENDING];
  size_t p_first, p_count;
  uint8_t last; /* the flags of the last request answered */
  uint64_t count;
  rt_scrub_emit emit;
  void *arg;
};

#define J_SLASH 1 /* "/" as "\/" (PHP's default, some Java encoders) */
#define J_HTML 2  /* "<", ">", "&" as "\u003c"... (Go's default, Rails) */

/* @v as a JSON encoder with @flags writes it in a string, into @o: every
   encoder escapes '"', '\' and control bytes; some also what @flags
   says.  */
static void
json_form (const char *v, int flags, struct rt_buf *o)
{
  static const char hex[] = "0123456789abcdef";

  for (const unsigned char *p = (const unsigned char *) v; *p; p++)
    {
      const char *c = strchr ("\b\f\n\r\t", *p);
      char u[6] = { '\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15] };

      if (*p == '"' || *p == '\\' || (*p == '/' && (flags & J_SLASH)))
        {
          rt_buf_add (o, "\\", 1);
          rt_buf_add (o, (const char *) p, 1);
        }
      else if (c)
        {
          rt_buf_add (o, "\\", 1);
          rt_buf_add (o, &"bfnrt"[c - "\b\f\n\r\t"], 1);
        }
      else if (*p < 0x20 || ((flags & J_HTML) && strchr ("<>&", *p)))
        rt_buf_add (o, u, 6);
      else
        rt_buf_add (o, (const char *) p, 1);
    }
}

/* @v percent-encoded: every byte but the unreserved ones (RFC 3986 2.3)
   as %XX in @hex's digits, into @o.  */
static void
percent_form (const char *v, const char *hex, struct rt_buf *o)
{
  for (const unsigned char *p = (const unsigned char *) v; *p; p++)
    {
      char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };
      bool plain
          = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr ("-._~", *p);
      rt_buf_add (o, plain ? (const char *) p : e, plain ? 1 : 3);
    }
}

/* @v in upper (@up) or lower case, into @o.  */
static void
case_form (const char *v, bool up, struct rt_buf *o)
{
  for (const char *p = v; *p; p++)
    {
      char c = *p;
      if (up && c >= 'a' && c <= 'z')
        c -= 'a' - 'A';
      else if (!up && c >= 'A' && c <= 'Z')
        c += 'a' - 'A';
      rt_buf_add (o, &c, 1);
    }
}

/* The base64 characters that hold only bits of @v when it starts @k bytes
   (0 to 2) into a group of three, whatever comes before and after it:
   where "Bearer " + value, a JSON document or a Basic credential holding
   it is encoded, one of the three alignments is there.  The characters at
   either end mix in neighbouring bytes and are not part of it.  @url: the
   URL-safe alphabet ('-', '_').  Into @o.  */
static void
b64_form (const char *v, int k, bool url, struct rt_buf *o)
{
  size_t len = strlen (v), from = (8 * (size_t) k + 5) / 6, to = (8 * ((size_t) k + len)) / 6;
  char *in = calloc (1, len + 3), *enc = malloc (RT_B64_ENCODED_LEN (len + 2) + 1);

  if (in && enc)
    {
      memcpy (in + k, v, len);
      rt_b64_encode_into (enc, in, k + len);
      for (size_t i = from; url && i < to; i++)
        enc[i] = enc[i] == '+' ? '-' : enc[i] == '/' ? '_' : enc[i];
      rt_buf_add (o, enc + from, to - from);
      explicit_bzero (enc, RT_B64_ENCODED_LEN (len + 2));
      explicit_bzero (in, len + 3);
    }
  else
    o->oom = true;
  free (in);
  free (enc);
}

/* @o as one more form, taken, unless it is one of those from @first on
   already: then cleared.  Return: false when out of memory.  */
static bool
add_form (struct rt_scrub *s, size_t first, struct rt_buf *o, const char *ph)
{
  if (o->oom)
    return false;
  for (size_t i = first; i < s->n; i++)
    if (s->f[i].v.len == o->len && memcmp (s->f[i].v.p, o->p, o->len) == 0)
      {
        rt_buf_clear (o);
        return true;
      }
  s->f[s->n].v = *o;
  s->f[s->n++].ph = ph;
  if (o->len > s->maxv)
    s->maxv = o->len;
  *o = (struct rt_buf){ 0 };
  return true;
}

/* The base64 forms of a value of MIN_CODED bytes or more: both
   alphabets, the three alignments.  Not hex, nor any other coding: each
   form a server might use is one more, and the longest sets how much of
   a stream is held back (scrub).  */
static bool
add_b64_forms (struct rt_scrub *s, size_t first, const struct rt_secret_binding *b, struct rt_buf *o)
{
  bool good = true;

  if (strlen (b->value) < MIN_CODED)
    return true;
  for (int k = 0; good && k < 6; k++)
    {
      b64_form (b->value, k % 3, k >= 3, o);
      good = add_form (s, first, o, b->placeholder);
    }
  return good;
}

/* The value of @b and the forms a server may write it in where they
   differ: escaped in a JSON string (three common encoder settings),
   percent-encoded (either case), in upper or lower case, and in base64
   (add_b64_forms).  A value cut short, mixed case, a mixed or partial
   encoding and any other transformation stay unseen (docs/secrets.md).
   An empty value is skipped: it would be found everywhere.  */
static bool
add_forms (struct rt_scrub *s, const struct rt_secret_binding *b)
{
  size_t first = s->n;
  struct rt_buf o = { 0 };
  bool good;

  if (b->value == NULL || b->value[0] == '\0')
    return true;
  rt_buf_add (&o, b->value, strlen (b->value));
  good = add_form (s, first, &o, b->placeholder);
  for (int flags = 0; good && flags <= J_HTML; flags++)
    {
      json_form (b->value, flags, &o);
      good = add_form (s, first, &o, b->placeholder);
    }
  for (int k = 0; good && k < 2; k++)
    {
      percent_form (b->value, k ? "0123456789abcdef" : "0123456789ABCDEF", &o);
      good = good && add_form (s, first, &o, b->placeholder);
      case_form (b->value, k == 0, &o);
      good = good && add_form (s, first, &o, b->placeholder);
    }
  good = good && add_b64_forms (s, first, b, &o);
  rt_buf_clear (&o);
  return good;
}

struct rt_scrub *
rt_scrub_new (const struct rt_secret_binding *b, size_t n)
{
  struct rt_scrub *s = calloc (1, sizeof *s);
  bool good = s != NULL && (s->f = calloc (n * FORMS + 1, sizeof *s->f)) != NULL;

  for (size_t i = 0; good && i < n; i++)
    good = add_forms (s, &b[i]);
  if (good)
    {
      s->hm = s->maxv > 0 ? s->maxv - 1 : 0;
      s->hold = malloc (s->maxv + 1);
      s->tmp = malloc (2 * s->maxv + 1);
      good = s->hold != NULL && s->tmp != NULL;
    }
  if (!good)
    {
      rt_scrub_free (s);
      return NULL;
    }
  return s;
}

void
rt_scrub_free (struct rt_scrub *s)
{
  if (s == NULL)
    return;
  rt_buf_clear (&s->line);
  rt_buf_clear (&s->body);
  if (s->hold)
    explicit_bzero (s->hold, s->maxv);
  if (s->tmp)
    explicit_bzero (s->tmp, 2 * s->maxv);
  free (s->hold);
  free (s->tmp);
  for (size_t i = 0; i < s->n; i++)
    rt_buf_clear (&s->f[i].v);
  free (s->f);
  free (s);
}

uint64_t
rt_scrub_count (const struct rt_scrub *s)
{
  return s->count;
}

int
rt_scrub_expect (struct rt_scrub *s, bool head, bool http10)
{
  if (s->p_count == RT_SCRUB_MAX_PENDING)
    return -1;
  s->pending[(s->p_first + s->p_count++) % RT_SCRUB_MAX_PENDING] = (head ? P_HEAD : 0) | (http10 ? P_HTTP10 : 0);
  return 0;
}

/* The first value in @p (@n bytes): its offset (@n for none) and index.
   The earliest wins; at one offset, the longest.  */
static size_t
find_value (const struct rt_scrub *s, const char *p, size_t n, size_t *which)
{
  size_t best = n;

  for (size_t i = 0; i < s->n; i++)
    {
      size_t vl = s->f[i].v.len;
      /* Only a hit starting at or before the best so far counts.  */
      const char *hit = memmem (p, best + vl < n ? best + vl : n, s->f[i].v.p, vl);
      if (hit && ((size_t) (hit - p) < best || vl > s->f[*which].v.len))
        {
          best = hit - p;
          *which = i;
        }
    }
  return best;
}

/* @p (@n bytes) into @o with every value replaced; unless @final, the
   last s->hm bytes (fewer after a value) are not taken: a value may begin
   there and end in the next bytes.  That many whatever they are: holding
   back only what could start a value would tell a guest whose bytes an
   echo reflects whether they are the start of one.  Return: the bytes
   taken.  */
static size_t
scrub (struct rt_scrub *s, const char *p, size_t n, bool final, struct rt_buf *o)
{
  /* A value starting before @bound ends within @p: it is found whole, and
     so is any longer one starting at the same place.  */
  size_t i = 0, bound = final ? n : n > s->hm ? n - s->hm : 0;

  for (;;)
    {
      size_t which = 0, at = i + find_value (s, p + i, n - i, &which);
      if (at >= bound)
        break;
      rt_buf_add (o, p + i, at - i);
      rt_buf_add (o, s->f[which].ph, strlen (s->f[which].ph));
      i = at + s->f[which].v.len;
      s->count++;
    }
  if (bound > i)
    {
      rt_buf_add (o, p + i, bound - i);
      i = bound;
    }
  return i;
}

/* Body bytes: scrubbed into s->body, a possible start of a value kept
   back in s->hold.  */
static void
body_data (struct rt_scrub *s, const char *p, size_t n)
{
  size_t c;

  if (s->hold_len > 0)
    {
      size_t add = n < s->hm ? n : s->hm, h = s->hold_len;
      memcpy (s->tmp, s->hold, h);
      memcpy (s->tmp + h, p, add);
      c = scrub (s, s->tmp, h + add, false, &s->body);
      if (c < h)
        {
          /* All of @p is in tmp (it was short): keep what is left.  */
          s->hold_len = h + add - c;
          memmove (s->hold, s->tmp + c, s->hold_len);
          return;
        }
      s->hold_len = 0;
      p += c - h;
      n -= c - h;
    }
  c = scrub (s, p, n, false, &s->body);
  s->hold_len = n - c;
  memcpy (s->hold, p + c, s->hold_len);
}

/* What the body of this feed has scrubbed goes out (a chunk).  */
static void
flush_body (struct rt_scrub *s)
{
  char size[24];

  if (s->body.len == 0)
    return;
  if (s->out_chunked)
    {
      int k = snprintf (size, sizeof size, "%zx\r\n", s->body.len);
      s->emit (s->arg, size, k);
    }
  s->emit (s->arg, s->body.p, s->body.len);
  if (s->out_chunked)
    s->emit (s->arg, "\r\n", 2);
  s->body.len = 0;
}

/* The body is whole: what was kept back goes out.  */
static void
body_done (struct rt_scrub *s)
{
  scrub (s, s->hold, s->hold_len, true, &s->body);
  s->hold_len = 0;
  flush_body (s);
}

/* The next response, or nothing more after an HTTP/1.0 one.  */
static void
next_response (struct rt_scrub *s)
{
  s->state = s->last & P_HTTP10 ? R_DONE : R_HEAD;
}

/* The next line or head from s->line and @buf, ending in @term and at most
   @max bytes: *@p, *@n (with the terminator), *@used of @buf taken.
   Return: 0 got it, 1 all of @buf taken and more is needed, -1 too
   long.  */
static int
take_until (struct rt_scrub *s, const char *buf, size_t len, const char *term, size_t max, const char **p, size_t *n,
            size_t *used)
{
  size_t tlen = strlen (term), old = s->line.len, add, from;
  const char *e;

  if (old == 0 && (e = memmem (buf, len < max ? len : max, term, tlen)))
    {
      *p = buf;
      *n = *used = e + tlen - buf;
      return 0;
    }
  add = len < max - old ? len : max - old;
  from = old >= tlen - 1 ? old - (tlen - 1) : 0;
  rt_buf_add (&s->line, buf, add);
  if (s->line.oom)
    return -1;
  e = memmem (s->line.p + from, s->line.len - from, term, tlen);
  if (e)
    {
      *p = s->line.p;
      *n = e + tlen - s->line.p;
      *used = *n - old;
      return 0;
    }
  *used = add;
  return s->line.len >= max ? -1 : 1;
}

#define BAD "bad_response"

/* What a response head says of its body.  */
struct framing
{
  int status;
  bool have_len, te, encoded;
  bool ws_ext; /* websocket frames compressed, say, after a 101 */
  uint64_t length;
};

/* "HTTP/1.x NNN reason" on [@line, @eol): the status, or -1.  */
static int
status_line (const char *line, const char *eol)
{
  if (eol - line < 12 || memcmp (line, "HTTP/1.", 7) != 0 || (line[7] != '0' && line[7] != '1') || line[8] != ' ')
    return -1;
  for (int i = 9; i < 12; i++)
    if (line[i] < '0' || line[i] > '9')
      return -1;
  if (eol - line > 12 && line[12] != ' ')
    return -1;
  for (const char *p = line; p < eol; p++)
    if ((unsigned char) *p < 0x20 && *p != '\t')
      return -1;
  return (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
}

/* One header line [@line, @eol), noted in @f.  NULL when it may pass.  */
static const char *
note_field (const char *line, const char *eol, struct framing *f)
{
  const char *colon, *v, *vend;

  if (!rt_http_field_split (line, eol, &colon, &v, &vend))
    return BAD;
  if (rt_http_header_is (line, colon - line, "Content-Length"))
    {
      if (!rt_http_note_length (v, vend, &f->have_len, &f->length))
        return BAD;
    }
  else if (rt_http_header_is (line, colon - line, "Transfer-Encoding"))
    {
      /* Only chunked alone can be read, so scrubbed.  */
      if (f->te || vend - v != 7 || strncasecmp (v, "chunked", 7) != 0)
        f->encoded = true;
      f->te = true;
    }
  else if (rt_http_header_is (line, colon - line, "Content-Encoding"))
    f->encoded |= !(vend - v == 8 && strncasecmp (v, "identity", 8) == 0) && vend > v;
  else if (rt_http_header_is (line, colon - line, "Sec-WebSocket-Extensions"))
    f->ws_ext = true;
  return NULL;
}

/* Does the line [@line, @eol) go out?  Framing headers do not when the
   body is re-framed.  */
static bool
keep_field (const char *line, const char *eol, bool reframed)
{
  const char *colon = memchr (line, ':', eol - line);
  size_t n = colon - line;

  return !reframed
         || !(rt_http_header_is (line, n, "Content-Length") || rt_http_header_is (line, n, "Transfer-Encoding")
              || rt_http_header_is (line, n, "Connection") || rt_http_header_is (line, n, "Keep-Alive"));
}

/* The state for the body @f frames, after a request with flags @req; sets
   s->out_chunked.  Return: true when the body is re-framed.  */
static bool
body_state (struct rt_scrub *s, const struct framing *f, uint8_t req)
{
  bool none = (req & P_HEAD) || f->status == 204 || f->status == 304 || (f->status < 200 && f->status != 101)
              || (!f->te && f->have_len && f->length == 0);

  s->out_chunked = false;
  if (f->status == 101)
    {
      /* Another protocol: scrubbed as a stream to the end.  */
      s->state = R_CLOSE;
      return false;
    }
  if (none)
    {
      if (f->status >= 200)
        next_response (s);
      else
        s->state = R_HEAD;
      return false;
    }
  if (f->te)
    s->state = R_CHUNK_SIZE;
  else if (f->have_len)
    {
      s->state = R_BODY;
      s->left = f->length;
    }
  else
    {
      s->state = R_CLOSE;
      return false;
    }
  s->out_chunked = !(req & P_HTTP10);
  return true;
}

/* The response head @h (@len bytes, ending in CRLF CRLF), scrubbed out.  */
static int
do_head (struct rt_scrub *s, const char *h, size_t len, const char **why)
{
  const char *end = h + len - 2, *line, *eol = memmem (h, len, "\r\n", 2);
  struct framing f = { 0 };
  struct rt_buf o = { 0 };
  uint8_t req = s->last;
  bool reframed;

  if ((f.status = status_line (h, eol)) < 0)
    goto bad;
  for (line = eol + 2; line < end; line = eol + 2)
    {
      eol = memmem (line, end + 2 - line, "\r\n", 2);
      if ((*why = note_field (line, eol, &f)))
        goto fail;
    }
  /* A final answer (or a switch) ends its request's wait.  */
  if ((f.status >= 200 || f.status == 101) && s->p_count > 0)
    {
      req = s->pending[s->p_first];
      s->p_first = (s->p_first + 1) % RT_SCRUB_MAX_PENDING;
      s->p_count--;
    }
  if (f.status >= 200 || f.status == 101)
    s->last = req;
  reframed = body_state (s, &f, req);
  /* The rewriter (rewrite.c) asked for no websocket extensions: one here
     is a server that ignored that.  */
  if ((f.encoded || (f.status == 101 && f.ws_ext)) && s->state != R_HEAD && s->state != R_DONE)
    {
      *why = "encoded_response";
      goto fail;
    }
  eol = memmem (h, len, "\r\n", 2);
  scrub (s, h, eol + 2 - h, true, &o);
  for (line = eol + 2; line < end; line = eol + 2)
    {
      eol = memmem (line, end + 2 - line, "\r\n", 2);
      if (keep_field (line, eol, reframed))
        scrub (s, line, eol + 2 - line, true, &o);
    }
  if (reframed)
    rt_buf_add (&o, s->out_chunked ? "Transfer-Encoding: chunked\r\n" : "Connection: close\r\n",
                s->out_chunked ? 28 : 19);
  rt_buf_add (&o, "\r\n", 2);
  if (o.oom)
    {
      *why = "out_of_memory";
      goto fail;
    }
  s->emit (s->arg, o.p, o.len);
  rt_buf_clear (&o);
  return 0;
bad:
  *why = BAD;
fail:
  rt_buf_clear (&o);
  return -1;
}

/* A chunk-size or trailer line [@p, @p + @n), its CRLF included.  */
static int
do_chunk_line (struct rt_scrub *s, const char *p, size_t n, const char **why)
{
  uint64_t size;

  if (s->state == R_TRAILER)
    {
      if (n == 2)
        {
          if (s->out_chunked)
            s->emit (s->arg, "\r\n", 2);
          next_response (s);
          return 0;
        }
      if (!rt_http_field_line_ok (p, p + n - 2))
        goto bad;
      if (s->out_chunked)
        {
          struct rt_buf o = { 0 };
          scrub (s, p, n, true, &o);
          if (o.oom)
            goto bad;
          s->emit (s->arg, o.p, o.len);
          rt_buf_clear (&o);
        }
      return 0;
    }
  if (!rt_http_chunk_size (p, p + n - 2, &size))
    goto bad;
  if (size > 0)
    {
      s->state = R_CHUNK_DATA;
      s->left = size;
      return 0;
    }
  body_done (s);
  if (s->out_chunked)
    s->emit (s->arg, "0\r\n", 3);
  s->state = R_TRAILER;
  return 0;
bad:
  *why = BAD;
  return -1;
}

/* A head or a line of the chunked framing, from s->line and @buf.  */
static int
step_line (struct rt_scrub *s, const char *buf, size_t len, size_t *used, const char **why)
{
  bool head = s->state == R_HEAD;
  size_t max = head ? RT_SCRUB_MAX_HEAD : s->state == R_CHUNK_END ? 2 : MAX_LINE, n;
  const char *p;
  int r = take_until (s, buf, len, head ? "\r\n\r\n" : "\r\n", max, &p, &n, used);

  if (r < 0)
    {
      *why = head ? "response_head_too_large" : BAD;
      return -1;
    }
  if (r > 0)
    return 0;
  if (s->state == R_CHUNK_END)
    {
      /* take_until read at most these two bytes: CRLF, or refused.  */
      s->state = R_CHUNK_SIZE;
      r = 0;
    }
  else
    r = head ? do_head (s, p, n, why) : do_chunk_line (s, p, n, why);
  s->line.len = 0;
  return r;
}

int
rt_scrub_feed (struct rt_scrub *s, const char *buf, size_t len, rt_scrub_emit emit, void *arg, const char **why)
{
  s->emit = emit;
  s->arg = arg;
  while (len > 0)
    {
      size_t used = len;
      switch (s->state)
        {
          case R_DONE:
            break;
          case R_CLOSE:
            body_data (s, buf, len);
            break;
          case R_BODY:
          case R_CHUNK_DATA:
            used = s->left < len ? (size_t) s->left : len;
            body_data (s, buf, used);
            s->left -= used;
            if (s->left > 0)
              break;
            if (s->state == R_CHUNK_DATA)
              s->state = R_CHUNK_END;
            else
              {
                body_done (s);
                if (s->out_chunked)
                  emit (arg, "0\r\n\r\n", 5);
                next_response (s);
              }
            break;
          case R_HEAD:
          case R_CHUNK_SIZE:
          case R_CHUNK_END:
          case R_TRAILER:
            flush_body (s);
            if (step_line (s, buf, len, &used, why) < 0)
              return -1;
        }
      buf += used;
      len -= used;
    }
  flush_body (s);
  return 0;
}

int
rt_scrub_end (struct rt_scrub *s, rt_scrub_emit emit, void *arg, const char **why)
{
  s->emit = emit;
  s->arg = arg;
  if (s->state == R_CLOSE)
    {
      body_done (s);
      s->state = R_DONE;
    }
  /* A cut body keeps what it held back: it may be the start of a value.  */
  if ((s->state == R_HEAD && s->line.len == 0) || s->state == R_DONE)
    return 0;
  *why = "response_cut";
  return -1;
}
