/* context.h - the context object: directories, options and progress,
   what every part of the library takes instead of globals.  */
#ifndef RT_CONTEXT_H
#define RT_CONTEXT_H

#include "common/util.h"

struct rt_context
{
  char *state_dir;   /* live sandboxes */
  char *data_dir;    /* images, ledger, secrets */
  char *cache_dir;   /* kernel, base rootfs, derived disks */
  char *libexec_dir; /* runtime-agent, runtime-base-rootfs */
  char *agent;       /* the guest agent binary */
  char *qemu;        /* qemu-system-x86_64, NULL when not installed */
  char *kernel_deb;  /* RUNTIME_KERNEL, or NULL */
  char *accel_env;   /* RUNTIME_ACCEL, or NULL */
  char *uid_range;   /* RUNTIME_UID_RANGE, or NULL (vmm/uidpool.h) */
  bool unsafe_no_jail; /* RUNTIME_UNSAFE_NO_JAIL=1: QEMU without its jail
                          (vmm/jail.h), for tests only */
  bool templates_off;  /* RUNTIME_TEMPLATES=off: every start is cold
                          (template/template.h) */
  unsigned template_keep_s; /* RUNTIME_TEMPLATE_KEEP_S: a template keeper's
                               idle life, default 300 */
  const char *accel; /* decided accelerator, NULL until asked */
  char *tenant;      /* rt_context_set_tenant's name, or NULL: the host's
                        view, which sees everything */
  /* Which implementation the public functions call (public/driver.h):
     the remote one, which asks the server of RUNTIME_API_URL, when set
     (client mode); NULL is the local one.  */
  const struct rt_driver *driver;
  char *api_url; /* RUNTIME_API_URL without a trailing slash */
  char *api_key; /* RUNTIME_API_KEY, or NULL (an error at the first call) */
  rt_progress_fn progress;
  void *progress_data;
};

/* A context from the environment (rt_context_new, which also picks its
   driver: public/context.c).  */
int rt_context_from_env (rt_context **out, rt_error **err);
/* The directories root's commands use (those RUNTIME_*_DIR does not
   set): what `runtime doctor` reports on for any caller.  */
int rt_context_host_dirs (rt_context *ctx, rt_error **err);
/* A copy of @from for another thread (`runtime serve`'s handlers): no
   environment read again, no PATH search.  */
int rt_context_dup (const rt_context *from, rt_context **out, rt_error **err);
void rt_progress (rt_context *ctx, const char *fmt, ...) RT_PRINTF (2, 3);

/* True when a tenant context may see the object stamped @owner (a
   sandbox's or image's "tenant", NULL when unstamped): the host view sees
   everything, a tenant only its own.  */
bool rt_tenant_sees (const rt_context *ctx, const char *owner);
/* True when @owner is exactly the context's own (NULL for the host view):
   names are unique among one owner's sandboxes.  */
bool rt_tenant_same (const rt_context *ctx, const char *owner);
/* 1 when @name is a valid tenant name ([a-z0-9][a-z0-9_-]{0,31}).  */
bool rt_tenant_name_ok (const char *name);
/* The context takes the tenant of a sandbox's @state (none when
   unstamped): a monitor serves its sandbox's tenant, whoever started it.  */
void rt_tenant_adopt (rt_context *ctx, json_object *state);
/* permission_denied for a host-only verb (pools, warm) in a tenant context;
   0 in the host view.  */
int rt_tenant_refuse (const rt_context *ctx, const char *what, rt_error **err);

#endif
