/* stdin.c - a background process's stdin and pty in client mode (see
   stdin.h).  */
#include <string.h>

#include "common/b64.h"
#include "remote/http.h"
#include "remote/sandboxes.h"
#include "remote/stdin.h"
#include "sandbox/handle.h"

/* A request body is at most 1 MiB of JSON (docs/API.md): base64 of this
   fits.  The caller sends the rest again (the answer says how far).  */
#define WRITE_MAX (512 * 1024)

int
rt_remote_sandbox_write (rt_sandbox *sb, uint32_t process, const void *data, size_t len, uint64_t offset, bool eof,
                         const struct rt_remote_bound *bound, uint64_t *accepted, rt_error **err)
{
  cleanup_free char *suffix = rt_strdup_printf ("/processes/%u:write", process);
  cleanup_free char *path = suffix ? rt_remote_sandbox_path (sb->id, suffix) : NULL;
  cleanup_json json_object *b = json_object_new_object (), *reply = NULL;
  json_object *v, *b64;
  int ret;

  if (len > WRITE_MAX)
    {
      len = WRITE_MAX;
      eof = false;
    }
  b64 = rt_b64_json (data, len);
  if (path == NULL || b64 == NULL || b == NULL)
    {
      json_object_put (b64);
      return rt_error_oom (err);
    }
  json_object_object_add (b, "base64", b64);
  json_object_object_add (b, "offset", json_object_new_int64 ((int64_t) offset));
  if (eof)
    json_object_object_add (b, "eof", json_object_new_boolean (true));
  ret = rt_remote_json_within (sb->ctx, "POST", path, b, bound, &reply, err);
  if (ret < 0)
    return ret;
  if (!json_object_object_get_ex (reply, "offset", &v) || !json_object_is_type (v, json_type_int)
      || json_object_get_int64 (v) < 0)
    return rt_error_set (err, EIO, "internal", "%s did not say how much it took", sb->ctx->api_url);
  if (accepted)
    *accepted = (uint64_t) json_object_get_int64 (v);
  return 0;
}

int
rt_remote_sandbox_resize (rt_sandbox *sb, uint32_t process, unsigned cols, unsigned rows,
                          const struct rt_remote_bound *bound, rt_error **err)
{
  cleanup_free char *suffix = rt_strdup_printf ("/processes/%u:resize", process);
  cleanup_free char *path = suffix ? rt_remote_sandbox_path (sb->id, suffix) : NULL;
  cleanup_json json_object *b = json_object_new_object ();

  if (path == NULL || b == NULL)
    return rt_error_oom (err);
  json_object_object_add (b, "cols", json_object_new_int ((int) cols));
  json_object_object_add (b, "rows", json_object_new_int ((int) rows));
  return rt_remote_json_within (sb->ctx, "POST", path, b, bound, NULL, err);
}
