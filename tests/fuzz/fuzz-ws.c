/* fuzz-ws.c - a WebSocket client's bytes (serve/ws.h), which the terminal
 * and tunnel routes read from anyone holding a token.
 *
 * Input: byte 0 sets the reader's limit (16 << (byte & 15)), byte 1 how
 * the rest is cut into pushes (1 + byte bytes each); the rest is the
 * stream.
 *
 * Checked: every message is within the limit and its opcode one the
 * reader gives; a close code given is one a peer may send; a refusal is a
 * close code with a reason and ends the stream; the reader never holds
 * more than a frame of its limit.
 */
#include <string.h>

#include "fuzz.h"
#include "serve/ws.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct srv_ws_reader rd;
  struct srv_ws_msg m;
  const char *why;
  size_t max, step, at = 2;
  int ret = 0;

  if (size < 2)
    return 0;
  max = (size_t) 16 << (data[0] & 15);
  step = 1 + (size_t) data[1];
  srv_ws_reader_init (&rd, max);
  while (at < size && ret >= 0)
    {
      size_t n = size - at < step ? size - at : step;
      if (srv_ws_reader_push (&rd, data + at, n) < 0)
        break;
      at += n;
      FUZZ_CHECK (srv_ws_reader_held (&rd) <= max + 14);
      while ((ret = srv_ws_reader_next (&rd, &m, (why = NULL, &why))) == 1)
        {
          FUZZ_CHECK (m.len <= max);
          FUZZ_CHECK (m.opcode == SRV_WS_TEXT || m.opcode == SRV_WS_BINARY || m.opcode == SRV_WS_CLOSE
                      || m.opcode == SRV_WS_PING || m.opcode == SRV_WS_PONG);
          FUZZ_CHECK (m.opcode < SRV_WS_CLOSE || m.len <= 125);
          if (m.opcode == SRV_WS_CLOSE)
            FUZZ_CHECK (m.code == 1005 || (m.code >= 1000 && m.code < 5000 && m.code != 1004 && m.code != 1006));
          if (m.len)
            FUZZ_CHECK (m.data != NULL);
        }
      if (ret < 0)
        FUZZ_CHECK (why != NULL && (ret == -SRV_WS_PROTOCOL || ret == -SRV_WS_TOO_BIG || ret == -SRV_WS_BAD_DATA
                                    || ret == -SRV_WS_INTERNAL));
    }
  srv_ws_reader_free (&rd);
  return 0;
}
