/* cleanup.h - cleanup attributes and ownership transfer, header-only.
 *
 * Compiled by the library and by the guest agent (images/agent), so it
 * needs nothing beyond libc and json-c.  */
#ifndef RT_CLEANUP_H
#define RT_CLEANUP_H

#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void
cleanup_freep (void *p)
{
  free (*(void **) p);
}
static inline void
cleanup_closep (int *fd)
{
  if (*fd >= 0)
    {
      int saved = errno;
      close (*fd);
      errno = saved;
    }
}
static inline void
cleanup_filep (FILE **f)
{
  if (*f)
    fclose (*f);
}
static inline void
cleanup_dirp (DIR **d)
{
  if (*d)
    closedir (*d);
}
static inline void
cleanup_strvp (char ***v)
{
  if (*v)
    {
      for (char **p = *v; *p; p++)
        free (*p);
      free (*v);
    }
}

static inline void
cleanup_jsonp (json_object **o)
{
  if (*o)
    json_object_put (*o);
}

#define cleanup_free __attribute__ ((cleanup (cleanup_freep)))
#define cleanup_close __attribute__ ((cleanup (cleanup_closep)))
#define cleanup_file __attribute__ ((cleanup (cleanup_filep)))
#define cleanup_dir __attribute__ ((cleanup (cleanup_dirp)))
#define cleanup_strv __attribute__ ((cleanup (cleanup_strvp)))
#define cleanup_json __attribute__ ((cleanup (cleanup_jsonp)))

static inline void *
steal_pointer_impl (void *pp)
{
  void **p = (void **) pp;
  void *v = *p;
  *p = NULL;
  return v;
}
#define steal_pointer(pp) ((__typeof__ (*(pp))) steal_pointer_impl (pp))

static inline int
steal_fd (int *fd)
{
  int v = *fd;
  *fd = -1;
  return v;
}

#endif
