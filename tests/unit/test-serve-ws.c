/* test-serve-ws.c - the server's WebSocket frames (serve/ws.h): RFC 6455's
   own handshake example, then a table of client byte streams, each with
   the messages it makes or the close code it is refused with.  */
#include <stdlib.h>
#include <string.h>

#include "serve/ws.h"
#include "tap.h"

#define M "\x01\x02\x03\x04" /* the mask of every case */

static const struct
{
  const char *name;
  const char *in;
  size_t in_len;
  size_t max;
  int want;          /* messages made, or -close code */
  const char *first; /* the first message's payload */
  int op;            /* and its opcode */
} cases[] = {
  /* "Hi" masked with 01 02 03 04 is 49 6b */
  { "a masked text frame", "\x81\x82" M "\x49\x6b", 8, 64, 1, "Hi", SRV_WS_TEXT },
  { "a binary frame", "\x82\x82" M "\x49\x6b", 8, 64, 1, "Hi", SRV_WS_BINARY },
  { "two fragments", "\x01\x81" M "\x49\x80\x81" M "\x68", 14, 64, 1, "Hi", SRV_WS_TEXT },
  { "a ping between fragments", "\x01\x81" M "\x49\x89\x80" M "\x80\x81" M "\x68", 20, 64, 2, "", SRV_WS_PING },
  { "an empty binary frame", "\x82\x80" M, 6, 64, 1, "", SRV_WS_BINARY },
  { "a close with 1000", "\x88\x82" M "\x02\xea", 8, 64, 1, "\x03\xe8", SRV_WS_CLOSE },
  { "a partial frame waits", "\x81\x85" M "\x49", 7, 64, 0, NULL, 0 },
  { "unmasked", "\x81\x02Hi", 4, 64, -SRV_WS_PROTOCOL, NULL, 0 },
  { "reserved bit", "\xc1\x82" M "\x49\x6b", 8, 64, -SRV_WS_PROTOCOL, NULL, 0 },
  { "opcode 3", "\x83\x80" M, 6, 64, -SRV_WS_PROTOCOL, NULL, 0 },
  { "opcode 0xb", "\x8b\x80" M, 6, 64, -SRV_WS_PROTOCOL, NULL, 0 },
  { "a continuation first", "\x80\x80" M, 6, 64, -SRV_WS_PROTOCOL, NULL, 0 },
  { "a text inside a text", "\x01\x80" M "\x81\x80" M, 12, 64, -SRV_WS_PROTOCOL, NULL, 0 },
  { "a fragmented ping", "\x09\x80" M, 6, 64, -SRV_WS_PROTOCOL, NULL, 0 },
  { "a ping of 126 bytes", "\x89\xfe\x00\x7e" M, 8, 4096, -SRV_WS_PROTOCOL, NULL, 0 },
  { "a 16-bit length under 126", "\x82\xfe\x00\x05" M, 8, 64, -SRV_WS_PROTOCOL, NULL, 0 },
  { "a 64-bit length under 65536", "\x82\xff\x00\x00\x00\x00\x00\x00\x00\x05" M, 14, 64, -SRV_WS_PROTOCOL, NULL, 0 },
  { "a 64-bit length's top bit", "\x82\xff\x80\x00\x00\x00\x00\x00\x00\x00" M, 14, 64, -SRV_WS_PROTOCOL, NULL, 0 },
  { "a frame over the limit, at its head", "\x82\xff\x00\x00\x00\x01\x00\x00\x00\x00", 10, 1 << 20, -SRV_WS_TOO_BIG,
    NULL, 0 },
  { "fragments over the limit", "\x02\x84" M "aaaa\x80\x84" M "aaaa", 20, 6, -SRV_WS_TOO_BIG, NULL, 0 },
  { "text not UTF-8", "\x81\x81" M "\xfe", 7, 64, -SRV_WS_BAD_DATA, NULL, 0 },
  { "an overlong '/'", "\x81\x82" M "\xc1\xad", 8, 64, -SRV_WS_BAD_DATA, NULL, 0 },
  { "a surrogate", "\x81\x83" M "\xec\xa2\x83", 9, 64, -SRV_WS_BAD_DATA, NULL, 0 },
  { "UTF-8 text", "\x81\x82" M "\xc2\xab", 8, 64, 1, "\xc3\xa9", SRV_WS_TEXT },
  { "a close of one byte", "\x88\x81" M "\x03", 7, 64, -SRV_WS_PROTOCOL, NULL, 0 },
  { "a close code 1005", "\x88\x82" M "\x02\xef", 8, 64, -SRV_WS_PROTOCOL, NULL, 0 },
  { "a close code 999", "\x88\x82" M "\x02\xe5", 8, 64, -SRV_WS_PROTOCOL, NULL, 0 },
};

static void
run_case (size_t i)
{
  struct srv_ws_reader rd;
  struct srv_ws_msg m;
  const char *why = NULL;
  int n = 0, ret;
  char *first = NULL;
  size_t first_len = 0;
  int first_op = 0;

  srv_ws_reader_init (&rd, cases[i].max);
  /* A byte at a time: a reader must not care how the stream is cut.  */
  ret = 0;
  for (size_t k = 0; k < cases[i].in_len && ret >= 0; k++)
    {
      ret = srv_ws_reader_push (&rd, cases[i].in + k, 1);
      while (ret >= 0 && (ret = srv_ws_reader_next (&rd, &m, &why)) == 1)
        {
          if (n++ == 0)
            {
              first = malloc (m.len + 1);
              memcpy (first, m.data, m.len);
              first_len = m.len;
              first_op = m.opcode;
            }
          ret = 0;
        }
    }
  if (cases[i].want < 0)
    ok (ret == cases[i].want && why != NULL, "%s: refused with %d (%s)", cases[i].name, -ret, why ? why : "-");
  else
    ok (ret == 0 && n == cases[i].want
            && (n == 0
                || (first_op == cases[i].op && first_len == strlen (cases[i].first)
                    && memcmp (first, cases[i].first, first_len) == 0)),
        "%s: %d message(s)", cases[i].name, n);
  free (first);
  srv_ws_reader_free (&rd);
}

int
main (void)
{
  char accept[SRV_WS_ACCEPT_LEN + 1];
  uint8_t head[SRV_WS_HEAD_MAX];
  struct srv_ws_reader rd;

  /* RFC 6455 1.3.  */
  ok (srv_ws_accept_key ("dGhlIHNhbXBsZSBub25jZQ==", accept) && strcmp (accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=") == 0,
      "the RFC's Sec-WebSocket-Accept");
  ok (!srv_ws_accept_key ("dGhlIHNhbXBsZSBub25jZQ=", accept), "a key of 23 characters refused");
  ok (!srv_ws_accept_key ("dGhlIHNhbXBsZSBub25jZXh4", accept), "a key of 18 bytes refused");
  ok (!srv_ws_accept_key ("dGhlIHNhbXBsZSBub25jZQ!!", accept), "a key not base64 refused");
  ok (!srv_ws_accept_key (NULL, accept), "no key refused");

  ok (srv_ws_head (head, SRV_WS_BINARY, 5) == 2 && head[0] == 0x82 && head[1] == 5, "a short head");
  ok (srv_ws_head (head, SRV_WS_TEXT, 300) == 4 && head[1] == 126 && head[2] == 1 && head[3] == 44, "a 16-bit head");
  ok (srv_ws_head (head, SRV_WS_BINARY, 70000) == 10 && head[1] == 127 && head[7] == 1 && head[8] == 0x11
          && head[9] == 0x70,
      "a 64-bit head");

  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    run_case (i);

  srv_ws_reader_init (&rd, 16);
  ok (srv_ws_reader_push (&rd, "0123456789abcdef0123456789abcdef", 32) == -SRV_WS_TOO_BIG,
      "a reader holds no more than a frame of its limit");
  srv_ws_reader_free (&rd);
  return tap_done ();
}
