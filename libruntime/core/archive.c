/* archive.c - libarchive's failures as rt_error, where they enter.  */
#include <archive.h>
#include <errno.h>

#include "core/archive.h"

int
rt_archive_fail (rt_error **err, struct archive *a, const char *what, const char *path)
{
  int e = archive_errno (a);
  return rt_error_set (err, e > 0 ? e : EIO, "internal", "%s '%s': %s", what, path,
                       archive_error_string (a) ? archive_error_string (a) : "unknown libarchive error");
}
