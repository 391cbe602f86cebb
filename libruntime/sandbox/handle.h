/* handle.h - the local driver's sandbox verbs (handle.c): each a request
   to the sandbox's monitor (monitor/client.h), and the plumbing files.c,
   copy.c and fileops.c share with them.  */
#ifndef RT_SANDBOX_HANDLE_H
#define RT_SANDBOX_HANDLE_H

#include "core/command.h"
#include "records/handle.h"

/* @ret and @err of a request to the monitor, but a monitor that cannot be
   reached while the sandbox starts, or is paused to disk, says so.  */
int rt_sandbox_not_ready_yet (rt_sandbox *sb, int ret, rt_error **err);

/* A background process's output from byte @cursor on (both streams
   counted together), as the monitor's events ({"type":"stdout"|"stderr",
   "data":BASE64,"offset":N}, "truncated" when @cursor is older than what
   is kept, "exit" or "error" once it ended) to @on_event, which also gets
   NULL about once a second and stops the stream by returning <0; with
   @follow until the process ends.  For the HTTP API's handlers.
   Return: 0, or <0 with @err set ("not_found", "invalid_request" for a
   cursor past the output's end).  */
int rt_sandbox_output (rt_sandbox *sb, uint32_t process, uint64_t cursor, bool follow,
                       int (*on_event) (void *data, json_object *ev), void *data, rt_error **err);

/* The local driver (public/driver.h): these do what include/runtime.h
   says of their rt_ names, on this machine.  */
int rt_local_sandbox_open (rt_context *ctx, const char *ref, rt_sandbox **out, rt_error **err);
int rt_local_sandbox_exec (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, rt_exec_result *res,
                           rt_error **err);
int rt_local_sandbox_spawn (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, uint32_t *process,
                            rt_error **err);
int rt_local_sandbox_ps_json (rt_sandbox *sb, char **json, rt_error **err);
int rt_local_sandbox_logs (rt_sandbox *sb, uint32_t process, bool follow, const rt_exec_opts *opts, rt_exec_result *res,
                           bool *exited, rt_error **err);
int rt_local_sandbox_kill (rt_sandbox *sb, uint32_t process, int signal, rt_error **err);
int rt_local_sandbox_write (rt_sandbox *sb, uint32_t process, const void *data, size_t len, uint64_t offset, bool eof,
                            uint64_t *accepted, rt_error **err);
int rt_local_sandbox_resize (rt_sandbox *sb, uint32_t process, unsigned cols, unsigned rows, rt_error **err);
int rt_local_sandbox_stop (rt_sandbox *sb, rt_error **err);
int rt_local_sandbox_destroy (rt_sandbox *sb, rt_error **err);
int rt_local_sandbox_extend (rt_sandbox *sb, unsigned seconds, char **expires_at, rt_error **err);
int rt_local_sandbox_set_network (rt_sandbox *sb, bool internet, const char *const *allow, const char *const *deny,
                                  char **json, rt_error **err);
int rt_local_sandbox_metrics_json (rt_sandbox *sb, char **json, rt_error **err);

#endif
