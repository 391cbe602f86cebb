/* exec.h - commands in the guest, multiplexed over the agent channel: one
 * stream per command, its stdin (inline or streamed from a file), its
 * output to the client with end-to-end flow control (the guest sends no
 * more than a window ahead of what the client has taken), its exit.
 */
#ifndef RT_MONITOR_EXEC_H
#define RT_MONITOR_EXEC_H

#include "monitor/monitor-internal.h"

/* Why a request was refused: an HTTP reply (status) or a session's ERROR
   frame (monitor/session.h).  */
struct mon_refusal
{
  int status;
  const char *code, *hint; /* static strings */
  char msg[256];
};
/* Fills @r.  Return: false (for `return mon_refuse (…)` in checks).  */
bool mon_refuse (struct mon_refusal *r, int status, const char *code, const char *hint, const char *fmt, ...)
    RT_PRINTF (5, 6);
/* True, with @r set, when no new stream may start (stopping, paused, the
   guest not reading its channel).  */
bool mon_exec_refused (struct mon *m, struct mon_refusal *r);
/* A new exec on a new stream, linked, nothing sent; NULL when out of
   memory.  */
struct mon_exec *mon_exec_new (struct mon *m);
/* Unlinks and frees @e (its stream's later frames are ignored).  */
void mon_exec_free (struct mon_exec *e);
/* Checks a session's EXEC request (the :exec body less stdin and
   stdinPath: the session's client sends stdin) and sends the EXEC.
   Return: the exec, or NULL with @r set.  */
struct mon_exec *mon_exec_open (struct mon *m, json_object *body, struct mon_refusal *r);
/* Checks a command request (@spawn: :spawn's, which may keep its stdin
   open and have a pty), starts it in the guest and returns its exec; NULL
   after replying the error.  */
struct mon_exec *mon_exec_start (struct mon *m, struct evhttp_request *req, json_object *body, bool spawn);
struct mon_exec *mon_exec_find (struct mon *m, uint32_t stream);
/* The frame table's handlers (frames.h) for a command's or a process's
   stream, @e: STDOUT or STDERR within its window (past it the sandbox
   stops: guest_protocol_error; a session's output goes through here too),
   WINDOW (stdin the guest took), EXIT or ERROR (its end).  */
void mon_exec_on_output (struct mon_exec *e, const struct rt_frame_header *h, const uint8_t *payload);
void mon_exec_on_window (struct mon_exec *e, const struct rt_frame_header *h, const uint8_t *payload);
void mon_exec_on_end (struct mon_exec *e, const struct rt_frame_header *h, const uint8_t *payload);
/* Ends every command a client waits for with an error line (the sandbox
   is paused to disk under it: the lease ended).  */
void mon_exec_fail_clients (struct mon *m, const char *code, const char *msg);
/* Ends every exec with an error line (the sandbox stops).  */
void mon_exec_fail_all (struct mon *m, const char *code, const char *msg);

/* POST :exec {argv, env?, cwd?, user?, timeoutMs?, stdin?, stdinPath?}.  */
void mon_handle_exec (struct mon *m, struct evhttp_request *req, json_object *body);
/* POST :signal {execId, signal}.  */
void mon_handle_signal (struct mon *m, struct evhttp_request *req, json_object *body);

#endif
