/* runtime/exec.h - commands in a sandbox: exec, background processes
 * (spawn, ps, logs, kill, write, resize) and sessions (attach, connect).
 *
 * A part of <runtime.h>, which callers include (not this file) and whose
 * top comment tells the conventions: errors, handles, who frees what.  It
 * includes the parts it needs, so it also compiles alone.
 */
#ifndef RUNTIME_EXEC_H
#define RUNTIME_EXEC_H

#include "sandbox.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Output callback: @stream is 1 (stdout) or 2 (stderr).  Return <0 to stop
    the command (it is killed).  */
typedef int (*rt_output_fn) (void *data, int stream, const char *buf, size_t len);

/**
 * rt_exec_opts - how to run one command; all-zero means the defaults
 * @cwd:        working directory (default the image's, /workspace)
 * @env:        NULL-terminated "K=V" strings added to the image's env
 * @user:       "runtime" (default, uid 1000) or "root"
 * @stdin_data: bytes fed to the command's stdin, then EOF (NULL: empty)
 * @stdin_len:  their length (at most 1 MiB)
 * @timeout_ms: kill the command's process group after this (0: never;
 *              RT_MAX_EXEC_TIMEOUT_S is a cap for callers that take one)
 * @cancel_fd:  when this fd becomes readable the command gets SIGTERM, then
 *              SIGKILL 5 s later; -1 for none (0 is taken as none too)
 * @on_output:  receives output as it arrives; NULL discards it
 * @data:       passed to @on_output
 * @pty_cols:   with @pty_rows, non-zero (1..1000): the command runs on a
 *              pseudo-terminal of that size in the guest (rt_sandbox_attach,
 *              rt_sandbox_spawn); its output is all stream 1
 * @pty_rows:   see @pty_cols
 * @keep_stdin: rt_sandbox_spawn only: stdin stays open for
 *              rt_sandbox_write (after @stdin_data, if any)
 */
typedef struct rt_exec_opts
{
  const char *cwd;
  const char *const *env;
  const char *user;
  const void *stdin_data;
  size_t stdin_len;
  uint64_t timeout_ms;
  int cancel_fd;
  rt_output_fn on_output;
  void *data;
  unsigned pty_cols, pty_rows;
  bool keep_stdin;
} rt_exec_opts;

/**
 * RT_SHELL_SCRIPT: how one string of shell runs, in the API's `command`
 * as in the CLI's single argument: argv { "/bin/sh", "-c",
 * RT_SHELL_SCRIPT, "sh", command, NULL } runs it under `bash -c` when
 * the image has bash (Runtime Cloud's rule), else under `sh -c`.
 */
#define RT_SHELL_SCRIPT "command -v bash >/dev/null 2>&1 && exec bash -c \"$1\"; exec sh -c \"$1\""

/**
 * rt_exec_result - how a command ended
 * @exit_code:   its exit code; 128+N after signal N; 124 after a timeout
 * @signal:      the signal that ended it, or 0
 * @timed_out:   the timeout fired
 * @interrupted: @cancel_fd fired
 * @duration_ms: wall time inside the sandbox
 */
typedef struct rt_exec_result
{
  int exit_code;
  int signal;
  bool timed_out;
  bool interrupted;
  uint64_t duration_ms;
} rt_exec_result;

/**
 * rt_sandbox_exec - run a command in the sandbox and wait for it
 * @sb:   the sandbox
 * @argv: NULL-terminated argument vector, run without a shell
 * @opts: options, or NULL for the defaults (keep_stdin and a pty are
 *        refused: rt_sandbox_spawn's and rt_sandbox_attach's)
 * @res:  filled when the command ended (also on timeout or cancel)
 * @err:  set on failure of the sandbox or of the channel; "usage" for
 *        keep_stdin or a pty
 *
 * When the command's main process ends, every process in its group is
 * killed.
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_exec (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, rt_exec_result *res,
                     rt_error **err);

/**
 * rt_sandbox_spawn - start a command in the background
 * @sb:      the sandbox
 * @argv:    NULL-terminated argument vector, run without a shell
 * @opts:    cwd, env, user, stdin_data, timeout_ms as for exec, keep_stdin,
 *           pty_cols and pty_rows; the output callbacks are not used: read
 *           the output with rt_sandbox_logs
 * @process: set to the process's number in this sandbox
 * @err:     "sandbox_paused", "usage" (stdin over 1 MiB), "file_not_found"
 *           (no such program or cwd), "invalid_env"
 * The sandbox keeps the latest 1 MiB of its output.
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_spawn (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, uint32_t *process,
                      rt_error **err);

/**
 * rt_sandbox_ps_json - the background processes
 * @sb:   the sandbox
 * @json: set to a JSON array of {process, state ("running"|"exited"),
 *        exitCode, command, droppedBytes, outputBytes (its output's
 *        bytes so far, both streams), cwd, timeoutMs, startedMs, endedMs
 *        (epoch ms; null while it runs), pty ({cols, rows} or null),
 *        stdinOpen (rt_sandbox_write takes bytes), stdinOffset (its
 *        stdin's accepted end), and once ended signal, timedOut, or error
 *        (the sandbox stopped under it)}
 * @err:  set on failure
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_ps_json (rt_sandbox *sb, char **json, rt_error **err);

/**
 * rt_sandbox_logs - a background process's output
 * @sb:      the sandbox
 * @process: its number (rt_sandbox_spawn)
 * @follow: keep streaming until the process exits
 * @opts:   on_output and data receive the output (stream 1 or 2; a note
 *          that older output was dropped arrives on stream 2)
 * @res:    filled when the process has exited (*exited true)
 * @exited: set to whether it has exited
 * @err:    "not_found" (no such process)
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_logs (rt_sandbox *sb, uint32_t process, bool follow, const rt_exec_opts *opts, rt_exec_result *res,
                     bool *exited, rt_error **err);

/**
 * rt_sandbox_kill - send a signal to a background process's group
 * @sb:      the sandbox
 * @process: its number (rt_sandbox_spawn)
 * @signal:  the signal, e.g. SIGTERM
 * @err:     "not_found" (no such process)
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_kill (rt_sandbox *sb, uint32_t process, int signal, rt_error **err);

/**
 * rt_sandbox_write - send bytes to a background process's stdin
 * @sb:       the sandbox
 * @process:  its number (rt_sandbox_spawn with keep_stdin)
 * @data:     the bytes (may be NULL when @len is 0)
 * @len:      how many (at most 1 MiB a call)
 * @offset:   where @data starts in the process's whole stdin: bytes
 *            before the accepted end are skipped, so a retry at an old
 *            offset never repeats them
 * @eof:      close its stdin once everything up to @offset + @len is in
 *            (ignored on a pty: send the byte 0x04)
 * @accepted: set to the accepted end: may be less than @offset + @len
 *            when the sandbox holds all it will (1 MiB not yet taken by
 *            the process): send the rest again later
 * @err:      "not_found" (no such process), "stdin_closed" (not spawned
 *            with keep_stdin, ended, or closed by @eof), "invalid_offset"
 *            (@offset past the accepted end: bytes would be missing)
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_write (rt_sandbox *sb, uint32_t process, const void *data, size_t len, uint64_t offset, bool eof,
                      uint64_t *accepted, rt_error **err);

/**
 * rt_sandbox_resize - change the size of a background process's pty
 * @sb:      the sandbox
 * @process: its number (rt_sandbox_spawn with pty_cols and pty_rows)
 * @cols:    1..1000
 * @rows:    1..1000
 * @err:     "not_found" (no such process), "usage" (a size out of range,
 *           or a process without a pty)
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_resize (rt_sandbox *sb, uint32_t process, unsigned cols, unsigned rows, rt_error **err);

/**
 * rt_session - a command with its stdin open (rt_sandbox_attach) or a TCP
 * connection to a port inside the sandbox (rt_sandbox_connect): bytes
 * both ways, flow-controlled end to end, over the sandbox's monitor.
 * Not thread-safe; one thread drives it with poll() on rt_session_fd.
 */
typedef struct rt_session rt_session;

/**
 * rt_sandbox_attach - run a command with its stdin open
 * @sb:   the sandbox
 * @argv: NULL-terminated argument vector, run without a shell
 * @opts: cwd, env, user, timeout_ms, and pty_cols/pty_rows for a terminal
 *        (then pass TERM in env); stdin_data, on_output and cancel_fd are
 *        not used
 * @out:  set to the session; free it with rt_session_free
 * @err:  as for rt_sandbox_exec
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_attach (rt_sandbox *sb, const char *const argv[], const rt_exec_opts *opts, rt_session **out,
                       rt_error **err);

/**
 * rt_sandbox_connect - open a TCP connection to 127.0.0.1:@port in the
 * sandbox, carried by the agent channel (no route, no egress rule)
 * @sb:   the sandbox
 * @port: 1..65535
 * @out:  set to the session; free it with rt_session_free
 * @err:  "usage" (port), "sandbox_paused", "sandbox_not_running",
 *        "too_many_sessions"; a port nobody listens on is told later, as
 *        rt_session_result's "connection_refused" once rt_session_read
 *        returned 0
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_connect (rt_sandbox *sb, unsigned port, rt_session **out, rt_error **err);

/**
 * rt_session_fd - a descriptor to poll() for POLLIN: readable when
 * rt_session_read has output, an end, or new room for rt_session_write
 * @s: the session
 * Return: the descriptor (owned by @s).
 */
int rt_session_fd (rt_session *s);

/**
 * rt_session_read - take what the session has for the caller, never
 * blocking
 * @s:      the session
 * @stream: set to 1 (stdout, or the connection's bytes) or 2 (stderr)
 * @buf:    where the bytes go
 * @size:   its size
 * @err:    set on failure (the monitor went away, a protocol error)
 * Return: the number of bytes (> 0); 0 when the session has ended (see
 * rt_session_result); -EAGAIN when nothing is there yet; other <0 with
 * @err set.
 */
long rt_session_read (rt_session *s, int *stream, void *buf, size_t size, rt_error **err);

/**
 * rt_session_writable - how many bytes rt_session_write takes now
 * @s: the session
 * Return: the room in the window (0 while the guest has not taken what
 * was sent: poll rt_session_fd and read, then ask again).
 */
size_t rt_session_writable (rt_session *s);

/**
 * rt_session_write - send bytes to the command's stdin or the connection
 * @s:   the session
 * @buf: the bytes
 * @len: at most rt_session_writable (s)
 * @err: "usage" (over the window, or after rt_session_close_input)
 * Return: 0, or <0 with @err set.
 */
int rt_session_write (rt_session *s, const void *buf, size_t len, rt_error **err);

/**
 * rt_session_close_input - end of input: the command's stdin closes (a
 * pty's does not: send 0x04), the connection's write side shuts
 * @s:   the session
 * @err: set on failure
 * Return: 0, or <0 with @err set.
 */
int rt_session_close_input (rt_session *s, rt_error **err);

/**
 * rt_session_resize - the size of the command's pty
 * @s:    the session (rt_sandbox_attach with pty_cols and pty_rows)
 * @cols: 1..1000
 * @rows: 1..1000
 * @err:  "usage" (out of range, or no pty)
 * Return: 0, or <0 with @err set.
 */
int rt_session_resize (rt_session *s, unsigned cols, unsigned rows, rt_error **err);

/**
 * rt_session_signal - a signal to the command's process group (a
 * connection closes)
 * @s:      the session
 * @signal: 1..64
 * @err:    set on failure (in client mode the session's thread sends it
 *          and this does not wait: a failure there is not reported)
 * Return: 0, or <0 with @err set.
 */
int rt_session_signal (rt_session *s, int signal, rt_error **err);

/**
 * rt_session_result - how the session ended
 * @s:   the session, after rt_session_read returned 0
 * @res: filled as by rt_sandbox_exec (a connection: exit_code 0, or 1
 *       after an error in the guest)
 * @err: the error that ended it instead ("connection_refused", the
 *       sandbox stopped, …)
 * Return: 0, or <0 with @err set.
 */
int rt_session_result (rt_session *s, rt_exec_result *res, rt_error **err);

/**
 * rt_session_free - end the session (a command still running is killed,
 * a connection closed) and free it
 * @s: the session, or NULL
 */
void rt_session_free (rt_session *s);

#ifdef __cplusplus
}
#endif

#endif
