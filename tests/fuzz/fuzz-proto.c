/* fuzz-proto.c - the frame reader (common/proto.h) against the byte stream
 * a hostile guest sends.
 *
 * Input: byte 0 seeds the sizes of the reads (0: one read of everything);
 * with its bit 7 set ("big"), each 12-byte header of the rest is followed
 * by a made-up payload of the length it declares (none when over the
 * limit), so that frames of every size, up to RT_FRAME_MAX_PAYLOAD, and the
 * reader's compaction are reached from small inputs.  Without it the rest is
 * the stream as it is.
 *
 * Checked against a one-pass decode of the whole stream written here from
 * the header's specification in proto.h: the reader hands out exactly its
 * frames, in order, with the same headers and payload bytes, whatever the
 * read sizes; it never withholds a complete frame; it fails at the first
 * bad header with an error that header deserves; a delivered header
 * re-encodes to the same 12 bytes; and while a frame is incomplete there is
 * always room to read into (inside the reader's buffer).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "common/proto.h"
#include "fuzz.h"

#define STREAM_MAX (3u * (RT_FRAME_HEADER + RT_FRAME_MAX_PAYLOAD))

/* Big: a static buffer, not one allocation per input.  */
static struct rt_frame_reader reader;
static uint8_t stream[STREAM_MAX];

/* The header rules of proto.h, independently of rt_frame_decode_header:
   0 for a good header, else a bit per broken rule.  */
enum
{
  BAD_TYPE = 1,
  BAD_RESERVED = 2,
  BAD_LEN = 4
};

static int
spec_check (const uint8_t *hdr, uint32_t *len)
{
  int bad = 0;

  *len = (uint32_t) hdr[0] | (uint32_t) hdr[1] << 8 | (uint32_t) hdr[2] << 16 | (uint32_t) hdr[3] << 24;
  if (hdr[8] < RT_FRAME_HELLO || hdr[8] > RT_FRAME_TYPE_MAX)
    bad |= BAD_TYPE;
  if (hdr[9] != 0 || hdr[10] != 0 || hdr[11] != 0)
    bad |= BAD_RESERVED;
  if (*len > RT_FRAME_MAX_PAYLOAD)
    bad |= BAD_LEN;
  return bad;
}

static size_t
build_stream (const uint8_t *data, size_t size, bool big)
{
  size_t n = 0;

  if (!big)
    {
      n = size < STREAM_MAX ? size : STREAM_MAX;
      memcpy (stream, data, n);
      return n;
    }
  while (size > 0 && n < STREAM_MAX)
    {
      size_t h = size < RT_FRAME_HEADER ? size : RT_FRAME_HEADER;
      uint32_t len;

      if (h > STREAM_MAX - n)
        h = STREAM_MAX - n;
      memcpy (stream + n, data, h);
      data += h;
      size -= h;
      n += h;
      if (h < RT_FRAME_HEADER)
        break;
      spec_check (stream + n - h, &len);
      if (len > RT_FRAME_MAX_PAYLOAD)
        len = 0;
      if (len > STREAM_MAX - n)
        len = STREAM_MAX - n;
      for (uint32_t i = 0; i < len; i++)
        stream[n + i] = (uint8_t) (i * 31u + n);
      n += len;
    }
  return n;
}

static size_t
next_read_size (unsigned *seed)
{
  static const size_t sizes[] = { 1, 2, 11, 12, 13, 100, 4096, 65536, 300000, SIZE_MAX };

  if (*seed == 0)
    return SIZE_MAX;
  *seed = *seed * 1103515245u + 12345u;
  return sizes[(*seed >> 16) % (sizeof (sizes) / sizeof (sizes[0]))];
}

/* One frame the reader returned, against the stream at @ref (fed: @fed).
   Returns the offset of the next frame.  */
static size_t
check_frame (size_t ref, size_t fed, const struct rt_frame_header *h, const uint8_t *payload)
{
  uint32_t len;
  uint8_t again[RT_FRAME_HEADER];

  FUZZ_CHECK (fed - ref >= RT_FRAME_HEADER);
  FUZZ_CHECK (spec_check (stream + ref, &len) == 0);
  FUZZ_CHECK (h->len == len && h->type == stream[ref + 8]);
  FUZZ_CHECK (h->stream == rt_get_u32 (stream + ref + 4));
  FUZZ_CHECK (fed - ref - RT_FRAME_HEADER >= len);
  FUZZ_CHECK (payload >= reader.buf && payload + len <= reader.buf + sizeof (reader.buf));
  FUZZ_CHECK (memcmp (payload, stream + ref + RT_FRAME_HEADER, len) == 0);
  rt_frame_encode_header (again, h->type, h->stream, h->len);
  FUZZ_CHECK (memcmp (again, stream + ref, RT_FRAME_HEADER) == 0);
  if (h->type == RT_FRAME_WINDOW && len == 4)
    {
      uint8_t w[4];
      rt_put_u32 (w, rt_get_u32 (payload));
      FUZZ_CHECK (memcmp (w, payload, 4) == 0);
    }
  return ref + RT_FRAME_HEADER + len;
}

/* Takes every frame the reader has; false once it failed.  */
static bool
drain (size_t *ref, size_t fed)
{
  for (;;)
    {
      struct rt_frame_header h;
      const uint8_t *payload = NULL;
      uint32_t len;
      int r = rt_frame_reader_next (&reader, &h, &payload), bad;

      if (r == 1)
        {
          *ref = check_frame (*ref, fed, &h, payload);
          continue;
        }
      if (fed - *ref < RT_FRAME_HEADER)
        {
          FUZZ_CHECK (r == 0);
          return true;
        }
      bad = spec_check (stream + *ref, &len);
      if (r == 0)
        {
          /* Waiting is right only for a good header with its payload short.  */
          FUZZ_CHECK (bad == 0 && fed - *ref - RT_FRAME_HEADER < len);
          return true;
        }
      FUZZ_CHECK (r == -EPROTO || r == -EMSGSIZE);
      FUZZ_CHECK (r != -EPROTO || (bad & (BAD_TYPE | BAD_RESERVED)));
      FUZZ_CHECK (r != -EMSGSIZE || (bad & BAD_LEN));
      return false;
    }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  size_t n, fed = 0, ref = 0;
  unsigned seed;

  if (size < 1)
    return 0;
  seed = data[0] & 0x7f;
  n = build_stream (data + 1, size - 1, data[0] & 0x80);
  rt_frame_reader_init (&reader);
  while (drain (&ref, fed) && fed < n)
    {
      size_t avail = 0, take = next_read_size (&seed);
      uint8_t *space = rt_frame_reader_space (&reader, &avail);

      FUZZ_CHECK (avail > 0);
      FUZZ_CHECK (space >= reader.buf && space + avail <= reader.buf + sizeof (reader.buf));
      if (take > avail)
        take = avail;
      if (take > n - fed)
        take = n - fed;
      memcpy (space, stream + fed, take);
      rt_frame_reader_filled (&reader, take);
      fed += take;
    }
  return 0;
}
