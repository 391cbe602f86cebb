/* scrub.h - the answers of a secret's host, on their way back to the
 * guest: every occurrence of a value becomes its placeholder again.
 *
 * The stream is HTTP/1.x responses, one per request the rewriter
 * (rewrite.h) let out, in order.  The status line and every header line
 * are scrubbed whole; bodies are scrubbed as they stream, keeping the last
 * (longest form - 1: see below) bytes back until the next read or the end,
 * whatever they are, so that a value split across reads (or TLS records, or chunks)
 * is still caught and what comes out when says nothing of the value.  A
 * value's JSON-escaped, percent-encoded, upper- and lower-case and base64
 * forms are scrubbed too (not a part of it, nor any other coding:
 * docs/secrets.md); empty values are ignored.  A body
 * whose length is framed (Content-Length or chunked) goes to the guest
 * re-framed as chunked (HTTP/1.0: close-delimited), since a swap changes
 * its length.  The rewriter asks for Accept-Encoding: identity; a body
 * still in a content or transfer coding cannot be scrubbed and is refused,
 * as is anything that is not HTTP/1.x framing.  Pure: no sockets, no
 * libevent, so it is unit-tested (and fuzzed) alone.
 */
#ifndef RT_SCRUB_H
#define RT_SCRUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/secrets.h"

#define RT_SCRUB_MAX_HEAD (64 * 1024)
#define RT_SCRUB_MAX_PENDING 256 /* requests awaiting their response */

struct rt_scrub;

/* Where scrubbed bytes go.  */
typedef void (*rt_scrub_emit) (void *arg, const char *p, size_t n);

/* @b, @n: the bindings of the connection's host, borrowed.  NULL when out
   of memory.  */
struct rt_scrub *rt_scrub_new (const struct rt_secret_binding *b, size_t n);
void rt_scrub_free (struct rt_scrub *s);

/* A request went out: its response comes with no body after HEAD (@head),
   and re-framed close-delimited for HTTP/1.0 (@http10).  -1 when too many
   are waiting.  */
int rt_scrub_expect (struct rt_scrub *s, bool head, bool http10);

/**
 * rt_scrub_feed - the server's next bytes, scrubbed toward the guest
 * @buf, @len: any number of bytes; all are consumed (what cannot be
 *             decided yet is kept inside)
 * @emit, @arg: called with the bytes for the guest, zero or more times
 * @why:       on failure, a reason for the egress log
 * Return: 0, or -1 for a stream this cannot frame or scrub (the
 * connection must then end: passing it on could pass a value).
 */
int rt_scrub_feed (struct rt_scrub *s, const char *buf, size_t len, rt_scrub_emit emit, void *arg, const char **why);

/* The server's end: a close-delimited body is complete, what was kept
   back goes out.  Return: 0, or -1 (@why) when a response was cut.  */
int rt_scrub_end (struct rt_scrub *s, rt_scrub_emit emit, void *arg, const char **why);

/* Values replaced so far.  */
uint64_t rt_scrub_count (const struct rt_scrub *s);

#endif
