/* fuzz-sniff-http.c - HTTP request heads (net/sniff.h) as the egress proxy
 * reads them from a hostile guest: rt_http_head_parse for forward-proxy
 * requests, rt_http_head_upstream for what goes on, rt_sniff_name for the
 * Host of a transparent connection.
 *
 * Input: the first bytes of the connection.
 *
 * Checked: -1, 0 or 1, the head zeroed unless 1; on 1 a method of token
 * characters, a sane host (sniff-check.c), a port in 1..65535, a head that
 * ends in the blank line within the bytes, a path exactly when not CONNECT;
 * a prefix that gets an answer gets the same one; rt_sniff_name names the
 * same host.  The upstream head: NULL for CONNECT, else "METHOD path
 * HTTP/1.1", no hop-by-hop or proxy header, "Connection: close" last, and
 * parsed again it names the same method, host, port and path.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "net/sniff.h"
#include "sniff-check.h"

static int
parse (const uint8_t *data, size_t len, struct rt_http_head *h)
{
  char *copy = malloc (len ? len : 1);
  int ret;

  FUZZ_CHECK (copy != NULL);
  memcpy (copy, data, len);
  ret = rt_http_head_parse (copy, len, h);
  free (copy);
  FUZZ_CHECK (ret == -1 || ret == 0 || ret == 1);
  if (ret != 1)
    FUZZ_CHECK (h->method == NULL && h->target == NULL && h->host == NULL && h->path == NULL && h->head_len == 0);
  return ret;
}

static bool
same_head (const struct rt_http_head *a, const struct rt_http_head *b)
{
  return strcmp (a->method, b->method) == 0 && strcmp (a->host, b->host) == 0 && a->port == b->port
         && (a->path == NULL) == (b->path == NULL) && (a->path == NULL || strcmp (a->path, b->path) == 0);
}

static bool
header_is (const char *line, const char *name)
{
  size_t n = strlen (name);
  return strncasecmp (line, name, n) == 0 && line[n] == ':';
}

static void
check_upstream (const uint8_t *data, const struct rt_http_head *h)
{
  size_t ul = 0, first;
  char *up = rt_http_head_upstream ((const char *) data, h, &ul), *line;
  struct rt_http_head again;

  if (h->path == NULL)
    {
      FUZZ_CHECK (up == NULL);
      return;
    }
  FUZZ_CHECK (up != NULL && strlen (up) == ul);
  first = strlen (h->method) + 1 + strlen (h->path);
  FUZZ_CHECK (ul > first + 11 && strncmp (up, h->method, strlen (h->method)) == 0);
  FUZZ_CHECK (strncmp (up + strlen (h->method) + 1, h->path, strlen (h->path)) == 0);
  FUZZ_CHECK (strncmp (up + first, " HTTP/1.1\r\n", 11) == 0);
  FUZZ_CHECK (ul >= 23 && strcmp (up + ul - 23, "\r\nConnection: close\r\n\r\n") == 0);
  for (line = strstr (up, "\r\n") + 2; line < up + ul - 21; line = strstr (line, "\r\n") + 2)
    FUZZ_CHECK (!header_is (line, "connection") && !header_is (line, "proxy-connection")
                && !header_is (line, "proxy-authorization") && !header_is (line, "keep-alive"));
  if (ul <= RT_SNIFF_MAX)
    {
      FUZZ_CHECK (parse ((const uint8_t *) up, ul, &again) == 1);
      FUZZ_CHECK (same_head (h, &again) && again.head_len == ul);
      rt_http_head_clear (&again);
    }
  free (up);
}

static void
check_head (const uint8_t *data, size_t size, const struct rt_http_head *h)
{
  static const char tchar[] = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  size_t mlen = strlen (h->method);

  FUZZ_CHECK (mlen > 0 && strspn (h->method, tchar) == mlen);
  FUZZ_CHECK (h->target != NULL && sniff_name_sane (h->host));
  FUZZ_CHECK (h->port >= 1 && h->port <= 65535);
  FUZZ_CHECK (h->head_len >= 4 && h->head_len <= size && h->head_len <= RT_SNIFF_MAX);
  FUZZ_CHECK (memcmp (data + h->head_len - 4, "\r\n\r\n", 4) == 0);
  FUZZ_CHECK ((h->path == NULL) == (strcmp (h->method, "CONNECT") == 0));
  FUZZ_CHECK (h->path == NULL || h->path[0] == '/');
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct rt_http_head h, p;
  char *name = NULL;
  int ret = parse (data, size, &h), pret, sret;
  size_t cut = size > 0 ? (data[size - 1] * 257u + size) % size : 0;

  if (ret == 1)
    check_head (data, size, &h);
  /* An answer on a prefix is final.  */
  pret = parse (data, cut, &p);
  if (pret != -1)
    {
      FUZZ_CHECK (pret == ret);
      FUZZ_CHECK (ret != 1 || same_head (&h, &p));
    }
  rt_http_head_clear (&p);
  sret = sniff_name_checked (data, size, &name);
  if (ret == 1 && data[0] != 0x16)
    FUZZ_CHECK (sret == 1 && strcmp (name, h.host) == 0);
  /* rt_sniff_is_http: a parsed head is HTTP; an answer on a prefix is
     final.  */
  {
    int ih = rt_sniff_is_http (data, size), ip = rt_sniff_is_http (data, cut);
    FUZZ_CHECK (ih >= -1 && ih <= 1);
    FUZZ_CHECK (ret != 1 || ih == 1);
    /* A method and a space (after empty lines) is HTTP whatever follows:
       the strict checker then sees every request.  */
    {
      size_t i = 0, m;
      while (i < size && (data[i] == '\r' || data[i] == '\n'))
        i++;
      m = i;
      while (i < size && ((data[i] >= 'A' && data[i] <= 'Z') || data[i] == '_' || data[i] == '-'))
        i++;
      if (i > m && i < size && data[i] == ' ')
        FUZZ_CHECK (ih == 1);
    }
    FUZZ_CHECK (ip == -1 || ip == ih);
  }
  free (name);
  if (ret == 1)
    check_upstream (data, &h);
  rt_http_head_clear (&h);
  return 0;
}
