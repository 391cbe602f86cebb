/* handle.h - the rt_sandbox handle and the exec plumbing its verbs share
   with files.c, copy.c and llm/python.c.  */
#ifndef RT_SANDBOX_HANDLE_H
#define RT_SANDBOX_HANDLE_H

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

/* @ret and @err of a request to the monitor, but a monitor that cannot be
   reached while the sandbox starts, or is paused to disk, says so.  */
int rt_sandbox_not_ready_yet (rt_sandbox *sb, int ret, rt_error **err);

/* 0 when rt_pty_size_ok takes @cols x @rows, else a usage error.  */
int rt_pty_size_check (unsigned cols, unsigned rows, rt_error **err);

/* What a NULL rt_exec_opts stands for.  */
extern const rt_exec_opts rt_no_exec_opts;

/* The JSON of a command request (exec, spawn, attach): argv, env, cwd,
   user, timeoutMs, stdin (base64), pty {cols, rows} and keepStdin (spawn)
   when set; NULL with @err set.  */
json_object *rt_command_request (const char *const argv[], const rt_exec_opts *opts, rt_error **err);

/* An rt_output_fn keeping stderr (and stdout, unless passed on).  */
struct rt_captured
{
  char *out, *err;           /* stdout (unless passed on), stderr */
  size_t out_len, err_len;
  const rt_exec_opts *pass;  /* stdout goes to its callback when set */
};
int rt_capture_output (void *data, int stream, const char *buf, size_t len);

/* A background process's output from byte @cursor on (both streams
   counted together), as the monitor's events ({"type":"stdout"|"stderr",
   "data":BASE64,"offset":N}, "truncated" when @cursor is older than what
   is kept, "exit" or "error" once it ended) to @on_event, which also gets
   NULL about once a second and stops the stream by returning <0; with
   @follow until the process ends.  For the HTTP API (serve/exec.c).
   Return: 0, or <0 with @err set ("not_found", "invalid_request" for a
   cursor past the output's end).  */
int rt_sandbox_output (rt_sandbox *sb, uint32_t process, uint64_t cursor, bool follow,
                       int (*on_event) (void *data, json_object *ev), void *data, rt_error **err);

#endif
