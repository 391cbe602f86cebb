/* exec.h - commands in client mode: exec as an NDJSON stream resumed by
   cursor, background processes (docs/API.md).  */
#ifndef RT_REMOTE_EXEC_H
#define RT_REMOTE_EXEC_H

#include "core/context.h"
#include "remote/http.h"

int rt_remote_sandbox_exec (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, rt_exec_result *res,
                            rt_error **err);
int rt_remote_sandbox_spawn (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, uint32_t *process,
                             rt_error **err);
int rt_remote_sandbox_ps_json (rt_sandbox *sb, char **json, rt_error **err);
int rt_remote_sandbox_logs (rt_sandbox *sb, uint32_t process, bool follow, const rt_exec_opts *opts,
                            rt_exec_result *res, bool *exited, rt_error **err);
/* Within @bound (NULL: none).  */
int rt_remote_sandbox_kill (rt_sandbox *sb, uint32_t process, int signal, const struct rt_remote_bound *bound,
                            rt_error **err);
/* rt_remote_sandbox_logs that ends at once, unfinished (*exited false),
   when @abort_fd (>= 0; -1: none) becomes readable.  */
int rt_remote_follow (rt_sandbox *sb, uint32_t process, bool follow, const rt_exec_opts *opts, int abort_fd,
                      rt_exec_result *res, bool *exited, rt_error **err);

/* @sig as the API names it: "SIGKILL" for the names it knows, else the
   number.  */
json_object *rt_remote_signal (int sig);

#endif
