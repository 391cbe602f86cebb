/* store.c - where sandboxes are written down: state dirs, records,
   their paths, the creators' lock.  */
#include <string.h>

#include "records/store.h"

char *
rt_sandbox_dir (rt_context *ctx, const char *id)
{
  return rt_strdup_printf ("%s/%s", ctx->state_dir, id);
}

char *
rt_record_path (rt_context *ctx, const char *id)
{
  return rt_strdup_printf ("%s/sandboxes/%s.json", ctx->data_dir, id);
}

char *
rt_sandbox_disk_dir (rt_context *ctx, const char *id)
{
  return rt_strdup_printf ("%s/sandboxes/%s", ctx->data_dir, id);
}

char *
rt_egress_log_path (rt_context *ctx, const char *id)
{
  return rt_strdup_printf ("%s/sandboxes/%s.egress.jsonl", ctx->data_dir, id);
}

static int
write_json (const char *path, json_object *obj, rt_error **err)
{
  size_t len;
  const char *s = json_object_to_json_string_length (obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
                                                     &len);
  return rt_write_file_atomic (path, s, len, 0600, err);
}

int
rt_store_write_state (const char *dir, json_object *state, rt_error **err)
{
  cleanup_free char *path = rt_strdup_printf ("%s/state.json", dir);
  if (path == NULL)
    return rt_error_oom (err);
  return write_json (path, state, err);
}

int
rt_store_write_record (rt_context *ctx, json_object *state, rt_error **err)
{
  cleanup_free char *dir = rt_strdup_printf ("%s/sandboxes", ctx->data_dir);
  json_object *id;
  cleanup_free char *path = NULL;
  int ret;

  if (!json_object_object_get_ex (state, "id", &id))
    return rt_error_set (err, EINVAL, "internal", "sandbox state without an id");
  path = rt_record_path (ctx, json_object_get_string (id));
  if (dir == NULL || path == NULL)
    return rt_error_oom (err);
  ret = rt_mkdir_p (dir, 0700, err);
  if (ret < 0)
    return ret;
  return write_json (path, state, err);
}

json_object *
rt_record_read (const char *path)
{
  cleanup_free char *data = NULL;
  json_object *obj;

  if (rt_read_file (path, &data, NULL, NULL) < 0)
    return NULL;
  obj = json_tokener_parse (data);
  if (obj && !json_object_is_type (obj, json_type_object))
    {
      json_object_put (obj);
      return NULL;
    }
  return obj;
}

int
rt_store_lock (rt_context *ctx, int *fd, rt_error **err)
{
  int ret = rt_mkdir_p (ctx->state_dir, 0755, err);
  if (ret < 0)
    return ret;
  return rt_lock_dir (ctx->state_dir, fd, err);
}
