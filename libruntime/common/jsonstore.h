/* jsonstore.h - a JSON object kept in a file of mode 0600 (it holds values
   or hashes others must not read), changed by reading, editing and
   writing it whole under a lock file beside it: the secrets store
   (net/secrets.c) and the token store (serve/tokens.c).  */
#ifndef RT_JSONSTORE_H
#define RT_JSONSTORE_H

#include <sys/stat.h>

#include "common/util.h"

/* The object in @path, {} when there is no file (then st->st_ino is 0);
   @st (NULL allowed) gets what the file was when read.  A file others
   could read is refused ("invalid_request", the message naming it as
   @what, the hint saying to chmod it and then @fix): what it held may be
   known.  A file that is no JSON object is "internal".  */
int rt_json_store_load (const char *path, const char *what, const char *fix, json_object **out, struct stat *st,
                        rt_error **err);
/* @o written to @path through a temp file and a rename, mode 0600.  */
int rt_json_store_save (const char *path, json_object *o, rt_error **err);
/* Holds @dir/@name (@dir made with @dir_mode if missing) in *fd.  */
int rt_json_store_lock (const char *dir, const char *name, mode_t dir_mode, int *fd, rt_error **err);

#endif
