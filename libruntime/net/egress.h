/* egress.h - the sandbox network rules: what an --allow/--deny entry may
   be, and the one decision every egress path (DNS, proxy, firewall) takes
   for a destination.  Pure code, no I/O.
 *
 * internet false refuses everything.  An empty allow list means the
 * public internet; a non-empty one only those destinations.  deny always
 * wins over allow.  Some addresses and ports are refused whatever the
 * rules say (rt_egress_address_refused, SMTP), and trial sandboxes may
 * reach ports 80 and 443 only.
 */
#ifndef RT_EGRESS_H
#define RT_EGRESS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "runtime.h"

/* Entries per list, so a rule set stays cheap to check per connection.  */
#define RT_EGRESS_MAX_ENTRIES 256

/**
 * rt_egress_rules - one sandbox's network rules
 * @internet: false refuses every destination
 * @trial:    ports 80 and 443 only
 * @allow:    normalized entries (rt_egress_entry_normalize), NULL-terminated;
 *            NULL or empty means the public internet
 * @deny:     likewise; always wins over @allow
 */
struct rt_egress_rules
{
  bool internet;
  bool trial;
  char **allow;
  char **deny;
};

/**
 * rt_egress_entry_normalize - validate one --allow/--deny entry
 * @in:  "host.name", "*.domain" (its subdomains at any depth, not the
 *       domain itself), an IPv4/IPv6 address, or a CIDR "addr/len"
 * @out: the canonical text, malloc'd: host names lowercased without a
 *       trailing dot, addresses as inet_ntop writes them
 * @err: "invalid_request" saying what is wrong (a CIDR with host bits set
 *       names the network meant)
 * Return: 0, or <0 with @err set.
 */
int rt_egress_entry_normalize (const char *in, char **out, rt_error **err);

/** rt_egress_rules_clear - free the lists; leaves internet=true, trial=false.  */
void rt_egress_rules_clear (struct rt_egress_rules *r);

/**
 * rt_egress_rules_copy - deep copy
 * @dst: overwritten (not freed first); untouched on failure
 * Return: 0, or <0 with @err set (out of memory).
 */
int rt_egress_rules_copy (const struct rt_egress_rules *src, struct rt_egress_rules *dst, rt_error **err);

/**
 * rt_egress_rules_from_json - {"internet":bool,"allow":[…],"deny":[…]}
 * @obj: the object; NULL means the defaults.  A missing "internet" is true,
 *       missing lists are empty; any other key is refused, so a typo cannot
 *       silently open the network
 * @r:   overwritten (not freed first) on success, untouched on failure;
 *       trial is set false
 * @err: "invalid_request": wrong types, a bad entry, more than
 *       RT_EGRESS_MAX_ENTRIES in a list
 * Return: 0, or <0 with @err set.
 */
int rt_egress_rules_from_json (struct json_object *obj, struct rt_egress_rules *r, rt_error **err);

/** rt_egress_rules_to_json - the same shape, both lists always present (no
    "trial" key); NULL when out of memory.  */
struct json_object *rt_egress_rules_to_json (const struct rt_egress_rules *r);

enum rt_egress_verdict
{
  RT_EGRESS_ALLOWED = 0,
  RT_EGRESS_INTERNET_OFF,
  RT_EGRESS_DENIED,       /* matched a deny entry */
  RT_EGRESS_NOT_ALLOWED,  /* allow list non-empty and nothing matched */
  RT_EGRESS_PRIVATE,      /* always-refused address range */
  RT_EGRESS_BLOCKED_PORT, /* SMTP */
  RT_EGRESS_TRIAL_PORT,
  RT_EGRESS_NAME_MISMATCH, /* the SNI or Host names another host than the address is for */
};

/** rt_egress_verdict_str - "allowed", "internet_off", "denied",
    "not_allowed", "private_address", "blocked_port", "trial_port",
    "name_mismatch".  */
const char *rt_egress_verdict_str (enum rt_egress_verdict v);

/**
 * rt_egress_decide - may the sandbox reach this destination?
 * @r:    the rules
 * @name: the host name the guest asked for (DNS query, CONNECT target, TLS
 *        SNI, HTTP Host) or NULL.  Case and one trailing dot do not matter.
 *        A name that is an IP literal (inet_aton forms such as "127.1"
 *        included: resolvers take them) is judged as an address, and is
 *        the address when @addr is NULL.  A name that is not a well-formed
 *        host name ([A-Za-z0-9_-] labels) is NOT_ALLOWED: what cannot be
 *        judged must not be resolved
 * @addr: the address to be dialled (sockaddr_in/in6), or NULL when not
 *        known yet
 * @port: the destination port, 0 when unknown
 *
 * Order: internet off; SMTP and trial ports (when @port != 0); refused
 * address ranges; deny (name or address); empty allow list; allow (name or
 * address).  With no address known and an allow list holding IP/CIDR
 * entries, a name matching no name entry is ALLOWED provisionally: the
 * caller must decide again for each address it resolves to.
 * Return: the verdict.
 */
enum rt_egress_verdict rt_egress_decide (const struct rt_egress_rules *r, const char *name,
                                         const struct sockaddr *addr, int port);

/**
 * rt_egress_address_refused - is @addr in the ranges refused whatever the
 * rules (the one list in net/refused.c): 0/8, 10/8, 100.64/10, 127/8,
 * 168.63.129.16 (Azure's host endpoint), 169.254/16 (cloud metadata),
 * 172.16/12, 192.0.0/24, 192.168/16, 198.18/15, 224/4 multicast, 240/4
 * reserved and broadcast; ::/96 (::, ::1 and the deprecated
 * IPv4-compatible form), fc00::/7 (with AWS's fd00:ec2::254), fe80::/10,
 * fec0::/10, ff00::/8, the local-use NAT64 64:ff9b:1::/48; IPv4-mapped
 * ::ffff:0:0/96, NAT64 64:ff9b::/96, 6to4 2002::/16 and Teredo 2001::/32
 * (its server and its client) are judged by the IPv4 addresses they carry.
 * Families other than AF_INET/AF_INET6 are refused; NULL is not.
 */
bool rt_egress_address_refused (const struct sockaddr *addr);

/**
 * rt_egress_name_agrees - may a connection already dialled carry the name
 * its client sends in it?
 * @r:     the rules
 * @sent:  the TLS SNI or the HTTP Host its first bytes carry
 *         (rt_sniff_name), or NULL when they carry none
 * @known: the names the dialled address was resolved for, NULL-terminated:
 *         those the sandbox's DNS answered with it, the CONNECT target.
 *         NULL or empty: an address not learned from a name
 * @addr:  the dialled address
 * @port:  the dialled port
 *
 * Behind one address (a CDN, a shared front end) the SNI or Host picks the
 * site, so it must be the name the address was judged for, or another
 * name the address was resolved for, and allowed now (the rules may have
 * changed since the answer).  No @sent: the address and its names were
 * judged when dialled.  An IP literal must be @addr itself.  An address
 * not learned from a name: @sent is judged by the rules at @addr.  Case
 * and one trailing dot do not matter.
 * Return: RT_EGRESS_ALLOWED; RT_EGRESS_NAME_MISMATCH when @sent is none of
 * @known (or another address); else the rules' verdict for @sent.
 */
enum rt_egress_verdict rt_egress_name_agrees (const struct rt_egress_rules *r, const char *sent,
                                              const char *const *known, const struct sockaddr *addr, int port);

/**
 * rt_egress_names_match - does @name match one of the host-name entries
 * @entries: normalized entries, NULL-terminated (address and CIDR entries
 *           never match: this is for names a certificate can prove)
 * @name:    as the guest sent it; case and one trailing dot do not matter
 */
bool rt_egress_names_match (char *const *entries, const char *name);

#endif
