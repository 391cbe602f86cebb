/* test-proto.c - the frame codec against truncated, oversized and garbage
   input: it is the boundary with the hostile guest.  */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/proto.h"
#include "tap.h"

static size_t
feed (struct rt_frame_reader *r, const uint8_t *data, size_t len)
{
  size_t avail, n;
  uint8_t *space = rt_frame_reader_space (r, &avail);
  n = len < avail ? len : avail;
  memcpy (space, data, n);
  rt_frame_reader_filled (r, n);
  return n;
}

int
main (void)
{
  static struct rt_frame_reader r;
  struct rt_frame_header h;
  const uint8_t *payload;
  uint8_t buf[64], hdr[RT_FRAME_HEADER];
  int ret;

  /* Round trip.  */
  rt_frame_encode_header (hdr, RT_FRAME_STDOUT, 7, 5);
  ok (rt_frame_decode_header (hdr, &h) == 0 && h.len == 5 && h.stream == 7 && h.type == RT_FRAME_STDOUT,
      "header round trip");

  /* A frame arriving one byte at a time comes out whole, once.  */
  rt_frame_reader_init (&r);
  memcpy (buf, hdr, RT_FRAME_HEADER);
  memcpy (buf + RT_FRAME_HEADER, "hello", 5);
  ret = 0;
  for (size_t i = 0; i < RT_FRAME_HEADER + 5; i++)
    {
      ret |= rt_frame_reader_next (&r, &h, &payload);
      feed (&r, buf + i, 1);
    }
  ok (ret == 0, "an incomplete frame is never delivered");
  ret = rt_frame_reader_next (&r, &h, &payload);
  ok (ret == 1 && h.len == 5 && memcmp (payload, "hello", 5) == 0, "byte-by-byte frame delivered whole");
  ok (rt_frame_reader_next (&r, &h, &payload) == 0, "nothing more after it");

  /* Two frames in one read.  */
  rt_frame_reader_init (&r);
  rt_frame_encode_header (buf, RT_FRAME_STDERR, 1, 2);
  memcpy (buf + 12, "ab", 2);
  rt_frame_encode_header (buf + 14, RT_FRAME_EXIT, 1, 0);
  feed (&r, buf, 26);
  ok (rt_frame_reader_next (&r, &h, &payload) == 1 && h.type == RT_FRAME_STDERR && h.len == 2, "first of two");
  ok (rt_frame_reader_next (&r, &h, &payload) == 1 && h.type == RT_FRAME_EXIT && h.len == 0, "second of two (empty)");

  /* Truncated header: waits, never reads past.  */
  rt_frame_reader_init (&r);
  feed (&r, buf, 11);
  ok (rt_frame_reader_next (&r, &h, &payload) == 0, "truncated header waits");

  /* Oversized length is refused before any payload is awaited.  */
  rt_frame_reader_init (&r);
  rt_frame_encode_header (hdr, RT_FRAME_STDOUT, 1, RT_FRAME_MAX_PAYLOAD + 1);
  feed (&r, hdr, RT_FRAME_HEADER);
  ok (rt_frame_reader_next (&r, &h, &payload) == -EMSGSIZE, "oversized frame refused");
  rt_frame_encode_header (hdr, RT_FRAME_STDOUT, 1, 0xffffffffu);
  ok (rt_frame_decode_header (hdr, &h) == -EMSGSIZE, "4 GiB length refused");

  /* A maximal frame fits.  */
  {
    uint8_t *big = calloc (1, RT_FRAME_HEADER + RT_FRAME_MAX_PAYLOAD);
    size_t off = 0;
    rt_frame_reader_init (&r);
    rt_frame_encode_header (big, RT_FRAME_STDOUT, 3, RT_FRAME_MAX_PAYLOAD);
    while (off < RT_FRAME_HEADER + RT_FRAME_MAX_PAYLOAD)
      off += feed (&r, big + off, RT_FRAME_HEADER + RT_FRAME_MAX_PAYLOAD - off);
    ok (rt_frame_reader_next (&r, &h, &payload) == 1 && h.len == RT_FRAME_MAX_PAYLOAD, "maximal frame delivered");
    free (big);
  }

  /* Garbage: unknown types, type 0, reserved bytes set.  */
  rt_frame_encode_header (hdr, 0, 1, 0);
  ok (rt_frame_decode_header (hdr, &h) == -EPROTO, "type 0 refused");
  rt_frame_encode_header (hdr, RT_FRAME_TYPE_MAX + 1, 1, 0);
  ok (rt_frame_decode_header (hdr, &h) == -EPROTO, "unknown type refused");
  rt_frame_encode_header (hdr, RT_FRAME_HELLO, 0, 0);
  hdr[10] = 1;
  ok (rt_frame_decode_header (hdr, &h) == -EPROTO, "reserved bytes must be zero");

  /* Random garbage never yields a frame it should not and never crashes.  */
  {
    unsigned seed = 12345;
    int frames = 0, errors = 0;
    for (int round = 0; round < 2000; round++)
      {
        uint8_t junk[300];
        rt_frame_reader_init (&r);
        for (size_t i = 0; i < sizeof (junk); i++)
          junk[i] = (seed = seed * 1103515245 + 12345) >> 16;
        feed (&r, junk, sizeof (junk));
        while ((ret = rt_frame_reader_next (&r, &h, &payload)) == 1)
          {
            frames++;
            if (h.len > RT_FRAME_MAX_PAYLOAD || h.type == 0 || h.type > RT_FRAME_TYPE_MAX)
              errors++;
          }
      }
    ok (errors == 0, "2000 rounds of garbage: no invalid frame accepted (%d accepted)", frames);
  }

  /* The reader survives many frames without growing: the buffer is reused.  */
  {
    int delivered = 0;
    rt_frame_reader_init (&r);
    for (int i = 0; i < 10000; i++)
      {
        uint8_t f[12 + 100];
        struct rt_frame_header fh;
        const uint8_t *pl;
        rt_frame_encode_header (f, RT_FRAME_STDOUT, 1, 100);
        memset (f + 12, i & 0xff, 100);
        feed (&r, f, sizeof (f));
        while (rt_frame_reader_next (&r, &fh, &pl) == 1)
          delivered += pl[0] == (i & 0xff);
      }
    ok (delivered == 10000, "10000 frames streamed through one reader");
  }

  ok (rt_get_u32 ((const uint8_t *) "\x01\x02\x03\x04") == 0x04030201, "u32 is little endian");

  ok (rt_pty_size_ok (80, 24) && rt_pty_size_ok (1, 1) && rt_pty_size_ok (RT_PTY_MAX_SIDE, RT_PTY_MAX_SIDE),
      "a pty of 80x24, 1x1 and the largest is fine");
  ok (!rt_pty_size_ok (0, 24) && !rt_pty_size_ok (80, 0) && !rt_pty_size_ok (0, 0), "a side of 0 is not");
  ok (!rt_pty_size_ok (RT_PTY_MAX_SIDE + 1, 24) && !rt_pty_size_ok (80, RT_PTY_MAX_SIDE + 1),
      "one past the largest is not");
  ok (!rt_pty_size_ok (-1, 24) && !rt_pty_size_ok (80, -1) && !rt_pty_size_ok (INT64_MIN, 24),
      "a negative side is not");
  ok (!rt_pty_size_ok ((int64_t) 1 << 32 | 80, 24) && !rt_pty_size_ok (80, INT64_MAX),
      "a side that would narrow to a small unsigned is not");
  return tap_done ();
}
