/* rewrite.h - the requests a guest sends to a secret's host, framed and
 * rewritten on their way out of the egress proxy.
 *
 * The stream is HTTP/1.x requests, one after another on a kept-alive
 * connection.  Each request head is rewritten, for the secrets whose
 * --rule list (none: all) covers its method and path: a secret with
 * --header gets that header set (replacing what the guest sent), any other
 * has its placeholder become its value in a credential header
 * (Authorization, X-Api-Key, ...), and either in the request line only
 * when set --in-url (a path or a query is what servers quote back, in
 * 404s, redirects and logs).  Its placeholder anywhere else in the head is
 * refused ("placeholder_misplaced"): a server echoing that header, in
 * base64 or cut short, would hand the value back where the scrubber
 * cannot see it.  Forwarding headers (X-Forwarded-*, X-Original-URL, ...)
 * are dropped.  Accept-Encoding becomes identity and
 * Range goes, so that the answer is one the scrubber (scrub.h) can read
 * whole; the rewriter tells it what each request was.  Bodies,
 * chunked or not, and everything after an Upgrade or CONNECT pass
 * untouched.  Refused rather than guessed at: anything a server could frame
 * otherwise (both Content-Length and chunked, chunked in HTTP/1.0, bare CR
 * or LF, obs-fold, odd chunk lines), CONNECT, and requests naming another
 * host.  Pure: no sockets, no libevent, so it is unit-tested (and fuzzed)
 * alone.
 */
#ifndef RT_REWRITE_H
#define RT_REWRITE_H

#include <stddef.h>
#include <stdint.h>

#include "net/secrets.h"

#define RT_REWRITE_MAX_HEAD (64 * 1024)

enum rt_rewrite_step
{
  RT_REWRITE_MORE = 0, /* the next head or chunk line is incomplete: read more */
  RT_REWRITE_PASS = 1, /* forward the first *take bytes as they are */
  RT_REWRITE_HEAD = 2, /* *take bytes were a head: send *head instead */
};

struct rt_rewrite;

/* @b: the bindings for this connection's host, borrowed (they must outlive
   the rewriter).  @host, @port: what the server's certificate was checked
   for; every request must name exactly that (one Host header, and an
   absolute-form target if any), else it is refused as "host_mismatch":
   behind one server there may be many sites.  NULL when out of memory.  */
struct rt_rewrite *rt_rewrite_new (const struct rt_secret_binding *b, size_t n, const char *host, int port);
/* The same framing and host check with nothing rewritten, for plain HTTP
   to any host (the egress proxy's check that every request on a
   connection names the host it was allowed for): heads pass as they came,
   a request without Host too, and the scrubber is not used.  */
struct rt_rewrite *rt_rewrite_checker_new (const char *host, int port);
void rt_rewrite_free (struct rt_rewrite *rw);

/**
 * rt_rewrite_step - what to do with the next bytes of the guest's stream
 * @buf, @len: the bytes not yet consumed (at least the start of them: up to
 *             RT_REWRITE_MAX_HEAD is enough for any step)
 * @take:      bytes of @buf consumed by this step
 * @head:      RT_REWRITE_HEAD: the rewritten head, malloc'd (the caller
 *             wipes and frees it: it may hold a value)
 * @why:       on failure, a reason for the egress log
 * Return: an enum rt_rewrite_step, or -1 for a stream that is not HTTP/1.x
 * requests this can frame (the connection must then be closed: guessing
 * could send a value where the guest did not mean it).
 */
int rt_rewrite_step (struct rt_rewrite *rw, const char *buf, size_t len, size_t *take, char **head, size_t *head_len,
                     const char **why);

/* The scrubber for the answers to these requests (owned by @rw).  */
struct rt_scrub *rt_rewrite_scrub (struct rt_rewrite *rw);

/* Heads in which something was swapped or set, so far.  */
uint64_t rt_rewrite_swapped (const struct rt_rewrite *rw);
/* Values replaced by their placeholder in the answers, so far.  */
uint64_t rt_rewrite_scrubbed (const struct rt_rewrite *rw);

#endif
