/* stdin.h - a guest command's standard input streamed from the host, for
   more than exec's 1 MiB of stdin_data: a FIFO in the sandbox's state dir
   that its monitor reads (stdinPath, monitor/exec.c), paced by the
   guest's credit.  cp in (copy.c) and the server's file writes use it.  */
#ifndef RT_SANDBOX_STDIN_H
#define RT_SANDBOX_STDIN_H

#include "sandbox/handle.h"

/* A FIFO with a random name in @sb's state dir, where the monitor may
   open it (free and unlink *fifo).  */
int rt_stdin_fifo (rt_sandbox *sb, char **fifo, rt_error **err);

/* rt_sandbox_exec with @fifo as the command's stdin (@opts->stdin_data
   must be NULL); @opts->on_output as for exec.  */
int rt_exec_stdin_path (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, const char *fifo,
                        rt_exec_result *res, rt_error **err);

/* rt_sandbox_exec with the bytes of @fd from its current offset to its end
   as the command's stdin, written into a FIFO by a child process.  The
   guest cannot tell a short feed from a whole one: a command that must
   not act on a part checks the size it was told.  */
int rt_exec_stdin_fd (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, int fd, rt_exec_result *res,
                      rt_error **err);

#endif
