/* sockaddr.c - socket-address helpers of the egress proxy (see
   sockaddr.h).  */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "net/sockaddr.h"

const char *
rt_addr_text (const struct sockaddr_storage *ss, char *buf, size_t size)
{
  const void *a = ss->ss_family == AF_INET ? (const void *) &((const struct sockaddr_in *) ss)->sin_addr
                                           : (const void *) &((const struct sockaddr_in6 *) ss)->sin6_addr;
  if (inet_ntop (ss->ss_family, a, buf, size) == NULL)
    snprintf (buf, size, "?");
  return buf;
}

socklen_t
rt_addr_len (const struct sockaddr_storage *ss)
{
  return ss->ss_family == AF_INET ? sizeof (struct sockaddr_in) : sizeof (struct sockaddr_in6);
}

void
rt_addr_set_port (struct sockaddr_storage *ss, int port)
{
  if (ss->ss_family == AF_INET)
    ((struct sockaddr_in *) ss)->sin_port = htons (port);
  else
    ((struct sockaddr_in6 *) ss)->sin6_port = htons (port);
}

bool
rt_addr_parse_literal (const char *s, struct sockaddr_storage *ss)
{
  struct sockaddr_in *in = (struct sockaddr_in *) ss;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) ss;

  memset (ss, 0, sizeof *ss);
  if (inet_pton (AF_INET, s, &in->sin_addr) == 1)
    {
      in->sin_family = AF_INET;
      return true;
    }
  if (inet_pton (AF_INET6, s, &in6->sin6_addr) == 1)
    {
      in6->sin6_family = AF_INET6;
      return true;
    }
  return false;
}

bool
rt_addr_same_ip (const struct sockaddr_storage *a, const struct sockaddr *b)
{
  if (a->ss_family != b->sa_family)
    return false;
  if (a->ss_family == AF_INET)
    return ((const struct sockaddr_in *) a)->sin_addr.s_addr == ((const struct sockaddr_in *) b)->sin_addr.s_addr;
  return memcmp (&((const struct sockaddr_in6 *) a)->sin6_addr, &((const struct sockaddr_in6 *) b)->sin6_addr,
                 sizeof (struct in6_addr))
         == 0;
}

bool
rt_addr_prefix_match (const uint8_t *a, const uint8_t *net, int plen)
{
  int full = plen / 8, rest = plen % 8;
  uint8_t mask;

  if (memcmp (a, net, full) != 0)
    return false;
  if (rest == 0)
    return true;
  mask = (uint8_t) (0xff << (8 - rest));
  return (a[full] & mask) == (net[full] & mask);
}
