/* runtime/serve.h - the HTTP API server (serve) and a host's part in a
 * cluster of many hosts (node).
 *
 * A part of <runtime.h>, which callers include (not this file) and whose
 * top comment tells the conventions: errors, handles, who frees what.  It
 * includes the parts it needs, so it also compiles alone.
 */
#ifndef RUNTIME_SERVE_H
#define RUNTIME_SERVE_H

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where rt_serve listens when rt_serve_opts.listen is NULL.  */
#define RT_SERVE_DEFAULT_LISTEN "127.0.0.1:8430"

/**
 * rt_serve_opts - how rt_serve listens; all-zero means the defaults
 * @listen:   "ADDR:PORT" or "[V6]:PORT" (default RT_SERVE_DEFAULT_LISTEN;
 *            port 0 picks a free one); plain HTTP only on a loopback address
 * @tls_cert: a PEM certificate (chain) file: HTTPS; with @tls_key
 * @tls_key:  its PEM private key file
 * @nats:     many hosts: the NATS servers' URLs (as rt_node_opts's); the
 *            server is then a replica of the API over the cluster's
 *            hosts, each running rt_node (docs/ARCHITECTURE.md, "Many
 *            hosts"), not this machine's sandboxes
 * @replicas, @nats_ca, @nats_cert, @nats_key, @cluster_key: as
 *            rt_node_opts's (@cluster_key needed with @nats)
 */
typedef struct rt_serve_opts
{
  const char *listen;
  const char *tls_cert;
  const char *tls_key;
  const char *nats;
  unsigned replicas;
  const char *nats_ca;
  const char *nats_cert;
  const char *nats_key;
  const char *cluster_key;
} rt_serve_opts;

/**
 * rt_serve - answer the HTTP API of docs/API.md until SIGTERM or SIGINT
 * @ctx:  the context (the host's view; each request acts as its token's
 *        tenant)
 * @opts: how to listen, or NULL for the defaults
 * @err:  "usage" (a bad address), "invalid_request" (plain HTTP on an
 *        address other than loopback, or an unusable certificate), "busy"
 *        (the port is taken)
 *
 * Prints "runtime serve: listening on URL" and one line per request on
 * stderr.  Requests run on threads of their own (libevent is switched to
 * pthreads locking for the process).  On a signal it stops accepting,
 * ends open streams with a `continue` event, waits up to 10 s for the
 * requests it is answering, and returns; sandboxes keep running.
 * Return: 0 after a signal, or <0 with @err set (nothing was served).
 */
int rt_serve (rt_context *ctx, const rt_serve_opts *opts, rt_error **err);

/**
 * rt_node_list_json - the hosts of a cluster of many hosts, as a replica
 * (rt_serve with rt_serve_opts.nats) sees them: a JSON array of {name,
 * state ("up" or "lost"), lastSeenAt, lostAt, report (the host's last
 * capacity report)}
 * @ctx:  a client context (RUNTIME_API_URL naming a replica)
 * @json: *json gets the text (free it)
 * @err:  "usage" (a context of this machine: it has no cluster), or the
 *        server's error
 *
 * Return: 0, or <0 with @err set.
 */
int rt_node_list_json (rt_context *ctx, char **json, rt_error **err);

/**
 * rt_node_opts - how rt_node joins the cluster of many hosts
 * @nats:     the NATS servers' URLs, comma-separated (nats://HOST:PORT, or
 *            tls://; credentials as nats://USER:PASS@HOST:PORT)
 * @name:     this host's name in the cluster, [A-Za-z0-9_-]{1,64}; NULL
 *            for the host name up to its first dot
 * @replicas: the catalog's copies when this node makes it: 1, 3 or 5 (0:
 *            3); an existing catalog must have as many
 * @ca_file:  TLS: the NATS servers' CA (PEM), or NULL
 * @cert_file: TLS: this node's client certificate (PEM), or NULL
 * @key_file: its private key (NULL: in @cert_file)
 * @cluster_key: the file of the cluster key that every node and replica
 *            shares (32 random bytes, mode 0600; needed): every NATS
 *            message is sealed with it, one that is not is refused
 *            (docs/cluster.md, "The cluster key")
 */
typedef struct rt_node_opts
{
  const char *nats;
  const char *name;
  unsigned replicas;
  const char *ca_file;
  const char *cert_file;
  const char *key_file;
  const char *cluster_key;
} rt_node_opts;

/**
 * rt_node - serve this host to the cluster until SIGTERM or SIGINT
 * @ctx:  the context (the host's view)
 * @opts: the cluster and the name
 * @err:  "usage" (no or a bad URL, a bad name or replica count, a
 *        catalog with other replicas), "cluster_unavailable" (no NATS
 *        server answered), "name_taken" (a node of that name answers
 *        already)
 *
 * Publishes the host's capacity (vCPUs and memory total, used and free,
 * sandboxes running and paused, ready spares per shape, the accelerator)
 * every 2 s on runtime.node.NAME.capacity, keeps it under node.NAME in
 * the cluster's catalog (a JetStream key-value bucket, compare-and-set)
 * when its NATS user may (else it says so and reports on NATS only,
 * trying the catalog again every 30 s), answers runtime.node.NAME.ping
 * with it, and answers API calls for this host's sandboxes on
 * runtime.node.NAME.api with rt_serve's route handlers.  A NATS server
 * lost is left for another of @nats, for ever.  SIGTERM and SIGINT are
 * blocked in the calling thread meanwhile (threads it starts inherit
 * that) and taken by sigtimedwait: on one it marks its catalog entry
 * "stopped" and returns; sandboxes keep running.  Prints "runtime node: …"
 * lines on stderr.
 * Return: 0 after a signal, or <0 with @err set.
 */
int rt_node (rt_context *ctx, const rt_node_opts *opts, rt_error **err);

#ifdef __cplusplus
}
#endif

#endif
