/* http1.h - the pieces of HTTP/1.x syntax the request rewriter
 * (rewrite.h) and the response scrubber (scrub.h) both read, and the
 * growing buffer they write into.  Strict on purpose: what a server or a
 * guest could read otherwise is refused by the callers, not guessed at.
 */
#ifndef RT_HTTP1_H
#define RT_HTTP1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growing byte buffer, NUL-terminated; @oom once an allocation failed
   (further adds are dropped).  Old storage is wiped when it moves: it may
   hold a value.  */
struct rt_buf
{
  char *p;
  size_t len, cap;
  bool oom;
};

void rt_buf_add (struct rt_buf *o, const char *s, size_t n);
/* Wipes and frees.  */
void rt_buf_clear (struct rt_buf *o);

bool rt_http_is_tchar (char c);
/* A header value without its surrounding whitespace.  */
void rt_http_trim (const char **v, const char **end);
/* Decimal digits only, no overflow.  */
bool rt_http_parse_length (const char *v, const char *end, uint64_t *out);
/* Transfer-Encoding: chunked is the last coding (RFC 9112 6.1).  */
bool rt_http_chunked_last (const char *v, const char *end);
/* Is the field name @name (@n bytes) @want, case aside?  */
bool rt_http_header_is (const char *name, size_t n, const char *want);
/* name ":" value, the name a token, no control characters but HTAB.  */
bool rt_http_field_line_ok (const char *line, const char *eol);
/* A field line [@line, @eol) checked (rt_http_field_line_ok) and split:
   the name ends at *@colon, the value without its surrounding whitespace
   is [*@v, *@vend).  false when it is not a field line.  */
bool rt_http_field_split (const char *line, const char *eol, const char **colon, const char **v, const char **vend);
/* A Content-Length value [@v, @vend) noted in *@have and *@length: false
   when it is not a length, or not the one noted before.  */
bool rt_http_note_length (const char *v, const char *vend, bool *have, uint64_t *length);
/* A chunk-size line [@buf, @eol): hex digits, then nothing or an
   extension without control characters.  */
bool rt_http_chunk_size (const char *buf, const char *eol, uint64_t *size);

#endif
