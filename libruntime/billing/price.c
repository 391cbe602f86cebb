/* price.c - rates and the price arithmetic (see price.h).  */
#include <string.h>

#include "billing/price.h"

void
rt_rates_default (struct rt_rates *r)
{
  r->cpu_micros_per_vcpu_hour = 25000;
  r->mem_micros_per_gib_hour = 7500;
  r->floor_millivcpu = 50;
}

int
rt_rates_load (rt_context *ctx, struct rt_rates *r, rt_error **err)
{
  static const char *const keys[] = { "cpuMicrosPerVcpuHour", "memMicrosPerGibHour", "cpuFloorMilliVcpu" };
  cleanup_free char *path = rt_strdup_printf ("%s/rates.json", ctx->data_dir);
  cleanup_free char *text = NULL;
  cleanup_json json_object *o = NULL;
  cleanup_error rt_error *e = NULL;
  int64_t *fields[] = { &r->cpu_micros_per_vcpu_hour, &r->mem_micros_per_gib_hour, &r->floor_millivcpu };

  rt_rates_default (r);
  if (path == NULL)
    return rt_error_oom (err);
  if (rt_read_file (path, &text, NULL, &e) < 0)
    return e->status == ENOENT ? 0 : rt_error_set (err, e->status, "internal", "%s", e->msg);
  o = json_tokener_parse (text);
  if (o == NULL || !json_object_is_type (o, json_type_object))
    {
      rt_error_set (err, EINVAL, "invalid_request", "'%s' is not a JSON object", path);
      return rt_error_hint (err, "e.g. {\"cpuMicrosPerVcpuHour\": 25000}; remove it for the default rates");
    }
  /* A misspelt key would silently bill at the default rate.  */
  {
    json_object_object_foreach (o, key, unused)
    {
      size_t i = 0;
      (void) unused;
      while (i < sizeof keys / sizeof keys[0] && strcmp (key, keys[i]) != 0)
        i++;
      if (i == sizeof keys / sizeof keys[0])
        {
          rt_error_set (err, EINVAL, "invalid_request", "'%s': unknown rate '%s'", path, key);
          return rt_error_hint (err, "the rates are %s, %s and %s", keys[0], keys[1], keys[2]);
        }
    }
  }
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    {
      json_object *v;
      if (!json_object_object_get_ex (o, keys[i], &v))
        continue;
      if (!json_object_is_type (v, json_type_int) || json_object_get_int64 (v) < 0
          || json_object_get_int64 (v) > 1000000000)
        {
          rt_error_set (err, EINVAL, "invalid_request", "'%s': %s must be a whole number from 0 to 1000000000, not %s",
                        path, keys[i], json_object_to_json_string (v));
          return rt_error_hint (err, i == 2 ? "the floor is in thousandths of a vCPU (50: 0.05 vCPU)"
                                            : "rates are microdollars per hour (25000: $0.025)");
        }
      *fields[i] = json_object_get_int64 (v);
    }
  return 0;
}

uint64_t
rt_billed_cpu_us (const struct rt_rates *r, uint64_t measured_us, uint64_t wall_us)
{
  uint64_t floor = wall_us * (uint64_t) r->floor_millivcpu / 1000;
  return measured_us > floor ? measured_us : floor;
}

int64_t
rt_price_micros (const struct rt_rates *r, uint64_t cpu_us, uint64_t mib_ms)
{
  /* cpu_us * rate / 3.6e9 + mib_ms * rate / (1024 * 3.6e6), over one
     denominator, rounded half up once.  */
  const unsigned __int128 den = (unsigned __int128) 3600000000ULL * 1024;
  unsigned __int128 num = (unsigned __int128) cpu_us * (uint64_t) r->cpu_micros_per_vcpu_hour * 1024
                          + (unsigned __int128) mib_ms * (uint64_t) r->mem_micros_per_gib_hour * 1000;
  return (int64_t) ((num + den / 2) / den);
}
