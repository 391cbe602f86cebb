/* proto.h - the framed protocol between the host and the guest agent.
 *
 * Shared, unchanged, by the agent (images/agent) and the host side
 * (libruntime/vmm/channel.c).  The guest is hostile: every length and type read
 * from the wire is checked here before anything else looks at it.
 *
 * A frame is a 12-byte header followed by `len` payload bytes:
 *
 *   u32 len     payload length, little endian, <= RT_FRAME_MAX_PAYLOAD
 *   u32 stream  0 for the connection itself, else one command's stream
 *   u8  type    enum rt_frame_type
 *   u8  flags   0
 *   u16 zero    0
 *
 * Control payloads are JSON objects (json-c); data payloads are raw bytes.
 *
 *   HELLO     both ways, stream 0   {"version":1,"agent":"…"} — the guest
 *                                   sends it each time the host connects;
 *                                   the host's may carry "trust": a PEM
 *                                   certificate (the egress CA of a sandbox
 *                                   with secrets) for the guest to trust
 *   EXEC      host→guest            {"argv":[…],"env":["K=V"…],"cwd":"/workspace",
 *                                    "user":"runtime"|"root","timeoutMs":N,
 *                                    "stdin":bool, "pty":{"cols":N,"rows":N}?}
 *                                   — opens `stream`.  With "pty" (cols and
 *                                   rows 1..1000) the command runs in a new
 *                                   session on a pseudo-terminal of that
 *                                   size, its controlling terminal, as
 *                                   stdin, stdout and stderr (TERM comes
 *                                   from "env"); its output arrives as
 *                                   STDOUT only, and the terminal's
 *                                   process group is the command's, so a
 *                                   ^C typed goes to the program.  A pty
 *                                   has no end of input: an empty STDIN
 *                                   is ignored (send the byte 0x04)
 *   CONNECT   host→guest            {"port":N} (1..65535) — opens `stream`
 *                                   as a TCP connection to 127.0.0.1:N in
 *                                   the guest: STDIN frames are bytes to
 *                                   it (empty: shut its write side),
 *                                   STDOUT frames bytes from it, WINDOW
 *                                   both ways as for a command.  When the
 *                                   guest's side ends (EOF or an error)
 *                                   the last STDOUT is followed by EXIT
 *                                   {"exitCode":0} (1 after an error); a
 *                                   connection refused is ERROR
 *                                   {"code":"connection_refused"}.  A
 *                                   SIGNAL (any) closes it at once,
 *                                   answered by EXIT.  Counts against the
 *                                   same limit of streams as commands
 *   STDIN     host→guest, raw       an empty payload closes the command's stdin
 *   RESIZE    host→guest            {"cols":N,"rows":N} (1..1000): the pty
 *                                   of a "pty" command takes that size
 *                                   (its process group gets SIGWINCH);
 *                                   ignored on other streams
 *   STDOUT    guest→host, raw
 *   STDERR    guest→host, raw
 *   EXIT      guest→host            {"exitCode":N,"signal":N,"timedOut":bool,
 *                                    "durationMs":N} — last frame of a stream
 *   SIGNAL    host→guest            {"signal":N} to the command's process group
 *   ERROR     guest→host            {"code":"…","message":"…"} — the request
 *                                   was refused; last frame of that stream
 *                                   (stream 0: the connection's own error)
 *   WINDOW    both ways, 4 bytes    u32 LE: bytes consumed since the last
 *                                   WINDOW.  host→guest: output the host
 *                                   consumed; the guest may have at most
 *                                   RT_WINDOW_INITIAL unacknowledged bytes of
 *                                   STDOUT+STDERR payload in flight per
 *                                   stream.  guest→host: stdin the command
 *                                   took; the host likewise keeps at most
 *                                   RT_WINDOW_INITIAL bytes of STDIN in flight
 *   SHUTDOWN  host→guest, stream 0  sync the disks and power off
 *   FREEZE    host→guest, stream 0  empty: sync and freeze the root file
 *                                   system (a template is about to be
 *                                   saved); answered by DONE
 *   RESTORE   host→guest, stream 0  {"entropy": base64 of 64 bytes,
 *                                    "timeMs": host epoch ms, "hostname":
 *                                    "…", "mode":"clone"|"child"|"wake"?,
 *                                    "keep":[stream…]?}: this guest was
 *                                   just started from saved memory.  Before
 *                                   any other frame is handled: thaw, add
 *                                   the entropy and reseed the kernel's
 *                                   generator, set the clock, forget the
 *                                   gateway's MAC; "clone" (the default):
 *                                   new hostname, machine id and boot id,
 *                                   kill every process, forget every
 *                                   command; "child": new identity too, but
 *                                   only the commands whose stream is not
 *                                   in "keep" are killed and forgotten
 *                                   (none without "keep"); "wake": the same
 *                                   identity, "keep" as in "child".  Ends a
 *                                   quiesce; answered by DONE (one that
 *                                   refuses it changes nothing)
 *   QUIESCE   host→guest, stream 0  empty: answered by DONE, after which
 *                                   the guest sends no frame at all until
 *                                   the next RESTORE (output waits in the
 *                                   pipes, exits are told afterwards); a
 *                                   RESTORE's DONE, or a second QUIESCE's,
 *                                   is the only exception.  The channel is
 *                                   then at a frame boundary while the host
 *                                   copies the guest.  A host that connects
 *                                   meanwhile gets no HELLO, and the
 *                                   commands stay for its RESTORE to keep
 *   DONE      guest→host, stream 0  {"op":"freeze"|"restore"|"quiesce",
 *                                    "ok":bool, "message":"…"?}
 */
#ifndef RT_PROTO_H
#define RT_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RT_PROTO_VERSION 1
#define RT_CHANNEL_NAME "runtime.agent"
#define RT_FRAME_HEADER 12
#define RT_FRAME_MAX_PAYLOAD (256u * 1024u)
#define RT_WINDOW_INITIAL (1024u * 1024u)
#define RT_PTY_MAX_SIDE 1000u /* a pty's largest cols or rows (RT_MAX_PTY_SIDE of runtime.h) */

/* Where the guest keeps a HELLO's "trust" certificate, and the bundle it
   is added to (Debian's, which OpenSSL, curl and git read).  */
#define RT_GUEST_CA_FILE "/usr/local/share/ca-certificates/runtime-egress.crt"
#define RT_GUEST_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

enum rt_frame_type
{
  RT_FRAME_HELLO = 1,
  RT_FRAME_EXEC = 2,
  RT_FRAME_STDIN = 3,
  RT_FRAME_STDOUT = 4,
  RT_FRAME_STDERR = 5,
  RT_FRAME_EXIT = 6,
  RT_FRAME_SIGNAL = 7,
  RT_FRAME_ERROR = 8,
  RT_FRAME_WINDOW = 9,
  RT_FRAME_SHUTDOWN = 10,
  RT_FRAME_FREEZE = 11,
  RT_FRAME_RESTORE = 12,
  RT_FRAME_DONE = 13,
  RT_FRAME_QUIESCE = 14,
  RT_FRAME_CONNECT = 15,
  RT_FRAME_RESIZE = 16,
  RT_FRAME_TYPE_MAX = RT_FRAME_RESIZE
};

struct rt_frame_header
{
  uint32_t len;
  uint32_t stream;
  uint8_t type;
};

/* Writes the 12-byte header for a frame.  */
void rt_frame_encode_header (uint8_t out[RT_FRAME_HEADER], uint8_t type, uint32_t stream, uint32_t len);

/* Checks and decodes a header.  Return: 0; -EMSGSIZE for a payload over
   RT_FRAME_MAX_PAYLOAD; -EPROTO for an unknown type or non-zero reserved
   bytes.  */
int rt_frame_decode_header (const uint8_t in[RT_FRAME_HEADER], struct rt_frame_header *h);

/* Incremental reader: read() into rt_frame_reader_space(), then
   rt_frame_reader_filled(), then take frames with rt_frame_reader_next()
   until it returns 0.  Holds at most one whole frame plus a header.  */
struct rt_frame_reader
{
  size_t fill;   /* bytes in buf */
  size_t start;  /* first byte not yet handed out */
  uint8_t buf[2 * (RT_FRAME_HEADER + RT_FRAME_MAX_PAYLOAD)];
};

void rt_frame_reader_init (struct rt_frame_reader *r);
/* Where the next read() may write, and how much.  Never 0 while a frame is
   incomplete.  */
uint8_t *rt_frame_reader_space (struct rt_frame_reader *r, size_t *avail);
void rt_frame_reader_filled (struct rt_frame_reader *r, size_t n);
/* Return: 1 and a frame (payload valid until the next call), 0 when more
   bytes are needed, or a negative errno (see rt_frame_decode_header): the
   stream is then unusable.  */
int rt_frame_reader_next (struct rt_frame_reader *r, struct rt_frame_header *h, const uint8_t **payload);

/* WINDOW payload helpers.  */
void rt_put_u32 (uint8_t out[4], uint32_t v);
uint32_t rt_get_u32 (const uint8_t in[4]);

/* The one check of a pty's size, wherever one comes in (the API, a
   session, an EXEC or RESIZE in the guest): both 1..RT_PTY_MAX_SIDE.
   int64_t, so that a JSON integer is checked before it is narrowed.  */
bool rt_pty_size_ok (int64_t cols, int64_t rows);

#endif
