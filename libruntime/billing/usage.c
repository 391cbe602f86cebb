/* usage.c - what was used and charged: the ledger folded, one row per
   sandbox.  */
#include <inttypes.h>
#include <string.h>

#include "billing/usage.h"

#include "billing/ledger.h"
#include "billing/trial.h"
#include "records/list.h"
#include "records/reap.h"

#define MAX_ROWS 100

static int64_t
get_i64 (json_object *o, const char *key)
{
  json_object *v;
  return json_object_object_get_ex (o, key, &v) ? json_object_get_int64 (v) : 0;
}

static json_object *
money (int64_t micros)
{
  char s[32];
  snprintf (s, sizeof s, "%" PRId64 ".%06" PRId64, micros / 1000000, micros % 1000000);
  return json_object_new_string (s);
}

/* @v under @key, the API's camelCase, and under @old, the snake_case
   this JSON had before: deprecated, gone in the next release
   (docs/billing.md).  */
static void
add_key (json_object *o, const char *key, const char *old, json_object *v)
{
  json_object_object_add (o, old, json_object_get (v));
  json_object_object_add (o, key, v);
}

int
rt_local_usage_json (rt_context *ctx, char **json, rt_error **err)
{
  cleanup_json json_object *rows = NULL, *out = json_object_new_object (), *list = json_object_new_array ();
  cleanup_json json_object *all = NULL, *known = json_object_new_object ();
  int64_t total = 0, left_us = 0;
  size_t n;
  int ret;

  rt_store_reap (ctx);
  ret = rt_ledger_fold (ctx, &rows, err);
  if (ret == 0)
    ret = rt_store_list (ctx, true, &all, err);
  if (ret < 0)
    return ret;
  /* One listing of the store, not one lookup per row.  */
  for (size_t i = 0; i < json_object_array_length (all); i++)
    {
      json_object *sb = json_object_array_get_idx (all, i);
      if (rt_json_str (sb, "id"))
        json_object_object_add (known, rt_json_str (sb, "id"), json_object_get (sb));
    }
  /* A tenant's usage is its own records'; the host's view counts all.  */
  if (ctx->tenant)
    rt_ledger_keep_tenant (rows, ctx->tenant);
  n = json_object_array_length (rows);
  for (size_t i = 0; i < n; i++)
    {
      json_object *o = json_object_array_get_idx (rows, i);
      total += get_i64 (o, "micros");
    }
  /* Newest first, at most 100.  */
  for (size_t k = 0; k < n && k < MAX_ROWS; k++)
    {
      json_object *o = json_object_array_get_idx (rows, n - 1 - k), *row = json_object_new_object ();
      json_object *rec;
      const char *state = rt_json_str (o, "state");
      char num[32];
      /* A monitor that died wrote no last line: the store knows better.  */
      if (json_object_object_get_ex (known, rt_json_str (o, "id"), &rec) && rt_json_str (rec, "state"))
        state = rt_json_str (rec, "state");
      add_key (row, "resourceId", "resource_id", json_object_new_string (rt_json_str (o, "id")));
      json_object_object_add (row, "name", rt_json_str (o, "name") ? json_object_new_string (rt_json_str (o, "name")) : NULL);
      json_object_object_add (row, "kind", json_object_new_string ("sandbox"));
      json_object_object_add (row, "state", json_object_new_string (state ? state : "unknown"));
      json_object_object_add (row, "funding", json_object_new_string (rt_json_str (o, "funding") ? rt_json_str (o, "funding") : "paid"));
      add_key (row, "createdAt", "created_at", json_object_new_string (rt_json_str (o, "createdAt") ? rt_json_str (o, "createdAt") : ""));
      json_object_object_add (row, "vcpu", json_object_new_int64 (get_i64 (o, "vcpu")));
      add_key (row, "memoryMiB", "memory_mib", json_object_new_int64 (get_i64 (o, "memoryMiB")));
      snprintf (num, sizeof num, "%.3f", get_i64 (o, "runningUs") / 1e6);
      add_key (row, "runningSeconds", "running_seconds", json_object_new_double_s (get_i64 (o, "runningUs") / 1e6, num));
      snprintf (num, sizeof num, "%.3f", get_i64 (o, "cpuUs") / 1e6);
      add_key (row, "activeCpuSeconds", "active_cpu_seconds", json_object_new_double_s (get_i64 (o, "cpuUs") / 1e6, num));
      snprintf (num, sizeof num, "%.3f", get_i64 (o, "memoryMiB") / 1024.0 * (get_i64 (o, "runningUs") / 1e6));
      add_key (row, "memoryGiBSeconds", "memory_gib_seconds", json_object_new_double_s (get_i64 (o, "memoryMiB") / 1024.0 * (get_i64 (o, "runningUs") / 1e6), num));
      add_key (row, "chargedUsd", "charged_usd", money (get_i64 (o, "micros")));
      json_object_array_add (list, row);
    }
  ret = rt_trial_left (ctx, &left_us, NULL, err);
  if (ret < 0)
    return ret;
  {
    char hours[32];
    snprintf (hours, sizeof hours, "%.6f", left_us / 3.6e9);
    add_key (out, "trialHoursLeft", "trial_hours_left", json_object_new_double_s (left_us / 3.6e9, hours));
  }
  add_key (out, "chargedMicros", "charged_micros", json_object_new_int64 (total));
  add_key (out, "chargedUsd", "charged_usd", money (total));
  json_object_object_add (out, "sandboxes", json_object_get (list));
  *json = strdup (json_object_to_json_string_ext (out, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}
