/* stdin.h - a background process's stdin and pty in client mode:
   POST …/processes/{pid}:write and :resize (docs/API.md).  */
#ifndef RT_REMOTE_STDIN_H
#define RT_REMOTE_STDIN_H

#include "core/context.h"
#include "remote/http.h"

/* Each within @bound (NULL: none; a session's calls are bounded).  */
int rt_remote_sandbox_write (rt_sandbox *sb, uint32_t process, const void *data, size_t len, uint64_t offset, bool eof,
                             const struct rt_remote_bound *bound, uint64_t *accepted, rt_error **err);
int rt_remote_sandbox_resize (rt_sandbox *sb, uint32_t process, unsigned cols, unsigned rows,
                              const struct rt_remote_bound *bound, rt_error **err);

#endif
