/* agent.h - the guest agent's state, limits and console helpers (agent.c).
 *
 * The agent is PID 1 of a sandbox VM: main.c runs it, boot.c and root.c
 * bring the guest up, spawn.c and users.c start commands, oneshot.c holds
 * the benchmark modes, and the rest serve the host over the virtio-serial
 * port with the framed protocol of common/proto.h: channel.c (the outgoing
 * queue and replies), commands.c (one running command), requests.c (what
 * the host asks), connect.c (CONNECT: a TCP connection as a stream),
 * restore.c (FREEZE, QUIESCE, RESTORE), conn.c (the port and its state),
 * loop.c (the poll() loop); watch.c (a directory watch on inotify, not yet
 * called by the loop).
 *
 * Every header of this folder includes this one and no other of it.
 */
#ifndef AGENT_AGENT_H
#define AGENT_AGENT_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "common/proto.h"
#include "common/strutil.h"
#include "common/sys.h"

#define AGENT_NAME "runtime-agent"
#define DEFAULT_PATH "/workspace/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define DEFAULT_USER "runtime"
#define DEFAULT_UID 1000
#define WORKSPACE "/workspace"

#define MAX_CMDS 256
#define OUT_CHUNK (256u * 1024u)           /* largest STDOUT/STDERR payload */
/* Under TCG every syscall is dear: big pipes and frames mean few of them.  */
#define PIPE_SIZE (1024 * 1024)
#define STDIN_MAX (2u * 1024u * 1024u)     /* queued STDIN bytes per stream */
#define DRAIN_MAX (1024u * 1024u + OUT_CHUNK) /* read after exit, per pipe */
/* The outgoing queue.  Output is read from pipes only while less than
   OUTQ_DATA_MAX is queued, so the rest always has room for control frames
   (each under CTRL_MAX); input is taken only while CTRL_MAX is free.  */
#define OUTQ_CAP (2u * 1024u * 1024u)
#define OUTQ_DATA_MAX (1024u * 1024u)
#define CTRL_MAX 4096u
#define MAX_GROUPS 64

#define CMDLINE_MAX 8192
#define WAIT_DEVICE_MS 10000
#define DEVICE_POLL_MS 3
#define RECONNECT_POLL_MS 5
#define RESYNC_QUIET_MS 100

/* The outgoing frames: bytes [head, head + len) of buf.  */
struct outq
{
  size_t head, len;
  uint8_t buf[OUTQ_CAP];
};

struct cmd
{
  bool used;
  bool orphan;    /* its connection is gone: output dropped, no EXIT */
  bool exited;    /* main process reaped; draining what is left in the pipes */
  bool timed_out;
  bool stdin_eof; /* empty STDIN seen: close once the queue is written */
  bool pty;       /* fd[0] (if stdin) and fd[1] are a pty's master */
  bool sock;      /* a CONNECT: fd[0] and fd[1] are one TCP socket, no pid */
  bool connecting; /* that socket's connect() still in progress */
  int port;       /* the port it connects to */
  uint32_t stream;
  pid_t pid;      /* also its process group; 0 for a socket */
  int status;
  int fd[3];      /* stdin (write end), stdout, stderr (read ends); -1 closed */
  size_t drain_left[3];
  uint64_t unacked; /* STDOUT+STDERR payload bytes not yet acknowledged */
  int64_t start_ms, end_ms, deadline_ms; /* deadline 0: none */
  uint8_t *inq;   /* STDIN bytes the child has not read yet */
  size_t inq_off, inq_len, inq_cap;
};

enum conn_state
{
  CONN_DOWN,     /* host not connected */
  CONN_UP,
  CONN_POISONED, /* bad framing: input dropped until the host disconnects
                    or stays quiet for RESYNC_QUIET_MS */
};

struct agent
{
  int chan;
  int sigfd;
  int devnull;
  enum conn_state state;
  bool input_pending; /* the reader may hold frames not handled yet */
  /* After QUIESCE until RESTORE (restore.c): only the first @flushable
     queued bytes (up to the DONE) may be written; the channel then stays
     at a frame boundary while the host copies the guest.  */
  bool quiesced;
  size_t flushable;
  int64_t last_input_ms; /* when poisoned: last input dropped */
  size_t ncmds;
  struct cmd cmds[MAX_CMDS];
  struct pollfd pfd[2 + 3 * MAX_CMDS]; /* the loop's poll set */
  struct
  {
    struct cmd *c; /* NULL: the signalfd or the channel */
    int i;         /* which of c->fd */
  } who[2 + 3 * MAX_CMDS];
  /* Big buffers: the agent lives in static storage, not on the stack.  */
  struct outq outq;
  struct rt_frame_reader reader;
  uint8_t scratch[OUT_CHUNK]; /* where an orphan's output is read to */
  char cmdline[CMDLINE_MAX];  /* the kernel's, read once at boot */
  /* The proxy URL every command sees once the network is up (rt.net); the
     host's egress proxy listens on the gateway.  */
  char proxy_url[64];
  char gateway[16]; /* its address, "" without a network (restore.c) */
};

/* Deadlines are signed: a time left may be negative.  */
static inline int64_t
now_ms (void)
{
  return (int64_t) rt_now_ms ();
}

/* Closes *fd if open and sets it to -1.  */
void close_fd (int *fd);
void sleep_ms (int ms);
/* Console messages: fd 2 is /dev/console once boot_early() ran.  */
void agent_log (const char *fmt, ...) RT_PRINTF (1, 2);
/* Syncs and powers off: init must never exit.  */
void power_off (void) __attribute__ ((noreturn));

#endif
