/* archive.h - libarchive's failures as rt_error, where they enter the
   library (layers, initramfs, kernel packages, copies).  */
#ifndef RT_CORE_ARCHIVE_H
#define RT_CORE_ARCHIVE_H

#include "common/util.h"

struct archive;

/* A libarchive failure of @a as an "internal" error: "<what> '<path>': <why>".
   Return: the negated errno.  */
int rt_archive_fail (rt_error **err, struct archive *a, const char *what, const char *path);

#endif
