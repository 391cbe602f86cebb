/* sniff-check.h - the properties of rt_sniff_name that both sniffer targets
   (fuzz-sniff-tls.c, fuzz-sniff-http.c) check.  */
#ifndef RT_SNIFF_CHECK_H
#define RT_SNIFF_CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* A name as sniff.h promises it: lowercase letters, digits, '-', '_', '.'
   (':' in an IPv6 literal), at most 253 bytes, no empty label, no trailing
   dot.  */
bool sniff_name_sane (const char *s);

/* rt_sniff_name on a copy of exactly @len bytes, checked: -1, 0, 1 or
   RT_SNIFF_UNREADABLE (only after a 0x16 first byte), a sane name exactly
   on 1, and an answer given on a prefix is final (more
   bytes never change it: the proxy decides on the first answer).  Returns
   the answer; *name (malloc'd) on 1, else NULL.  */
int sniff_name_checked (const unsigned char *buf, size_t len, char **name);

#endif
