/* ramfile.h - the `ram` file of a saved VM (snapshot/saved.h) and of a
 * template (template/template.h): the guest's RAM in chunks of
 * RT_RAMFILE_CHUNK bytes, each LZ4-compressed, its zero pages and
 * all-zero chunks left out.  All numbers little-endian.
 *
 *   header, 40 bytes, written last (a file cut short has none):
 *     "RTRAMLZ4"                   magic
 *     u32 version (1)              u32 chunk (RT_RAMFILE_CHUNK)
 *     u64 the memory's size        u64 records
 *     u64 the file's size
 *   then the records, in no particular order, each a 24-byte head:
 *     u64 guest offset             a multiple of the chunk, in the memory
 *     u64 pages                    bit i: the page at offset + i * 4096 is
 *                                  in the record (the others are zero)
 *     u32 stored                   the payload's length
 *     u32 0
 *   and its payload: the pages present, in order, as one LZ4 block, or
 *   raw when that would not be shorter or the writer was told not to
 *   compress (stored == pages present * 4096).
 *
 * The file is the host's own, but it is read as if it might lie: every
 * length and offset is checked against the memory's and the file's size
 * before anything is read or written, and one that does not fit is an
 * error, never a write outside the memory.
 */
#ifndef RT_RAMFILE_H
#define RT_RAMFILE_H

#include "common/util.h"

#define RT_RAMFILE_CHUNK (256 * 1024)
#define RT_RAMFILE_HEADER 40
#define RT_RAMFILE_RECORD 24

struct rt_ramfile_sizes
{
  int64_t data; /* the bytes of the non-zero pages */
  int64_t file; /* the file's size */
};

/* The RAM in @mem_fd (@size bytes, a multiple of 4096; its holes are not
   read) written to @out_fd, an empty file, with @threads threads (0: as
   many as there are CPUs, at most 2); every record raw unless @compress
   (for a file read once, soon: it saves the compression's CPU).  @sizes
   may be NULL.  */
int rt_ramfile_write (int mem_fd, uint64_t size, int out_fd, unsigned threads, bool compress,
                      struct rt_ramfile_sizes *sizes, rt_error **err);

/* The RAM in the file @file_fd (named @what in errors) into @mem_fd, a
   memfd of @size bytes whose pages are zero, with @threads threads as
   above: only non-zero pages are written.  Errors: "internal" (also a
   file that is not such a RAM of @size bytes, or is cut short).  */
int rt_ramfile_read (int file_fd, int mem_fd, uint64_t size, unsigned threads, const char *what, rt_error **err);

/* Calls @fn on each data extent [from, to) of @fd below @size
   (SEEK_DATA/SEEK_HOLE: a memfd's or a sparse file's holes are never
   read).  */
int rt_ramfile_each_extent (int fd, uint64_t size, int (*fn) (void *arg, off_t from, off_t to, rt_error **err),
                            void *arg, rt_error **err);

#endif
