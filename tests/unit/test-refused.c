/* test-refused.c - the one list of always-refused addresses
   (net/refused.c): every range at its edges, every IPv6 form that wraps
   an IPv4 address (mapped, translated, NAT64, 6to4, Teredo server and client), and
   the same list as the nftables set.  Addresses are data only: nothing is
   sent anywhere.  */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "net/egress.h"
#include "net/refused.h"
#include "tap.h"
#include "common/util.h"

enum form
{
  MAPPED,
  TRANSLATED,
  NAT64,
  SIXTOFOUR,
  TEREDO_SERVER,
  TEREDO_CLIENT,
  FORMS
};

static const char *const form_name[] = { "IPv4-mapped", "IPv4-translated", "NAT64", "6to4", "Teredo server", "Teredo client" };

static void
v4 (const char *text, uint8_t out[4])
{
  if (inet_pton (AF_INET, text, out) != 1)
    abort ();
}

/* @b carried by @form (the other half of a Teredo address public).  */
static void
wrap (enum form form, const uint8_t b[4], uint8_t a[16])
{
  static const uint8_t public_v4[4] = { 192, 0, 2, 45 };

  memset (a, 0, 16);
  switch (form)
    {
      case MAPPED:
        a[10] = a[11] = 0xff;
        memcpy (a + 12, b, 4);
        break;
      case TRANSLATED:
        a[8] = a[9] = 0xff;
        memcpy (a + 12, b, 4);
        break;
      case NAT64:
        a[1] = 0x64, a[2] = 0xff, a[3] = 0x9b;
        memcpy (a + 12, b, 4);
        break;
      case SIXTOFOUR:
        a[0] = 0x20, a[1] = 0x02;
        memcpy (a + 2, b, 4);
        a[15] = 1;
        break;
      case TEREDO_SERVER:
      case TEREDO_CLIENT:
        a[0] = 0x20, a[1] = 0x01;
        memcpy (a + 4, form == TEREDO_SERVER ? b : public_v4, 4);
        for (int i = 0; i < 4; i++)
          a[12 + i] = (uint8_t) ~(form == TEREDO_CLIENT ? b : public_v4)[i];
        break;
      case FORMS:
        abort ();
    }
}

static const struct sockaddr *
sa6 (const uint8_t a[16], struct sockaddr_in6 *s6)
{
  memset (s6, 0, sizeof *s6);
  s6->sin6_family = AF_INET6;
  memcpy (&s6->sin6_addr, a, 16);
  return (const struct sockaddr *) s6;
}

static bool
v6_refused (const char *text)
{
  struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };

  if (inet_pton (AF_INET6, text, &s6.sin6_addr) != 1)
    abort ();
  return rt_egress_address_refused ((const struct sockaddr *) &s6);
}

/* @text refused (or not) as IPv4, and in every wrapped form.  */
static void
check_v4 (const char *text, bool refused)
{
  struct sockaddr_in s4 = { .sin_family = AF_INET };
  struct sockaddr_in6 s6;
  uint8_t b[4], a[16];

  v4 (text, b);
  memcpy (&s4.sin_addr, b, 4);
  ok (rt_egress_address_refused ((const struct sockaddr *) &s4) == refused, "%s is %s", text,
      refused ? "refused" : "allowed");
  for (int f = 0; f < FORMS; f++)
    {
      wrap (f, b, a);
      ok (rt_egress_address_refused (sa6 (a, &s6)) == refused, "%s in %s form is %s", text, form_name[f],
          refused ? "refused" : "allowed");
    }
}

int
main (void)
{
  /* Each range at its first and last address; the addresses just
     outside, where they are public.  */
  static const char *const refused[] = {
    "0.0.0.0",         "0.255.255.255",   "10.0.0.0",        "10.255.255.255",  "100.64.0.0",
    "100.127.255.255", "127.0.0.1",       "127.255.255.255", "168.63.129.16",   "169.254.0.0",
    "169.254.169.254", "169.254.255.255", "172.16.0.0",      "172.31.255.255",  "192.0.0.0",
    "192.0.0.170",     "192.0.0.255",     "192.168.0.0",     "192.168.255.255", "198.18.0.0",
    "198.19.255.255",  "224.0.0.1",       "239.255.255.250", "240.0.0.1",       "255.255.255.255",
  };
  static const char *const allowed[] = {
    "1.0.0.0",        "9.255.255.255",   "11.0.0.0",      "100.63.255.255",  "100.128.0.0",     "126.255.255.255",
    "128.0.0.0",      "168.63.129.15",   "168.63.129.17", "169.253.255.255", "169.255.0.0",     "172.15.255.255",
    "172.32.0.0",     "191.255.255.255", "192.0.1.0",     "192.0.2.1",       "192.167.255.255", "192.169.0.0",
    "198.17.255.255", "198.20.0.0",      "198.51.100.7",  "203.0.113.5",     "223.255.255.255",
  };
  static const char *const refused6[] = {
    "::",
    "::1",
    "::127.0.0.1",
    "::8.8.8.8",
    "fd00:ec2::254",
    "fc00::1",
    "fdff:ffff::1",
    "fe80::1",
    "febf::1",
    "fec0::1",
    "ff02::1",
    "64:ff9b:1::1",
    "64:ff9b:1:ffff::808:808",
    /* Teredo with both halves refused, and the 6to4 relay's own form.  */
    "2001:0:a00:1::f5ff:fffe",
    "2002:a9fe:a9fe::1",
  };
  static const char *const allowed6[] = {
    "2001:db8::1",
    "2606:4700::1111",
    "fe7f::1",
    "64:ff9b::808:808",
    "::ffff:8.8.8.8",

    /* RFC 4380's example: server 65.54.227.120, client 192.0.2.45.  */
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    "2002:c000:22d::1",
  };
  char *set = NULL;
  size_t len = 0;
  FILE *f;

  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
    check_v4 (refused[i], true);
  for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
    check_v4 (allowed[i], false);
  for (size_t i = 0; i < sizeof refused6 / sizeof refused6[0]; i++)
    ok (v6_refused (refused6[i]), "%s is refused", refused6[i]);
  for (size_t i = 0; i < sizeof allowed6 / sizeof allowed6[0]; i++)
    ok (!v6_refused (allowed6[i]), "%s is allowed", allowed6[i]);

  /* The decision refuses them too, whatever the rules allow.  */
  {
    struct rt_egress_rules open = { .internet = true };
    struct sockaddr_in6 s6;
    uint8_t b[4], a[16];

    v4 ("168.63.129.16", b);
    wrap (TEREDO_CLIENT, b, a);
    ok (rt_egress_decide (&open, "x.example.net", sa6 (a, &s6), 443) == RT_EGRESS_PRIVATE,
        "a name resolving to a Teredo-wrapped refused address is private_address");
    ok (rt_egress_decide (&open, "2002:c612:1::1", NULL, 443) == RT_EGRESS_PRIVATE,
        "a 6to4 literal of 198.18.0.1 is private_address");
    ok (rt_egress_decide (&open, "[fd00:ec2::254]", NULL, 80) == RT_EGRESS_PRIVATE,
        "AWS's IPv6 metadata literal is private_address");
  }

  /* The nftables set is the same list.  */
  f = open_memstream (&set, &len);
  if (f == NULL)
    abort ();
  rt_refused_v4_print (f);
  fclose (f);
  ok (strcmp (set,
              "0.0.0.0/8, 10.0.0.0/8, 100.64.0.0/10, 127.0.0.0/8, 168.63.129.16/32, 169.254.0.0/16, 172.16.0.0/12, "
              "192.0.0.0/24, 192.168.0.0/16, 198.18.0.0/15, 224.0.0.0/3")
          == 0,
      "the nftables set lists every IPv4 range (%s)", set);
  free (set);
  return tap_done ();
}
