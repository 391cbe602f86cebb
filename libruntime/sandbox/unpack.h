/* unpack.h - extracting the tar a guest sends for `cp` out: what of it
   may land on the host.  The guest is root and writes every byte of the
   archive, so each entry is filtered before libarchive sees it.  */
#ifndef RT_SANDBOX_UNPACK_H
#define RT_SANDBOX_UNPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime.h"

/* Each entry costs this much against the size cap besides its bytes (a
   tar header): a million empty files are not free.  */
#define RT_UNPACK_ENTRY_COST 512

struct rt_unpack_limits
{
  const char *name;  /* the copied item: every entry is it or below it */
  uint64_t max_size; /* bytes, RT_UNPACK_ENTRY_COST per entry included */
  bool keep_links;   /* the item itself may be a symlink */
};

enum rt_unpack_status
{
  RT_UNPACK_OK,
  RT_UNPACK_FAILED,   /* could not write (why: libarchive's message) */
  RT_UNPACK_BROKEN,   /* the archive is malformed or ended early */
  RT_UNPACK_TOO_BIG,  /* past max_size */
  RT_UNPACK_NO_SPACE, /* the destination's filesystem is full */
  RT_UNPACK_TOP_LINK, /* the item is a symlink (why: its target) */
  RT_UNPACK_MISSING,  /* the archive does not hold the item */
};

/**
 * rt_unpack - extract the tar read from @fd into the current directory
 * @fd:  the archive
 * @lim: the item's name and the limits
 * @res: the bytes written and the entries skipped, by kind
 * @why: filled with a detail for the status (control characters escaped)
 * @why_size: its size
 *
 * Only regular files, directories, symlinks whose target stays inside the
 * item, and hard links without data to files already written land, named
 * within rt_layer_path_fits (image/layer.h); all of them must fit the free
 * space and inodes of the current directory's filesystem as the
 * extraction starts (RT_UNPACK_NO_SPACE); modes lose
 * setuid, setgid, sticky and whatever the umask masks (directories keep
 * u+rwx, so the copy can always be removed).  The caller extracts into a
 * private directory and renames the item into place only on RT_UNPACK_OK.
 *
 * Return: the status.
 */
enum rt_unpack_status rt_unpack (int fd, const struct rt_unpack_limits *lim, rt_copy_result *res, char *why,
                                 size_t why_size);

/* @len bytes of @s (up to a NUL) into @out, NUL-terminated and cut to
   @size, through rt_text_escape: guest-provided text for a terminal.  */
void rt_unpack_escape (char *out, size_t size, const char *s, size_t len);

#endif
