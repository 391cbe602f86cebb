/* sniff.c - TLS SNI and HTTP request heads out of a guest's first bytes.  */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/sniff.h"
#include "common/util.h"

#define TLS_RECORD_HANDSHAKE 0x16
#define TLS_CLIENT_HELLO 1
#define TLS_EXT_SERVER_NAME 0
#define TLS_SNI_HOST_NAME 0
#define TLS_RECORD_MAX 16384
#define HOST_MAX 253
#define METHOD_MAX 20

/* A host name as it may appear in SNI or Host: letters, digits, '-', '_'
   (real names carry it) and '.', no empty label, at most one trailing dot.
   Returns it lowercased without the dot, or NULL.  */
static char *
host_dup (const unsigned char *s, size_t n)
{
  char *out;
  size_t label = 0;

  if (n > 0 && s[n - 1] == '.')
    n--;
  if (n == 0 || n > HOST_MAX)
    return NULL;
  for (size_t i = 0; i < n; i++)
    {
      unsigned char c = s[i];
      if (c == '.')
        {
          if (label == 0)
            return NULL;
          label = 0;
        }
      else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_')
        label++;
      else
        return NULL;
    }
  /* "a.com.." would come out as "a.com.": the last label is empty too.  */
  if (label == 0)
    return NULL;
  out = malloc (n + 1);
  if (out == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++)
    out[i] = (s[i] >= 'A' && s[i] <= 'Z') ? s[i] + ('a' - 'A') : s[i];
  out[n] = '\0';
  return out;
}

/* A bounds-checked reader over untrusted bytes: every get fails once the
   data runs out, so the parsers below never index by hand.  */
struct cur
{
  const unsigned char *p;
  size_t n;
};

static bool
get_u8 (struct cur *c, size_t *v)
{
  if (c->n < 1)
    return false;
  *v = c->p[0];
  c->p++;
  c->n--;
  return true;
}

static bool
get_u16 (struct cur *c, size_t *v)
{
  if (c->n < 2)
    return false;
  *v = ((size_t) c->p[0] << 8) | c->p[1];
  c->p += 2;
  c->n -= 2;
  return true;
}

/* Splits @len bytes off the front of @c into @sub.  */
static bool
get_sub (struct cur *c, size_t len, struct cur *sub)
{
  if (c->n < len)
    return false;
  sub->p = c->p;
  sub->n = len;
  c->p += len;
  c->n -= len;
  return true;
}

/* The SNI of a ClientHello body (after the 4-byte handshake header): 1, 0
   when the hello, read whole, has none, or RT_SNIFF_UNREADABLE when any
   part of it is malformed (a server might still find a name in it).  */
static int
client_hello_sni (const unsigned char *body, size_t len, char **name)
{
  struct cur c = { body, len }, skip, exts;
  size_t n, type;
  bool seen_sni = false;
  char *host = NULL;

  if (!get_sub (&c, 2 + 32, &skip)) /* legacy_version, random */
    return RT_SNIFF_UNREADABLE;
  if (!get_u8 (&c, &n) || n > 32 || !get_sub (&c, n, &skip)) /* session id */
    return RT_SNIFF_UNREADABLE;
  if (!get_u16 (&c, &n) || n < 2 || n % 2 != 0 || !get_sub (&c, n, &skip)) /* cipher suites */
    return RT_SNIFF_UNREADABLE;
  if (!get_u8 (&c, &n) || n < 1 || !get_sub (&c, n, &skip)) /* compression methods */
    return RT_SNIFF_UNREADABLE;
  /* No extensions at all: a valid (ancient) hello without SNI.  */
  if (c.n == 0)
    return 0;
  if (!get_u16 (&c, &n) || n != c.n || !get_sub (&c, n, &exts))
    return RT_SNIFF_UNREADABLE;

  while (exts.n > 0)
    {
      struct cur ext, list, entry;

      if (!get_u16 (&exts, &type) || !get_u16 (&exts, &n) || !get_sub (&exts, n, &ext))
        goto malformed;
      if (type != TLS_EXT_SERVER_NAME)
        continue;
      /* RFC 8446 4.2: one extension of a type; two could be read two ways.  */
      if (seen_sni)
        goto malformed;
      seen_sni = true;
      if (!get_u16 (&ext, &n) || n != ext.n || n == 0 || !get_sub (&ext, n, &list))
        goto malformed;
      while (list.n > 0)
        {
          size_t name_type;
          if (!get_u8 (&list, &name_type) || !get_u16 (&list, &n) || !get_sub (&list, n, &entry))
            goto malformed;
          if (name_type != TLS_SNI_HOST_NAME)
            continue;
          /* RFC 6066 3: at most one name of a type.  */
          if (host != NULL)
            goto malformed;
          host = host_dup (entry.p, entry.n);
          if (host == NULL)
            goto malformed;
        }
    }
  if (host == NULL)
    return 0;
  *name = host;
  return 1;

malformed:
  free (host);
  return RT_SNIFF_UNREADABLE;
}

/* Reassembles the ClientHello from however many handshake records carry
   it, then reads its SNI.  Past the first byte (a handshake record) every
   failure is RT_SNIFF_UNREADABLE, never 0: a server may read a name out of
   what this cannot (a record version it tolerates, a hello beyond
   RT_SNIFF_MAX: OpenSSL takes 128 KiB), and "no name" would let the
   address's name decide.  */
static int
sniff_tls (const unsigned char *buf, size_t len, bool capped, char **name)
{
  unsigned char hs[RT_SNIFF_MAX];
  size_t pos = 0, have = 0, want = 0;
  const int bad = RT_SNIFF_UNREADABLE, more = capped ? bad : -1;

  for (;;)
    {
      size_t rec_len, take;

      /* Check each header byte as it arrives: garbage is told at once.  */
      if (pos >= len)
        return more;
      if (buf[pos] != TLS_RECORD_HANDSHAKE)
        return bad;
      if (pos + 1 >= len)
        return more;
      if (buf[pos + 1] != 3)
        return bad;
      if (pos + 2 >= len)
        return more;
      if (buf[pos + 2] > 4)
        return bad;
      if (pos + 4 >= len)
        return more;
      rec_len = ((size_t) buf[pos + 3] << 8) | buf[pos + 4];
      if (rec_len == 0 || rec_len > TLS_RECORD_MAX)
        return bad;
      pos += 5;
      take = len - pos < rec_len ? len - pos : rec_len;
      /* have + take <= len <= sizeof (hs): the input was capped.  */
      memcpy (hs + have, buf + pos, take);
      have += take;
      pos += take;

      if (have >= 1 && hs[0] != TLS_CLIENT_HELLO)
        return bad;
      if (want == 0 && have >= 4)
        {
          want = 4 + (((size_t) hs[1] << 16) | ((size_t) hs[2] << 8) | hs[3]);
          /* It could never arrive within the bytes we look at.  */
          if (want > RT_SNIFF_MAX - 5)
            return bad;
        }
      if (want != 0 && have >= want)
        return client_hello_sni (hs + 4, want - 4, name);
      if (take < rec_len)
        return more;
    }
}

static bool
is_tchar (unsigned char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
         || (c != 0 && strchr ("!#$%&'*+-.^_`|~", c) != NULL);
}

/* "host", "host:port", "[v6]" or "[v6]:port" into a lowercased host and a
   port.  @port is left alone when none is given; @need_port refuses that.  */
static bool
parse_authority (const char *s, size_t n, bool need_port, char **host, int *port)
{
  const char *colon = NULL;
  size_t hn;
  cleanup_free char *h = NULL;

  if (n == 0 || memchr (s, '@', n) != NULL)
    return false;
  if (s[0] == '[')
    {
      const char *close = memchr (s, ']', n);
      char buf[INET6_ADDRSTRLEN + 1];
      unsigned char bin[16];

      if (close == NULL)
        return false;
      hn = close - s - 1;
      if (hn == 0 || hn >= sizeof (buf))
        return false;
      memcpy (buf, s + 1, hn);
      buf[hn] = '\0';
      if (inet_pton (AF_INET6, buf, bin) != 1)
        return false;
      h = malloc (INET6_ADDRSTRLEN);
      if (h == NULL || inet_ntop (AF_INET6, bin, h, INET6_ADDRSTRLEN) == NULL)
        return false;
      if ((size_t) (close + 1 - s) < n)
        {
          if (close[1] != ':')
            return false;
          colon = close + 1;
        }
    }
  else
    {
      colon = memchr (s, ':', n);
      hn = colon ? (size_t) (colon - s) : n;
      h = host_dup ((const unsigned char *) s, hn);
      if (h == NULL)
        return false;
    }

  if (colon)
    {
      size_t pn = n - (colon + 1 - s);
      int p = 0;

      if (pn == 0 || pn > 5)
        return false;
      for (size_t i = 0; i < pn; i++)
        {
          if (colon[1 + i] < '0' || colon[1 + i] > '9')
            return false;
          p = p * 10 + (colon[1 + i] - '0');
        }
      if (p < 1 || p > 65535)
        return false;
      *port = p;
    }
  else if (need_port)
    return false;
  *host = steal_pointer (&h);
  return true;
}

static char *
dup_n (const char *s, size_t n)
{
  char *d = malloc (n + 1);

  if (d)
    {
      memcpy (d, s, n);
      d[n] = '\0';
    }
  return d;
}

void
rt_http_head_clear (struct rt_http_head *h)
{
  free (h->method);
  free (h->target);
  free (h->host);
  free (h->path);
  memset (h, 0, sizeof (*h));
}

/* Fills @h from the validated pieces of a complete head.  */
static int
head_fill (const char *buf, size_t mlen, size_t tstart, size_t tlen, const char *hostv, size_t hostn,
           struct rt_http_head *h)
{
  const char *t = buf + tstart;

  h->method = dup_n (buf, mlen);
  h->target = dup_n (t, tlen);
  if (h->method == NULL || h->target == NULL)
    return 0;
  if (memchr (t, '#', tlen) != NULL)
    return 0;
  h->port = 80;

  if (strcmp (h->method, "CONNECT") == 0)
    {
      /* The tunnel goes where the authority says; a Host header has no say.  */
      if (!parse_authority (t, tlen, true, &h->host, &h->port))
        return 0;
      return 1;
    }

  if (t[0] == '/')
    {
      if (hostv == NULL || !parse_authority (hostv, hostn, false, &h->host, &h->port))
        return 0;
      h->path = dup_n (t, tlen);
      return h->path != NULL;
    }

  if (tlen >= 7 && strncasecmp (t, "http://", 7) == 0)
    {
      const char *a = t + 7, *end = t + tlen, *rest = a;

      while (rest < end && *rest != '/' && *rest != '?')
        rest++;
      if (!parse_authority (a, rest - a, false, &h->host, &h->port))
        return 0;
      if (rest == end)
        h->path = strdup ("/");
      else if (*rest == '?')
        h->path = rt_strdup_printf ("/%.*s", (int) (end - rest), rest);
      else
        h->path = dup_n (rest, end - rest);
      if (h->path == NULL)
        return 0;
      /* The upstream server reads Host, the proxy dials the target: they
         must agree or the request reaches a host nobody judged.  */
      if (hostv != NULL)
        {
          cleanup_free char *hh = NULL;
          int hp = 80;
          if (!parse_authority (hostv, hostn, false, &hh, &hp))
            return 0;
          if (strcmp (hh, h->host) != 0 || hp != h->port)
            return 0;
        }
      return 1;
    }

  /* https:// (that would be CONNECT), other schemes, "*".  */
  return 0;
}

/* The scanners of a head return 1 to go on, 0 for malformed, -1 when more
   bytes are needed.  */

/* "METHOD SP target SP HTTP/1.d", checked byte by byte so that garbage is
   told at once; *@ip is then past it.  */
static int
scan_request_line (const unsigned char *p, size_t len, size_t *ip, size_t *mlen, size_t *tstart, size_t *tlen)
{
  static const char version[] = "HTTP/1.";
  size_t i = 0;

  for (; i < len && p[i] != ' '; i++)
    if (p[i] < 'A' || p[i] > 'Z' || i >= METHOD_MAX)
      return 0;
  if (i == len)
    return -1;
  if (i == 0)
    return 0;
  *mlen = i++;
  *tstart = i;
  for (; i < len && p[i] != ' '; i++)
    if (p[i] <= 0x20 || p[i] >= 0x7f)
      return 0;
  if (i == len)
    return -1;
  if (i == *tstart)
    return 0;
  *tlen = i++ - *tstart;
  for (size_t k = 0; k < sizeof (version) - 1; k++, i++)
    {
      if (i == len)
        return -1;
      if (p[i] != (unsigned char) version[k])
        return 0;
    }
  if (i == len)
    return -1;
  if (p[i] < '0' || p[i] > '9')
    return 0;
  *ip = i + 1;
  return 1;
}

/* From *@ip: each line, CRLF ends the head, else "name: value" then CRLF;
   *@ip is then past the blank line, and @hostv, @hostn the one Host
   value (trimmed) if any.  */
static int
scan_fields (const char *buf, size_t len, size_t *ip, const char **hostv, size_t *hostn)
{
  const unsigned char *p = (const unsigned char *) buf;
  size_t i = *ip;

  for (;;)
    {
      size_t nstart, nlen, vstart, vend;

      if (i == len)
        return -1;
      if (p[i] != '\r')
        return 0;
      if (++i == len)
        return -1;
      if (p[i++] != '\n')
        return 0;
      if (i == len)
        return -1;
      if (p[i] == '\r')
        {
          if (++i == len)
            return -1;
          if (p[i++] != '\n')
            return 0;
          *ip = i;
          return 1;
        }
      /* No obs-fold, no space before the colon: both are read two ways.  */
      nstart = i;
      for (; i < len && p[i] != ':'; i++)
        if (!is_tchar (p[i]))
          return 0;
      if (i == len)
        return -1;
      if (i == nstart)
        return 0;
      nlen = i - nstart;
      vstart = ++i;
      for (; i < len && p[i] != '\r'; i++)
        if ((p[i] < 0x20 && p[i] != '\t') || p[i] == 0x7f)
          return 0;
      if (i == len)
        return -1;
      if (nlen == 4 && strncasecmp (buf + nstart, "host", 4) == 0)
        {
          if (*hostv != NULL)
            return 0;
          vend = i;
          while (vstart < vend && (p[vstart] == ' ' || p[vstart] == '\t'))
            vstart++;
          while (vend > vstart && (p[vend - 1] == ' ' || p[vend - 1] == '\t'))
            vend--;
          *hostv = buf + vstart;
          *hostn = vend - vstart;
        }
    }
}

int
rt_http_head_parse (const char *buf, size_t len, struct rt_http_head *h)
{
  const char *hostv = NULL;
  size_t i = 0, mlen = 0, tstart = 0, tlen = 0, hostn = 0;
  bool capped = len >= RT_SNIFF_MAX;
  const int more = capped ? 0 : -1;
  int ret;

  memset (h, 0, sizeof (*h));
  if (len > RT_SNIFF_MAX)
    len = RT_SNIFF_MAX;

  ret = scan_request_line ((const unsigned char *) buf, len, &i, &mlen, &tstart, &tlen);
  if (ret == 1)
    ret = scan_fields (buf, len, &i, &hostv, &hostn);
  if (ret != 1)
    return ret < 0 ? more : 0;

  ret = head_fill (buf, mlen, tstart, tlen, hostv, hostn, h);
  if (ret != 1)
    {
      rt_http_head_clear (h);
      return 0;
    }
  h->head_len = i;
  return 1;
}

int
rt_sniff_name (const unsigned char *buf, size_t len, char **name)
{
  struct rt_http_head h;
  int ret;

  if (len == 0)
    return -1;
  if (buf[0] == TLS_RECORD_HANDSHAKE)
    return sniff_tls (buf, len > RT_SNIFF_MAX ? RT_SNIFF_MAX : len, len >= RT_SNIFF_MAX, name);
  ret = rt_http_head_parse ((const char *) buf, len, &h);
  if (ret != 1)
    return ret;
  *name = steal_pointer (&h.host);
  rt_http_head_clear (&h);
  return 1;
}

int
rt_sniff_is_http (const unsigned char *buf, size_t len)
{
  size_t i = 0, start;

  if (len > RT_SNIFF_MAX)
    len = RT_SNIFF_MAX;
  /* Servers skip empty lines before a request (RFC 9112 2.2).  */
  while (i < len && (buf[i] == '\r' || buf[i] == '\n'))
    i++;
  /* A method as servers take it, then blank space: HTTP, whatever the
     rest of the line holds (a lenient server may read a target or version
     the strict checker refuses, and that checker is what this decides
     on).  Anything else is not, at once: a client speaking first in
     another protocol waits for nothing.  */
  for (start = i; i < len && ((buf[i] >= 'A' && buf[i] <= 'Z') || buf[i] == '_' || buf[i] == '-'); i++)
    ;
  if (i == len)
    return len == RT_SNIFF_MAX ? 1 : -1;
  return i > start && (buf[i] == ' ' || buf[i] == '\t');
}

static bool
hop_by_hop (const char *name, size_t n)
{
  static const char *const drop[] = { "proxy-connection", "proxy-authorization", "connection", "keep-alive" };

  for (size_t i = 0; i < sizeof (drop) / sizeof (drop[0]); i++)
    if (strlen (drop[i]) == n && strncasecmp (name, drop[i], n) == 0)
      return true;
  return false;
}

char *
rt_http_head_upstream (const char *buf, const struct rt_http_head *h, size_t *out_len)
{
  const char *line, *end = buf + h->head_len - 2; /* before the blank line */
  cleanup_free char *host_line = NULL;
  char *out, *o;
  bool has_host = false;
  size_t cap;

  if (h->path == NULL || h->method == NULL || h->head_len < 4)
    return NULL;
  line = memchr (buf, '\n', h->head_len);
  if (line == NULL)
    return NULL;
  line++;

  cap = strlen (h->method) + strlen (h->path) + h->head_len + 64;
  out = malloc (cap);
  if (out == NULL)
    return NULL;
  o = out + sprintf (out, "%s %s HTTP/1.1\r\n", h->method, h->path);
  while (line < end)
    {
      /* The head was validated, each line ends in CRLF before @end; the
         checks only guard against a caller mixing up buffers.  */
      const char *eol = memchr (line, '\n', end - line);
      const char *colon = eol ? memchr (line, ':', eol - line) : NULL;
      size_t n;

      if (colon == NULL)
        {
          free (out);
          return NULL;
        }
      n = colon - line;

      if (n == 4 && strncasecmp (line, "host", 4) == 0)
        has_host = true;
      if (!hop_by_hop (line, n))
        {
          memcpy (o, line, eol + 1 - line);
          o += eol + 1 - line;
        }
      line = eol + 1;
    }
  if (!has_host)
    {
      /* HTTP/1.1 needs one; an HTTP/1.0 client may have sent none.  */
      bool v6 = strchr (h->host, ':') != NULL;
      host_line = rt_strdup_printf ("Host: %s%s%s", v6 ? "[" : "", h->host, v6 ? "]" : "");
      if (host_line == NULL)
        {
          free (out);
          return NULL;
        }
      size_t used = o - out;
      char *grown = realloc (out, cap + strlen (host_line) + 16);
      if (grown == NULL)
        {
          free (out);
          return NULL;
        }
      out = grown;
      o = out + used;
      o += sprintf (o, "%s", host_line);
      if (h->port != 80)
        o += sprintf (o, ":%d", h->port);
      o += sprintf (o, "\r\n");
    }
  o += sprintf (o, "Connection: close\r\n\r\n");
  *out_len = o - out;
  return out;
}
