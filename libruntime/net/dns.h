/* dns.h - names for the egress proxy: the resolver every dial goes
   through (RUNTIME_RESOLVE overrides first, then evdns from the host's
   namespace), the sandbox's own DNS server, and the cache of the names it
   gave out, which tells the transparent port what an address was meant
   to be.  */
#ifndef RT_DNS_H
#define RT_DNS_H

#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "common/util.h"

#define RT_DNS_CACHE 1024
#define RT_DNS_MAX_OVERRIDES 64
/* The guest's queries being resolved at once; more are answered REFUSED
   (and logged) at once, so a flood costs the monitor no more.  */
#define RT_DNS_MAX_IN_FLIGHT 64

struct rt_proxy;

struct rt_dns_entry
{
  struct in_addr addr;
  char name[256];
};

struct rt_dns_override
{
  char *name;
  struct sockaddr_storage addr;
};

/* What one proxy knows of names; lives inside struct rt_proxy.  */
struct rt_dns
{
  struct evdns_base *base;        /* the resolver */
  struct evdns_server_port *port; /* the sandbox's DNS server */
  struct rt_dns_entry cache[RT_DNS_CACHE];
  size_t cache_next;
  struct rt_dns_override overrides[RT_DNS_MAX_OVERRIDES];
  size_t n_overrides;
  size_t in_flight; /* the guest's queries being resolved */
};

/* RUNTIME_RESOLVE-style overrides ("name=addr,…"; NULL or "" for none).  */
int rt_dns_overrides_parse (struct rt_dns *d, const char *spec, rt_error **err);
/* The resolver, created in the caller's (the host's) namespace.  */
int rt_dns_resolver_new (struct rt_dns *d, struct event_base *base, rt_error **err);
/* Answers the guest's queries on @fd under @px's rules; false on failure
   (@fd is then still the caller's).  */
bool rt_dns_serve (struct rt_proxy *px, struct event_base *base, int fd);
/* Fails the lookups in flight (answering their queries), then closes the
   server and frees the overrides.  */
void rt_dns_clear (struct rt_dns *d);

/* The names this server gave out @ss for, newest first, at most @max of
   them (pointers into the cache, valid until its next answer).  Returns
   how many.  */
size_t rt_dns_names_of (const struct rt_dns *d, const struct sockaddr_storage *ss, const char **names, size_t max);

/* A lookup in flight: its owner may go away first (the callback then only
   frees it).  */
typedef void (*rt_resolve_cb) (void *owner, struct evutil_addrinfo *res);
struct rt_resolve_req;

/* Calls @cb (maybe before returning) with the addresses of @name, or NULL;
   *@backref points at the lookup while it is in flight.  */
void rt_dns_resolve (struct rt_dns *d, const char *name, void *owner, rt_resolve_cb cb,
                     struct rt_resolve_req **backref);
/* The owner goes away: its callback will not run.  */
void rt_dns_resolve_cancel (struct rt_resolve_req **rp);

#endif
