/* context.c - a context and its driver: the remote one when
   RUNTIME_API_URL names a server (public/driver.h).
   (no header of its own: its functions are include/runtime.h's and
   public/driver.h's.)  */
#include "public/driver.h"
#include "remote/http.h"

int
rt_context_new (rt_context **out, rt_error **err)
{
  int ret = rt_context_from_env (out, err);

  if (ret < 0)
    return ret;
  (*out)->driver = (*out)->api_url ? &rt_remote_driver : &rt_local_driver;
  return 0;
}

const struct rt_driver *
rt_driver_of (const rt_context *ctx)
{
  return ctx->driver ? ctx->driver : &rt_local_driver;
}

int
rt_local_only (const rt_context *ctx, const char *what, rt_error **err)
{
  if (rt_driver_of (ctx) == &rt_local_driver)
    return 0;
  return rt_remote_unsupported (err, what);
}

int
rt_context_can_manage (rt_context *ctx, rt_error **err)
{
  /* A client's server decides; locally a sandbox needs root for its
     network namespace, its QEMU's own uid and its control group.  */
  if (rt_driver_of (ctx) != &rt_local_driver || geteuid () == 0)
    return 0;
  rt_error_set (err, EPERM, "permission_denied", "runtime manages sandboxes as root, and this is uid %u",
                (unsigned) geteuid ());
  return rt_error_hint (err, "run it with sudo, or as a client of a runtime serve (RUNTIME_API_URL and "
                             "RUNTIME_API_KEY), which needs no root; runtime doctor works as any user");
}
