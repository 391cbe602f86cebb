/* beneath.h - files opened beneath a directory and copied out of it by
   their descriptors, never by their paths again (common/beneath.c): what
   a recipe names (build/plan.c) stays in the recipe's folder.  */
#ifndef RT_COMMON_BENEATH_H
#define RT_COMMON_BENEATH_H

#include "common/util.h"

/* Opens @path (relative) beneath the directory @dirfd with open(2)'s
   @flags: openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS, or
   rt_open_beneath_walk where the kernel lacks it.  Symlinks are followed
   while they stay beneath @dirfd.
   Return: the descriptor; -EXDEV when @path is absolute or leaves @dirfd
   (by "..", an absolute or escaping symlink), -ELOOP for too many links or
   a /proc magic link, else -errno.  */
int rt_open_beneath (int dirfd, const char *path, int flags);
/* The same, one component at a time with O_NOFOLLOW, symlinks read and
   resolved here (only openat2's fallback; the unit test runs both).
   Return: as rt_open_beneath.  */
int rt_open_beneath_walk (int dirfd, const char *path, int flags);
/* Copies what @fd is (a regular file or a directory) to @name in the
   directory @todir, keeping modes and times: a directory's entries are
   opened relative to their parent with O_NOFOLLOW, its symlinks copied as
   symlinks (never followed); anything else is refused, naming it as
   @shown/<path> in the error, and so is a regular file with more than one
   hard link that the caller (the effective uid) does not own.
   Return: 0, or a negative errno with *err set.  */
int rt_copy_fd_tree (int fd, int todir, const char *name, const char *shown, rt_error **err);
/* The path the kernel knows @fd by (for messages and names only: never
   opened again).
   Return: a string to free, or NULL when there is none.  */
char *rt_fd_path (int fd);

#endif
