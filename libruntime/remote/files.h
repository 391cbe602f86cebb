/* files.h - files in client mode: cat, the listing and cp both ways over
   …/files and …/uploads (docs/API.md), landing as the local ones do.  */
#ifndef RT_REMOTE_FILES_H
#define RT_REMOTE_FILES_H

#include "core/context.h"

/* Files up to this size go in one PUT; larger ones in chunked uploads.  */
#define RT_REMOTE_PUT_MAX (1024 * 1024)

int rt_remote_sandbox_cat (rt_sandbox *sb, const char *path, const rt_exec_opts *opts, rt_error **err);
int rt_remote_sandbox_files_json (rt_sandbox *sb, const char *path, unsigned depth, char **json, rt_error **err);
int rt_remote_copy_in (rt_sandbox *sb, const char *src, const char *dst, const rt_copy_opts *opts, const char *user,
                       rt_error **err);
int rt_remote_copy_out (rt_sandbox *sb, const char *src, const char *dst, const rt_copy_opts *opts,
                        rt_copy_result *res, rt_error **err);

#endif
