/* nats.h - the API's route handlers (api/routes.c) answering requests
 * that come over NATS instead of HTTP: what `runtime node` runs so that a
 * `runtime serve --nats` replica can hand it the calls for its sandboxes.
 * The same handlers, tenants, tokens and workers as
 * `runtime serve`; only the transport differs.
 *
 * A request is one NATS request message, JSON:
 *   {method, path, query {NAME: VALUE or [VALUE…]}, headers {NAME: VALUE},
 *    body (base64, optional), tenant (the token's name, optional),
 *    limits (the token's: {maxSandboxes, maxVcpu, rate, maxSnapshots,
 *    maxCostMicros}, 0 for the default; optional),
 *    timeoutMs (optional: SRV_NATS_DEADLINE_MS, at most
 *    SRV_NATS_MAX_DEADLINE_MS)}
 * and its answer the reply, JSON:
 *   {status, contentType, headers {NAME: VALUE}, body (base64),
 *    truncated (a stream cut, or ended by its deadline)}
 * The tenant is named, not proved by a token: no bearer token reaches a
 * node (one broken into by a guest would collect them), and an
 * Authorization header is dropped.  The name is trusted because the
 * message is: the node's bus takes only messages sealed with the cluster
 * key (cluster/seal.h: a MAC over the whole message, its subject,
 * deadline and nonce; replays refused), which only the replicas and the
 * nodes hold; NATS permissions (docs/cluster/nats-auth.conf) come on top.
 * With limits (what a replica sends) the
 * tenant is taken as named, its name checked; without, it must be a token
 * of this host's own store (<data>/tokens.json), whose limits apply, and
 * another is answered 401.
 * With stream: true in the request, a stream's answer is its head at
 * once, {status, contentType, headers, stream (an id)}, and its bytes are
 * pulled in chunks of at most 256 KiB on <pull_subject>: a request
 * {stream, seq} (1, 2, …; the same seq again when its answer was lost)
 * is answered, as soon as there are bytes or the end, with one byte 'd'
 * (more to come), 'e' (the end) or 't' (the end, cut at its deadline)
 * and the bytes; 'x' for a stream unknown.  {stream, close: true} ends
 * it.  The handler writes no further ahead than SRV_STREAM_HIGH, so a
 * slow client slows the guest's output, never the node's memory; a
 * stream not pulled for a minute counts as gone (its replica died; the
 * client resumes through another by cursor).
 * Otherwise a stream (exec, logs -f, a wait) is gathered and sent whole when it
 * ends; past what fits the server's max_payload (at most SRV_STREAM_HIGH
 * bytes) it is cut (the handler sees a client gone) and the reply says
 * truncated.  Every request counts as gone at its deadline, so that no
 * follow holds a worker longer; the replica waits for the reply a little
 * longer than timeoutMs.  An answer NATS does not take is replaced by a
 * small 502 (bad_gateway).  A tenant has SRV_MAX_INFLIGHT requests at
 * once (429 past that).  Not done here (the replica's work): the rate of
 * requests a second and Idempotency-Key.
 */
#ifndef RT_SERVE_NATS_H
#define RT_SERVE_NATS_H

#include "cluster/bus.h"
#include "core/context.h"

#include <stdbool.h>

/* A request's deadline when it names none, and the most it may name: the
   reply permission of docs/cluster/nats-auth.conf's nodes
   (allow_responses expires 2m) must outlast it.  */
#define SRV_NATS_DEADLINE_MS 30000
#define SRV_NATS_MAX_DEADLINE_MS 100000

struct srv_nats;

/* Answers requests on @subject of @bus with @ctx's sandboxes (the host's
   view, copied; each request acts as its tenant).  @bus must outlive it
   (see srv_nats_stop).  Sweeps old files once (sweep.h).  */
int srv_nats_start (rt_context *ctx, rt_bus *bus, const char *subject, const char *pull_subject,
                    struct srv_nats **out, rt_error **err);
/* Pulled streams not pulled for a minute end (their replica died): the
   caller's clock says when, every few seconds.  */
void srv_nats_tick (struct srv_nats *n);
/* The hourly sweep of sweep.h: the caller's clock says when.  */
void srv_nats_sweep (struct srv_nats *n);
/* Stops taking requests, ends streams (handlers see srv_stopping), waits
   for the handlers running, frees @n.  Return: false when a handler still
   runs after the wait: @n is then left, and the bus must be too (the
   handler's reply goes on it) until the process exits.  */
bool srv_nats_stop (struct srv_nats *n);

#endif
