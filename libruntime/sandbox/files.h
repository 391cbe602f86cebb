/* files.h - reading files in a sandbox (cat, the listing), and what copy.c
   shares of it.  */
#ifndef RT_SANDBOX_FILES_H
#define RT_SANDBOX_FILES_H

#include "common/util.h"

/* Exit codes of the guest-side file scripts: not stderr to parse.  */
#define EXIT_IS_DIR 66
#define EXIT_MISSING 67

/* usage error unless @path is absolute.  */
int rt_check_guest_path (const char *path, rt_error **err);

/* json_object_array_sort's order of listing entries: by "path".  */
int rt_entry_by_path (const void *a, const void *b);

#endif
