/* monitor-internal.h - what the monitor's files share: its state (struct
 * mon), the execs and spawned processes it multiplexes onto the agent
 * channel, and the few functions of monitor.c the others call.  Only the
 * monitor's own files include it; the rest of the library sees monitor.h.
 *
 *   monitor.c    the process: spawn, start-up, event loop, stop
 *   phase.c      its lifecycle: the phases, their transitions, the state
 *                name each shows
 *   channel.c    the agent channel's bytes: frames out, frames in
 *   frames.c     the frame table: which handler takes a frame from the guest
 *   routes.c     api.sock: the route table and request parsing
 *   reply.c      replies: JSON, errors, NDJSON lines
 *   exec.c       commands: start, stdin, output, exit, flow control
 *   procs.c      spawned processes: spawn, ps, logs, kill
 *   proc-stdin.c their stdin (:write) and pty (:resize)
 *   lifecycle.c  pause, wake, extend, the lease
 *   clone.c      a start from saved memory: a template, a snapshot, a pause
 *   spare.c      a spare's reservation and claim
 *   capture.c    snapshot, fork and pause to disk: the guest quiesced,
 *                saved, resumed or ended
 *   idle.c       the idle pause, :update
 *   session.c    session.sock: a command with live stdin, or a TCP
 *                connection into the guest, relayed as frames
 */
#ifndef RT_MONITOR_INTERNAL_H
#define RT_MONITOR_INTERNAL_H

#include <event2/event.h>
#include <event2/http.h>

#include "billing/meter.h"
#include "common/proto.h"
#include "monitor/channel.h"
#include "monitor/idle.h"
#include "monitor/monitor.h"
#include "monitor/phase.h"
#include "monitor/spare.h"
#include "net/netns.h"
#include "vmm/console.h"

#define MAX_BODY (2 * 1024 * 1024)
#define MAX_HEADERS (64 * 1024)
#define LOG_MAX (1024 * 1024)
#define CLIENT_HIGH_WATER (2 * 1024 * 1024)
/* Output lines an exec's client may have unread before more is held.  */
#define CLIENT_MAX_LINES 256
/* Frames to the guest wait in chan.out while its channel is full.  WINDOW
   credit is queued only while less than CHAN_CREDIT_LOW waits there (else
   it accumulates in the exec, one number per stream); new commands are
   refused past CHAN_OUT_MAX (channel.h).  */
#define CHAN_CREDIT_LOW (64 * 1024)
#define CHAN_OUT_MAX (4 * 1024 * 1024)

struct mon;
struct mon_proc;
struct mon_session;

/* A command running in the guest, one agent stream.  */
struct mon_exec
{
  struct mon *m;
  uint32_t stream;
  struct evhttp_request *req; /* NULL once the client went away */
  uint32_t sent;              /* output handed to the client, not yet flushed */
  uint32_t lines;             /* output lines handed to it since its last flush */
  uint32_t outstanding;       /* output received, its credit not yet queued to
                                 the guest: never over RT_WINDOW_INITIAL */
  uint32_t credit;            /* of it, taken and owed to the guest: sent as
                                 one WINDOW frame when the channel has room */
  struct evbuffer *held;      /* output held back while the client is behind
                                 (records: u8 stream, u32 length, bytes) */
  json_object *last;          /* the exit line, waiting for the held output */
  struct mon_proc *proc;      /* set for a spawned process */
  int stdin_fd;               /* streamed stdin (stdinPath), or -1 */
  struct event *ev_stdin;
  uint32_t stdin_inflight;    /* sent to the guest, not yet taken */
  struct mon_session *sess;   /* the session.sock client relaying this
                                 stream (monitor/session.h), or NULL */
  struct mon_exec *next;
};

/* A `logs -f` client.  */
struct mon_follow
{
  struct mon_proc *p;
  struct evhttp_request *req;
  bool offsets;               /* asked from a byte cursor: lines carry offsets */
  struct mon_follow *next;
};

/* A spawned process: nobody reads its output as it comes, so the monitor
   keeps the latest LOG_MAX bytes of it (records: u8 stream, u32 length,
   bytes) for `logs`, and its exit for `ps`.  */
struct mon_proc
{
  uint32_t id;                /* what ps, logs, kill and the API call it:
                                 1, 2, 3… in spawn order, per sandbox */
  uint32_t stream;            /* its agent stream, shared with execs */
  char *command;
  struct evbuffer *log;
  size_t log_bytes;
  uint64_t dropped;           /* output bytes no longer kept (the oldest) */
  uint64_t total;             /* output bytes ever, both streams: the kept
                                 ones are [dropped, total) */
  char *cwd;
  int64_t timeout_ms;
  int64_t started_ms, ended_ms; /* wall clock; ended 0 while it runs */
  json_object *exit;          /* the exit event, once it ended */
  struct mon_follow *followers;
  /* Its stdin and pty (proc-stdin.c).  */
  bool stdin_kept;            /* spawned with keepStdin */
  bool stdin_eof;             /* the end accepted: it closes once sent */
  bool stdin_closed;          /* the empty STDIN went out */
  uint64_t stdin_offset;      /* the accepted end of its whole stdin */
  struct evbuffer *stdin_pending; /* accepted, not yet sent to the guest */
  uint8_t *stdin_recent;          /* the last bytes accepted, up to its end */
  size_t stdin_recent_len;
  unsigned pty_cols, pty_rows;    /* its pty's size, or 0 */
  struct mon_proc *next;
};

struct mon
{
  rt_context *ctx;
  const struct rt_monitor_config *cfg;
  enum mon_phase phase;       /* changed by mon_enter only (phase.h) */
  char *api_sock, *qmp_sock;
  json_object *state;
  struct rt_vm vm;
  struct mon_chan chan;       /* the agent channel (channel.h) */
  struct event_base *base;
  struct event *ev_qemu, *ev_lease, *ev_term, *ev_owner, *ev_claim;
  int owner_pidfd;
  int claim_fd;
  struct evhttp *http;
  struct mon_exec *execs;
  struct mon_proc *procs;
  struct mon_session *sessions; /* session.sock's clients (session.c) */
  struct mon_session *resume_next; /* the first a full channel's room resumes; NULL: the list's head */
  unsigned n_sessions;
  struct evconnlistener *session_listener;
  uint32_t next_stream;
  uint32_t next_proc;         /* the number the next spawn gets */
  int64_t expires_ms;
  struct rt_netns net;
  struct rt_proxy *proxy;
  struct rt_intercept *intercept; /* for the sandbox's secrets, or NULL */
  bool trial;
  struct rt_meter meter;      /* the whole QEMU process, and the ledger */
  struct rt_console console;  /* the guest's console, a capped log */
  struct event *ev_console;
  char *resolve;              /* RUNTIME_RESOLVE, read before the environment went */
  bool clone;                 /* started from cfg->tmpl or cfg->saved (clone.c) */
  int ram_fd;                 /* the guest's RAM (a memfd QEMU maps shared) */
  char *layers[RT_QEMU_MAX_LAYERS + 1]; /* its disk's read-only layers */
  int layer_fds[RT_QEMU_MAX_LAYERS];    /* open, in case their files go */
  char *overlay_path;         /* <disk dir>/overlay.qcow2 */
  bool paused_to_disk;        /* saved and ended (MON_PAUSED, or a stop
                                 after it): the state dir stays at the exit */
  bool ran;                   /* the VM started from saved memory ran */
  struct mon_spare spare;     /* a spare's reservation and claim (spare.h) */
  struct mon_idle idle;       /* the idle pause (idle.h) */
};

/* Sets (or with @value NULL, nulls) a string of the state object.  */
void mon_set_str (struct mon *m, const char *key, const char *value);
/* Writes the state object to state.json, best effort.  */
void mon_save_state (struct mon *m);
/* Stops the sandbox for @reason (its stopReason): QEMU, the network and
   every exec go, the record is written, and the loop ends shortly after.
   Stopping twice is stopping once.  */
void mon_stop (struct mon *m, const char *reason);
/* Ends the event loop after the last replies had time to reach their
   clients (a stop, a pause to disk).  */
void mon_end_loop_soon (struct mon *m);
/* Stops the sandbox when @owner exits (an ephemeral sandbox's creator).  */
int mon_watch_owner (struct mon *m, pid_t owner, rt_error **err);
/* Starts billing the QEMU process.  */
int mon_start_meter (struct mon *m, rt_error **err);

#endif
