/* warm.c - the template of an image and shape, made now.  */
#include <string.h>

#include "template/warm.h"

#include "image/disk.h"
#include "template/make.h"
#include "vmm/kernel.h"

static int
check_shape (unsigned vcpu, unsigned memory_mib, rt_error **err)
{
  if (vcpu > RT_MAX_VCPU)
    return rt_error_set (err, EINVAL, "invalid_request", "--vcpu must be 1 to %d, not %u", RT_MAX_VCPU, vcpu);
  if (memory_mib && (memory_mib < RT_MIN_MEMORY_MIB || memory_mib > RT_MAX_MEMORY_MIB))
    return rt_error_set (err, EINVAL, "invalid_request", "--memory must be %d to %d MiB, not %u", RT_MIN_MEMORY_MIB,
                         RT_MAX_MEMORY_MIB, memory_mib);
  return 0;
}

/* The template @key as rt_image_warm describes it, from its listing.  */
static int
describe (rt_context *ctx, const char *key, bool fresh, int64_t made_ms, char **json, rt_error **err)
{
  cleanup_json json_object *arr = NULL, *o = json_object_new_object ();
  json_object *t = NULL, *inputs = NULL, *v;
  int ret = rt_template_list (ctx, &arr, err);

  if (ret < 0)
    return ret;
  for (size_t i = 0; i < json_object_array_length (arr) && t == NULL; i++)
    if (rt_json_str (json_object_array_get_idx (arr, i), "key")
        && strcmp (rt_json_str (json_object_array_get_idx (arr, i), "key"), key) == 0)
      t = json_object_array_get_idx (arr, i);
  if (t == NULL)
    return rt_error_set (err, EIO, "startup_failed", "the template %.12s was made but is not there", key);
  json_object_object_get_ex (t, "inputs", &inputs);
  json_object_object_add (o, "key", json_object_new_string (key));
  json_object_object_add (o, "imageId", json_object_new_string (rt_json_str (inputs, "imageId")));
  json_object_object_add (o, "vcpu", json_object_object_get_ex (inputs, "vcpu", &v) ? json_object_get (v) : NULL);
  json_object_object_add (o, "memoryMiB", json_object_object_get_ex (t, "memoryMiB", &v) ? json_object_get (v) : NULL);
  json_object_object_add (o, "createdAt", json_object_object_get_ex (t, "createdAt", &v) ? json_object_get (v) : NULL);
  if (fresh)
    json_object_object_add (o, "makeMs", json_object_new_int64 (made_ms));
  else
    json_object_object_add (o, "makeMs", json_object_object_get_ex (t, "makeMs", &v) ? json_object_get (v) : NULL);
  json_object_object_add (o, "sizeBytes", json_object_object_get_ex (t, "sizeBytes", &v) ? json_object_get (v) : NULL);
  json_object_object_add (o, "fresh", json_object_new_boolean (fresh));
  *json = strdup (json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}

int
rt_local_image_warm (rt_context *ctx, const char *ref, unsigned vcpu, unsigned memory_mib, char **json, rt_error **err)
{
  struct rt_kernel_files k = { 0 };
  struct rt_image_disk image = { 0 };
  struct rt_template t = { .key = "" };
  struct rt_template_inputs in = { .vcpu = vcpu ? vcpu : 2, .memory_mib = memory_mib ? memory_mib : 4096,
                                   .disk_mib = 4096 };
  int64_t made_ms = 0;
  bool fresh = false;
  int ret;

  if (json)
    *json = NULL;
  ret = rt_tenant_refuse (ctx, "warming an image", err);
  if (ret == 0)
    ret = check_shape (vcpu, memory_mib, err);
  if (ret == 0)
    ret = rt_kernel_ensure (ctx, &k, err);
  if (ret == 0)
    ret = rt_image_ensure_disk (ctx, ref, &image, err);
  if (ret == 0)
    ret = rt_context_accel (ctx, &in.accel, err);
  if (ret < 0)
    goto out;
  in.image_id = image.id;
  in.disk = image.disk;
  in.vmlinux = k.vmlinux;
  in.initramfs = k.initramfs;
  ret = rt_template_find (ctx, &in, &t, err);
  if (ret == 0)
    {
      fresh = true;
      ret = rt_template_make (ctx, &in, &made_ms, err);
      if (ret == 0)
        ret = rt_template_find (ctx, &in, &t, err);
      if (ret == 0)
        ret = rt_error_set (err, EIO, "startup_failed", "the template of %.12s was made but is not whole", image.id);
    }
  if (ret > 0)
    ret = json ? describe (ctx, t.key, fresh, made_ms, json, err) : 0;
out:
  rt_template_clear (&t);
  rt_image_disk_clear (&image);
  rt_kernel_files_clear (&k);
  return ret < 0 ? ret : 0;
}
