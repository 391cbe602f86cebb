/* replica.h - `runtime serve --nats`: a replica of the API for many hosts.
 * It holds nothing of its own: the hosts are `runtime node`s
 * heard on NATS (their capacity reports), and which host holds each
 * sandbox, its tenant and the idempotency keys are in the JetStream
 * catalog (cluster/catalog.h), so any replica answers any call.
 *
 *  - A create is placed (cluster/placement.h) on the reports heard, sent
 *    to that node (cluster/nats.h), retried on the next one when the node
 *    refuses (5xx) or does not answer; the catalog then gets sb.<id>.
 *  - Every call for a sandbox goes to its node (catalog), the answer
 *    passed back with `node` added to a sandbox object and a Runtime-Node
 *    header; lists are gathered from every node and merged.
 *  - A node not heard for SRV_NODE_LOST_MS is lost: the first replica to
 *    say so in the catalog (host.<name>, compare-and-set) ends its
 *    sandboxes there (stopReason host_lost).  When it reports again it is
 *    reconciled: what it runs that the catalog has ended, lacks or gives
 *    to another node is stopped on it (runtime.node.<name>.host), and what
 *    the catalog has on it that it lacks is ended.
 *
 * Catalog values (JSON):
 *   sb.<id>     {node, tenant, state "live"|"stopped", stopReason, endedAt,
 *                info (the SandboxInfo the create answered)}
 *   snap.<id>   {node (the host that made it: its only holder), tenant,
 *                name, createdAt}, created when :snapshot answers
 *                (replica-snapshots.c)
 *   host.<name> {state "up"|"lost", since, lostAt}
 *   idem.<tenant>.<sha256 of the key> {state "pending"|"done", body (its
 *                sha256), at, status, answer}
 *   secrets.<tenant> {NAME: {body (the PUT's), createdAt, updatedAt,
 *                nodes (the hosts that have the value)}}
 */
#ifndef RT_SERVE_CLUSTER_H
#define RT_SERVE_CLUSTER_H

#include <json-c/json.h>
#include <stdbool.h>

#include "cluster/bus.h"
#include "cluster/catalog.h"
#include "serve/server.h"

/* Five missed heartbeats (RT_NODE_HEARTBEAT_MS).  */
#define SRV_NODE_LOST_MS 10000
/* vCPUs placed per vCPU of a host: a sandbox seldom keeps its vCPUs busy
   (memory, never overcommitted, is what fills a host).  */
#define SRV_VCPU_OVERCOMMIT 4
/* The hosts one replica keeps track of.  */
#define SRV_CLUSTER_MAX_NODES 256

struct srv;
struct srv_cluster;

struct srv_cluster_opts
{
  const char *nats, *ca_file, *cert_file, *key_file;
  const char *cluster_key; /* its file (cluster/seal.h) */
  unsigned replicas;
};

/* Joins the cluster for @s: the bus, the catalog, the reports, the keeper
   of lost hosts.  */
int srv_cluster_start (struct srv *s, const struct srv_cluster_opts *o, struct srv_cluster **out, rt_error **err);
void srv_cluster_stop (struct srv_cluster *c);

/* Egress secrets (cluster-secrets.c): kept in the catalog, a value sent
   to a host only when a sandbox of its tenant is made there
   (srv_cluster_push_secrets, before the create: <0 when the host did not
   take them, nothing answered), and to those hosts again when it changes
   or goes.  */
void srv_cluster_secret_list (struct srv_req *r);
void srv_cluster_secret_put (struct srv_req *r);
void srv_cluster_secret_delete (struct srv_req *r);
int srv_cluster_push_secrets (struct srv_req *r, const char *node);

/* The route table of a replica (replica-routes.c), and the replica as
   what a server serves (serve/server.h).  */
extern const struct srv_route srv_cluster_routes[];
extern const struct srv_app srv_replica_app;

/* An answer of a node.  */
struct srv_node_answer
{
  int status;
  char *ctype;
  json_object *headers; /* {NAME: VALUE} */
  unsigned char *body;
  size_t len;
  bool truncated;
  char stream[33]; /* a stream to pull (cluster/nats.h), or "" */
};
void srv_node_answer_clear (struct srv_node_answer *a);
/* A node's reply (cluster/nats.h) into @a (replica-answer.c): only the
   node headers a client may see (srv_node_header_allowed), each value
   1-256 visible ASCII bytes; a status out of 200-599, a 204 or 304 with a
   body or stream, a content type or header value that is no header's,
   or a stream id that is none are @err "bad_gateway", @a left empty.  */
int srv_node_answer_read (const char *text, size_t len, struct srv_node_answer *a, rt_error **err);
/* @name as a client is sent it when a node may set it, else NULL.  */
const char *srv_node_header_allowed (const char *name);

/* @r sent to node @node as @r's tenant (its method, query and body, with
   @path instead of its own when not NULL), waiting at most @timeout_ms.
   @err: "node_unreachable", "cluster_unavailable", "bad_gateway" (an
   answer that is none).  */
int srv_cluster_call (struct srv_cluster *c, struct srv_req *r, const char *node, int method, const char *path,
                      json_object *query, const void *body, size_t len, int timeout_ms, struct srv_node_answer *out,
                      rt_error **err);
/* A node nobody answers for at once is asked again for up to this long
   (it is between NATS servers); srv_cluster_call_once asks once.  */
#define SRV_RECONNECT_WAIT_MS 3000
int srv_cluster_call_once (struct srv_cluster *c, struct srv_req *r, const char *node, int method, const void *body,
                           size_t len, int timeout_ms, struct srv_node_answer *out, rt_error **err);
/* The same, a stream's answer left to pull (out->stream).  */
int srv_cluster_call_stream (struct srv_cluster *c, struct srv_req *r, const char *node, int timeout_ms,
                             struct srv_node_answer *out, rt_error **err);
/* @r to @node, the answer passed to @r's client, `node` added to a
   sandbox object, a stream passed on as it comes (pulled in chunks, as
   fast as the client reads).  Return: the node's status, or 0 when it did not answer.  */
int srv_cluster_relay (struct srv_cluster *c, struct srv_req *r, const char *node, int timeout_ms);

/* @r's query as {NAME: VALUE or [VALUE…]} (put it).  */
json_object *srv_cluster_query (struct srv_req *r);
/* The nodes up now with their latest reports: a JSON array of {name,
   state, lastSeenAt, lostAt, report} (put it).  */
json_object *srv_cluster_nodes (struct srv_cluster *c);
/* The names of the nodes not lost, at most @max, into @names (each
   RT_NODE_NAME_MAX + 1).  */
size_t srv_cluster_up (struct srv_cluster *c, char (*names)[65], size_t max);
/* Where a create of @vcpu and @memory_mib goes: node names, best first,
   into @names; how many.  */
size_t srv_cluster_place (struct srv_cluster *c, unsigned vcpu, unsigned long memory_mib, const char *image,
                          char (*names)[65], size_t max);
rt_catalog *srv_cluster_catalog (struct srv_cluster *c);
/* Its bus (for what is sealed with the cluster key).  */
rt_bus *srv_cluster_bus (struct srv_cluster *c);

#endif
