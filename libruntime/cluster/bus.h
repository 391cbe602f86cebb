/* bus.h - the connection of a `runtime node` or a `runtime serve --nats`
 * replica to the NATS cluster that joins many hosts: connect
 * with every server's URL (credentials in the URL, nats://user:pass@h:p,
 * as the server's per-role permissions want), TLS when asked, and
 * reconnect for ever, so a NATS server lost costs nothing while another
 * answers; publish, subscribe (on nats.c's own threads), request/reply.
 */
#ifndef RT_CLUSTER_BUS_H
#define RT_CLUSTER_BUS_H

#include <stdbool.h>
#include <stddef.h>

#include "cluster/seal.h"
#include "runtime.h"

typedef struct rt_bus rt_bus;

struct rt_bus_opts
{
  const char *urls;      /* comma-separated nats:// or tls:// URLs */
  const char *name;      /* the connection's name, seen by the servers */
  const char *ca_file;   /* TLS: the servers' CA (NULL: no TLS unless tls://) */
  const char *cert_file; /* TLS: this client's certificate and key, or NULL */
  const char *key_file;
  /* The cluster key (cluster/seal.h): every message published is sealed
     with it, every one received must be (a request refused otherwise gets
     a plain {"error": …} answer and reaches no handler).  NULL: messages
     go as they are (the tests of the NATS permissions only).  */
  const struct rt_seal_key *key;
};

/* Connects to one of @o->urls (the others are kept for reconnects).
   A URL off loopback must be tls:// (or @o->ca_file given) and carry
   credentials (USER:PASS@, or @o->cert_file), as runtime serve takes
   plain HTTP only on loopback.
   @err: "usage" (no URL, a bad one, plain or credential-less off
   loopback), "cluster_unavailable" (none answered).  Return: 0, or <0 with @err set.  */
int rt_bus_connect (const struct rt_bus_opts *o, rt_bus **out, rt_error **err);
void rt_bus_free (rt_bus *b);
/* Whether the connection is up now (between a disconnect and its
   reconnect it is not).  */
bool rt_bus_connected (rt_bus *b);
/* The URL of the server it is connected to now (nats.c picks one of the
   list at random), without credentials, in @buf; 0, or <0 when not
   connected.  */
int rt_bus_server_url (rt_bus *b, char *buf, size_t len);

/* The largest message the server connected to takes (its max_payload,
   1 MiB by default), or 0 when not known (not connected).  */
size_t rt_bus_max_payload (rt_bus *b);
int rt_bus_publish (rt_bus *b, const char *subject, const void *data, size_t len, rt_error **err);

/* A message handed to a subscription's handler: valid during the call.  */
struct rt_bus_msg
{
  const char *subject;
  const char *reply; /* where an answer goes, or NULL */
  const void *data;
  size_t len;
};
typedef void (*rt_bus_handler) (void *data, const struct rt_bus_msg *msg);

typedef struct rt_bus_sub rt_bus_sub;
/* Calls @fn for each message on @subject (wildcards allowed), on a thread
   of the bus's own; with @queue, one member of the queue group gets each.  */
int rt_bus_subscribe (rt_bus *b, const char *subject, const char *queue, rt_bus_handler fn, void *data,
                      rt_bus_sub **out, rt_error **err);
/* Stops @s: messages already received are still handled, then it waits
   until its handler has returned for the last time, so the caller may
   free the handler's data afterwards.  Never call it from @s's own
   handler (it would wait for itself).  */
void rt_bus_unsubscribe (rt_bus_sub *s);

/* Sends @data to @subject and waits for one answer, at most @timeout_ms.
   *reply (free it) and *reply_len get it.  With a key, the answer must be
   sealed for the reply inbox it came on (a forged one is refused).
   @err: "node_unreachable" (nobody subscribes there, or no answer in
   time), "cluster_unavailable" (the connection is down), "unauthorized"
   (an answer not sealed with the key, or the other side's refusal).  Return: 0, or <0 with @err set.  */
int rt_bus_request (rt_bus *b, const char *subject, const void *data, size_t len, int timeout_ms, char **reply,
                    size_t *reply_len, rt_error **err);

/* @len bytes of @value sealed with @b's key for @label (cluster/seal.h's
   rt_seal_value), as base64 in *b64 (free it): what the catalog keeps of
   a secret's value.  rt_bus_open_value the other way, *value (free it;
   NUL-ended) and *len.  @err: "unauthorized" (not sealed with the key
   for @label, or a bus without a key).  */
int rt_bus_seal_value (rt_bus *b, const char *label, const char *value, size_t len, char **b64, rt_error **err);
int rt_bus_open_value (rt_bus *b, const char *label, const char *b64, char **value, size_t *len, rt_error **err);

/* The JetStream context of @b, for cluster/catalog.c.  */
void *rt_bus_jetstream (rt_bus *b);

#endif
