/* serve.c - rt_serve: the HTTP API of this machine's sandboxes (api/), or,
   with a cluster's NATS servers, a replica over its nodes
   (cluster/replica.h).
   (no header of its own: rt_serve is include/runtime.h's.)  */
#include "api/handlers.h"
#include "cluster/replica.h"
#include "public/driver.h"

int
rt_serve (rt_context *ctx, const rt_serve_opts *opts, rt_error **err)
{
  /* Its requests' contexts would be clients of a server again.  */
  if (rt_local_only (ctx, "runtime serve", err) < 0)
    return -ENOTSUP;
  return srv_run (ctx, opts, opts && opts->nats ? &srv_replica_app : &srv_api_app, err);
}
