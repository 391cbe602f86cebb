/* files.h - what the files routes (files.c) share with the upload routes
   (uploads.c).  */
#ifndef RT_SERVE_FILES_H
#define RT_SERVE_FILES_H

#include "sandbox/handle.h"
#include "serve/server.h"

/* @value, or the query's @name when @value is NULL, when it is an
   absolute path; NULL after replying 400.  */
const char *srv_files_path (struct srv_req *r, const char *name, const char *value);
/* "644" or "4755" into *mode (0644 when @s is NULL); -1 when malformed.  */
int srv_files_mode (const char *s, unsigned *mode);
/* {path, size, mode} of a file written.  */
json_object *srv_files_written (const char *path, uint64_t size, unsigned mode);

#endif
