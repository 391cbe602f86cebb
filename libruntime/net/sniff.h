/* sniff.h - the destination name in the first bytes of a guest's
   connection (TLS SNI, HTTP Host) and HTTP forward-proxy request heads.
 *
 * Pure code over buffers the egress proxy peeks at.  The guest is hostile:
 * every length is checked, nothing reads past @len, and anything ambiguous
 * (two Host headers, bare LF, a Host that contradicts the target) is
 * refused rather than guessed at.
 */
#ifndef RT_SNIFF_H
#define RT_SNIFF_H

#include <stddef.h>

/* Bytes looked at before giving up on finding an answer.  Real
   ClientHellos are far smaller (about 1.8 KiB with a post-quantum key
   share; curl's, pip's, git's well under 1 KiB); a larger one is refused
   (RT_SNIFF_UNREADABLE), not passed.  */
#define RT_SNIFF_MAX 16384

/* rt_sniff_name: a TLS handshake that is not a ClientHello read whole.  */
#define RT_SNIFF_UNREADABLE (-2)

/**
 * rt_sniff_name - the name a client is about to talk to
 * @buf:  the first bytes of the connection
 * @len:  how many
 * @name: set on success to the TLS ClientHello's SNI host_name, or the host
 *        of an HTTP/1.x request (as rt_http_head_parse finds it: port
 *        stripped, IPv6 without brackets), lowercased, without a trailing
 *        dot; malloc'd
 *
 * A ClientHello split over several TLS records is reassembled.
 * Return: 1 with @name set; 0 when these bytes can never give a name (not a
 * TLS handshake nor an HTTP request, a ClientHello without SNI, an HTTP
 * request without Host or malformed, or RT_SNIFF_MAX bytes of it without an
 * answer); -1 when more bytes are needed; RT_SNIFF_UNREADABLE when they
 * start a TLS handshake record but hold no ClientHello that parses whole
 * within RT_SNIFF_MAX bytes (malformed, oversized, another record or
 * message in between): a server may still read a name there, so the
 * caller must refuse the connection.
 */
int rt_sniff_name (const unsigned char *buf, size_t len, char **name);

/**
 * rt_sniff_is_http - could a server read these first bytes as an HTTP
 * request?
 * @buf, @len: as for rt_sniff_name
 *
 * Loosely, on purpose: whatever a lenient server might take for the start
 * of a request (empty lines before it, odd spacing, a lowercase "http/",
 * bytes above 0x7e or control bytes in the target, no version) is HTTP
 * here, so that a strict parser checks it, whether or not it names a host:
 * a request without Host may be followed by others on the same connection
 * that have one.
 * Return: 1 when the first line (after empty ones) starts with an
 * uppercase method ([A-Z_-]) and blank space (or RT_SNIFF_MAX bytes of
 * method); 0 when it does not, as soon as that shows; -1 when it could and
 * is not complete.
 */
int rt_sniff_is_http (const unsigned char *buf, size_t len);

/**
 * rt_http_head - an HTTP/1.x request head as a forward proxy sees it
 * @method:   "GET", "CONNECT", …
 * @target:   the request-target as sent
 * @host:     from the absolute-form target, the CONNECT authority or the
 *            Host header: a host name (lowercased, no trailing dot) or an IP
 *            literal (IPv6 without brackets)
 * @port:     from the target or Host, else 80; CONNECT must name one
 * @path:     what to send upstream as the request-target: the path and
 *            query of an absolute-form http:// target ("/" if empty), the
 *            target itself in origin-form; NULL for CONNECT
 * @head_len: bytes up to and including the blank line
 */
struct rt_http_head
{
  char *method;
  char *target;
  char *host;
  int port;
  char *path;
  size_t head_len;
};

/**
 * rt_http_head_parse - parse a request head for a forward proxy
 * @buf: the bytes received so far (need not be NUL-terminated)
 * @len: how many
 * @h:   overwritten (not freed first); filled on 1, zeroed otherwise
 *
 * Accepts "METHOD target HTTP/1.x", lines ending in CRLF only, targets in
 * origin-form (with a Host header), absolute-form http:// (a Host header,
 * if any, must name the same host and port) and CONNECT authority-form
 * host:port.  https:// and other schemes, "*", fragments, userinfo, obs-fold,
 * a repeated Host, control characters and bare CR or LF are malformed.
 * Return: 1 complete; -1 more bytes needed; 0 malformed or no blank line
 * within RT_SNIFF_MAX bytes.
 */
int rt_http_head_parse (const char *buf, size_t len, struct rt_http_head *h);

/** rt_http_head_clear - free what rt_http_head_parse filled and zero it.  */
void rt_http_head_clear (struct rt_http_head *h);

/**
 * rt_http_head_upstream - the head to send upstream for a proxied request
 * @buf:     the bytes @h was parsed from
 * @h:       a complete, non-CONNECT head
 * @out_len: set to the length of the result
 *
 * "METHOD path HTTP/1.1", the original header lines minus
 * Proxy-Connection, Proxy-Authorization, Connection and Keep-Alive, a Host
 * line when the request had none, "Connection: close", the blank line.
 * Return: malloc'd bytes (NUL-terminated too), or NULL when out of memory or
 * for CONNECT.
 */
char *rt_http_head_upstream (const char *buf, const struct rt_http_head *h, size_t *out_len);

#endif
