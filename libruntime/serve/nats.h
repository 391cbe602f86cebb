/* nats.h - the API's route handlers (serve/routes.c) answering requests
 * that come over NATS instead of HTTP: what `runtime node` runs so that a
 * `runtime serve --nats` replica can hand it the calls for its sandboxes
 * (issue 21).  The same handlers, tenants, tokens and workers as
 * `runtime serve`; only the transport differs.
 *
 * A request is one NATS request message, JSON:
 *   {method, path, query {NAME: VALUE or [VALUE…]}, headers {NAME: VALUE},
 *    body (base64, optional), token (the API token, optional)}
 * and its answer the reply, JSON:
 *   {status, contentType, headers {NAME: VALUE}, body (base64),
 *    truncated (a stream cut at SRV_STREAM_HIGH)}
 * A stream (exec, logs -f, a wait) is gathered and sent whole when it
 * ends; past SRV_STREAM_HIGH bytes it is cut (the handler sees a client
 * gone) and the reply says truncated.  Not done here (the replica's
 * work): rate limits and Idempotency-Key.
 */
#ifndef RT_SERVE_NATS_H
#define RT_SERVE_NATS_H

#include "cluster/bus.h"
#include "core/context.h"

struct srv_nats;

/* Answers requests on @subject of @bus with @ctx's sandboxes (the host's
   view; each request acts as its token's tenant).  @ctx and @bus must
   outlive it.  */
int srv_nats_start (rt_context *ctx, rt_bus *bus, const char *subject, struct srv_nats **out, rt_error **err);
/* Stops taking requests, ends streams (handlers see srv_stopping), waits
   for the handlers running, frees @n.  */
void srv_nats_stop (struct srv_nats *n);

#endif
