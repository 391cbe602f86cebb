/* checks.h - argument checks that the public functions make once, before
   either driver runs (public/driver.h), and the one order of a listing
   both drivers answer in.  */
#ifndef RT_CORE_CHECKS_H
#define RT_CORE_CHECKS_H

#include "common/util.h"

/* 0 when rt_pty_size_ok takes @cols x @rows, else a usage error.  */
int rt_pty_size_check (unsigned cols, unsigned rows, rt_error **err);

/* usage error unless @path is absolute.  */
int rt_check_guest_path (const char *path, rt_error **err);

/* What a command is for: its options are checked against that.  */
enum rt_command_kind
{
  RT_COMMAND_EXEC,  /* rt_sandbox_exec: no kept stdin, no pty */
  RT_COMMAND_SPAWN, /* rt_sandbox_spawn */
  RT_COMMAND_ATTACH /* rt_sandbox_attach: its stdin is the session's */
};

/* A command and its options (@opts may be NULL): a non-empty argv, stdin
   within RT_MAX_STDIN, a pty of a size rt_pty_size_ok takes, what @kind
   allows ("usage"); env entries K=V with portable names ("invalid_env"),
   an absolute cwd, a user of runtime or root ("invalid_request").  The
   public functions, the API server (through them) and the monitor
   (rt_command_parse, core/command.h) all check with this.  */
int rt_command_check (const char *const argv[], const rt_exec_opts *opts, enum rt_command_kind kind, rt_error **err);

/* json_object_array_sort's order of listing entries: by "path".  */
int rt_entry_by_path (const void *a, const void *b);

#endif
