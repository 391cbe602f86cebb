/* files.c - the public file functions: cat, the listing, copies both
   ways.  Each checks its sandbox path (core/checks.h), then calls its
   context's driver (public/driver.h).
   (no header of its own: its functions are include/runtime.h's.)  */
#include <errno.h>
#include <string.h>

#include "core/checks.h"
#include "public/driver.h"
#include "records/handle.h"

static const struct rt_driver *
of (rt_sandbox *sb)
{
  return rt_driver_of (sb->ctx);
}

int
rt_sandbox_cat (rt_sandbox *sb, const char *path, const rt_exec_opts *opts, rt_error **err)
{
  int ret = rt_check_guest_path (path, err);

  if (ret < 0)
    return ret;
  return of (sb)->sandbox_cat (sb, path, opts, err);
}

int
rt_sandbox_files_json (rt_sandbox *sb, const char *path, unsigned depth, char **json, rt_error **err)
{
  int ret = rt_check_guest_path (path, err);

  if (ret < 0)
    return ret;
  return of (sb)->sandbox_files_json (sb, path, depth, json, err);
}

int
rt_sandbox_copy_in_as (rt_sandbox *sb, const char *src, const char *dst, const rt_copy_opts *opts, const char *user,
                       rt_error **err)
{
  int ret = rt_check_guest_path (dst, err);

  if (ret < 0)
    return ret;
  if (user && strcmp (user, "runtime") != 0 && strcmp (user, "root") != 0)
    return rt_error_set (err, EINVAL, "invalid_request", "the user is runtime or root, not '%s'", user);
  return of (sb)->sandbox_copy_in (sb, src, dst, opts, user, err);
}

int
rt_sandbox_copy_in (rt_sandbox *sb, const char *src, const char *dst, const rt_copy_opts *opts, rt_error **err)
{
  return rt_sandbox_copy_in_as (sb, src, dst, opts, NULL, err);
}

int
rt_sandbox_copy_out (rt_sandbox *sb, const char *src, const char *dst, const rt_copy_opts *opts, rt_copy_result *res,
                     rt_error **err)
{
  int ret = rt_check_guest_path (src, err);

  if (ret < 0)
    return ret;
  return of (sb)->sandbox_copy_out (sb, src, dst, opts, res, err);
}
