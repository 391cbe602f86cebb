/* refused.c - the one list of always-refused destinations (see
   refused.h).  Each range says why; docs/ARCHITECTURE.md lists them.

   The nftables table holds only the IPv4 list: the guest has no IPv6 path
   at all (its "guard" chain drops every IPv6 packet from the tap), which
   refuses 6to4, Teredo, NAT64 and every other IPv6 form wholesale in the
   kernel.  IPv6 destinations reach the host only as names or literals the
   proxy dials, and those are judged here, unwrapped to the IPv4 address
   they carry.  */
#include <string.h>

#include "net/refused.h"
#include "net/sockaddr.h"

struct range
{
  uint8_t net[4];
  uint8_t plen;
};

static const struct range refused_v4[] = {
  { { 0, 0, 0, 0 }, 8 },        /* "this network" */
  { { 10, 0, 0, 0 }, 8 },       /* RFC 1918 */
  { { 100, 64, 0, 0 }, 10 },    /* CGNAT */
  { { 127, 0, 0, 0 }, 8 },      /* loopback */
  { { 168, 63, 129, 16 }, 32 }, /* Azure's host endpoint (wire server) */
  { { 169, 254, 0, 0 }, 16 },   /* link-local, cloud metadata */
  { { 172, 16, 0, 0 }, 12 },    /* RFC 1918 */
  { { 192, 0, 0, 0 }, 24 },     /* IETF assignments: DS-Lite, NAT64 discovery */
  { { 192, 168, 0, 0 }, 16 },   /* RFC 1918 */
  { { 198, 18, 0, 0 }, 15 },    /* benchmarking, used inside clouds */
  { { 224, 0, 0, 0 }, 3 },      /* multicast, 240/4, broadcast */
};

struct range6
{
  uint8_t net[16];
  uint8_t plen;
};

static const struct range6 refused_v6[] = {
  { { 0 }, 96 },                                          /* ::, ::1, IPv4-compatible */
  { { 0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, 0x54 }, 128 }, /* AWS metadata fd00:ec2::254 (in ULA too) */
  { { 0xfc }, 7 },                                        /* ULA */
  { { 0xfe, 0x80 }, 10 },                                 /* link-local */
  { { 0xfe, 0xc0 }, 10 },                                 /* site-local */
  { { 0xff }, 8 },                                        /* multicast */
  { { 0x00, 0x64, 0xff, 0x9b, 0x00, 0x01 }, 48 },         /* local-use NAT64: any embedding */
};

/* The forms that carry an IPv4 address: the prefix, and where the
   address sits.  Teredo carries two (RFC 4380): its server, and its
   client inverted bit by bit.  */
static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
static const uint8_t translated[12] = { [8] = 0xff, [9] = 0xff }; /* SIIT, RFC 2765 */
static const uint8_t nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
static const uint8_t sixtofour[2] = { 0x20, 0x02 };
static const uint8_t teredo[4] = { 0x20, 0x01, 0x00, 0x00 };

static bool
v4_refused (const uint8_t b[4])
{
  for (size_t i = 0; i < sizeof refused_v4 / sizeof refused_v4[0]; i++)
    if (rt_addr_prefix_match (b, refused_v4[i].net, refused_v4[i].plen))
      return true;
  return false;
}

bool
rt_refused_ip (const uint8_t a[16])
{
  uint8_t client[4];

  if (memcmp (a, mapped, 12) == 0 || memcmp (a, translated, 12) == 0 || memcmp (a, nat64, 12) == 0)
    return v4_refused (a + 12);
  if (memcmp (a, sixtofour, 2) == 0)
    return v4_refused (a + 2);
  if (memcmp (a, teredo, 4) == 0)
    {
      for (int i = 0; i < 4; i++)
        client[i] = (uint8_t) ~a[12 + i];
      return v4_refused (a + 4) || v4_refused (client);
    }
  for (size_t i = 0; i < sizeof refused_v6 / sizeof refused_v6[0]; i++)
    if (rt_addr_prefix_match (a, refused_v6[i].net, refused_v6[i].plen))
      return true;
  return false;
}

void
rt_refused_v4_print (FILE *f)
{
  for (size_t i = 0; i < sizeof refused_v4 / sizeof refused_v4[0]; i++)
    {
      const uint8_t *n = refused_v4[i].net;
      fprintf (f, "%s%u.%u.%u.%u/%u", i ? ", " : "", n[0], n[1], n[2], n[3], refused_v4[i].plen);
    }
}
