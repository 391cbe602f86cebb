/* report.c - a node's capacity report (see report.h): pure.  */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/state.h"
#include "cluster/report.h"
#include "common/cleanup.h"
#include "common/util.h"

#define MIB (1024ull * 1024ull)

static json_object *
pair_obj (const char *k1, int64_t v1, const char *k2, int64_t v2, const char *k3, int64_t v3)
{
  json_object *o = json_object_new_object ();

  if (o == NULL)
    return NULL;
  json_object_object_add (o, k1, json_object_new_int64 (v1));
  json_object_object_add (o, k2, json_object_new_int64 (v2));
  json_object_object_add (o, k3, json_object_new_int64 (v3));
  return o;
}

/* The pools' shapes and ready spares, nothing else of them.  */
static json_object *
spares_of (json_object *pools)
{
  json_object *arr = json_object_new_array ();
  size_t n = pools && json_object_is_type (pools, json_type_array) ? json_object_array_length (pools) : 0;

  for (size_t i = 0; arr && i < n; i++)
    {
      json_object *p = json_object_array_get_idx (pools, i), *e = json_object_new_object ();
      const char *image = rt_json_str (p, "image"), *id = rt_json_str (p, "imageId");
      if (e == NULL)
        {
          json_object_put (arr);
          return NULL;
        }
      json_object_object_add (e, "image", image ? json_object_new_string (image) : NULL);
      json_object_object_add (e, "imageId", id ? json_object_new_string (id) : NULL);
      json_object_object_add (e, "vcpu", json_object_new_int64 (rt_json_i64 (p, "vcpu")));
      json_object_object_add (e, "memoryMiB", json_object_new_int64 (rt_json_i64 (p, "memoryMiB")));
      json_object_object_add (e, "ready", json_object_new_int64 (rt_json_i64 (p, "ready")));
      json_object_array_add (arr, e);
    }
  return arr;
}

int
rt_node_report_build (const struct rt_node_host *host, json_object *sandboxes, json_object *pools, json_object **out,
                      rt_error **err)
{
  cleanup_json json_object *r = json_object_new_object ();
  size_t n = sandboxes && json_object_is_type (sandboxes, json_type_array) ? json_object_array_length (sandboxes) : 0;
  uint64_t vcpu_used = 0, mem_used = 0, mem_free;
  int64_t running = 0, paused = 0;
  json_object *vcpus, *memory, *counts, *spares;
  char when[32];

  if (r == NULL || host->name == NULL)
    return r ? rt_error_set (err, EINVAL, "usage", "a node report needs a name") : rt_error_oom (err);
  for (size_t i = 0; i < n; i++)
    {
      json_object *sb = json_object_array_get_idx (sandboxes, i);
      const char *st = rt_json_str (sb, "state");
      if (st && rt_state_is (st, RT_SANDBOX_PAUSED))
        {
          paused++;
          continue;
        }
      running++;
      vcpu_used += (uint64_t) (rt_json_i64 (sb, "vcpu") > 0 ? rt_json_i64 (sb, "vcpu") : 0);
      mem_used += (uint64_t) (rt_json_i64 (sb, "memoryMiB") > 0 ? rt_json_i64 (sb, "memoryMiB") : 0) * MIB;
    }
  mem_free = mem_used < host->mem_total ? host->mem_total - mem_used : 0;
  if (host->mem_available < mem_free)
    mem_free = host->mem_available;
  rt_format_time (host->time_ms, when);
  vcpus = pair_obj ("total", host->vcpu_total, "used", (int64_t) vcpu_used, "free",
                    vcpu_used < host->vcpu_total ? (int64_t) (host->vcpu_total - vcpu_used) : 0);
  memory = pair_obj ("totalBytes", (int64_t) host->mem_total, "availableBytes", (int64_t) host->mem_available,
                     "usedBytes", (int64_t) mem_used);
  counts = pair_obj ("total", (int64_t) n, "running", running, "paused", paused);
  spares = spares_of (pools);
  if (vcpus == NULL || memory == NULL || counts == NULL || spares == NULL)
    {
      json_object_put (vcpus), json_object_put (memory), json_object_put (counts), json_object_put (spares);
      return rt_error_oom (err);
    }
  json_object_object_add (memory, "freeBytes", json_object_new_int64 ((int64_t) mem_free));
  json_object_object_add (r, "name", json_object_new_string (host->name));
  json_object_object_add (r, "time", json_object_new_string (when));
  json_object_object_add (r, "seq", json_object_new_int64 ((int64_t) host->seq));
  json_object_object_add (r, "version", host->version ? json_object_new_string (host->version) : NULL);
  json_object_object_add (r, "accelerator", host->accel ? json_object_new_string (host->accel) : NULL);
  json_object_object_add (r, "vcpus", vcpus);
  json_object_object_add (r, "memory", memory);
  json_object_object_add (r, "sandboxes", counts);
  json_object_object_add (r, "spares", spares);
  *out = steal_pointer (&r);
  return 0;
}
