/* session.h - session.sock: clients that drive one agent stream each, a
 * command with its stdin open (rt_sandbox_attach) or a TCP connection to
 * a port in the guest (rt_sandbox_connect), in common/proto.h's frames.
 *
 * The client's first frame opens the stream (its stream number is
 * ignored; every frame of the session uses 0):
 *   EXEC     the body of POST :exec (argv, env, cwd, user, timeoutMs,
 *            pty) less stdin/stdinPath: checked as :exec checks it
 *   CONNECT  {"port":N}, 1..65535
 * An accepted first frame is answered by WINDOW 0 (a refused one by
 * ERROR, as below), then the client sends STDIN (empty: end of input),
 * RESIZE {cols, rows}, SIGNAL {signal}.
 * The monitor sends STDOUT, STDERR, WINDOW (stdin the guest took: the
 * client may have at most RT_WINDOW_INITIAL bytes of STDIN not yet
 * acknowledged, more and it is dropped), then one EXIT {exitCode, signal,
 * timedOut, durationMs} or ERROR {code, message, hint?} and closes.
 *
 * Flow control: guest output waits held in the monitor (one stream's
 * output merged into one run) and is handed to the client's socket buffer
 * while that holds less than MON_SESSION_OUT_LOW; only then is it credited
 * back to the guest, its payload only (the window is bytes of output, not
 * of frames).  So a client that does not read holds the guest back, and a
 * session keeps at most MON_SESSION_HELD_MAX held (the window and its run
 * records: past that, reached only by output switching between stdout and
 * stderr, the session ends with ERROR internal and its command is killed),
 * MON_SESSION_OUT_LOW and a frame in the socket buffer, and one frame read
 * ahead.  The client sends no WINDOW (one it sends is ignored).  Its
 * frames for the guest wait while the agent channel is full
 * (mon_chan_full): it is not read until there is room.  A client that
 * goes away kills its command (SIGKILL) or closes its connection, and
 * what it was owed is credited.  At most MON_MAX_SESSIONS clients; the
 * next one gets ERROR too_many_sessions.
 */
#ifndef RT_MONITOR_SESSION_H
#define RT_MONITOR_SESSION_H

#include "monitor/monitor-internal.h"

#define MON_MAX_SESSIONS 256
/* Output moves on to a client's socket buffer while it holds less.  */
#define MON_SESSION_OUT_LOW (64 * 1024)
/* A session's held output with its run records (8 bytes each).  */
#define MON_SESSION_HELD_MAX (RT_WINDOW_INITIAL + 256 * 1024)

/* Listens on <state dir>/session.sock, on the monitor's event loop.  */
int mon_session_listen (struct mon *m, rt_error **err);
/* The frame table's handlers (frames.h) for a session's stream, @e
   (e->sess): WINDOW (stdin the guest took: told to the client), EXIT or
   ERROR (the session's last frame, after its held output).  Its output
   goes through exec.c's window check to mon_session_output.  */
void mon_session_on_window (struct mon_exec *e, const struct rt_frame_header *h, const uint8_t *payload);
void mon_session_on_end (struct mon_exec *e, const struct rt_frame_header *h, const uint8_t *payload);
/* Output from the agent, within the stream's window (exec.c checked):
   held, and handed on as the client's socket takes it.  */
void mon_session_output (struct mon_session *s, uint8_t stream, const uint8_t *data, uint32_t len);
/* The agent channel took bytes: clients paused while it was full are
   read again, while it has room.  */
void mon_session_chan_room (struct mon *m);
/* Ends every session with ERROR {@code, @msg} (the sandbox stops or is
   paused to disk); their streams are left to exec.c as orphans.  */
void mon_session_end_all (struct mon *m, const char *code, const char *msg);

#endif
