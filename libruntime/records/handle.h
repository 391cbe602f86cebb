/* handle.h - the rt_sandbox handle (include/runtime.h): a sandbox named by
   its id, with the context it was opened in.  Both drivers hand it out
   (public/driver.h): the local one also uses its state dir and api.sock,
   the remote one only its id.  */
#ifndef RT_RECORDS_HANDLE_H
#define RT_RECORDS_HANDLE_H

#include "core/context.h"

struct rt_sandbox
{
  rt_context *ctx;
  char id[32];
  char *dir;   /* its state dir */
  char *sock;  /* its monitor's api.sock */
};

/* A handle on sandbox @id, whether or not it exists; NULL when out of
   memory.  */
rt_sandbox *rt_sandbox_handle_new (rt_context *ctx, const char *id);

static inline void
cleanup_sandboxp (rt_sandbox **sb)
{
  rt_sandbox_close (*sb);
}
#define cleanup_sandbox __attribute__ ((cleanup (cleanup_sandboxp)))

#endif
