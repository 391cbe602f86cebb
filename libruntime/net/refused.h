/* refused.h - the addresses refused whatever the rules: one list, read by
   the nftables table (net/netns.c), and by the one decision
   (rt_egress_decide, net/egress.c) that judges the proxy's connections
   and the DNS answers.  */
#ifndef RT_REFUSED_H
#define RT_REFUSED_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Is @a (IPv6, or IPv4 widened to ::ffff:a.b.c.d) refused: in a refused
   range, or an IPv6 form that carries a refused IPv4 address (IPv4-mapped, IPv4-translated,
   NAT64 64:ff9b::/96, 6to4 2002::/16, Teredo 2001::/32 with its server or
   its client).  */
bool rt_refused_ip (const uint8_t a[16]);

/* The refused IPv4 ranges as nftables set elements, "0.0.0.0/8, 10.0.0.0/8,
   …", written to @f.  */
void rt_refused_v4_print (FILE *f);

#endif
