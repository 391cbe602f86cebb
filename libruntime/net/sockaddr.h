/* sockaddr.h - the few socket-address helpers the egress proxy shares
   between its files: text, length, port, IP literals.  */
#ifndef RT_SOCKADDR_H
#define RT_SOCKADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* The address of @ss as text into @buf ("?" when it cannot be shown).  */
const char *rt_addr_text (const struct sockaddr_storage *ss, char *buf, size_t size);
/* The length of the sockaddr_in or sockaddr_in6 in @ss.  */
socklen_t rt_addr_len (const struct sockaddr_storage *ss);
void rt_addr_set_port (struct sockaddr_storage *ss, int port);
/* An IP literal (v6 without brackets) into @ss; false for a name.  */
bool rt_addr_parse_literal (const char *s, struct sockaddr_storage *ss);
/* The same IP (ports aside) in @a and @b.  */
bool rt_addr_same_ip (const struct sockaddr_storage *a, const struct sockaddr *b);
/* The first @plen bits of the addresses @a and @net (as bytes, network
   order) are the same.  */
bool rt_addr_prefix_match (const uint8_t *a, const uint8_t *net, int plen);

#endif
