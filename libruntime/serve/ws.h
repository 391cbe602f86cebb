/* ws.h - the server's side of RFC 6455 WebSocket, as a pure module: the
   handshake's answer key, a client's frames read into whole messages, a
   server's frame heads.  No I/O: serve/server.c moves the bytes, and
   api/terminal.c speaks over it.  libevent 2.1's evhttp has no WebSocket
   server (2.2's ws.c has), and the part needed is small.

   A client is hostile: every frame must be masked (RFC 6455 5.1), its
   reserved bits clear (no extension is offered), its opcode known, a
   control frame whole and at most 125 bytes, a length in its shortest
   form; a message (its fragments together) is at most the reader's
   limit, refused (1009) as soon as its head says more; a text message
   must be UTF-8 (1007).  Any of these ends the connection with the close
   code the reader gives.  */
#ifndef RT_SERVE_WS_H
#define RT_SERVE_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum
{
  SRV_WS_CONT = 0x0,
  SRV_WS_TEXT = 0x1,
  SRV_WS_BINARY = 0x2,
  SRV_WS_CLOSE = 0x8,
  SRV_WS_PING = 0x9,
  SRV_WS_PONG = 0xa,
};

/* Close codes (RFC 6455 7.4.1).  */
enum
{
  SRV_WS_NORMAL = 1000,
  SRV_WS_GOING_AWAY = 1001,
  SRV_WS_PROTOCOL = 1002,
  SRV_WS_UNSUPPORTED = 1003,
  SRV_WS_BAD_DATA = 1007,
  SRV_WS_POLICY = 1008,
  SRV_WS_TOO_BIG = 1009,
  SRV_WS_INTERNAL = 1011,
};

/* Sec-WebSocket-Accept's value is 28 characters.  */
#define SRV_WS_ACCEPT_LEN 28
/* The most a server frame's head takes.  */
#define SRV_WS_HEAD_MAX 10

/* The answer to a client's Sec-WebSocket-Key @key: base64 of SHA-1 of
   the key and RFC 6455's GUID, in @out (NUL-terminated).  False when @key
   is not base64 of 16 bytes, as RFC 6455 4.1 says it must be.  */
bool srv_ws_accept_key (const char *key, char out[SRV_WS_ACCEPT_LEN + 1]);

/* A server frame's head for @len bytes of @opcode, whole (FIN), unmasked,
   in @head.  Return: its length.  */
size_t srv_ws_head (uint8_t head[SRV_WS_HEAD_MAX], int opcode, uint64_t len);

struct srv_ws_reader
{
  size_t max;   /* of a message, and of a frame */
  uint8_t *buf; /* bytes read, not yet a frame: from .off to .len */
  size_t off, len, cap;
  uint8_t *msg; /* the message whose fragments are coming */
  size_t msg_len;
  int msg_op; /* its opcode, 0 for none */
};

struct srv_ws_msg
{
  int opcode;   /* SRV_WS_TEXT, _BINARY, _CLOSE, _PING or _PONG */
  uint8_t *data; /* the reader's, until its next call */
  size_t len;
  uint16_t code; /* SRV_WS_CLOSE: the code given, 1005 (none given) else */
};

void srv_ws_reader_init (struct srv_ws_reader *rd, size_t max);
void srv_ws_reader_free (struct srv_ws_reader *rd);
/* @n bytes from the client.  Return: 0, or -SRV_WS_TOO_BIG when more is
   held than a frame of the limit can be (the caller should read less
   before the next message is taken), -ENOMEM.  */
int srv_ws_reader_push (struct srv_ws_reader *rd, const void *data, size_t n);
/* The next message in @m: 1; 0 when more bytes are needed; or a close
   code, negated, for a client that broke the protocol (@why: a few
   words, static).  */
int srv_ws_reader_next (struct srv_ws_reader *rd, struct srv_ws_msg *m, const char **why);
/* Bytes held: at most a frame's head past the limit.  */
size_t srv_ws_reader_held (const struct srv_ws_reader *rd);

#endif
