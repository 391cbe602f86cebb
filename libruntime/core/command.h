/* command.h - a command as the library hands it to a sandbox's monitor
   (exec, spawn, attach), and an output callback that keeps what it gets.  */
#ifndef RT_CORE_COMMAND_H
#define RT_CORE_COMMAND_H

#include "common/util.h"
#include "core/checks.h"

/* What a NULL rt_exec_opts stands for.  */
extern const rt_exec_opts rt_no_exec_opts;

/* The JSON of a command request (exec, spawn, attach): argv, env, cwd,
   user, timeoutMs, stdin (base64), pty {cols, rows} and keepStdin (spawn)
   when set; NULL with @err set ("internal": out of memory).  The command
   was checked (core/checks.h) by the public function that got it.  */
json_object *rt_command_request (const char *const argv[], const rt_exec_opts *opts, rt_error **err);

/* A command request read back from its JSON (what a monitor gets on
   api.sock or session.sock): @argv and @env NULL-terminated, pointing
   into the request; @opts' cwd and user too, or NULL; stdin decoded into
   @stdin_buf (@opts.stdin_data), the struct's own.  */
struct rt_command
{
  const char **argv;
  const char **env;
  rt_exec_opts opts;
  uint8_t *stdin_buf;
};

/* @req read as a command of @kind, each field of its type ("argv must be
   …", "invalid_request"), keepStdin only for a spawn and a pty not for an
   exec, then checked by rt_command_check: the same rules as the library's
   callers.  Return: 0, or <0 with @err set (@c cleared).  */
int rt_command_parse (json_object *req, enum rt_command_kind kind, struct rt_command *c, rt_error **err);
void rt_command_clear (struct rt_command *c);

/* An rt_output_fn keeping stderr (and stdout, unless passed on).  */
struct rt_captured
{
  char *out, *err;           /* stdout (unless passed on), stderr */
  size_t out_len, err_len;
  const rt_exec_opts *pass;  /* stdout goes to its callback when set */
};
int rt_capture_output (void *data, int stream, const char *buf, size_t len);

#endif
