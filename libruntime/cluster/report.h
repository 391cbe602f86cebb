/* report.h - a `runtime node`'s capacity report: what it
 * publishes every 2 s on runtime.node.<name>.capacity and keeps under
 * node.<name> in the catalog, built by a pure function from what the
 * library lists (the live sandboxes, the pools) and a few host facts, so
 * that its arithmetic is tested without a host (tests/unit/
 * test-node-report.c).
 *
 * {name, time (RFC 3339 UTC), seq (1, 2, … per run), version,
 *  accelerator ("kvm", "tcg" or null when unknown),
 *  vcpus {total, used, free},
 *  memory {totalBytes, availableBytes, usedBytes, freeBytes},
 *  sandboxes {total, running, paused},
 *  spares [{image, imageId, vcpu, memoryMiB, ready}]}
 *
 * "used" is what the host's running sandboxes were given (a paused one
 * is on disk: no QEMU, nothing used); free vCPUs are the total less that,
 * at least 0; free memory the smaller of the host's MemAvailable and its
 * total less that, at least 0.
 */
#ifndef RT_CLUSTER_REPORT_H
#define RT_CLUSTER_REPORT_H

#include <json-c/json.h>
#include <stdint.h>

#include "runtime.h"

struct rt_node_host
{
  const char *name;
  const char *accel; /* "kvm", "tcg" or NULL */
  const char *version;
  unsigned vcpu_total;
  uint64_t mem_total, mem_available; /* bytes (/proc/meminfo) */
  int64_t time_ms;                   /* epoch milliseconds */
  uint64_t seq;
};

/* The report of @host with @sandboxes (an array of
   rt_sandbox_list_json's objects: state, vcpu, memoryMiB) and @pools (an
   array of rt_pool_list_json's; NULL: none) into *out (put it).  */
int rt_node_report_build (const struct rt_node_host *host, json_object *sandboxes, json_object *pools,
                          json_object **out, rt_error **err);

#endif
