/* files.h - reading files in a sandbox (cat, the listing), and what copy.c
   shares of it.  */
#ifndef RT_SANDBOX_FILES_H
#define RT_SANDBOX_FILES_H

#include "common/util.h"

/* Exit codes of the guest-side file scripts: not stderr to parse.  */
#define EXIT_IS_DIR 66
#define EXIT_MISSING 67



/* The local driver (public/driver.h): these do what include/runtime.h
   says of their rt_ names, on this machine.  */
int rt_local_sandbox_cat (rt_sandbox *sb, const char *path, const rt_exec_opts *opts, rt_error **err);
int rt_local_sandbox_files_json (rt_sandbox *sb, const char *path, unsigned depth, char **json, rt_error **err);

#endif
