/* test-node-report.c - a node's capacity report (libruntime/cluster/
   report.c): what running and paused sandboxes use, free vCPUs and memory
   never below 0 and memory never above what the host has available, the
   pools' spares per shape, the fields a serve replica reads.  */
#include <string.h>

#include "cluster/report.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "tap.h"

#define MIB (1024ll * 1024ll)
#define GIB (1024ll * MIB)

static json_object *
field (json_object *o, const char *a, const char *b)
{
  json_object *v = NULL;
  if (json_object_object_get_ex (o, a, &v) && b)
    json_object_object_get_ex (v, b, &v);
  return v;
}

static int64_t
num (json_object *o, const char *a, const char *b)
{
  return json_object_get_int64 (field (o, a, b));
}

static json_object *
build (const struct rt_node_host *h, const char *sandboxes, const char *pools)
{
  cleanup_json json_object *sb = json_tokener_parse (sandboxes), *pl = pools ? json_tokener_parse (pools) : NULL;
  json_object *r = NULL;
  rt_error *e = NULL;

  if (rt_node_report_build (h, sb, pl, &r, &e) < 0)
    {
      printf ("# %s\n", e->msg);
      rt_error_free (e);
    }
  return r;
}

int
main (void)
{
  struct rt_node_host h = { "host-a", "tcg", "0.1.0", 8, 16 * GIB, 12 * GIB, 1764586800123, 7 };
  cleanup_json json_object *empty = build (&h, "[]", NULL);
  cleanup_json json_object *r = NULL, *full = NULL, *tight = NULL, *none = NULL;
  rt_error *e = NULL;

  ok (empty && strcmp (json_object_get_string (field (empty, "name", NULL)), "host-a") == 0
          && strcmp (json_object_get_string (field (empty, "time", NULL)), "2025-12-01T11:00:00.123Z") == 0
          && num (empty, "seq", NULL) == 7
          && strcmp (json_object_get_string (field (empty, "accelerator", NULL)), "tcg") == 0,
      "name, time, seq and accelerator: %s", empty ? json_object_to_json_string (empty) : "(none)");
  ok (num (empty, "vcpus", "total") == 8 && num (empty, "vcpus", "free") == 8 && num (empty, "vcpus", "used") == 0
          && num (empty, "memory", "freeBytes") == 12 * GIB && num (empty, "sandboxes", "total") == 0
          && json_object_array_length (field (empty, "spares", NULL)) == 0,
      "an empty host: everything free, memory as available as the host says");

  r = build (&h,
             "[{\"id\":\"sb-1\",\"state\":\"running\",\"vcpu\":2,\"memoryMiB\":1024},"
             "{\"id\":\"sb-2\",\"state\":\"starting\",\"vcpu\":1,\"memoryMiB\":512},"
             "{\"id\":\"sb-3\",\"state\":\"paused\",\"vcpu\":4,\"memoryMiB\":4096}]",
             "[{\"image\":\"runtime\",\"imageId\":\"abc\",\"vcpu\":1,\"memoryMiB\":512,\"spares\":3,\"ready\":2}]");
  ok (num (r, "vcpus", "used") == 3 && num (r, "vcpus", "free") == 5,
      "running and starting sandboxes use vCPUs, a paused one none");
  ok (num (r, "memory", "usedBytes") == 1536 * MIB && num (r, "memory", "freeBytes") == 12 * GIB,
      "memory used: theirs; free: the host's available (less than total minus used)");
  ok (num (r, "sandboxes", "total") == 3 && num (r, "sandboxes", "running") == 2 && num (r, "sandboxes", "paused") == 1,
      "sandboxes counted: 3, 2 running, 1 paused");
  ok (json_object_array_length (field (r, "spares", NULL)) == 1
          && num (json_object_array_get_idx (field (r, "spares", NULL), 0), "ready", NULL) == 2
          && num (json_object_array_get_idx (field (r, "spares", NULL), 0), "memoryMiB", NULL) == 512
          && field (json_object_array_get_idx (field (r, "spares", NULL), 0), "spares", NULL) == NULL,
      "spares per shape: the ready ones, not the pool's target");

  h.mem_available = 15 * GIB;
  tight = build (&h, "[{\"state\":\"running\",\"vcpu\":2,\"memoryMiB\":4096}]", NULL);
  ok (num (tight, "memory", "freeBytes") == 12 * GIB, "free memory: total minus used when that is less than available");
  full = build (&h, "[{\"state\":\"running\",\"vcpu\":12,\"memoryMiB\":20480}]", NULL);
  ok (num (full, "vcpus", "free") == 0 && num (full, "memory", "freeBytes") == 0 && num (full, "vcpus", "used") == 12,
      "overcommitted: free is 0, never negative");
  h.accel = NULL;
  none = build (&h, "[]", NULL);
  ok (none && json_object_is_type (field (none, "accelerator", NULL), json_type_null)
          && json_object_object_get_ex (none, "accelerator", NULL),
      "an unknown accelerator is null");
  h.name = NULL;
  ok (rt_node_report_build (&h, NULL, NULL, &r, &e) < 0 && strcmp (e->code, "usage") == 0, "no name: usage");
  rt_error_free (e);
  return tap_done ();
}
