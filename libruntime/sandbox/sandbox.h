/* sandbox.h - what sandbox.c shares with copy.c.  */
#ifndef RT_SANDBOX_H
#define RT_SANDBOX_H

#include "core/context.h"

struct rt_sandbox
{
  rt_context *ctx;
  char id[32];
  char *dir;   /* its state dir */
  char *sock;  /* its monitor's api.sock */
};

/* Exit codes of the guest-side file scripts: not stderr to parse.  */
#define EXIT_IS_DIR 66
#define EXIT_MISSING 67

/* rt_sandbox_create on the boot disk @on (image builds) instead of the
   disk of cfg->image; @on's env is not used.  */
int rt_sandbox_create_on (rt_context *ctx, const rt_sandbox_config *cfg, const struct rt_image_disk *on,
                          rt_sandbox **out, rt_error **err);

/* The JSON of a command request (exec, spawn); NULL with @err set.  */
json_object *rt_command_request (const char *const argv[], const rt_exec_opts *opts, rt_error **err);

/* usage error unless @path is absolute.  */
int rt_check_guest_path (const char *path, rt_error **err);

/* An rt_output_fn keeping stderr (and stdout, unless passed on).  */
struct rt_captured
{
  char *out, *err;           /* stdout (unless passed on), stderr */
  size_t out_len, err_len;
  const rt_exec_opts *pass;  /* stdout goes to its callback when set */
};
int rt_capture_output (void *data, int stream, const char *buf, size_t len);

#endif
