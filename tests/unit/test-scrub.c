/* test-scrub.c - answers from a secret's host, scrubbed (net/scrub.h): the
   value becomes the placeholder in the status line, headers (Location
   too), length-framed bodies (re-framed chunked), chunked bodies (next to
   chunk boundaries, across chunks), close-delimited bodies and trailers;
   split across reads at every offset; HEAD, 1xx, 204, 304 and HTTP/1.0;
   a hold-back that says nothing of the bytes held; JSON-escaped,
   percent-encoded, upper- and lower-case and base64 forms (and the
   transformed echoes that are known to pass); empty values ignored; and
   the answers that cannot be scrubbed are refused.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/scrub.h"
#include "tap.h"

#define PH "rtsec_00112233445566778899aabbccddeeff"
#define PH2 "rtsec_ffeeddccbbaa99887766554433221100"
#define V "sk-live-0123456789"

static struct rt_secret_binding one[] = { { PH, V, NULL, NULL, false, NULL } };
static struct rt_secret_binding two[] = {
  { PH, V, NULL, NULL, false, NULL },
  { PH2, "tok", NULL, NULL, false, NULL },
};

struct sink
{
  char *p;
  size_t len;
};

static void
collect (void *arg, const char *p, size_t n)
{
  struct sink *s = arg;
  s->p = realloc (s->p, s->len + n + 1);
  memcpy (s->p + s->len, p, n);
  s->len += n;
  s->p[s->len] = '\0';
}

/* @in fed in pieces cut at @cuts (ascending offsets, 0-terminated), after
   @reqs requests ('G' GET, 'H' HEAD, '0' an HTTP/1.0 GET); @eof: then the
   server's end.  The guest's bytes, or NULL when refused (*@why).  */
static char *
feed (const struct rt_secret_binding *b, size_t n, const char *reqs, const char *in, size_t len, const size_t *cuts,
      bool eof, const char **why)
{
  struct rt_scrub *s = rt_scrub_new (b, n);
  struct sink out = { calloc (1, 1), 0 };
  size_t at = 0;
  int r = 0;

  for (const char *q = reqs; *q; q++)
    rt_scrub_expect (s, *q == 'H', *q == '0');
  for (const size_t *c = cuts; r == 0 && c && *c && *c < len; c++)
    {
      r = rt_scrub_feed (s, in + at, *c - at, collect, &out, why);
      at = *c;
    }
  if (r == 0)
    r = rt_scrub_feed (s, in + at, len - at, collect, &out, why);
  if (r == 0 && eof)
    r = rt_scrub_end (s, collect, &out, why);
  rt_scrub_free (s);
  if (r < 0)
    {
      free (out.p);
      return NULL;
    }
  return out.p;
}

/* @in with the chunk framing of every chunked answer taken out (its
   chunks are cut where the reads were): what the guest's HTTP client reads.
   NULL when the framing is bad.  */
static char *
unchunk (const char *in)
{
  char *out = calloc (1, strlen (in) + 1), *o = out;
  const char *p = in;

  while (*p)
    {
      const char *end = strstr (p, "\r\n\r\n");
      char *e;
      bool chunked = end && memmem (p, end - p, "Transfer-Encoding: chunked", 26);
      if (!chunked)
        {
          strcpy (o, p);
          return out;
        }
      memcpy (o, p, end + 4 - p);
      o += end + 4 - p;
      for (p = end + 4;;)
        {
          unsigned long n = strtoul (p, &e, 16);
          if (e == p || strncmp (e, "\r\n", 2) != 0)
            {
              free (out);
              return NULL;
            }
          p = e + 2;
          if (n == 0)
            break;
          memcpy (o, p, n);
          o += n;
          p += n;
          if (strncmp (p, "\r\n", 2) != 0)
            {
              free (out);
              return NULL;
            }
          p += 2;
        }
      /* Trailers, then the blank line.  */
      end = strstr (p, "\r\n");
      while (end && end != p)
        {
          memcpy (o, p, end + 2 - p);
          o += end + 2 - p;
          p = end + 2;
          end = strstr (p, "\r\n");
        }
      if (end == NULL)
        {
          free (out);
          return NULL;
        }
      p += 2;
      *o++ = '|';
    }
  return out;
}

static void
same (const struct rt_secret_binding *b, size_t n, const char *reqs, const char *in, bool eof, const char *want,
      const char *what)
{
  const char *why = NULL;
  char *out = feed (b, n, reqs, in, strlen (in), NULL, eof, &why);
  ok (out && strcmp (out, want) == 0, "%s", what);
  if (!(out && strcmp (out, want) == 0))
    printf ("# got: %s / why %s\n", out ? out : "(refused)", why ? why : "-");
  free (out);
}

/* Every cut of @in into two pieces, and into three around each offset,
   gives the same bytes as one piece.  */
static void
every_split (const char *reqs, const char *in, bool eof, const char *what)
{
  const char *why = NULL;
  char *raw = feed (two, 2, reqs, in, strlen (in), NULL, eof, &why), *whole = raw ? unchunk (raw) : NULL;
  bool good = whole != NULL && strstr (whole, V) == NULL && strstr (whole, "tok") == NULL;

  free (raw);
  for (size_t i = 1; good && i < strlen (in); i++)
    {
      size_t cuts[] = { i, i + 1, 0 }, cut1[] = { i, 0 };
      char *a = feed (two, 2, reqs, in, strlen (in), cut1, eof, &why);
      char *c = feed (two, 2, reqs, in, strlen (in), cuts, eof, &why);
      char *ua = a ? unchunk (a) : NULL, *uc = c ? unchunk (c) : NULL;
      good = ua && uc && strcmp (ua, whole) == 0 && strcmp (uc, whole) == 0;
      if (!good)
        printf ("# at %zu: %s\n", i, ua ? ua : why);
      free (a);
      free (c);
      free (ua);
      free (uc);
    }
  ok (good, "%s: the same at every split, no value", what);
  free (whole);
}

/* The bytes out of @in after a 101 (a streaming echo), with no end.  */
static size_t
echo_len (const struct rt_secret_binding *b, const char *in)
{
  const char *why = NULL;
  char *head = "HTTP/1.1 101 Switching Protocols\r\n\r\n", buf[256];
  size_t n;
  char *out;

  snprintf (buf, sizeof buf, "%s%s", head, in);
  out = feed (b, 1, "G", buf, strlen (buf), NULL, false, &why);
  n = out ? strlen (out) - strlen (head) : (size_t) -1;
  free (out);
  return n;
}

/* What comes out before the end does not depend on whether the bytes
   held back could start a value: no oracle for guessing one byte by byte
   through an echo.  */
#define HELD 19 /* its longest form, base64: 20 characters (of 15 bytes), less one */
static void
prefix_oracle (void)
{
  static struct rt_secret_binding k[] = { { PH, "sk-abcdef123456", NULL, NULL, false, NULL } };
  const char *v = k[0].value, *why = NULL;
  bool same_len = echo_len (k, "sk-a") == 0 && echo_len (k, "sk-b") == 0;
  char *out;

  for (size_t i = 1; same_len && i < strlen (v); i++)
    for (size_t pad = 0; same_len && pad < 20; pad += 3)
      {
        char right[64], wrong[64];
        snprintf (right, sizeof right, "%.*s%.*s", (int) pad, "xxxxxxxxxxxxxxxxxxxx", (int) i, v);
        snprintf (wrong, sizeof wrong, "%s", right);
        wrong[strlen (wrong) - 1] = '#';
        same_len = echo_len (k, right) == echo_len (k, wrong)
                   && echo_len (k, wrong) == (pad + i > HELD ? pad + i - HELD : 0);
        if (!same_len)
          printf ("# %s: %zu, %s: %zu\n", right, echo_len (k, right), wrong, echo_len (k, wrong));
      }
  ok (same_len, "a guess at a value's start and a wrong one come out alike: %d bytes held back either way", HELD);
  {
    size_t cuts[] = { 43, 49, 0 };
    const char *in = "HTTP/1.1 101 Switching Protocols\r\n\r\n<sk-abcdef123456>";
    out = feed (k, 1, "G", in, strlen (in), cuts, true, &why);
    ok (out && strcmp (out, "HTTP/1.1 101 Switching Protocols\r\n\r\n<" PH ">") == 0,
        "a value split across reads of a stream is still caught, the rest out at the end");
    free (out);
  }
}

/* The forms a server may write a value in are scrubbed too.  */
static void
forms (void)
{
  static struct rt_secret_binding k[] = { { PH, "ab/c\"d<e&f+g h~\\", NULL, NULL, false, NULL } };

  same (k, 1, "G",
        "HTTP/1.1 200 OK\r\nX: ab%2Fc%22d%3Ce%26f%2Bg%20h~%5C ab%2fc%22d%3ce%26f%2bg%20h~%5c\r\n\r\n"
        "[ab/c\\\"d<e&f+g h~\\\\ ab\\/c\\\"d<e&f+g h~\\\\ ab/c\\\"d\\u003ce\\u0026f+g h~\\\\ ab/c\"d<e&f+g h~\\]",
        true, "HTTP/1.1 200 OK\r\nX: " PH " " PH "\r\n\r\n[" PH " " PH " " PH " " PH "]",
        "JSON-escaped (plain, \\/, \\u003c) and percent-encoded (either case) forms are scrubbed too");
}

/* Transformed echoes (an upstream writing back a header the guest chose):
   what the scrubber catches, and what it cannot (docs/secrets.md says
   why).  The value's base64 has '+' and '/' at every alignment.  */
#define V3 "sk-Zx9~~~???QwErTy-42"
static const struct
{
  const char *what, *echo, *want; /* want NULL: passes as it is */
} echoes[] = {
  { "base64", "c2stWng5fn5+Pz8/UXdFclR5LTQy", PH },
  { "URL-safe base64", "c2stWng5fn5-Pz8_UXdFclR5LTQy", PH },
  { "base64 of 'Bearer ' + value (second alignment)",
    "QmVhcmVyIHNrLVp4OX5+fj8/P1F3RXJUeS00Mg==", "QmVhcmVyIH" PH "g==" },
  { "URL-safe, in the middle of a longer text", "QmVhcmVyIHNrLVp4OX5-fj8_P1F3RXJUeS00MiJ9", "QmVhcmVyIH" PH "iJ9" },
  { "base64 of a JSON document holding it (third alignment)",
    "eyJrZXkiOiJzay1aeDl+fn4/Pz9Rd0VyVHktNDIifQ==", "eyJrZXkiOiJ" PH "IifQ==" },
  { "URL-safe base64 of a Basic credential", "dXNlcjpzay1aeDl-fn4_Pz9Rd0VyVHktNDI=", "dXNlcjp" PH "I=" },
  { "upper case", "SK-ZX9~~~???QWERTY-42", PH },
  { "lower case", "sk-zx9~~~???qwerty-42", PH },
  { "known limit: mixed case", "Sk-zX9~~~???qWeRtY-42", NULL },
  { "known limit: the first 16 characters", "sk-Zx9~~~???QwEr", NULL },
  { "known limit: hex", "736b2d5a78397e7e7e3f3f3f5177457254792d3432", NULL },
  { "known limit: a partial encoding", "sk-Zx9%7E~~???QwErTy-42", NULL },
  { "known limit: base64 of a part", "c2stWng5fn5+Pz8/UXdF", NULL },
  { "known limit: a value shorter than 8 bytes in base64", "c2stMQ==", NULL },
};

static void
transformed (void)
{
  static struct rt_secret_binding k[] = {
    { PH, V3, NULL, NULL, false, NULL },
    { PH2, "sk-1", NULL, NULL, false, NULL },
  };

  for (size_t i = 0; i < sizeof echoes / sizeof echoes[0]; i++)
    {
      char in[256], want[256], what[128];
      snprintf (in, sizeof in, "HTTP/1.1 200 OK\r\nX-Echo: %s\r\n\r\n[%s]", echoes[i].echo, echoes[i].echo);
      snprintf (want, sizeof want, "HTTP/1.1 200 OK\r\nX-Echo: %s\r\n\r\n[%s]",
                echoes[i].want ? echoes[i].want : echoes[i].echo, echoes[i].want ? echoes[i].want : echoes[i].echo);
      snprintf (what, sizeof what, "%s: %s", echoes[i].what,
                echoes[i].want ? "scrubbed in a header and the body" : "passes");
      same (k, 2, "G", in, true, want, what);
    }
}

/* An empty value (a hand-edited store) would match everywhere: ignored,
   the others still scrubbed.  */
static void
empty_values (void)
{
  static struct rt_secret_binding k[] = {
    { PH2, "", NULL, NULL, false, NULL },
    { PH, V, NULL, NULL, false, NULL },
  };

  same (k, 1, "G", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false,
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        "an empty value alone: ignored, the answer passes");
  same (k, 2, "G", "HTTP/1.1 200 OK " V "\r\n\r\nx" V "y", true, "HTTP/1.1 200 OK " PH "\r\n\r\nx" PH "y",
        "an empty value beside another: ignored, the other still scrubbed");
}

int
main (void)
{
  const char *why = NULL;
  char *out, *body;

  same (one, 1, "G",
        "HTTP/1.1 404 no model " V "\r\nX-Echo: a" V "b\r\nLocation: /v1/" V "?k=" V "\r\nContent-Length: 0\r\n\r\n",
        false,
        "HTTP/1.1 404 no model " PH "\r\nX-Echo: a" PH "b\r\nLocation: /v1/" PH "?k=" PH
        "\r\nContent-Length: 0\r\n\r\n",
        "the status line and headers, Location too; no body stays as it is");
  same (one, 1, "G", "HTTP/1.1 200 OK\r\nContent-Length: 26\r\nX: 1\r\n\r\nmodel '" V "'", false,
        "HTTP/1.1 200 OK\r\nX: 1\r\nTransfer-Encoding: chunked\r\n\r\n2e\r\nmodel '" PH "'\r\n0\r\n\r\n",
        "a length-framed body: scrubbed, re-framed chunked");
  same (one, 1, "G",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nsk-\r\n"
        "f\r\nlive-0123456789\r\n0\r\nX-T: " V "\r\n\r\n",
        false, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n26\r\n" PH "\r\n0\r\nX-T: " PH "\r\n\r\n",
        "a value across two chunks, and in a trailer");
  same (one, 1, "G", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n12\r\n" V "\r\n12\r\n" V "\r\n0\r\n\r\n",
        false, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n26\r\n" PH "\r\n26\r\n" PH "\r\n0\r\n\r\n",
        "values filling chunks exactly, side by side");
  same (one, 1, "G", "HTTP/1.1 200 OK\r\n\r\nclose " V " delimited " V, true,
        "HTTP/1.1 200 OK\r\n\r\nclose " PH " delimited " PH, "a close-delimited body, the last value at the very end");
  same (one, 1, "0", "HTTP/1.0 200 OK\r\nContent-Length: 18\r\nConnection: keep-alive\r\n\r\n" V "HTTP/1.1 200 OK\r\n",
        false, "HTTP/1.0 200 OK\r\nConnection: close\r\n\r\n" PH,
        "HTTP/1.0: re-framed to end with the connection, nothing after");
  same (one, 1, "HG", "HTTP/1.1 200 OK\r\nContent-Length: 18\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 18\r\n\r\n" V,
        false,
        "HTTP/1.1 200 OK\r\nContent-Length: 18\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n26\r\n" PH
        "\r\n0\r\n\r\n",
        "HEAD has no body: the next answer is the next request's");
  same (one, 1, "GG",
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX: " V
        "\r\n\r\nHTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n",
        false,
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nX: " PH
        "\r\n\r\nHTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n",
        "1xx, 204 and 304 have no body");
  same (one, 1, "G", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\nframes " V " more", true,
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\nframes " PH " more",
        "after a 101 the stream is scrubbed to its end");
  same (two, 2, "G", "HTTP/1.1 200 OK\r\nContent-Length: 24\r\n\r\ntok" V "tok", false,
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        "72\r\n" PH2 PH PH2 "\r\n0\r\n\r\n",
        "two values side by side");

  every_split ("G", "HTTP/1.1 200 OK " V "\r\nContent-Length: 44\r\nLocation: /" V "\r\n\r\n<" V "tok>" V "tok", false,
               "length-framed");
  every_split ("GG",
               "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nsk-li\r\nd\r\nve-0123456789\r\n1\r\nt\r\n"
               "2\r\nok\r\n0\r\nX: " V "\r\n\r\nHTTP/1.1 200 OK\r\n\r\n" V "to",
               true, "chunked, then close-delimited");

  out = feed (one, 1, "G", "HTTP/1.1 200 OK\r\nContent-Length: 18\r\n\r\nsk-live-0123", 51, NULL, true, &why);
  ok (out == NULL && strcmp (why, "response_cut") == 0, "a body cut short is refused, its held tail unsent");
  out = feed (one, 1, "G", "HTTP/1.1 200 OK\r\nContent-Length: 18\r\n\r\nsk-live-0123", 51, NULL, false, &why);
  ok (out && strstr (out, "sk-live") == NULL, "a possible start of a value is held back until more comes");
  free (out);
  same (one, 1, "G",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nc\r\ndata: hi\n\nsk\r\n15\r\ndata: there\n\nxxxxxxxx\r\n",
        false,
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        "a\r\ndata: hi\n\n\r\n",
        "a stream holds back (longest form - 1: base64, 24 - 1) bytes, whatever they are, until more comes");
  prefix_oracle ();
  forms ();
  transformed ();
  empty_values ();

  {
    /* 1 MiB of body with a value every 1000 bytes, fed in 4 KiB reads.  */
    size_t n = 1 << 20, hl;
    char *in = malloc (n + 100), *p;
    size_t cuts[300], k = 0;
    hl = sprintf (in, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", n);
    memset (in + hl, 'x', n);
    for (size_t i = hl; i + 18 < hl + n; i += 1000)
      memcpy (in + i, V, 18);
    for (size_t c = 4096; c < hl + n && k < 299; c += 4096)
      cuts[k++] = c;
    cuts[k] = 0;
    out = feed (one, 1, "G", in, hl + n, cuts, false, &why);
    body = out ? unchunk (out) : NULL;
    p = body;
    k = 0;
    while (p && (p = strstr (p, PH)))
      k++, p++;
    ok (body && strstr (body, "sk-live") == NULL && k == 1049 && strlen (body) == hl + 3 + n + 1049 * (38 - 18) + 1,
        "1 MiB in 4 KiB reads: every value scrubbed, the chunked framing right");
    free (body);
    free (out);
    free (in);
  }

#define REFUSED(in, reason, what)                                                                                      \
  do                                                                                                                   \
    {                                                                                                                  \
      out = feed (one, 1, "G", in, strlen (in), NULL, false, &why);                                                    \
      ok (out == NULL && strcmp (why, reason) == 0, "%s: refused as %s", what, reason);                                \
      free (out);                                                                                                      \
    }                                                                                                                  \
  while (0)
  REFUSED ("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 3\r\n\r\nabc", "encoded_response",
           "a gzip body (it could hide the value)");
  REFUSED ("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "encoded_response", "a transfer coding");
  REFUSED ("HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\nx",
           "encoded_response", "a websocket with compressed frames (the rewriter asked for none)");
  REFUSED ("HTTP/2 200\r\n\r\n", "bad_response", "not HTTP/1.x");
  REFUSED ("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", "bad_response", "obs-fold");
  REFUSED ("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "bad_response", "two lengths");
  REFUSED ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad_response", "a bad chunk size");
  REFUSED ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\naXX", "bad_response", "a chunk without its CRLF");
  {
    char *big = malloc (RT_SCRUB_MAX_HEAD + 100);
    memset (big, 'a', RT_SCRUB_MAX_HEAD + 99);
    memcpy (big, "HTTP/1.1 200 OK\r\nX: ", 20);
    big[RT_SCRUB_MAX_HEAD + 99] = '\0';
    REFUSED (big, "response_head_too_large", "a head over 64 KiB");
    free (big);
  }
  same (one, 1, "G", "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 0\r\n\r\n", false,
        "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 0\r\n\r\n", "a coding with no body passes");
  return tap_done ();
}
