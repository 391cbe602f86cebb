/* fuzz-ramfile.c - the saved RAM's reader (snapshot/ramfile.h), which
 * must treat a file it wrote itself as if it might lie.
 *
 * Input: a `ram` file for a memory of 1 MiB (four chunks).  It is read
 * into a memfd of 1 MiB, with one thread and then two.
 *
 * Checked: the read ends, with an error or not, and never grows the memfd
 * (no write outside the memory); a read that succeeds gives the same
 * bytes both times; and the input taken as the memory's first bytes is
 * written (compressed when its length is even, else raw) and read back to
 * the same bytes.
 */
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "snapshot/ramfile.h"

#define SIZE (1 << 20)

static int
memfd_of (const void *data, size_t len, off_t size)
{
  int fd = memfd_create ("fuzz-ram", MFD_CLOEXEC);

  FUZZ_CHECK (fd >= 0 && ftruncate (fd, size) == 0);
  FUZZ_CHECK (len == 0 || pwrite (fd, data, len, 0) == (ssize_t) len);
  return fd;
}

/* @file read into a new memfd of SIZE with @threads; its bytes in @out
   when it succeeds.  */
static bool
read_into (int file, unsigned threads, uint8_t *out)
{
  int mem = memfd_of (NULL, 0, SIZE);
  rt_error *err = NULL;
  struct stat st;
  bool good = rt_ramfile_read (file, mem, SIZE, threads, "the input", &err) == 0;

  FUZZ_CHECK (good == (err == NULL));
  FUZZ_CHECK (fstat (mem, &st) == 0 && st.st_size == SIZE);
  if (good)
    FUZZ_CHECK (pread (mem, out, SIZE, 0) == SIZE);
  rt_error_free (err);
  close (mem);
  return good;
}

static void
round_trip (const uint8_t *data, size_t size)
{
  size_t len = size < SIZE ? size : SIZE;
  int mem = memfd_of (data, len, SIZE), file = memfd_of (NULL, 0, 0);
  static uint8_t got[SIZE];
  rt_error *err = NULL;

  FUZZ_CHECK (rt_ramfile_write (mem, SIZE, file, 2, size % 2 == 0, NULL, &err) == 0);
  FUZZ_CHECK (read_into (file, 1, got));
  FUZZ_CHECK (memcmp (got, data, len) == 0);
  for (size_t i = len; i < SIZE; i++)
    FUZZ_CHECK (got[i] == 0);
  close (mem);
  close (file);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static uint8_t one[SIZE], two[SIZE];
  int file = memfd_of (data, size, (off_t) size);
  bool a = read_into (file, 1, one), b = read_into (file, 2, two);

  FUZZ_CHECK (a == b);
  FUZZ_CHECK (!a || memcmp (one, two, SIZE) == 0);
  close (file);
  round_trip (data, size);
  return 0;
}
