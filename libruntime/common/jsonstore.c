/* jsonstore.c - private JSON stores (jsonstore.h).  */
#include <fcntl.h>
#include <string.h>

#include "common/jsonstore.h"

int
rt_json_store_load (const char *path, const char *what, const char *fix, json_object **out, struct stat *st,
                    rt_error **err)
{
  cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  cleanup_free char *text = NULL;
  struct stat own;
  int ret;

  if (st == NULL)
    st = &own;
  memset (st, 0, sizeof *st);
  *out = NULL;
  if (fd < 0 && errno == ENOENT)
    {
      *out = json_object_new_object ();
      return *out ? 0 : rt_error_oom (err);
    }
  if (fd < 0 || fstat (fd, st) < 0)
    return rt_error_set (err, errno, "internal", "cannot read '%s': %s", path, strerror (errno));
  if (st->st_mode & 077)
    {
      rt_error_set (err, EPERM, "invalid_request", "the %s '%s' is readable by others (mode %03o)", what, path,
                    (unsigned) (st->st_mode & 0777));
      return rt_error_hint (err, "chmod 600 '%s', then %s", path, fix);
    }
  /* From the descriptor checked, not the path again.  */
  ret = rt_read_all (fd, 64 << 20, &text, NULL);
  if (ret < 0)
    return rt_error_set (err, -ret, "internal", "cannot read '%s': %s", path, strerror (-ret));
  *out = json_tokener_parse (text);
  if (*out == NULL || !json_object_is_type (*out, json_type_object))
    {
      json_object_put (*out);
      *out = NULL;
      return rt_error_set (err, EINVAL, "internal", "'%s' is not a JSON object", path);
    }
  return 0;
}

int
rt_json_store_save (const char *path, json_object *o, rt_error **err)
{
  return rt_write_json_private (path, o, err);
}

int
rt_json_store_lock (const char *dir, const char *name, mode_t dir_mode, int *fd, rt_error **err)
{
  cleanup_free char *path = rt_strdup_printf ("%s/%s", dir, name);
  int ret = path ? rt_mkdir_p (dir, dir_mode, err) : rt_error_oom (err);

  return ret < 0 ? ret : rt_lock_file (path, fd, err);
}
