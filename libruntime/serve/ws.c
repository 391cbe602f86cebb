/* ws.c - RFC 6455 for the server (see ws.h).  */
#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "common/b64.h"
#include "serve/ws.h"

static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

bool
srv_ws_accept_key (const char *key, char out[SRV_WS_ACCEPT_LEN + 1])
{
  uint8_t raw[18], digest[EVP_MAX_MD_SIZE];
  char joined[24 + sizeof ws_guid];
  unsigned dlen = 0;

  if (key == NULL || strlen (key) != 24 || rt_b64_decode (key, 24, raw) != 16)
    return false;
  memcpy (joined, key, 24);
  memcpy (joined + 24, ws_guid, sizeof ws_guid);
  if (!EVP_Digest (joined, 24 + sizeof ws_guid - 1, digest, &dlen, EVP_sha1 (), NULL) || dlen != 20)
    return false;
  return rt_b64_encode_into (out, digest, 20) == SRV_WS_ACCEPT_LEN;
}

size_t
srv_ws_head (uint8_t head[SRV_WS_HEAD_MAX], int opcode, uint64_t len)
{
  head[0] = 0x80 | (opcode & 0x0f);
  if (len < 126)
    {
      head[1] = (uint8_t) len;
      return 2;
    }
  if (len <= 0xffff)
    {
      head[1] = 126;
      head[2] = (uint8_t) (len >> 8);
      head[3] = (uint8_t) len;
      return 4;
    }
  head[1] = 127;
  for (int i = 0; i < 8; i++)
    head[2 + i] = (uint8_t) (len >> (56 - 8 * i));
  return 10;
}

void
srv_ws_reader_init (struct srv_ws_reader *rd, size_t max)
{
  memset (rd, 0, sizeof *rd);
  rd->max = max;
}

void
srv_ws_reader_free (struct srv_ws_reader *rd)
{
  free (rd->buf);
  free (rd->msg);
  memset (rd, 0, sizeof *rd);
}

size_t
srv_ws_reader_held (const struct srv_ws_reader *rd)
{
  return rd->len - rd->off;
}

int
srv_ws_reader_push (struct srv_ws_reader *rd, const void *data, size_t n)
{
  /* A frame's head (14 bytes with its mask) and its payload: more held
     than that is a client ahead of the reader.  */
  size_t room = rd->max + 14;

  /* The frames read are dropped here, once a push, not one memmove a
     frame: a flood of tiny frames was quadratic.  */
  if (rd->off)
    {
      memmove (rd->buf, rd->buf + rd->off, rd->len - rd->off);
      rd->len -= rd->off;
      rd->off = 0;
    }
  if (n > room || rd->len > room - n)
    return -SRV_WS_TOO_BIG;
  if (rd->len + n > rd->cap)
    {
      size_t cap = rd->cap ? rd->cap : 4096;
      uint8_t *p;
      while (cap < rd->len + n)
        cap *= 2;
      if ((p = realloc (rd->buf, cap)) == NULL)
        return -ENOMEM;
      rd->buf = p;
      rd->cap = cap;
    }
  if (n)
    memcpy (rd->buf + rd->len, data, n);
  rd->len += n;
  return 0;
}

/* RFC 3629: no overlong form, no surrogate, nothing past U+10FFFF.  */
static bool
valid_utf8 (const uint8_t *s, size_t n)
{
  size_t i = 0;

  while (i < n)
    {
      uint32_t c = s[i], min;
      size_t more;

      if (c < 0x80)
        {
          i++;
          continue;
        }
      if ((c & 0xe0) == 0xc0)
        more = 1, c &= 0x1f, min = 0x80;
      else if ((c & 0xf0) == 0xe0)
        more = 2, c &= 0x0f, min = 0x800;
      else if ((c & 0xf8) == 0xf0)
        more = 3, c &= 0x07, min = 0x10000;
      else
        return false;
      if (n - i <= more)
        return false;
      for (size_t k = 1; k <= more; k++)
        {
          if ((s[i + k] & 0xc0) != 0x80)
            return false;
          c = c << 6 | (s[i + k] & 0x3f);
        }
      if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return false;
      i += more + 1;
    }
  return true;
}

/* RFC 6455 7.4: the codes a peer may send.  */
static bool
sendable_code (unsigned code)
{
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
}

#define FAIL(code, text)                                                                                               \
  do                                                                                                                   \
    {                                                                                                                  \
      *why = text;                                                                                                     \
      return -(code);                                                                                                  \
    }                                                                                                                  \
  while (0)

/* A control frame may come between a message's fragments: it is given
   now, from a copy past the message's bytes.  */
static int
take_control (struct srv_ws_reader *rd, struct srv_ws_msg *m, int op, const uint8_t *payload, size_t len,
              size_t used, const char **why)
{
  uint8_t *copy = realloc (rd->msg, rd->msg_len + len + 1);

  if (copy == NULL)
    FAIL (SRV_WS_INTERNAL, "out of memory");
  rd->msg = copy;
  memcpy (copy + rd->msg_len, payload, len);
  rd->off += used;
  m->opcode = op;
  m->data = copy + rd->msg_len;
  m->len = len;
  m->code = 1005;
  if (op != SRV_WS_CLOSE || len == 0)
    return 1;
  if (len == 1)
    FAIL (SRV_WS_PROTOCOL, "a close frame of one byte");
  m->code = (uint16_t) (m->data[0] << 8 | m->data[1]);
  if (!sendable_code (m->code))
    FAIL (SRV_WS_PROTOCOL, "a close code no peer may send");
  if (!valid_utf8 (m->data + 2, m->len - 2))
    FAIL (SRV_WS_BAD_DATA, "a close reason not UTF-8");
  return 1;
}

int
srv_ws_reader_next (struct srv_ws_reader *rd, struct srv_ws_msg *m, const char **why)
{
  static const char *unused;

  if (why == NULL)
    why = &unused;
  for (;;)
    {
      uint8_t *b = rd->buf + rd->off;
      size_t have = rd->len - rd->off, at = 2;
      uint64_t len;
      bool fin;
      int op;

      if (have < 2)
        return 0;
      fin = b[0] & 0x80;
      op = b[0] & 0x0f;
      if (b[0] & 0x70)
        FAIL (SRV_WS_PROTOCOL, "reserved bits set");
      if (!(b[1] & 0x80))
        FAIL (SRV_WS_PROTOCOL, "a client frame not masked");
      if (op != SRV_WS_CONT && op != SRV_WS_TEXT && op != SRV_WS_BINARY && op != SRV_WS_CLOSE && op != SRV_WS_PING
          && op != SRV_WS_PONG)
        FAIL (SRV_WS_PROTOCOL, "unknown opcode");
      len = b[1] & 0x7f;
      if (op >= SRV_WS_CLOSE && (!fin || len > 125))
        FAIL (SRV_WS_PROTOCOL, "a control frame fragmented or over 125 bytes");
      if (len == 126)
        {
          if (have < 4)
            return 0;
          len = (uint64_t) b[2] << 8 | b[3];
          at = 4;
          if (len < 126)
            FAIL (SRV_WS_PROTOCOL, "a length not in its shortest form");
        }
      else if (len == 127)
        {
          if (have < 10)
            return 0;
          len = 0;
          for (int i = 0; i < 8; i++)
            len = len << 8 | b[2 + i];
          at = 10;
          if (len >> 63)
            FAIL (SRV_WS_PROTOCOL, "a length over 2^63");
          if (len <= 0xffff)
            FAIL (SRV_WS_PROTOCOL, "a length not in its shortest form");
        }
      if (op == SRV_WS_CONT ? rd->msg_op == 0 : (op < SRV_WS_CLOSE && rd->msg_op != 0))
        FAIL (SRV_WS_PROTOCOL, op == SRV_WS_CONT ? "a continuation of no message" : "a message inside another");
      /* Refused at its head: nothing of an oversized message is held.  */
      if (len > rd->max || (op < SRV_WS_CLOSE && rd->msg_len + len > rd->max))
        FAIL (SRV_WS_TOO_BIG, "a message over the limit");
      if (have - at < 4 + len)
        return 0;

      const uint8_t *mask = b + at;
      uint8_t *payload = b + at + 4;
      for (uint64_t i = 0; i < len; i++)
        payload[i] ^= mask[i & 3];
      size_t used = at + 4 + (size_t) len;

      if (op >= SRV_WS_CLOSE)
        return take_control (rd, m, op, payload, (size_t) len, used, why);
      uint8_t *grown = realloc (rd->msg, rd->msg_len + len + 1);
      if (grown == NULL)
        FAIL (SRV_WS_INTERNAL, "out of memory");
      rd->msg = grown;
      memcpy (rd->msg + rd->msg_len, payload, len);
      rd->msg_len += (size_t) len;
      if (op != SRV_WS_CONT)
        rd->msg_op = op;
      rd->off += used;
      if (!fin)
        continue;
      m->opcode = rd->msg_op;
      m->data = rd->msg;
      m->len = rd->msg_len;
      m->code = 0;
      rd->msg_op = 0;
      rd->msg_len = 0;
      if (m->opcode == SRV_WS_TEXT && !valid_utf8 (m->data, m->len))
        FAIL (SRV_WS_BAD_DATA, "a text message not UTF-8");
      return 1;
    }
}
