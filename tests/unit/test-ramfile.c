/* test-ramfile.c - the saved RAM's file (snapshot/ramfile.h): a memfd of
   zero, compressible and random chunks, and a chunk with a few zero pages,
   written and read back (one and two threads) to the same bytes, its
   zero pages still holes; then files cut short or lying in their header
   or records, each an error that writes nothing outside the memory.  */
#include <endian.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include "snapshot/ramfile.h"
#include "tap.h"

#define MIB (1 << 20)
#define PAGE 4096
#define SIZE (16 * MIB)
#define CHUNK RT_RAMFILE_CHUNK

static int
memfd (uint64_t size)
{
  int fd = memfd_create ("test-ram", MFD_CLOEXEC);

  if (fd >= 0 && ftruncate (fd, (off_t) size) < 0)
    {
      close (fd);
      return -1;
    }
  return fd;
}

/* @fd's bytes, which must be @size.  */
static uint8_t *
contents (int fd, size_t size)
{
  uint8_t *p = malloc (size);

  if (p && pread (fd, p, size, 0) != (ssize_t) size)
    {
      free (p);
      return NULL;
    }
  return p;
}

/* The guest: chunk 0 text-like, chunk 1 random, chunk 2 text with pages 3
   and 9 zero, a page of zeros written at chunk 3 (data, all zero), chunk
   8 random but its last page, the last chunk's last page; holes between. */
static bool
wr (int fd, const void *p, size_t n, off_t at)
{
  return pwrite (fd, p, n, at) == (ssize_t) n;
}

static bool
fill (int fd)
{
  static uint8_t buf[CHUNK];
  uint32_t x = 12345;
  bool good = true;

  for (size_t i = 0; i < CHUNK; i++)
    buf[i] = "the quick brown fox jumps over the lazy dog "[i % 44] + (uint8_t) (i / 4096 % 3);
  good &= wr (fd, buf, CHUNK, 0);
  memset (buf + 3 * PAGE, 0, PAGE);
  memset (buf + 9 * PAGE, 0, PAGE);
  good &= wr (fd, buf, CHUNK, 2 * CHUNK);
  for (size_t i = 0; i < CHUNK; i++)
    buf[i] = (uint8_t) ((x = x * 1103515245 + 12345) >> 16);
  good &= wr (fd, buf, CHUNK, CHUNK);
  good &= wr (fd, buf, CHUNK - PAGE, 8 * CHUNK);
  memset (buf, 0, PAGE);
  good &= wr (fd, buf, PAGE, 3 * CHUNK);
  memset (buf, 7, PAGE);
  good &= wr (fd, buf, PAGE, SIZE - PAGE);
  return good;
}

/* The bytes of data (not holes) @fd has.  */
static off_t
data_bytes (int fd, off_t size)
{
  off_t pos = 0, total = 0;

  for (;;)
    {
      off_t d = lseek (fd, pos, SEEK_DATA), h;
      if (d < 0 || d >= size)
        return total;
      h = lseek (fd, d, SEEK_HOLE);
      total += h - d;
      pos = h;
    }
}

static int
saved (int src, uint64_t size, unsigned threads, bool compress, struct rt_ramfile_sizes *sizes)
{
  int fd = memfd (0);
  rt_error *err = NULL;

  if (fd >= 0 && rt_ramfile_write (src, size, fd, threads, compress, sizes, &err) < 0)
    {
      printf ("# %s\n", err->msg);
      close (fd);
      fd = -1;
    }
  rt_error_free (err);
  return fd;
}

static void
test_round_trip (void)
{
  int src = memfd (SIZE), file;
  struct rt_ramfile_sizes sz;
  uint8_t *want;

  ok (fill (src), "the guest's memory made");
  want = contents (src, SIZE);
  /* One thread, two, and two writing every record raw.  */
  for (unsigned k = 0; k < 3; k++)
    {
      unsigned threads = k ? 2 : 1;
      bool compress = k < 2;
      int dst = memfd (SIZE);
      uint8_t *got = NULL;
      rt_error *err = NULL;
      struct stat st;

      file = saved (src, SIZE, threads, compress, &sz);
      ok (file >= 0 && fstat (file, &st) == 0 && st.st_size == sz.file, "%u thread(s)%s: written, %lld bytes",
          threads, compress ? "" : ", raw", (long long) sz.file);
      /* 0, 1, 2 (less its two zero pages), 8 (less one), the last page.  */
      ok (sz.data == (int64_t) (4 * CHUNK - 3 * PAGE + PAGE), "… its data: the non-zero pages (%lld)",
          (long long) sz.data);
      if (compress)
        ok (sz.file < (int64_t) (2 * CHUNK), "… compressed: under the random chunks' size and a bit");
      else
        ok (sz.file == sz.data + 5 * RT_RAMFILE_RECORD + RT_RAMFILE_HEADER, "… raw: its pages, 5 records, a header");
      ok (rt_ramfile_read (file, dst, SIZE, threads, "the test RAM", &err) == 0, "… read back %s",
          err ? err->msg : "");
      got = contents (dst, SIZE);
      ok (got && want && memcmp (got, want, SIZE) == 0, "… to the same bytes");
      ok (data_bytes (dst, SIZE) == sz.data, "… its zero pages holes (%lld bytes of data)",
          (long long) data_bytes (dst, SIZE));
      free (got);
      rt_error_free (err);
      close (dst);
      close (file);
    }
  free (want);
  close (src);
}

static void
test_empty (void)
{
  int src = memfd (SIZE), dst = memfd (SIZE), file;
  struct rt_ramfile_sizes sz;
  rt_error *err = NULL;

  file = saved (src, SIZE, 0, true, &sz);
  ok (file >= 0 && sz.file == RT_RAMFILE_HEADER && sz.data == 0, "an empty memory: a header only");
  ok (rt_ramfile_read (file, dst, SIZE, 0, "x", &err) == 0 && data_bytes (dst, SIZE) == 0, "read: nothing written");
  rt_error_free (err);
  close (file);
  close (dst);
  close (src);
}

/* Whether reading @file into a fresh memfd of @size fails, leaving the
   memfd's size.  */
static bool
refused (int file, uint64_t size, const char *why)
{
  int dst = memfd (size);
  rt_error *err = NULL;
  struct stat st;
  bool failed = rt_ramfile_read (file, dst, size, 2, "the test RAM", &err) < 0 && err && err->msg;

  if (why)
    printf ("# %s: %s\n", why, err ? err->msg : "(no error)");
  failed = failed && fstat (dst, &st) == 0 && (uint64_t) st.st_size == size;
  rt_error_free (err);
  close (dst);
  return failed;
}

/* A copy of @file with @len bytes at @at replaced by @bytes (@len 0:
   only cut to @cut when @cut >= 0).  */
static int
altered (int file, off_t cut, off_t at, const void *bytes, size_t len)
{
  struct stat st;
  int fd = memfd (0);
  uint8_t *all;

  fstat (file, &st);
  all = contents (file, (size_t) st.st_size);
  if (all == NULL || fd < 0)
    return -1;
  if (len)
    memcpy (all + at, bytes, len);
  if (pwrite (fd, all, cut >= 0 ? (size_t) cut : (size_t) st.st_size, 0) < 0)
    fd = -1;
  free (all);
  return fd;
}

static void
lie_u64 (int file, off_t at, uint64_t v, const char *why)
{
  uint64_t le = htole64 (v);
  int fd = altered (file, -1, at, &le, sizeof le);

  ok (refused (fd, SIZE, why), "%s: refused", why);
  close (fd);
}

static void
test_lies (void)
{
  int src = memfd (SIZE), file, fd;
  struct rt_ramfile_sizes sz;
  struct stat st;
  off_t rec = RT_RAMFILE_HEADER;
  uint32_t v;
  uint8_t junk[64];

  fill (src);
  file = saved (src, SIZE, 1, true, &sz);
  fstat (file, &st);
  for (off_t cut = 0; cut < st.st_size; cut += cut < 200 ? 7 : 4099)
    {
      fd = altered (file, cut, 0, NULL, 0);
      if (!refused (fd, SIZE, NULL))
        ok (false, "a file cut to %lld bytes is refused", (long long) cut);
      close (fd);
    }
  ok (true, "a file cut short anywhere is refused");
  ok (refused (file, SIZE / 2, "another size"), "a RAM of another size is refused");
  fd = memfd (SIZE / 2);
  {
    rt_error *err = NULL;
    ok (rt_ramfile_read (file, fd, SIZE, 1, "x", &err) < 0, "a memfd smaller than the size is refused");
    rt_error_free (err);
  }
  close (fd);
  fd = altered (file, -1, 0, "RTRAMLZ5", 8);
  ok (refused (fd, SIZE, "magic"), "another magic is refused");
  close (fd);
  v = htole32 (2);
  fd = altered (file, -1, 8, &v, 4);
  ok (refused (fd, SIZE, "version"), "another version is refused");
  close (fd);
  v = htole32 (CHUNK / 2);
  fd = altered (file, -1, 12, &v, 4);
  ok (refused (fd, SIZE, "chunk"), "another chunk size is refused");
  close (fd);
  lie_u64 (file, 24, UINT64_MAX / 2, "a huge record count");
  lie_u64 (file, 24, 1, "too few records");
  lie_u64 (file, 32, (uint64_t) st.st_size + 1, "a file size it does not have");
  /* The first record's head.  */
  lie_u64 (file, rec, SIZE, "a record at the memory's end");
  lie_u64 (file, rec, UINT64_MAX - CHUNK + 1, "a record at 2^64 - chunk");
  lie_u64 (file, rec, 100, "a record not at a chunk");
  lie_u64 (file, rec + 8, 0, "a record of no pages");
  lie_u64 (file, rec + 16, 0, "a record of no bytes");
  v = htole32 (1);
  fd = altered (file, -1, rec + 20, &v, 4);
  ok (refused (fd, SIZE, "reserved"), "a record with its reserved word set is refused");
  close (fd);
  lie_u64 (file, rec + 16, (uint64_t) st.st_size, "a record longer than the file");
  lie_u64 (file, rec + 16, CHUNK + 1, "a record longer than its pages");
  /* The record of the last chunk: pages past the memory's end.  */
  {
    uint8_t head[RT_RAMFILE_RECORD];
    off_t at = rec;
    bool found = false;
    for (int i = 0; i < 64 && !found; i++)
      {
        uint32_t stored;
        if (pread (file, head, sizeof head, at) != sizeof head)
          break;
        memcpy (&stored, head + 16, 4);
        if (le64toh (*(uint64_t *) head) == SIZE - CHUNK)
          found = true;
        else
          at += RT_RAMFILE_RECORD + le32toh (stored);
      }
    ok (found, "the last chunk's record found");
    fd = altered (file, -1, 0, NULL, 0);
    {
      int small = memfd (SIZE - CHUNK / 2);
      rt_error *err = NULL;
      uint64_t size = SIZE - CHUNK / 2;
      uint64_t h = htole64 (size);
      /* Its header says the smaller size: the record's last page is past
         it.  */
      ok (wr (fd, &h, 8, 16) && rt_ramfile_read (fd, small, size, 1, "x", &err) < 0 && fstat (small, &st) == 0
              && (uint64_t) st.st_size == size,
          "a page past the memory's end is refused, nothing grown (%s)", err ? err->msg : "");
      rt_error_free (err);
      close (small);
    }
    close (fd);
  }
  /* A compressed payload that does not decompress.  */
  memset (junk, 0xff, sizeof junk);
  fd = altered (file, -1, rec + RT_RAMFILE_RECORD, junk, sizeof junk);
  ok (refused (fd, SIZE, "junk LZ4"), "a payload that is not LZ4 is refused");
  close (fd);
  close (file);
  close (src);
}

/* Not a check: how long each way takes on 2 x 64 MiB (text-like, random)
   with one and two threads, for the thread count's choice.  */
static void
timing (void)
{
  uint64_t size = 256 * MIB;
  int src = memfd (size);
  uint8_t *buf = malloc (MIB);
  uint32_t x = 1;

  for (int m = 0; m < 128; m++)
    {
      for (size_t i = 0; i < MIB; i++)
        buf[i] = m < 64 ? (uint8_t) ("struct page flags mapping index "[i % 32] + i / 64 % 5)
                        : (uint8_t) ((x = x * 1103515245 + 12345) >> 16);
      if (!wr (src, buf, MIB, (off_t) m * 2 * MIB))
        return;
    }
  for (unsigned t = 1; t <= 2; t++)
    {
      struct timespec a, b, c;
      struct rt_ramfile_sizes sz;
      int dst = memfd (size), file;
      rt_error *err = NULL;

      clock_gettime (CLOCK_MONOTONIC, &a);
      file = saved (src, size, t, true, &sz);
      clock_gettime (CLOCK_MONOTONIC, &b);
      rt_ramfile_read (file, dst, size, t, "x", &err);
      clock_gettime (CLOCK_MONOTONIC, &c);
      printf ("# %u thread(s): 128 MiB of data to %lld bytes in %.0f ms, back in %.0f ms\n", t, (long long) sz.file,
              (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6,
              (c.tv_sec - b.tv_sec) * 1e3 + (c.tv_nsec - b.tv_nsec) / 1e6);
      rt_error_free (err);
      close (file);
      close (dst);
    }
  free (buf);
  close (src);
}

int
main (void)
{
  test_round_trip ();
  test_empty ();
  test_lies ();
  if (getenv ("RAMFILE_TIMING"))
    timing ();
  return tap_done ();
}
