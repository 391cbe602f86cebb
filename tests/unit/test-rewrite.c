/* test-rewrite.c - request framing and placeholder swapping for secrets:
   the swap in credential headers (the request line only --in-url), a
   --header secret only as that header, the placeholder anywhere else
   refused, forwarding headers dropped, --rule,
   Accept-Encoding: identity and no Range, bodies untouched (plain and
   chunked, split anywhere), keep-alive, Upgrade (without websocket
   extensions), and the requests that must be refused rather than guessed
   at.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/rewrite.h"
#include "tap.h"

#define PH "rtsec_00112233445566778899aabbccddeeff"
#define PH2 "rtsec_ffeeddccbbaa99887766554433221100"
#define H "Host: a.test\r\n"
#define AE "Accept-Encoding: identity\r\n"

static struct rt_secret_binding plain[] = { { PH, "sk-live-1", NULL, NULL, true, NULL } };
static struct rt_secret_binding both[] = {
  { PH, "sk-live-1", NULL, NULL, true, NULL },
  { PH2, "tok-2", "X-Api-Token", "Token tok-2", true, NULL },
};
/* Headers only (no --in-url): PH into credential headers, PH2 only as its
   --header.  */
static struct rt_secret_binding headers_only[] = {
  { PH, "sk-live-1", NULL, NULL, false, NULL },
  { PH2, "tok-2", "X-Api-Token", "Token tok-2", false, NULL },
};
static char *model_rules[] = { "GET:/v1/models", "*:/v1/chat/*", NULL };
static struct rt_secret_binding ruled[] = {
  { PH, "sk-live-1", NULL, NULL, false, model_rules },
  { PH2, "tok-2", "X-Api-Token", "Token tok-2", false, model_rules },
};

/* run() makes a checker (rt_rewrite_checker_new) instead.  */
static bool checking;

/* Feeds @in in pieces of @step bytes (0: all at once); returns what goes
   upstream, or NULL when the rewriter refused (then *why is set).  */
static char *
run (const struct rt_secret_binding *b, size_t n, const char *in, size_t len, size_t step, const char **why,
     struct rt_rewrite **keep)
{
  struct rt_rewrite *rw = checking ? rt_rewrite_checker_new ("a.test", 443) : rt_rewrite_new (b, n, "a.test", 443);
  char *out = calloc (1, 2 * len + 4096), *pending = calloc (1, len + 1);
  size_t olen = 0, plen = 0, fed = 0;

  for (;;)
    {
      /* Everything the rewriter can take of what is pending...  */
      for (;;)
        {
          size_t take = 0, hlen = 0;
          char *head = NULL;
          int r = rt_rewrite_step (rw, pending, plen, &take, &head, &hlen, why);
          if (r < 0)
            {
              free (out);
              out = NULL;
              goto done;
            }
          if (r == RT_REWRITE_MORE)
            break;
          memcpy (out + olen, r == RT_REWRITE_PASS ? pending : head, r == RT_REWRITE_PASS ? take : hlen);
          olen += r == RT_REWRITE_PASS ? take : hlen;
          free (head);
          memmove (pending, pending + take, plen - take);
          plen -= take;
        }
      /* ... then the next piece.  */
      if (fed == len)
        break;
      {
        size_t chunk = step == 0 || len - fed < step ? len - fed : step;
        memcpy (pending + plen, in + fed, chunk);
        plen += chunk;
        fed += chunk;
      }
    }
done:
  free (pending);
  if (keep)
    *keep = rw;
  else
    rt_rewrite_free (rw);
  return out;
}

static void
same (const struct rt_secret_binding *b, size_t n, const char *in, const char *want, const char *what)
{
  static const size_t steps[] = { 0, 1, 2, 7, 64 };
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
    {
      const char *why = NULL;
      char *out = run (b, n, in, strlen (in), steps[i], &why, NULL);
      char name[256];
      snprintf (name, sizeof name, "%s (pieces of %zu)", what, steps[i]);
      ok (out && strcmp (out, want) == 0, "%s", name);
      if (!(out && strcmp (out, want) == 0))
        printf ("# got: %s / why %s\n", out ? out : "(refused)", why ? why : "-");
      free (out);
    }
}

static void
refused (const char *in, const char *reason, const char *what)
{
  const char *why = NULL;
  char *out = run (both, 2, in, strlen (in), 0, &why, NULL);
  ok (out == NULL && why && strcmp (why, reason) == 0, "%s: refused as %s", what, reason);
  free (out);
}

/* Where a placeholder may become its value, and the headers a server
   behind a front end would read as another request: for headers_only.
   @want NULL: refused as @why.  */
#define SET "X-Api-Token: Token tok-2\r\n"
static const struct
{
  const char *what, *in, *want, *why;
} placed[] = {
  { "without --header: into Authorization", "GET / HTTP/1.1\r\n" H "Authorization: Bearer " PH "\r\n\r\n",
    "GET / HTTP/1.1\r\n" H "Authorization: Bearer sk-live-1\r\n" SET AE "\r\n", NULL },
  { "without --header: into X-Api-Key, Api-Key, X-Auth-Token, X-Goog-Api-Key (any case)",
    "GET / HTTP/1.1\r\n" H "x-api-key: " PH "\r\nApi-Key: " PH "\r\nX-AUTH-TOKEN: " PH "\r\nX-Goog-Api-Key: " PH
    "\r\n\r\n",
    "GET / HTTP/1.1\r\n" H "x-api-key: sk-live-1\r\nApi-Key: sk-live-1\r\nX-AUTH-TOKEN: sk-live-1\r\n"
    "X-Goog-Api-Key: sk-live-1\r\n" SET AE "\r\n",
    NULL },
  { "without --header: not into a header a server may echo", "GET / HTTP/1.1\r\n" H "X-Echo: " PH "\r\n\r\n", NULL,
    "placeholder_misplaced" },
  { "without --header: not into Cookie", "GET / HTTP/1.1\r\n" H "Cookie: lang=" PH "\r\n\r\n", NULL,
    "placeholder_misplaced" },
  { "without --header: not into Proxy-Authorization", "GET / HTTP/1.1\r\n" H "Proxy-Authorization: " PH "\r\n\r\n",
    NULL, "placeholder_misplaced" },
  { "not into a header's name", "GET / HTTP/1.1\r\n" H "X-" PH ": 1\r\n\r\n", NULL, "placeholder_misplaced" },
  { "not into the request line without --in-url", "GET /v1?k=" PH " HTTP/1.1\r\n" H "\r\n", NULL,
    "placeholder_misplaced" },
  { "a --header secret: not into another credential header",
    "GET / HTTP/1.1\r\n" H "Authorization: Bearer " PH2 "\r\n\r\n", NULL, "placeholder_misplaced" },
  { "a --header secret: not into an echoed header", "GET / HTTP/1.1\r\n" H "X-Echo: " PH2 "\r\n\r\n", NULL,
    "placeholder_misplaced" },
  { "a --header secret: not into the request line", "GET /" PH2 " HTTP/1.1\r\n" H "\r\n", NULL,
    "placeholder_misplaced" },
  { "a --header secret: the guest's own header of that name is replaced",
    "GET / HTTP/1.1\r\n" H "X-Api-Token: " PH2 "\r\n\r\n", "GET / HTTP/1.1\r\n" H SET AE "\r\n", NULL },
  { "a body keeps the placeholder", "POST / HTTP/1.1\r\n" H "Content-Length: 38\r\n\r\n" PH,
    "POST / HTTP/1.1\r\n" H "Content-Length: 38\r\n" SET AE "\r\n" PH, NULL },
  { "X-Forwarded-*, Forwarded, X-Original-URL, X-Rewrite-URL and method overrides are dropped",
    "GET / HTTP/1.1\r\n" H "X-Forwarded-For: 1.2.3.4\r\nx-forwarded-host: evil.test\r\nX-Forwarded-Proto: http\r\n"
    "Forwarded: host=evil.test\r\nX-Original-URL: /admin\r\nX-Rewrite-URL: /admin\r\nX-HTTP-Method-Override: DELETE\r\n"
    "X-HTTP-Method: DELETE\r\nX-Method-Override: DELETE\r\nX-Forwarded: 1\r\nAccept: */*\r\n\r\n",
    "GET / HTTP/1.1\r\n" H "X-Forwarded: 1\r\nAccept: */*\r\n" SET AE "\r\n", NULL },
  { "a dropped forwarding header holding a placeholder: dropped, not refused",
    "GET / HTTP/1.1\r\n" H "X-Forwarded-Host: " PH "\r\n\r\n", "GET / HTTP/1.1\r\n" H SET AE "\r\n", NULL },
};

static void
test_placed (void)
{
  for (size_t i = 0; i < sizeof placed / sizeof placed[0]; i++)
    if (placed[i].want)
      same (headers_only, 2, placed[i].in, placed[i].want, placed[i].what);
    else
      {
        const char *why = NULL;
        char *out = run (headers_only, 2, placed[i].in, strlen (placed[i].in), 1, &why, NULL);
        ok (out == NULL && why && strcmp (why, placed[i].why) == 0, "%s: refused as %s", placed[i].what, placed[i].why);
        if (out)
          printf ("# got: %s\n", out);
        free (out);
      }
}

/* The checker: plain HTTP to any host, every request on the connection
   naming the host it was allowed for (the CDN case: the second request of
   a kept-alive connection asking the same address for another site).  */
static void
test_checker (void)
{
  const char *pipelined = "GET / HTTP/1.1\r\n" H "Accept-Encoding: gzip\r\nRange: bytes=0-1\r\n\r\n"
                          "\r\nPOST /b HTTP/1.1\r\nHost: A.TEST.:443\r\nContent-Length: 33\r\n\r\n"
                          "GET / HTTP/1.1\r\nHost: b.test\r\n\r\n"
                          "GET /c HTTP/1.0\r\n\r\n";

  checking = true;
  same (NULL, 0, pipelined, pipelined,
        "checking: pipelined requests for the host pass unchanged, a body that looks like a request too");
  same (NULL, 0,
        "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\n\r\n5\r\nHost:\r\n0\r\n\r\nGET / HTTP/1.1\r\n" H "\r\n",
        "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\n\r\n5\r\nHost:\r\n0\r\n\r\nGET / HTTP/1.1\r\n" H "\r\n",
        "checking: a chunked body, then the next request");
  refused ("GET / HTTP/1.1\r\n" H "\r\nGET / HTTP/1.1\r\nHost: b.test\r\n\r\n", "host_mismatch",
           "checking: a second request for another host");
  refused ("POST / HTTP/1.1\r\n" H "Content-Length: 2\r\n\r\nokGET / HTTP/1.1\r\nHost: b.test\r\n\r\n", "host_mismatch",
           "checking: another host right after a body");
  refused ("GET / HTTP/1.1\r\n" H H "\r\n", "host_mismatch", "checking: two Hosts");
  refused ("GET http://b.test/ HTTP/1.1\r\n" H "\r\n", "host_mismatch", "checking: an absolute-form target elsewhere");
  refused ("GET / HTTP/1.1\r\nHost: a.test:80\r\n\r\n", "host_mismatch", "checking: the host on another port");
  refused ("POST / HTTP/1.1\r\n" H "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", "bad_request",
           "checking: both Content-Length and chunked");
  /* What the sniffer could not parse but took for HTTP (rt_sniff_is_http:
     a method and a space): the checker refuses it.  */
  refused ("GET /\xc3\xa9 HTTP/1.1\r\nHost: evil.example\r\n\r\n", "host_mismatch",
           "checking: a non-ASCII target, another Host");
  refused ("GET / \x01HTTP/1.1\r\n" H "\r\n", "bad_request", "checking: a control byte in the request line");
  refused ("GET /\r\n" H "\r\n", "bad_request", "checking: no version");
  refused ("USER anonymous\r\n\r\n", "bad_request", "checking: not an HTTP request line");
  checking = false;
}

int
main (void)
{
  struct rt_rewrite *rw = NULL;
  const char *why = NULL;
  char *out;

  same (plain, 1, "GET /v1?key=" PH " HTTP/1.1\r\nHost: a.test\r\nAuthorization: Bearer " PH "\r\n\r\n",
       "GET /v1?key=sk-live-1 HTTP/1.1\r\nHost: a.test\r\nAuthorization: Bearer sk-live-1\r\n" AE "\r\n",
       "the placeholder becomes the value in the request line and a header");
  same (plain, 1, "POST / HTTP/1.1\r\n" H "Content-Length: 43\r\nX-Api-Key: " PH "\r\n\r\nbody " PH,
        "POST / HTTP/1.1\r\n" H "Content-Length: 43\r\nX-Api-Key: sk-live-1\r\n" AE "\r\nbody " PH,
        "a body holding the placeholder passes unchanged");
  same (plain, 1,
       "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\n\r\n26;ext=1\r\n" PH "\r\n0\r\nX-T: " PH "\r\n\r\n"
       "GET /" PH " HTTP/1.1\r\n" H "\r\n",
       "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\n" AE "\r\n26;ext=1\r\n" PH "\r\n0\r\nX-T: " PH "\r\n\r\n"
       "GET /sk-live-1 HTTP/1.1\r\n" H AE "\r\n",
       "chunked bodies and trailers pass; the next request is rewritten");
  same (both, 2, "GET / HTTP/1.1\r\nx-api-token: guest\r\nHost: A.Test:443\r\n\r\nGET /2 HTTP/1.0\r\nHost: a.test.\r\n\r\n",
       "GET / HTTP/1.1\r\nHost: A.Test:443\r\nX-Api-Token: Token tok-2\r\n" AE "\r\n"
       "GET /2 HTTP/1.0\r\nHost: a.test.\r\nX-Api-Token: Token tok-2\r\n" AE "\r\n",
       "--header replaces the guest's header, on every kept-alive request");
  same (both, 2, "GET /" PH2 PH " HTTP/1.1\r\n" H "\r\n",
       "GET /tok-2sk-live-1 HTTP/1.1\r\n" H "X-Api-Token: Token tok-2\r\n" AE "\r\n", "two placeholders side by side");
  same (plain, 1, "GET https://a.test:443/v?k=" PH " HTTP/1.1\r\n" H "\r\n",
       "GET https://a.test:443/v?k=sk-live-1 HTTP/1.1\r\n" H AE "\r\n", "an absolute-form target naming the host");
  same (plain, 1,
        "GET /chat HTTP/1.1\r\n" H "Upgrade: websocket\r\nAuthorization: " PH "\r\n\r\nframes " PH
        " GET / HTTP/1.1\r\n\r\n",
        "GET /chat HTTP/1.1\r\n" H "Upgrade: websocket\r\nAuthorization: sk-live-1\r\n" AE "\r\nframes " PH
        " GET / HTTP/1.1\r\n\r\n",
        "after an Upgrade everything passes untouched");
  same (plain, 1,
       "GET /chat HTTP/1.1\r\n" H "Upgrade: websocket\r\nSec-WebSocket-Extensions: permessage-deflate\r\n"
       "sec-websocket-extensions: x-webkit-deflate-frame\r\nSec-WebSocket-Version: 13\r\n\r\n",
       "GET /chat HTTP/1.1\r\n" H "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n" AE "\r\n",
       "no websocket extensions: compressed frames could not be scrubbed");
  same (plain, 1, "\r\nGET / HTTP/1.1\r\n" H "\r\n", "\r\nGET / HTTP/1.1\r\n" H AE "\r\n",
       "a blank line between requests passes");
  same (plain, 1, "GET / HTTP/1.1\r\n" H "Content-Length: 0\r\n\r\nGET /" PH " HTTP/1.1\r\n" H "\r\n",
        "GET / HTTP/1.1\r\n" H "Content-Length: 0\r\n" AE "\r\nGET /sk-live-1 HTTP/1.1\r\n" H AE "\r\n",
        "Content-Length: 0");
  same (plain, 1, "GET / HTTP/1.1\r\n" H "Accept-Encoding: gzip, br\r\nRange: bytes=3-5\r\nIf-Range: x\r\nTE: gzip\r\n\r\n",
       "GET / HTTP/1.1\r\n" H AE "\r\n", "the answer is asked for whole and uncoded: no Range, Accept-Encoding identity");
  same (plain, 1, "GET / HTTP/1.0\r\n" H "Connection: keep-alive\r\nKeep-Alive: 5\r\n\r\n", "GET / HTTP/1.0\r\n" H AE "\r\n",
       "HTTP/1.0 is not kept alive (its answer is re-framed to end with the connection)");
  same (ruled, 2, "GET /v1/models?x=1 HTTP/1.1\r\n" H "X-Api-Key: " PH "\r\n\r\n",
        "GET /v1/models?x=1 HTTP/1.1\r\n" H "X-Api-Key: sk-live-1\r\nX-Api-Token: Token tok-2\r\n" AE "\r\n",
        "a rule's method and path: the value (and --header) go in");
  same (ruled, 2, "POST /v1/chat/completions HTTP/1.1\r\n" H "X-Api-Key: " PH "\r\n\r\n",
        "POST /v1/chat/completions HTTP/1.1\r\n" H "X-Api-Key: sk-live-1\r\nX-Api-Token: Token tok-2\r\n" AE "\r\n",
        "a rule for any method (*)");
  same (ruled, 2, "POST /v1/models HTTP/1.1\r\n" H "X-Api-Key: " PH "\r\nX-Api-Token: guest\r\n\r\n",
        "POST /v1/models HTTP/1.1\r\n" H "X-Api-Key: " PH "\r\nX-Api-Token: guest\r\n" AE "\r\n",
        "another method than the rule's: no value, no --header");
  same (ruled, 2, "GET /v1/files HTTP/1.1\r\n" H "X-Api-Key: " PH "\r\n\r\n",
        "GET /v1/files HTTP/1.1\r\n" H "X-Api-Key: " PH "\r\n" AE "\r\n", "another path: no value");
  same (ruled, 2, "GET /v1/chat/../../admin HTTP/1.1\r\n" H "X-Api-Key: " PH "\r\n\r\n",
        "GET /v1/chat/../../admin HTTP/1.1\r\n" H "X-Api-Key: " PH "\r\n" AE "\r\n", "dot segments match no rule");
  same (ruled, 2, "GET /v1/chat/%2e%2e/x HTTP/1.1\r\n" H "X-Api-Key: " PH "\r\n\r\n",
        "GET /v1/chat/%2e%2e/x HTTP/1.1\r\n" H "X-Api-Key: " PH "\r\n" AE "\r\n", "encoded dots match no rule");

  {
    static const char two[] = "GET / HTTP/1.1\r\n" H "\r\nGET / HTTP/1.1\r\n" H "X: 1\r\n\r\n";
    out = run (both, 2, two, sizeof two - 1, 0, &why, &rw);
  }
  ok (out && rt_rewrite_swapped (rw) == 2, "every request with something set is counted");
  free (out);
  rt_rewrite_free (rw);
  out = run (NULL, 0, "GET / HTTP/1.1\r\n" H "\r\n", 32, 0, &why, &rw);
  ok (out && rt_rewrite_swapped (rw) == 0, "nothing swapped, nothing counted");
  free (out);
  rt_rewrite_free (rw);

  refused ("GET / HTTP/2.0\r\n\r\n", "bad_request", "HTTP/2 in a request line");
  refused ("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "bad_request", "the HTTP/2 preface");
  refused ("GET /\r\n\r\n", "bad_request", "HTTP/0.9");
  refused ("G(T / HTTP/1.1\r\n\r\n", "bad_request", "a bad method");
  refused ("GET / HTTP/1.1\r\nX: a\r\n continued\r\n\r\n", "bad_request", "obs-fold");
  refused ("GET / HTTP/1.1\r\nNoColon\r\n\r\n", "bad_request", "a header without a colon");
  refused ("GET / HTTP/1.1\r\nX\tY: 1\r\n\r\n", "bad_request", "a bad header name");
  refused ("GET / HTTP/1.1\r\nX: a\nb\r\n\r\n", "bad_request", "a bare LF in a header");
  refused ("GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "bad_request",
           "two different Content-Lengths");
  refused ("GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", "bad_request", "a negative Content-Length");
  refused ("GET / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", "bad_request",
           "an overflowing Content-Length");
  refused ("GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", "bad_request", "a coding other than chunked last");
#define CHUNKED "POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\n\r\n"
  refused (CHUNKED "zz\r\n", "bad_request", "a bad chunk size");
  refused (CHUNKED "1\r\naXX", "bad_request", "a chunk without its CRLF");
  refused (CHUNKED "fffffffffffffffffff\r\n", "bad_request", "an overflowing chunk size");
  refused (CHUNKED "1;a\nb\r\nx\r\n0\r\n\r\n", "bad_request", "a bare LF in a chunk extension");
  refused (CHUNKED "1 x\r\nx\r\n0\r\n\r\n", "bad_request", "junk after a chunk size");
  refused (CHUNKED "0\r\nNoColon\r\n\r\n", "bad_request", "a trailer that is not a field");
  refused ("POST / HTTP/1.1\r\n" H "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", "bad_request",
           "both Content-Length and chunked");
  refused ("POST / HTTP/1.0\r\n" H "Transfer-Encoding: chunked\r\n\r\n", "bad_request", "chunked in HTTP/1.0");
  refused ("GET / HTTP/1.1\r\nHost: b.test\r\n\r\n", "host_mismatch", "another Host");
  refused ("GET / HTTP/1.1\r\nX: 1\r\n\r\n", "host_mismatch", "no Host");
  refused ("GET / HTTP/1.1\r\n" H H "\r\n", "host_mismatch", "two Hosts");
  refused ("GET / HTTP/1.1\r\nHost: a.test:8443\r\n\r\n", "host_mismatch", "the host on another port");
  refused ("GET / HTTP/1.1\r\nHost: a.test.evil\r\n\r\n", "host_mismatch", "a longer name");
  refused ("GET https://b.test/x HTTP/1.1\r\n" H "\r\n", "host_mismatch", "an absolute-form target elsewhere");
  refused ("GET https://a.test@b.test/x HTTP/1.1\r\n" H "\r\n", "host_mismatch", "userinfo in the target");
  refused ("CONNECT b.test:443 HTTP/1.1\r\n" H "\r\n", "host_mismatch", "CONNECT inside the tunnel");
  refused ("GET ftp://a.test/ HTTP/1.1\r\n" H "\r\n", "bad_request", "a target of another scheme");
  {
    size_t big = RT_REWRITE_MAX_HEAD + 10;
    char *in = malloc (big + 1);
    memset (in, 'a', big);
    memcpy (in, "GET / HTTP/1.1\r\nX: ", 19);
    in[big] = '\0';
    out = run (both, 2, in, big, 0, &why, NULL);
    ok (out == NULL && strcmp (why, "request_head_too_large") == 0, "a head over 64 KiB is refused");
    free (out);
    free (in);
  }
  out = run (both, 2, "GET / HTTP/1.1\r\nHost: a", 23, 0, &why, &rw);
  ok (out && *out == '\0', "an incomplete head waits for more");
  free (out);
  rt_rewrite_free (rw);
  test_placed ();
  test_checker ();
  return tap_done ();
}
