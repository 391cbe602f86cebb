/* proto.c - frame codec shared by the host and the guest agent.  */
#include "common/proto.h"

#include <errno.h>
#include <string.h>

void
rt_put_u32 (uint8_t out[4], uint32_t v)
{
  out[0] = v & 0xff;
  out[1] = (v >> 8) & 0xff;
  out[2] = (v >> 16) & 0xff;
  out[3] = (v >> 24) & 0xff;
}

uint32_t
rt_get_u32 (const uint8_t in[4])
{
  return (uint32_t) in[0] | ((uint32_t) in[1] << 8) | ((uint32_t) in[2] << 16) | ((uint32_t) in[3] << 24);
}

void
rt_frame_encode_header (uint8_t out[RT_FRAME_HEADER], uint8_t type, uint32_t stream, uint32_t len)
{
  rt_put_u32 (out, len);
  rt_put_u32 (out + 4, stream);
  out[8] = type;
  out[9] = out[10] = out[11] = 0;
}

int
rt_frame_decode_header (const uint8_t in[RT_FRAME_HEADER], struct rt_frame_header *h)
{
  h->len = rt_get_u32 (in);
  h->stream = rt_get_u32 (in + 4);
  h->type = in[8];
  if (in[9] != 0 || in[10] != 0 || in[11] != 0)
    return -EPROTO;
  if (h->type == 0 || h->type > RT_FRAME_TYPE_MAX)
    return -EPROTO;
  if (h->len > RT_FRAME_MAX_PAYLOAD)
    return -EMSGSIZE;
  return 0;
}

void
rt_frame_reader_init (struct rt_frame_reader *r)
{
  r->fill = 0;
  r->start = 0;
}

uint8_t *
rt_frame_reader_space (struct rt_frame_reader *r, size_t *avail)
{
  /* Compact only when the tail could not hold a whole frame: most reads
     then land without a memmove.  */
  if (r->start > 0 && sizeof (r->buf) - r->fill < RT_FRAME_HEADER + RT_FRAME_MAX_PAYLOAD)
    {
      memmove (r->buf, r->buf + r->start, r->fill - r->start);
      r->fill -= r->start;
      r->start = 0;
    }
  *avail = sizeof (r->buf) - r->fill;
  return r->buf + r->fill;
}

void
rt_frame_reader_filled (struct rt_frame_reader *r, size_t n)
{
  r->fill += n;
}

int
rt_frame_reader_next (struct rt_frame_reader *r, struct rt_frame_header *h, const uint8_t **payload)
{
  size_t have = r->fill - r->start;
  int ret;

  if (have < RT_FRAME_HEADER)
    return 0;
  ret = rt_frame_decode_header (r->buf + r->start, h);
  if (ret < 0)
    return ret;
  if (have < RT_FRAME_HEADER + (size_t) h->len)
    return 0;
  *payload = r->buf + r->start + RT_FRAME_HEADER;
  r->start += RT_FRAME_HEADER + h->len;
  if (r->start == r->fill)
    r->start = r->fill = 0;
  return 1;
}

bool
rt_pty_size_ok (int64_t cols, int64_t rows)
{
  return cols >= 1 && cols <= RT_PTY_MAX_SIDE && rows >= 1 && rows <= RT_PTY_MAX_SIDE;
}
