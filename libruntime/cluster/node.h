/* node.h - `runtime node` (rt_node, runtime.h): this host in the cluster
 * of many hosts (docs/cluster.md).  Subjects and catalog key, <name> the node's:
 *
 *   runtime.node.<name>.capacity   its capacity report (cluster/report.h),
 *                                  published every RT_NODE_HEARTBEAT_MS
 *   runtime.node.<name>.ping       a request: answered with the latest report
 *   runtime.node.<name>.api        a request: an API call (cluster/nats.h)
 *   runtime.node.<name>.pull       a request: a stream's next chunk (cluster/nats.h)
 *   runtime.node.<name>.host       a request of a serve replica about the
 *                                  host as a whole: {op "list"} (every
 *                                  tenant's sandboxes) or {op "stop", ids}
 *                                  (cluster/replica.h reconciles with it)
 *   node.<name> (catalog)          that report plus {state "up" or
 *                                  "stopped", instance, startedAt, beatMs},
 *                                  written by compare-and-set at each report;
 *                                  claimed so at start: a node finds it
 *                                  held by another instance that beat
 *                                  within 10 s ("up"), or loses the race
 *                                  to make it, and exits (name_taken); one
 *                                  that finds another's write over its own
 *                                  stops serving
 *
 * Every message on these subjects is sealed with the cluster key
 * (cluster/seal.h); one that is not, or is replayed, is refused.
 */
#ifndef RT_CLUSTER_NODE_H
#define RT_CLUSTER_NODE_H

#include <stdbool.h>

#include "runtime.h"

#define RT_NODE_HEARTBEAT_MS 2000
#define RT_NODE_NAME_MAX 64

/* Whether @name is a node's name: [A-Za-z0-9_-]{1,64}, a word of both a
   NATS subject and a catalog key.  */
bool rt_node_name_valid (const char *name);

#endif
