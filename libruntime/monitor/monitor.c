/* monitor.c - the per-sandbox monitor: one process per sandbox, one
   libevent loop multiplexing every api.sock client onto the one agent
   channel.  See monitor.h for the API it serves.  */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "vmm/channel.h"
#include "net/intercept.h"
#include "monitor/monitor.h"
#include "net/netns.h"
#include "billing/price.h"
#include "billing/trial.h"
#include "net/proxy.h"
#include "vmm/qmp.h"
#include "sandbox/store.h"

/* TCG on a loaded 2-core host can take several seconds to boot.  */
#define BOOT_TIMEOUT_MS 60000
#define MAX_BODY (2 * 1024 * 1024)
/* Time for the last replies to reach their clients before the monitor exits.  */
#define EXIT_FLUSH_MS 100
#define LEDGER_INTERVAL_S 5
#define LOG_MAX (1024 * 1024)
#define CLIENT_HIGH_WATER (2 * 1024 * 1024)
#define MAX_PROCS 256

struct mon;

struct mon_proc;

struct mon_exec
{
  struct mon *m;
  uint32_t stream;
  struct evhttp_request *req; /* NULL once the client went away */
  uint32_t unacked;           /* output handed to the client, not yet flushed */
  uint32_t outstanding;       /* output received, not yet acked to the guest */
  struct mon_proc *proc;      /* set for a spawned process */
  int stdin_fd;               /* streamed stdin (stdinPath), or -1 */
  struct event *ev_stdin;
  uint32_t stdin_inflight;    /* sent to the guest, not yet taken */
  struct mon_exec *next;
};

/* A `logs -f` client.  */
struct mon_follow
{
  struct mon_proc *p;
  struct evhttp_request *req;
  struct mon_follow *next;
};

/* A spawned process: nobody reads its output as it comes, so the monitor
   keeps the latest LOG_MAX bytes of it (records: u8 stream, u32 length,
   bytes) for `logs`, and its exit for `ps`.  */
struct mon_proc
{
  uint32_t id;
  char *command;
  struct evbuffer *log;
  size_t log_bytes;
  uint64_t dropped;
  json_object *exit;          /* the exit event, once it ended */
  struct mon_follow *followers;
  struct mon_proc *next;
};

struct mon
{
  rt_context *ctx;
  const struct rt_monitor_config *cfg;
  char *api_sock, *qmp_sock;
  json_object *state;
  struct rt_vm vm;
  int chan_fd;
  struct rt_frame_reader *reader;
  struct evbuffer *chan_out;
  struct event_base *base;
  struct event *ev_read, *ev_write, *ev_qemu, *ev_lease, *ev_term, *ev_owner, *ev_claim;
  int owner_pidfd;
  int claim_fd;
  struct evhttp *http;
  struct mon_exec *execs;
  struct mon_proc *procs;
  uint32_t next_stream;
  int64_t expires_ms;
  bool stopping, paused;
  struct rt_netns net;
  struct rt_proxy *proxy;
  struct rt_intercept *intercept; /* for the sandbox's secrets, or NULL */
  bool trial;
  /* The meter: QEMU's vCPU threads, sampled every second while running.  */
  struct event *ev_meter;
  struct rt_rates rates;
  uint64_t last_cpu_ns, last_mono_us;
  pid_t vcpu_tids[64];        /* found once, then only their schedstat is read */
  unsigned n_vcpu_tids;
  uint64_t running_us, cpu_us, billed_cpu_us;
  double cpu_percent;
  int ledger_fd;
  unsigned since_ledger;
};

static void
set_str (struct mon *m, const char *key, const char *value)
{
  json_object_object_add (m->state, key, value ? json_object_new_string (value) : NULL);
}

static void
save_state (struct mon *m)
{
  rt_store_write_state (m->cfg->dir, m->state, NULL);
}

static void
set_expires (struct mon *m, int64_t expires_ms)
{
  char when[32];
  struct timeval tv;
  int64_t left = expires_ms - rt_epoch_ms ();

  m->expires_ms = expires_ms;
  rt_format_time (expires_ms, when);
  set_str (m, "expiresAt", when);
  if (left < 0)
    left = 0;
  tv.tv_sec = left / 1000;
  tv.tv_usec = (left % 1000) * 1000;
  evtimer_add (m->ev_lease, &tv);
}

/* ---- the meter ------------------------------------------------------------ */

static uint64_t
mono_us (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static bool
read_schedstat (pid_t pid, pid_t tid, uint64_t *ns)
{
  char file[64], stat[128] = "";
  FILE *f;
  bool ok;

  snprintf (file, sizeof file, "/proc/%d/task/%d/schedstat", (int) pid, (int) tid);
  if ((f = fopen (file, "re")) == NULL)
    return false;
  ok = fgets (stat, sizeof stat, f) != NULL;
  fclose (f);
  if (ok)
    *ns += strtoull (stat, NULL, 10);
  return ok;
}

/* CPU time of QEMU's vCPU threads ("CPU n/TCG", "CPU n/KVM"), in ns, from
   the host's scheduler: what the guest says of itself is never billed.
   The threads are looked for until all are found, then only read.  */
static uint64_t
vcpu_ns (struct mon *m)
{
  pid_t pid = m->vm.pid;
  char path[64];
  cleanup_dir DIR *d = NULL;
  struct dirent *de;
  uint64_t total = 0;
  bool all = m->n_vcpu_tids > 0 && m->n_vcpu_tids >= m->cfg->vm.vcpu;

  for (unsigned i = 0; all && i < m->n_vcpu_tids; i++)
    all = read_schedstat (pid, m->vcpu_tids[i], &total);
  if (all)
    return total;
  total = 0;
  m->n_vcpu_tids = 0;
  snprintf (path, sizeof path, "/proc/%d/task", (int) pid);
  d = opendir (path);
  while (d && (de = readdir (d)))
    {
      char file[320], comm[32] = "";
      FILE *f;
      if (de->d_name[0] == '.')
        continue;
      snprintf (file, sizeof file, "/proc/%d/task/%s/comm", (int) pid, de->d_name);
      if ((f = fopen (file, "re")) == NULL)
        continue;
      if (fgets (comm, sizeof comm, f) == NULL)
        comm[0] = '\0';
      fclose (f);
      if (strncmp (comm, "CPU ", 4) != 0 || !read_schedstat (pid, atoi (de->d_name), &total))
        continue;
      if (m->n_vcpu_tids < sizeof m->vcpu_tids / sizeof m->vcpu_tids[0])
        m->vcpu_tids[m->n_vcpu_tids++] = atoi (de->d_name);
    }
  return total;
}

static int64_t
charged_micros (struct mon *m)
{
  /* The trial is free: its time is counted, not charged.  */
  if (m->trial)
    return 0;
  return rt_price_micros (&m->rates, m->billed_cpu_us, (uint64_t) m->cfg->vm.memory_mib * (m->running_us / 1000));
}

/* One record per sandbox per interval, cumulative: `usage` keeps the last
   of each sandbox, so a lost line costs at most one interval.  */
static void
ledger_write (struct mon *m)
{
  cleanup_json json_object *o = json_object_new_object ();
  cleanup_free char *line = NULL;
  char now[32];
  json_object *v;
  const char *keys[] = { "id", "name", "funding", "createdAt", "state", "stopReason", NULL };

  if (m->ledger_fd < 0)
    return;
  rt_format_time (rt_epoch_ms (), now);
  json_object_object_add (o, "t", json_object_new_string (now));
  for (const char **k = keys; *k; k++)
    json_object_object_add (o, *k, json_object_object_get_ex (m->state, *k, &v) ? json_object_get (v) : NULL);
  json_object_object_add (o, "vcpu", json_object_new_int (m->cfg->vm.vcpu));
  json_object_object_add (o, "memoryMiB", json_object_new_int (m->cfg->vm.memory_mib));
  json_object_object_add (o, "runningUs", json_object_new_int64 ((int64_t) m->running_us));
  json_object_object_add (o, "cpuUs", json_object_new_int64 ((int64_t) m->cpu_us));
  json_object_object_add (o, "billedCpuUs", json_object_new_int64 ((int64_t) m->billed_cpu_us));
  json_object_object_add (o, "micros", json_object_new_int64 (charged_micros (m)));
  line = rt_strdup_printf ("%s\n", json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN));
  /* One write(2) on an O_APPEND fd: lines of concurrent monitors never
     interleave.  */
  if (line && write (m->ledger_fd, line, strlen (line)) > 0)
    fdatasync (m->ledger_fd);
  m->since_ledger = 0;
}

/* Adds the time since the last sample, when the VM ran.  */
static void
meter_sample (struct mon *m)
{
  uint64_t now = mono_us (), cpu, d_cpu_us, d_wall_us;
  char secs[32];

  if (m->vm.pid <= 0 || m->last_mono_us == 0)
    return;
  cpu = vcpu_ns (m);
  d_wall_us = now - m->last_mono_us;
  d_cpu_us = cpu > m->last_cpu_ns ? (cpu - m->last_cpu_ns) / 1000 : 0;
  m->last_mono_us = now;
  m->last_cpu_ns = cpu;
  if (m->paused)
    return;
  m->running_us += d_wall_us;
  m->cpu_us += d_cpu_us;
  m->billed_cpu_us += rt_billed_cpu_us (&m->rates, d_cpu_us, d_wall_us);
  m->cpu_percent = d_wall_us ? 100.0 * d_cpu_us / d_wall_us / (m->cfg->vm.vcpu ? m->cfg->vm.vcpu : 1) : 0;
  snprintf (secs, sizeof secs, "%.3f", m->cpu_us / 1e6);
  json_object_object_add (m->state, "cpuSeconds", json_object_new_double_s (m->cpu_us / 1e6, secs));
  json_object_object_add (m->state, "chargedMicros", json_object_new_int64 (charged_micros (m)));
}

static void
meter_start (struct mon *m)
{
  m->last_mono_us = mono_us ();
  m->last_cpu_ns = vcpu_ns (m);
}

static void
on_meter (evutil_socket_t fd, short what, void *arg)
{
  struct mon *m = arg;
  (void) fd;
  (void) what;

  meter_sample (m);
  if (++m->since_ledger >= LEDGER_INTERVAL_S)
    {
      ledger_write (m);
      save_state (m);
    }
}

/* ---- the agent channel ------------------------------------------------ */

static void
chan_queue (struct mon *m, uint8_t type, uint32_t stream, const void *payload, size_t len)
{
  uint8_t hdr[RT_FRAME_HEADER];

  if (m->chan_fd < 0)
    return;
  rt_frame_encode_header (hdr, type, stream, len);
  evbuffer_add (m->chan_out, hdr, sizeof (hdr));
  if (len)
    evbuffer_add (m->chan_out, payload, len);
  event_add (m->ev_write, NULL);
}

static void
chan_queue_json (struct mon *m, uint8_t type, uint32_t stream, json_object *obj)
{
  size_t len;
  const char *s = json_object_to_json_string_length (obj, JSON_C_TO_STRING_PLAIN, &len);
  chan_queue (m, type, stream, s, len);
}

static void
chan_signal (struct mon *m, uint32_t stream, int sig)
{
  json_object *o = json_object_new_object ();
  json_object_object_add (o, "signal", json_object_new_int (sig));
  chan_queue_json (m, RT_FRAME_SIGNAL, stream, o);
  json_object_put (o);
}

static struct mon_exec *find_exec (struct mon *m, uint32_t stream);

static void
chan_ack (struct mon *m, uint32_t stream, uint32_t bytes)
{
  struct mon_exec *e = find_exec (m, stream);
  uint8_t ack[4];

  if (e)
    e->outstanding -= bytes < e->outstanding ? bytes : e->outstanding;
  rt_put_u32 (ack, bytes);
  chan_queue (m, RT_FRAME_WINDOW, stream, ack, sizeof (ack));
}

static void
on_chan_write (evutil_socket_t fd, short what, void *arg)
{
  struct mon *m = arg;
  (void) what;
  if (evbuffer_write (m->chan_out, fd) < 0 && errno != EAGAIN && errno != EINTR)
    return;
  if (evbuffer_get_length (m->chan_out) > 0)
    event_add (m->ev_write, NULL);
}

/* ---- HTTP helpers ------------------------------------------------------ */

static void
reply_json (struct evhttp_request *req, int code, json_object *obj)
{
  struct evbuffer *buf = evbuffer_new ();
  size_t len;
  const char *s = json_object_to_json_string_length (obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
                                                     &len);
  evbuffer_add (buf, s, len);
  evhttp_add_header (evhttp_request_get_output_headers (req), "Content-Type", "application/json");
  evhttp_send_reply (req, code, code < 400 ? "OK" : "Error", buf);
  evbuffer_free (buf);
}

static json_object *
error_object (const char *code, const char *msg, const char *hint)
{
  json_object *o = json_object_new_object (), *e = json_object_new_object ();
  json_object_object_add (e, "code", json_object_new_string (code));
  json_object_object_add (e, "message", json_object_new_string (msg));
  json_object_object_add (e, "hint", hint ? json_object_new_string (hint) : NULL);
  json_object_object_add (o, "error", e);
  return o;
}

static void RT_PRINTF (5, 6)
reply_error (struct evhttp_request *req, int http, const char *code, const char *hint, const char *fmt, ...)
{
  cleanup_free char *msg = NULL;
  json_object *o;
  va_list ap;

  va_start (ap, fmt);
  if (vasprintf (&msg, fmt, ap) < 0)
    msg = NULL;
  va_end (ap);
  o = error_object (code, msg ? msg : code, hint);
  reply_json (req, http, o);
  json_object_put (o);
}

#define reply_error_null(...) (reply_error (__VA_ARGS__), (struct mon_exec *) NULL)

static void
send_line (struct evhttp_request *req, json_object *obj, void (*cb) (struct evhttp_connection *, void *), void *arg)
{
  struct evbuffer *buf = evbuffer_new ();
  size_t len;
  const char *s = json_object_to_json_string_length (obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
                                                     &len);
  evbuffer_add (buf, s, len);
  evbuffer_add (buf, "\n", 1);
  evhttp_send_reply_chunk_with_cb (req, buf, cb, arg);
  evbuffer_free (buf);
}

/* ---- execs ------------------------------------------------------------- */

static struct mon_exec *
find_exec (struct mon *m, uint32_t stream)
{
  for (struct mon_exec *e = m->execs; e; e = e->next)
    if (e->stream == stream)
      return e;
  return NULL;
}

static void
stdin_close (struct mon_exec *e)
{
  if (e->ev_stdin)
    event_free (e->ev_stdin);
  e->ev_stdin = NULL;
  if (e->stdin_fd >= 0)
    close (e->stdin_fd);
  e->stdin_fd = -1;
}

/* Streams a stdinPath into the guest, never more than the window ahead of
   what the command has taken (the agent's WINDOW frames).  */
static void
on_stdin_ready (evutil_socket_t fd, short what, void *arg)
{
  struct mon_exec *e = arg;
  uint8_t buf[65536];
  (void) what;

  while (e->stdin_inflight < RT_WINDOW_INITIAL)
    {
      size_t want = RT_WINDOW_INITIAL - e->stdin_inflight;
      ssize_t n = read (fd, buf, want < sizeof (buf) ? want : sizeof (buf));
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 && errno == EAGAIN)
        return;
      if (n <= 0)
        {
          chan_queue (e->m, RT_FRAME_STDIN, e->stream, NULL, 0);
          stdin_close (e);
          return;
        }
      chan_queue (e->m, RT_FRAME_STDIN, e->stream, buf, n);
      e->stdin_inflight += n;
    }
  event_del (e->ev_stdin);
}

static void
exec_free (struct mon_exec *e)
{
  struct mon_exec **p;
  stdin_close (e);
  for (p = &e->m->execs; *p; p = &(*p)->next)
    if (*p == e)
      {
        *p = e->next;
        break;
      }
  free (e);
}

/* Called when everything handed to the client so far has been written to
   its socket: only then may the guest send more (end-to-end flow control,
   so a client that does not read cannot make the monitor buffer).  */
static void
on_flushed (struct evhttp_connection *evcon, void *arg)
{
  struct mon_exec *e = arg;
  (void) evcon;
  if (e->unacked)
    chan_ack (e->m, e->stream, e->unacked);
  e->unacked = 0;
}

static void
on_client_gone (struct evhttp_connection *evcon, void *arg)
{
  struct mon_exec *e = arg;
  (void) evcon;
  /* Nobody will see the output: the command must not run on unseen.  */
  struct evhttp_request *req = e->req;
  e->req = NULL;
  chan_signal (e->m, e->stream, SIGKILL);
  on_flushed (NULL, e);
  /* libevent unlinks a streaming request whose client left but does not
     free it: ending the reply does (its connection is gone).  */
  if (req)
    evhttp_send_reply_end (req);
}

static void follower_end (struct mon_follow *f, json_object *last);

static void
exec_finish (struct mon_exec *e, json_object *last)
{
  if (e->proc)
    {
      e->proc->exit = json_object_get (last);
      while (e->proc->followers)
        follower_end (e->proc->followers, last);
    }
  if (e->req)
    {
      struct evhttp_connection *evcon = evhttp_request_get_connection (e->req);
      send_line (e->req, last, NULL, NULL);
      evhttp_connection_set_closecb (evcon, NULL, NULL);
      evhttp_send_reply_end (e->req);
    }
  exec_free (e);
}

/* The hottest line the monitor writes, {"type":…,"data":BASE64}, is built
   straight into the evbuffer: base64 never needs JSON escaping, and
   json-c copied and scanned every 87 KB string twice (a third of the
   monitor's CPU on a large copy).  */
static void
send_output (struct evhttp_request *req, const char *type, const uint8_t *data, uint32_t len,
             void (*cb) (struct evhttp_connection *, void *), void *arg)
{
  struct evbuffer *buf = evbuffer_new ();
  struct evbuffer_iovec v;
  size_t b64 = 4 * ((len + 2) / 3);

  if (buf == NULL)
    return;
  evbuffer_add_printf (buf, "{\"type\":\"%s\",\"data\":\"", type);
  if (evbuffer_reserve_space (buf, b64 + 1, &v, 1) == 1)
    {
      EVP_EncodeBlock (v.iov_base, data, len);
      v.iov_len = b64;
      evbuffer_commit_space (buf, &v, 1);
    }
  evbuffer_add (buf, "\"}\n", 3);
  evhttp_send_reply_chunk_with_cb (req, buf, cb, arg);
  evbuffer_free (buf);
}

/* Takes a `logs -f` reader off its process's list and frees it; its reply
   ends (which also frees a request whose client left).  */
static void
follower_free (struct mon_follow *f)
{
  struct mon_follow **pp;

  for (pp = &f->p->followers; *pp; pp = &(*pp)->next)
    if (*pp == f)
      {
        *pp = f->next;
        break;
      }
  evhttp_send_reply_end (f->req);
  free (f);
}

static void
follower_end (struct mon_follow *f, json_object *last)
{
  if (last)
    send_line (f->req, last, NULL, NULL);
  evhttp_connection_set_closecb (evhttp_request_get_connection (f->req), NULL, NULL);
  follower_free (f);
}

/* Keeps a spawned process's output, dropping the oldest beyond LOG_MAX.  */
static void
proc_output (struct mon_proc *p, int stream, const uint8_t *data, uint32_t len)
{
  uint8_t hdr[5];

  hdr[0] = stream;
  rt_put_u32 (hdr + 1, len);
  evbuffer_add (p->log, hdr, sizeof (hdr));
  evbuffer_add (p->log, data, len);
  /* Headers count too: a flood of tiny frames must not grow it forever.  */
  p->log_bytes += sizeof (hdr) + len;
  while (p->log_bytes > LOG_MAX)
    {
      uint32_t n;
      evbuffer_copyout (p->log, hdr, sizeof (hdr));
      n = rt_get_u32 (hdr + 1);
      evbuffer_drain (p->log, sizeof (hdr) + n);
      p->log_bytes -= sizeof (hdr) + n;
      p->dropped += n;
    }
  if (p->followers)
    {
      struct mon_follow *f = p->followers, *next;
      for (; f; f = next)
        {
          next = f->next;
          /* Spawned output is never held back for a reader: one that
             stopped reading (a pager, ^Z) is let go, not buffered for.  */
          if (evbuffer_get_length (bufferevent_get_output (evhttp_connection_get_bufferevent (
                  evhttp_request_get_connection (f->req))))
              > CLIENT_HIGH_WATER)
            follower_end (f, NULL);
          else
            send_output (f->req, stream == 1 ? "stdout" : "stderr", data, len, NULL, NULL);
        }
    }
}

static void
exec_output (struct mon *m, struct mon_exec *e, const char *type, const uint8_t *data, uint32_t len)
{
  if (e->proc)
    {
      proc_output (e->proc, type[3] == 'o' ? 1 : 2, data, len);
      chan_ack (m, e->stream, len);
      return;
    }
  if (e->req == NULL)
    {
      chan_ack (m, e->stream, len);
      return;
    }
  send_output (e->req, type, data, len, on_flushed, e);
  /* Ack at once while the client keeps up (its buffer under the high-water
     mark): acking only on a full drain made every window stop and go.
     Past the mark, acks wait for the flush, so a client that does not read
     holds the guest back instead of filling the monitor's memory.  */
  if (e->unacked == 0
      && evbuffer_get_length (bufferevent_get_output (evhttp_connection_get_bufferevent (
             evhttp_request_get_connection (e->req))))
             < CLIENT_HIGH_WATER)
    chan_ack (m, e->stream, len);
  else
    e->unacked += len;
}

static json_object *
parse_payload (const uint8_t *payload, uint32_t len)
{
  json_tokener *tok = json_tokener_new ();
  json_object *obj = tok ? json_tokener_parse_ex (tok, (const char *) payload, len) : NULL;
  if (obj && (json_tokener_get_error (tok) != json_tokener_success || !json_object_is_type (obj, json_type_object)))
    {
      json_object_put (obj);
      obj = NULL;
    }
  json_tokener_free (tok);
  return obj;
}

static void mon_stop (struct mon *m, const char *reason);

static void
dispatch_frame (struct mon *m, const struct rt_frame_header *h, const uint8_t *payload)
{
  struct mon_exec *e = h->stream ? find_exec (m, h->stream) : NULL;

  if (e == NULL)
    return;
  switch (h->type)
    {
    case RT_FRAME_WINDOW:
      if (h->len == 4)
        {
          uint32_t n = rt_get_u32 (payload);
          e->stdin_inflight -= n < e->stdin_inflight ? n : e->stdin_inflight;
          if (e->ev_stdin && !event_pending (e->ev_stdin, EV_READ, NULL))
            event_add (e->ev_stdin, NULL);
        }
      break;
    case RT_FRAME_STDOUT:
    case RT_FRAME_STDERR:
      if (h->len == 0)
        break;
      /* Output beyond the window is a guest that ignores the protocol:
         nothing it sends can be trusted to stay bounded.  */
      e->outstanding += h->len;
      if (e->outstanding > RT_WINDOW_INITIAL)
        {
          mon_stop (m, "host_stopped");
          return;
        }
      exec_output (m, e, h->type == RT_FRAME_STDOUT ? "stdout" : "stderr", payload, h->len);
      break;
    case RT_FRAME_EXIT:
    case RT_FRAME_ERROR:
      {
        json_object *in = parse_payload (payload, h->len), *line = json_object_new_object (), *v;
        if (h->type == RT_FRAME_EXIT)
          {
            json_object_object_add (line, "type", json_object_new_string ("exit"));
            for (const char *const *k = (const char *const[]){ "exitCode", "signal", "timedOut", "durationMs", NULL };
                 *k; k++)
              if (in && json_object_object_get_ex (in, *k, &v))
                json_object_object_add (line, *k, json_object_get (v));
          }
        else
          {
            const char *code = "internal", *msg = "the agent refused the command";
            json_object *err;
            if (in && json_object_object_get_ex (in, "code", &v) && json_object_is_type (v, json_type_string))
              code = json_object_get_string (v);
            if (in && json_object_object_get_ex (in, "message", &v) && json_object_is_type (v, json_type_string))
              msg = json_object_get_string (v);
            /* Only codes the product documents reach the user.  */
            if (strcmp (code, "file_not_found") != 0 && strcmp (code, "invalid_env") != 0
                && strcmp (code, "invalid_request") != 0)
              code = "internal";
            err = error_object (code, msg, NULL);
            json_object_object_add (line, "type", json_object_new_string ("error"));
            json_object_object_get_ex (err, "error", &v);
            json_object_object_add (line, "error", json_object_get (v));
            json_object_put (err);
          }
        json_object_put (in);
        exec_finish (e, line);
        json_object_put (line);
      }
      break;
    default:
      break;
    }
}

static void
on_chan_read (evutil_socket_t fd, short what, void *arg)
{
  struct mon *m = arg;
  struct rt_frame_header h;
  const uint8_t *payload;
  size_t avail;
  uint8_t *space;
  ssize_t n;
  int ret;

  (void) what;
  space = rt_frame_reader_space (m->reader, &avail);
  n = read (fd, space, avail);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return;
  if (n <= 0)
    {
      /* QEMU closed the channel: it is exiting; the pidfd says why.  */
      event_del (m->ev_read);
      return;
    }
  rt_frame_reader_filled (m->reader, n);
  while ((ret = rt_frame_reader_next (m->reader, &h, &payload)) > 0)
    dispatch_frame (m, &h, payload);
  if (ret < 0)
    /* The byte stream from the guest is garbage: it cannot be trusted
       again.  */
    mon_stop (m, "host_stopped");
}

/* ---- lifecycle ---------------------------------------------------------- */

static void
end_loop (evutil_socket_t fd, short what, void *arg)
{
  (void) fd;
  (void) what;
  event_base_loopbreak (arg);
}

static void
mon_stop (struct mon *m, const char *reason)
{
  char now[32];
  struct timeval flush = { 0, EXIT_FLUSH_MS * 1000 };

  if (m->stopping)
    return;
  m->stopping = true;
  set_str (m, "state", "stopping");
  save_state (m);
  if (m->ev_read)
    event_del (m->ev_read);
  if (m->ev_write)
    event_del (m->ev_write);
  if (m->ev_qemu)
    event_del (m->ev_qemu);
  /* The last of the meter, before QEMU and its threads go.  */
  meter_sample (m);
  if (m->ev_meter)
    event_del (m->ev_meter);
  /* The root disk is a throwaway overlay: SIGKILL is safe and fastest.  */
  rt_vm_kill (&m->vm);
  /* With QEMU gone, closing our fds ends the namespace, its tap and its
     table.  */
  rt_proxy_free (m->proxy);
  m->proxy = NULL;
  rt_intercept_free (m->intercept);
  m->intercept = NULL;
  rt_netns_close (&m->net);
  if (m->ev_owner)
    event_del (m->ev_owner);
  if (m->ev_claim)
    event_del (m->ev_claim);
  evtimer_del (m->ev_lease);
  if (m->chan_fd >= 0)
    close (m->chan_fd);
  m->chan_fd = -1;
  while (m->execs)
    {
      json_object *line = json_object_new_object (), *err = error_object ("sandbox_not_ready", "the sandbox stopped", NULL), *v;
      json_object_object_add (line, "type", json_object_new_string ("error"));
      json_object_object_get_ex (err, "error", &v);
      json_object_object_add (line, "error", json_object_get (v));
      json_object_put (err);
      exec_finish (m->execs, line);
      json_object_put (line);
    }
  rt_format_time (rt_epoch_ms (), now);
  set_str (m, "state", "stopped");
  set_str (m, "stopReason", reason);
  set_str (m, "endedAt", now);
  ledger_write (m);
  rt_store_write_record (m->ctx, m->state, NULL);
  save_state (m);
  event_base_once (m->base, -1, EV_TIMEOUT, end_loop, m->base, &flush);
}

static void
on_qemu_exit (evutil_socket_t fd, short what, void *arg)
{
  (void) fd;
  (void) what;
  mon_stop (arg, "host_stopped");
}

/* An ephemeral sandbox's creator is gone (even by kill -9): nobody will
   use the sandbox again.  */
static void
on_owner_exit (evutil_socket_t fd, short what, void *arg)
{
  (void) fd;
  (void) what;
  mon_stop (arg, "requested");
}

/* The creator claims the sandbox once it has its id: a creator killed
   before that (kill -9 during create) leaves a sandbox nobody can name,
   so it stops.  */
static void
on_claim (evutil_socket_t fd, short what, void *arg)
{
  struct mon *m = arg;
  char c = 0;
  ssize_t n;
  (void) what;

  do
    n = read (fd, &c, 1);
  while (n < 0 && errno == EINTR);
  event_del (m->ev_claim);
  if (n != 1 || c != 'C')
    mon_stop (m, "requested");
}

static void
on_term (evutil_socket_t fd, short what, void *arg)
{
  (void) fd;
  (void) what;
  mon_stop (arg, "host_stopped");
}

static int
mon_pause (struct mon *m, rt_error **err)
{
  int ret;
  if (m->paused)
    return 0;
  set_str (m, "state", "pausing");
  ret = rt_qmp_command (m->qmp_sock, "stop", err);
  if (ret < 0)
    {
      set_str (m, "state", "running");
      return ret;
    }
  meter_sample (m);
  m->paused = true;
  set_str (m, "state", "paused");
  ledger_write (m);
  save_state (m);
  return 0;
}

static void
on_lease (evutil_socket_t fd, short what, void *arg)
{
  struct mon *m = arg;
  (void) fd;
  (void) what;
  if (m->cfg->stop_on_timeout)
    mon_stop (m, "time_limit");
  else
    mon_pause (m, NULL);
}

/* ---- request handlers --------------------------------------------------- */

/* Checks a command request, starts it in the guest and returns its exec;
   NULL after replying the error.  */
static struct mon_exec *
start_command (struct mon *m, struct evhttp_request *req, json_object *body)
{
  json_object *argv, *env, *v, *exec;
  const char *cwd = m->cfg->workdir ? m->cfg->workdir : "/workspace", *user = "runtime";
  int64_t timeout = 0;
  cleanup_free uint8_t *input = NULL;
  cleanup_close int stdin_fd = -1;
  size_t input_len = 0, size;
  struct mon_exec *e;
  const char *s;

  if (m->paused)
    return reply_error_null (req, 409, "sandbox_paused", "runtime sandbox wake wakes it", "sandbox %s is paused",
                        m->cfg->id);
  if (!json_object_object_get_ex (body, "argv", &argv) || !json_object_is_type (argv, json_type_array)
      || json_object_array_length (argv) == 0)
    return reply_error_null (req, 400, "invalid_request", NULL, "argv must be a non-empty array of strings");
  for (size_t i = 0; i < json_object_array_length (argv); i++)
    if (!json_object_is_type (json_object_array_get_idx (argv, i), json_type_string))
      return reply_error_null (req, 400, "invalid_request", NULL, "argv must be a non-empty array of strings");
  if (json_object_object_get_ex (body, "env", &env) && env)
    {
      if (!json_object_is_type (env, json_type_array))
        return reply_error_null (req, 400, "invalid_env", NULL, "env must be an array of K=V strings");
      for (size_t i = 0; i < json_object_array_length (env); i++)
        {
          json_object *item = json_object_array_get_idx (env, i);
          const char *kv = json_object_is_type (item, json_type_string) ? json_object_get_string (item) : NULL;
          const char *eq = kv ? strchr (kv, '=') : NULL;
          if (eq == NULL || !rt_env_name_valid (kv, eq - kv))
            return reply_error_null (req, 400, "invalid_env", "names are [A-Za-z_][A-Za-z0-9_]*",
                                "bad environment entry '%s'", kv ? kv : "?");
        }
    }
  else
    env = NULL;
  if (json_object_object_get_ex (body, "cwd", &v) && v)
    {
      cwd = json_object_get_string (v);
      if (cwd == NULL || cwd[0] != '/')
        return reply_error_null (req, 400, "invalid_request", NULL, "the working directory must be an absolute path");
    }
  if (json_object_object_get_ex (body, "user", &v) && v)
    {
      user = json_object_get_string (v);
      if (user == NULL || (strcmp (user, "runtime") != 0 && strcmp (user, "root") != 0))
        return reply_error_null (req, 400, "invalid_request", NULL, "user must be runtime or root");
    }
  if (json_object_object_get_ex (body, "timeoutMs", &v) && v)
    timeout = json_object_get_int64 (v);
  if (timeout < 0)
    return reply_error_null (req, 400, "invalid_request", NULL, "timeoutMs must not be negative");
  if (json_object_object_get_ex (body, "stdin", &v) && v && (s = json_object_get_string (v)) && *s)
    {
      size = strlen (s);
      if (size / 4 * 3 > RT_MAX_STDIN + 3)
        return reply_error_null (req, 400, "usage", NULL, "standard input is over 1 MiB");
      input = malloc (size / 4 * 3 + 3);
      if (input == NULL)
        return reply_error_null (req, 500, "internal", NULL, "out of memory");
      {
        int n = EVP_DecodeBlock (input, (const unsigned char *) s, (int) size);
        if (n < 0 || size % 4 != 0)
          return reply_error_null (req, 400, "invalid_request", NULL, "stdin must be base64");
        /* EVP_DecodeBlock counts the padding as data.  */
        input_len = n - (size >= 1 && s[size - 1] == '=') - (size >= 2 && s[size - 2] == '=');
      }
    }

  /* A stream too large for the request body: a FIFO or file the client
     made in this sandbox's own directory (nowhere else).  */
  if (json_object_object_get_ex (body, "stdinPath", &v) && v)
    {
      const char *path = json_object_get_string (v);
      size_t dl = strlen (m->cfg->dir);
      if (input_len > 0 || path == NULL || strncmp (path, m->cfg->dir, dl) != 0
          || strncmp (path + dl, "/upload-", 8) != 0 || strchr (path + dl + 1, '/') != NULL)
        return reply_error_null (req, 400, "invalid_request", NULL, "stdinPath must be an upload in the sandbox's dir");
      stdin_fd = open (path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
      if (stdin_fd < 0)
        return reply_error_null (req, 400, "invalid_request", NULL, "cannot open '%s': %s", path, strerror (errno));
    }

  exec = json_object_new_object ();
  json_object_object_add (exec, "argv", json_object_get (argv));
  {
    json_object *all = json_object_new_array ();
    for (char **p = m->cfg->env; p && *p; p++)
      json_object_array_add (all, json_object_new_string (*p));
    for (size_t i = 0; env && i < json_object_array_length (env); i++)
      json_object_array_add (all, json_object_get (json_object_array_get_idx (env, i)));
    json_object_object_add (exec, "env", all);
  }
  json_object_object_add (exec, "cwd", json_object_new_string (cwd));
  json_object_object_add (exec, "user", json_object_new_string (user));
  json_object_object_add (exec, "timeoutMs", json_object_new_int64 (timeout));
  json_object_object_add (exec, "stdin", json_object_new_boolean (input_len > 0 || stdin_fd >= 0));
  if (strlen (json_object_to_json_string_ext (exec, JSON_C_TO_STRING_PLAIN)) > RT_FRAME_MAX_PAYLOAD)
    {
      json_object_put (exec);
      return reply_error_null (req, 400, "invalid_request", NULL, "the command and its environment are too large");
    }
  e = calloc (1, sizeof (*e));
  if (e == NULL)
    {
      json_object_put (exec);
      return reply_error_null (req, 500, "internal", NULL, "out of memory");
    }
  e->m = m;
  e->stream = m->next_stream++;
  e->stdin_fd = steal_fd (&stdin_fd);
  e->next = m->execs;
  m->execs = e;
  chan_queue_json (m, RT_FRAME_EXEC, e->stream, exec);
  json_object_put (exec);
  for (size_t off = 0; off < input_len; off += 65536)
    chan_queue (m, RT_FRAME_STDIN, e->stream, input + off, input_len - off < 65536 ? input_len - off : 65536);
  if (input_len)
    chan_queue (m, RT_FRAME_STDIN, e->stream, NULL, 0);
  if (e->stdin_fd >= 0)
    {
      e->ev_stdin = event_new (m->base, e->stdin_fd, EV_READ | EV_PERSIST, on_stdin_ready, e);
      if (e->ev_stdin)
        event_add (e->ev_stdin, NULL);
    }
  return e;
}

static void
start_stream (struct evhttp_request *req)
{
  evhttp_add_header (evhttp_request_get_output_headers (req), "Content-Type", "application/x-ndjson");
  evhttp_send_reply_start (req, 200, "OK");
}

static void
handle_exec (struct mon *m, struct evhttp_request *req, json_object *body)
{
  struct mon_exec *e = start_command (m, req, body);

  if (e == NULL)
    return;
  e->req = req;
  start_stream (req);
  evhttp_connection_set_closecb (evhttp_request_get_connection (req), on_client_gone, e);
  {
    json_object *start = json_object_new_object ();
    json_object_object_add (start, "type", json_object_new_string ("start"));
    json_object_object_add (start, "execId", json_object_new_int64 (e->stream));
    send_line (req, start, NULL, NULL);
    json_object_put (start);
  }
}

static char *
join_argv (json_object *argv)
{
  struct evbuffer *b = evbuffer_new ();
  char *out;
  size_t len;

  for (size_t i = 0; b && i < json_object_array_length (argv); i++)
    evbuffer_add_printf (b, "%s%s", i ? " " : "", json_object_get_string (json_object_array_get_idx (argv, i)));
  len = b ? evbuffer_get_length (b) : 0;
  out = malloc (len + 1);
  if (out)
    {
      evbuffer_remove (b, out, len);
      out[len] = '\0';
    }
  if (b)
    evbuffer_free (b);
  return out;
}

static struct mon_proc *
find_proc (struct mon *m, int64_t id)
{
  for (struct mon_proc *p = m->procs; p; p = p->next)
    if (p->id == id)
      return p;
  return NULL;
}

static void
proc_free (struct mon_proc *p)
{
  while (p->followers)
    follower_end (p->followers, NULL);
  evbuffer_free (p->log);
  json_object_put (p->exit);
  free (p->command);
  free (p);
}

static json_object *
proc_json (struct mon_proc *p)
{
  json_object *o = json_object_new_object (), *v;
  json_object_object_add (o, "process", json_object_new_int64 (p->id));
  json_object_object_add (o, "state", json_object_new_string (p->exit ? "exited" : "running"));
  json_object_object_add (o, "exitCode", p->exit && json_object_object_get_ex (p->exit, "exitCode", &v)
                                            ? json_object_get (v)
                                            : NULL);
  json_object_object_add (o, "command", json_object_new_string (p->command ? p->command : ""));
  json_object_object_add (o, "droppedBytes", json_object_new_int64 (p->dropped));
  return o;
}

static void
handle_spawn (struct mon *m, struct evhttp_request *req, json_object *body)
{
  struct mon_proc *p, **pp;
  struct mon_exec *e;
  json_object *argv;
  int n = 0;

  /* At the cap, forget the oldest ended processes; refuse when all run.  */
  for (p = m->procs; p; p = p->next)
    n++;
  for (pp = &m->procs; *pp && n >= MAX_PROCS;)
    if ((*pp)->exit)
      {
        p = *pp;
        *pp = p->next;
        proc_free (p);
        n--;
      }
    else
      pp = &(*pp)->next;
  if (n >= MAX_PROCS)
    return reply_error (req, 409, "quota_exceeded", NULL, "at most %d background processes", MAX_PROCS);
  p = calloc (1, sizeof (*p));
  if (p == NULL || (p->log = evbuffer_new ()) == NULL)
    {
      free (p);
      return reply_error (req, 500, "internal", NULL, "out of memory");
    }
  e = start_command (m, req, body);
  if (e == NULL)
    {
      evbuffer_free (p->log);
      free (p);
      return;
    }
  json_object_object_get_ex (body, "argv", &argv);
  p->id = e->stream;
  p->command = join_argv (argv);
  e->proc = p;
  /* Newest last: ps lists them in start order.  */
  for (pp = &m->procs; *pp; pp = &(*pp)->next)
    ;
  *pp = p;
  {
    json_object *o = proc_json (p);
    reply_json (req, 200, o);
    json_object_put (o);
  }
}

static void
handle_ps (struct mon *m, struct evhttp_request *req)
{
  json_object *arr = json_object_new_array ();
  for (struct mon_proc *p = m->procs; p; p = p->next)
    json_object_array_add (arr, proc_json (p));
  reply_json (req, 200, arr);
  json_object_put (arr);
}

static void
on_follower_gone (struct evhttp_connection *evcon, void *arg)
{
  (void) evcon;
  follower_free (arg);
}

static void
handle_logs (struct mon *m, struct evhttp_request *req, json_object *body)
{
  struct mon_proc *p;
  json_object *v;
  struct evbuffer_ptr pos;
  bool follow = json_object_object_get_ex (body, "follow", &v) && json_object_get_boolean (v);
  int64_t id = json_object_object_get_ex (body, "process", &v) ? json_object_get_int64 (v) : 0;

  p = find_proc (m, id);
  if (p == NULL)
    return reply_error (req, 404, "not_found", "runtime sandbox ps lists the processes", "no process %lld",
                        (long long) id);
  start_stream (req);
  if (p->dropped)
    {
      json_object *d = json_object_new_object ();
      json_object_object_add (d, "type", json_object_new_string ("dropped"));
      json_object_object_add (d, "bytes", json_object_new_int64 (p->dropped));
      send_line (req, d, NULL, NULL);
      json_object_put (d);
    }
  evbuffer_ptr_set (p->log, &pos, 0, EVBUFFER_PTR_SET);
  while (pos.pos + 5 <= (ssize_t) evbuffer_get_length (p->log))
    {
      uint8_t hdr[5];
      uint32_t n;
      uint8_t *data;
      evbuffer_copyout_from (p->log, &pos, hdr, sizeof (hdr));
      n = rt_get_u32 (hdr + 1);
      evbuffer_ptr_set (p->log, &pos, 5, EVBUFFER_PTR_ADD);
      data = malloc (n ? n : 1);
      if (data == NULL)
        break;
      evbuffer_copyout_from (p->log, &pos, data, n);
      evbuffer_ptr_set (p->log, &pos, n, EVBUFFER_PTR_ADD);
      send_output (req, hdr[0] == 1 ? "stdout" : "stderr", data, n, NULL, NULL);
      free (data);
    }
  if (p->exit || !follow)
    {
      if (p->exit)
        send_line (req, p->exit, NULL, NULL);
      evhttp_send_reply_end (req);
      return;
    }
  {
    struct mon_follow *f = calloc (1, sizeof (*f));
    if (f == NULL)
      {
        evhttp_send_reply_end (req);
        return;
      }
    f->p = p;
    f->req = req;
    f->next = p->followers;
    p->followers = f;
    evhttp_connection_set_closecb (evhttp_request_get_connection (req), on_follower_gone, f);
  }
}

static void
handle_kill (struct mon *m, struct evhttp_request *req, json_object *body)
{
  json_object *v;
  int64_t id = json_object_object_get_ex (body, "process", &v) ? json_object_get_int64 (v) : 0;
  int64_t sig = json_object_object_get_ex (body, "signal", &v) ? json_object_get_int64 (v) : SIGTERM;
  struct mon_proc *p = find_proc (m, id);

  if (p == NULL)
    return reply_error (req, 404, "not_found", "runtime sandbox ps lists the processes", "no process %lld",
                        (long long) id);
  if (sig < 1 || sig > 64)
    return reply_error (req, 400, "invalid_request", NULL, "signal must be 1 to 64");
  if (p->exit == NULL)
    chan_signal (m, p->id, (int) sig);
  {
    json_object *o = proc_json (p);
    reply_json (req, 200, o);
    json_object_put (o);
  }
}

static void
handle_signal (struct mon *m, struct evhttp_request *req, json_object *body)
{
  json_object *v;
  int64_t id = 0, sig = 0;

  if (json_object_object_get_ex (body, "execId", &v))
    id = json_object_get_int64 (v);
  if (json_object_object_get_ex (body, "signal", &v))
    sig = json_object_get_int64 (v);
  if (sig < 1 || sig > 64)
    return reply_error (req, 400, "invalid_request", NULL, "signal must be 1 to 64");
  if (id <= 0 || id > UINT32_MAX || find_exec (m, (uint32_t) id) == NULL)
    return reply_error (req, 404, "not_found", NULL, "no running command %lld", (long long) id);
  chan_signal (m, (uint32_t) id, (int) sig);
  reply_json (req, 200, m->state);
}

static void
handle_extend (struct mon *m, struct evhttp_request *req, json_object *body)
{
  json_object *v;
  int64_t seconds = 0, now = rt_epoch_ms (), end;

  if (json_object_object_get_ex (body, "seconds", &v))
    seconds = json_object_get_int64 (v);
  if (seconds <= 0)
    return reply_error (req, 400, "invalid_request", NULL, "seconds must be a positive whole number");
  if (seconds > RT_MAX_LEASE_S)
    return reply_error (req, 400, "invalid_request", "a lease may end at most 1 h from now",
                        "extending by %lld s would end the lease more than 1 h from now", (long long) seconds);
  end = (m->expires_ms > now ? m->expires_ms : now) + seconds * 1000;
  if (end > now + (int64_t) RT_MAX_LEASE_S * 1000 + 1000)
    return reply_error (req, 400, "invalid_request", "a lease may end at most 1 h from now",
                        "extending by %lld s would end the lease more than 1 h from now", (long long) seconds);
  if (m->trial)
    {
      cleanup_error rt_error *err = NULL;
      int64_t lease_us = (end - now) * 1000;
      if (rt_trial_hold (m->ctx, m->cfg->id, (int64_t) m->running_us, &lease_us, false, &err) < 0)
        return reply_error (req, strcmp (err->code, "trial_exhausted") == 0 ? 402 : 500, err->code, err->hint,
                            "%s", err->msg);
    }
  set_expires (m, end);
  save_state (m);
  reply_json (req, 200, m->state);
}

static void
handle_metrics (struct mon *m, struct evhttp_request *req)
{
  cleanup_json json_object *o = json_object_new_object ();
  char pct[32], ran[32];

  if (!m->stopping)
    meter_sample (m);
  /* To the millisecond, as cpuSeconds: CPU over a window of running time.  */
  snprintf (ran, sizeof ran, "%.3f", m->running_us / 1e6);
  snprintf (pct, sizeof pct, "%.1f", m->paused ? 0.0 : m->cpu_percent);
  json_object_object_add (o, "id", json_object_new_string (m->cfg->id));
  json_object_object_add (o, "state", json_object_get (json_object_object_get (m->state, "state")));
  json_object_object_add (o, "vcpu", json_object_new_int (m->cfg->vm.vcpu));
  json_object_object_add (o, "cpuPercent", json_object_new_double_s (m->paused ? 0.0 : m->cpu_percent, pct));
  json_object_object_add (o, "memoryMiB", json_object_new_int (m->cfg->vm.memory_mib));
  json_object_object_add (o, "runningSeconds", json_object_new_double_s (m->running_us / 1e6, ran));
  json_object_object_add (o, "cpuSeconds", json_object_get (json_object_object_get (m->state, "cpuSeconds")));
  json_object_object_add (o, "chargedMicros", json_object_new_int64 (charged_micros (m)));
  reply_json (req, 200, o);
}

static void
handle_network (struct mon *m, struct evhttp_request *req, json_object *body)
{
  struct rt_egress_rules rules = { 0 };
  cleanup_error rt_error *err = NULL;
  json_object *net;
  int closed;

  if (rt_egress_rules_from_json (body, &rules, &err) < 0)
    return reply_error (req, 400, err->code, err->hint, "%s", err->msg);
  rules.trial = m->trial;
  /* The kernel refuses new connections first, then the proxy cuts the
     open ones the new rules refuse.  */
  if (rt_netns_apply (&m->net, &rules, &err) < 0)
    {
      rt_egress_rules_clear (&rules);
      return reply_error (req, 500, err->code, err->hint, "%s", err->msg);
    }
  closed = rt_proxy_set_rules (m->proxy, &rules, &err);
  if (closed < 0)
    {
      rt_egress_rules_clear (&rules);
      return reply_error (req, 500, err->code, err->hint, "%s", err->msg);
    }
  net = rt_egress_rules_to_json (&rules);
  rt_egress_rules_clear (&rules);
  if (net == NULL)
    return reply_error (req, 500, "internal", NULL, "out of memory");
  json_object_object_add (m->state, "network", json_object_get (net));
  save_state (m);
  json_object_object_add (net, "closed", json_object_new_int (closed));
  reply_json (req, 200, net);
  json_object_put (net);
}

static void
handle_request (struct evhttp_request *req, void *arg)
{
  struct mon *m = arg;
  const char *uri = evhttp_request_get_uri (req);
  const char *prefix = "/v1/sandboxes/";
  enum evhttp_cmd_type method = evhttp_request_get_command (req);
  cleanup_free char *path = NULL;
  cleanup_json json_object *body = NULL;
  cleanup_error rt_error *err = NULL;
  const char *verb = "", *sub = "";
  char *colon, *slash;

  if (uri == NULL || strncmp (uri, prefix, strlen (prefix)) != 0)
    return reply_error (req, 404, "not_found", NULL, "no such endpoint");
  path = strdup (uri + strlen (prefix));
  if (path == NULL)
    return reply_error (req, 500, "internal", NULL, "out of memory");
  if ((colon = strchr (path, ':')))
    {
      *colon = '\0';
      verb = colon + 1;
    }
  if ((slash = strchr (path, '/')))
    {
      *slash = '\0';
      sub = slash + 1;
    }
  if (strcmp (path, m->cfg->id) != 0)
    return reply_error (req, 404, "not_found", NULL, "no sandbox '%s' here", path);
  if (*sub && ((strcmp (sub, "network") != 0 && strcmp (sub, "metrics") != 0) || *verb))
    return reply_error (req, 404, "not_found", NULL, "no such endpoint");
  if (method == EVHTTP_REQ_GET && strcmp (sub, "metrics") == 0)
    return handle_metrics (m, req);
  if (method == EVHTTP_REQ_GET && *verb == '\0')
    {
      json_object *net;
      if (*sub && json_object_object_get_ex (m->state, "network", &net))
        return reply_json (req, 200, net);
      return reply_json (req, 200, m->state);
    }
  if (method != EVHTTP_REQ_POST && !(method == EVHTTP_REQ_PUT && *sub))
    return reply_error (req, 405, "invalid_request", NULL, "method not allowed");
  if (m->stopping)
    {
      /* Stopping what stops already is done.  */
      if (strcmp (verb, "stop") == 0)
        return reply_json (req, 200, m->state);
      return reply_error (req, 409, "sandbox_not_ready", "runtime sandbox create starts a new one",
                          "sandbox %s is stopped", m->cfg->id);
    }
  {
    struct evbuffer *in = evhttp_request_get_input_buffer (req);
    size_t len = evbuffer_get_length (in);
    if (len > 0)
      {
        json_tokener *tok = json_tokener_new ();
        body = json_tokener_parse_ex (tok, (const char *) evbuffer_pullup (in, -1), len);
        if (body && !json_object_is_type (body, json_type_object))
          {
            json_object_put (body);
            body = NULL;
          }
        json_tokener_free (tok);
        if (body == NULL)
          return reply_error (req, 400, "invalid_request", NULL, "the request body is not a JSON object");
      }
    else
      body = json_object_new_object ();
  }
  if (*sub)
    return handle_network (m, req, body);
  if (strcmp (verb, "exec") == 0)
    return handle_exec (m, req, body);
  if (strcmp (verb, "signal") == 0)
    return handle_signal (m, req, body);
  if (strcmp (verb, "spawn") == 0)
    return handle_spawn (m, req, body);
  if (strcmp (verb, "ps") == 0)
    return handle_ps (m, req);
  if (strcmp (verb, "logs") == 0)
    return handle_logs (m, req, body);
  if (strcmp (verb, "kill") == 0)
    return handle_kill (m, req, body);
  if (strcmp (verb, "extend") == 0)
    return handle_extend (m, req, body);
  if (strcmp (verb, "stop") == 0)
    {
      mon_stop (m, "requested");
      return reply_json (req, 200, m->state);
    }
  if (strcmp (verb, "pause") == 0)
    {
      if (mon_pause (m, &err) < 0)
        return reply_error (req, 500, err->code, err->hint, "%s", err->msg);
      return reply_json (req, 200, m->state);
    }
  if (strcmp (verb, "wake") == 0)
    {
      if (m->paused)
        {
          /* A lease that ended while paused starts again: for a trial
             sandbox, taken from the trial first (as at create).  */
          bool renew = m->expires_ms > 0 && m->expires_ms <= rt_epoch_ms ();
          int64_t lease_us = (int64_t) m->cfg->timeout_s * 1000000;
          if (renew && m->trial
              && rt_trial_hold (m->ctx, m->cfg->id, (int64_t) m->running_us, &lease_us, true, &err) < 0)
            return reply_error (req, strcmp (err->code, "trial_exhausted") == 0 ? 402 : 500, err->code, err->hint,
                                "%s", err->msg);
          set_str (m, "state", "resuming");
          if (rt_qmp_command (m->qmp_sock, "cont", &err) < 0)
            {
              /* Still paused: the new lease is not taken from the trial.  */
              int64_t none = 0;
              if (renew && m->trial)
                rt_trial_hold (m->ctx, m->cfg->id, (int64_t) m->running_us, &none, false, NULL);
              set_str (m, "state", "paused");
              return reply_error (req, 500, err->code, err->hint, "%s", err->msg);
            }
          m->paused = false;
          /* Paused time is not charged.  */
          meter_start (m);
          set_str (m, "state", "running");
          if (renew)
            set_expires (m, rt_epoch_ms () + lease_us / 1000);
          save_state (m);
        }
      return reply_json (req, 200, m->state);
    }
  reply_error (req, 404, "not_found", NULL, "no such action '%s'", verb);
}

/* ---- start-up ----------------------------------------------------------- */

static void
report (int sync_fd, const rt_error *err)
{
  if (err == NULL)
    rt_write_all (sync_fd, "OK\n", 3);
  else
    {
      json_object *o = error_object (err->code, err->msg, err->hint);
      const char *s = json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN);
      rt_write_all (sync_fd, s, strlen (s));
      json_object_put (o);
    }
  close (sync_fd);
}

static int
listen_unix (const char *path, rt_error **err)
{
  struct sockaddr_un addr = { .sun_family = AF_UNIX };
  int fd;

  if (strlen (path) >= sizeof (addr.sun_path))
    return rt_error_set (err, ENAMETOOLONG, "startup_failed", "socket path too long: %s", path);
  strcpy (addr.sun_path, path);
  fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return rt_error_set (err, errno, "startup_failed", "socket: %s", strerror (errno));
  unlink (path);
  if (bind (fd, (struct sockaddr *) &addr, sizeof (addr)) < 0 || listen (fd, 128) < 0)
    {
      int e = errno;
      close (fd);
      return rt_error_set (err, e, "startup_failed", "cannot listen on '%s': %s", path, strerror (e));
    }
  return fd;
}

/* The VM booted or not: on failure, the console or QEMU's own complaint.  */
static int
boot_error (struct mon *m, rt_error **err)
{
  cleanup_free char *why = *err ? strdup ((*err)->msg) : NULL;
  cleanup_free char *qemu_log = rt_strdup_printf ("%s/qemu.log", m->cfg->dir);
  cleanup_free char *qemu_tail = qemu_log ? rt_file_tail (qemu_log, 3) : NULL;

  rt_error_free (*err);
  *err = NULL;
  if (qemu_tail && *qemu_tail)
    {
      rt_error_set (err, EIO, "startup_failed", "the sandbox did not start: %s", why ? why : "QEMU failed");
      return rt_error_hint (err, "QEMU said: %s", qemu_tail);
    }
  return rt_vm_startup_error (&m->vm, err, why ? why : "unknown");
}

/* HELLO {"version", "trust": PEM} on the still blocking channel.  */
static int
send_hello (int fd, const char *pem, rt_error **err)
{
  cleanup_json json_object *o = json_object_new_object ();
  const char *s;
  uint8_t hdr[RT_FRAME_HEADER];
  size_t len;

  json_object_object_add (o, "version", json_object_new_int (RT_PROTO_VERSION));
  json_object_object_add (o, "trust", json_object_new_string (pem));
  s = json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  len = strlen (s);
  rt_frame_encode_header (hdr, RT_FRAME_HELLO, 0, len);
  if (rt_write_all (fd, hdr, sizeof hdr) < 0 || rt_write_all (fd, s, len) < 0)
    return rt_error_set (err, errno, "startup_failed", "cannot write to the guest agent: %s", strerror (errno));
  return 0;
}

static int
monitor_start (struct mon *m, rt_error **err)
{
  struct rt_channel ch;
  cleanup_free char *pidfile = rt_strdup_printf ("%s/monitor.pid", m->cfg->dir);
  cleanup_free char *qemufile = rt_strdup_printf ("%s/qemu.pid", m->cfg->dir);
  int ret, api_fd;

  m->api_sock = rt_strdup_printf ("%s/api.sock", m->cfg->dir);
  m->qmp_sock = rt_strdup_printf ("%s/qmp.sock", m->cfg->dir);
  if (pidfile == NULL || qemufile == NULL || m->api_sock == NULL || m->qmp_sock == NULL)
    return rt_error_oom (err);
  ret = rt_write_pidfile (pidfile, getpid (), err);
  if (ret < 0)
    return ret;
  {
    struct rt_vm_config vm = m->cfg->vm;
    cleanup_free char *cmdline = NULL;

    ret = rt_netns_create (&m->net, &m->cfg->net, err);
    if (ret < 0)
      return ret;
    cmdline = rt_strdup_printf ("%s%srt.net=" RT_NET_GUEST "," RT_NET_GATEWAY, vm.cmdline ? vm.cmdline : "",
                                vm.cmdline ? " " : "");
    if (cmdline == NULL)
      return rt_error_oom (err);
    vm.cmdline = cmdline;
    vm.tap_fd = m->net.tap_fd;
    vm.netns_fd = m->net.ns_fd;
    ret = rt_vm_start (m->ctx, &vm, &m->vm, err);
    if (ret < 0)
      return ret;
    /* QEMU holds the tap now: when it dies, the tap goes.  */
    close (m->net.tap_fd);
    m->net.tap_fd = -1;
  }
  rt_write_pidfile (qemufile, m->vm.pid, NULL);
  ret = rt_channel_connect (&ch, m->vm.agent_sock, m->vm.pidfd, BOOT_TIMEOUT_MS, err);
  if (ret < 0)
    {
      rt_channel_close (&ch);
      return boot_error (m, err);
    }
  /* A sandbox with secrets trusts the egress CA: the agent installs it
     before it takes any command (frames are handled in order).  */
  if (m->cfg->secret_env && m->cfg->secret_env[0])
    {
      cleanup_free char *pem = NULL;
      ret = rt_egress_ca_ensure (m->ctx, &pem, err);
      m->intercept = ret < 0 ? NULL : rt_intercept_new (m->ctx, m->cfg->secret_env, err);
      if (m->intercept == NULL)
        {
          rt_channel_close (&ch);
          return -1;
        }
      ret = send_hello (ch.fd, pem, err);
      if (ret < 0)
        {
          rt_channel_close (&ch);
          return ret;
        }
    }
  /* The channel now belongs to the event loop.  */
  m->chan_fd = steal_fd (&ch.fd);
  m->reader = steal_pointer (&ch.reader);
  rt_channel_close (&ch);
  fcntl (m->chan_fd, F_SETFL, O_NONBLOCK);

  api_fd = listen_unix (m->api_sock, err);
  if (api_fd < 0)
    return api_fd;
  m->base = event_base_new ();
  m->http = m->base ? evhttp_new (m->base) : NULL;
  m->chan_out = evbuffer_new ();
  if (m->http == NULL || m->chan_out == NULL)
    return rt_error_set (err, ENOMEM, "startup_failed", "cannot set up the event loop");
  evhttp_set_max_body_size (m->http, MAX_BODY);
  evhttp_set_allowed_methods (m->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT);
  evhttp_set_gencb (m->http, handle_request, m);
  if (evhttp_accept_socket (m->http, api_fd) < 0)
    return rt_error_set (err, EIO, "startup_failed", "cannot serve '%s'", m->api_sock);
  m->trial = m->cfg->net.trial;
  m->proxy = rt_proxy_new (m->base, &m->net, &m->cfg->net, m->cfg->egress_log, getenv ("RUNTIME_RESOLVE"),
                           m->intercept, err);
  if (m->proxy == NULL)
    return -1;
  m->ev_read = event_new (m->base, m->chan_fd, EV_READ | EV_PERSIST, on_chan_read, m);
  m->ev_write = event_new (m->base, m->chan_fd, EV_WRITE, on_chan_write, m);
  m->ev_qemu = event_new (m->base, m->vm.pidfd, EV_READ, on_qemu_exit, m);
  m->ev_lease = evtimer_new (m->base, on_lease, m);
  m->ev_term = evsignal_new (m->base, SIGTERM, on_term, m);
  if (!m->ev_read || !m->ev_write || !m->ev_qemu || !m->ev_lease || !m->ev_term)
    return rt_error_set (err, ENOMEM, "startup_failed", "cannot set up the event loop");
  if (m->cfg->owner > 0)
    {
      /* Opened before readiness is reported, so the owner is still there:
         a pidfd cannot name a recycled pid.  */
      m->owner_pidfd = pidfd_open (m->cfg->owner, 0);
      if (m->owner_pidfd < 0)
        return rt_error_set (err, errno, "startup_failed", "pidfd_open: %s", strerror (errno));
      m->ev_owner = event_new (m->base, m->owner_pidfd, EV_READ, on_owner_exit, m);
      if (m->ev_owner == NULL)
        return rt_error_set (err, ENOMEM, "startup_failed", "cannot set up the event loop");
      event_add (m->ev_owner, NULL);
    }
  m->ev_claim = event_new (m->base, m->claim_fd, EV_READ, on_claim, m);
  if (m->ev_claim == NULL)
    return rt_error_set (err, ENOMEM, "startup_failed", "cannot set up the event loop");
  event_add (m->ev_claim, NULL);
  event_add (m->ev_read, NULL);
  event_add (m->ev_qemu, NULL);
  event_add (m->ev_term, NULL);
  /* An ephemeral sandbox is bounded by its creator's life and its
     command's timeout: a lease would only freeze a long command.  */
  if (m->cfg->expires_ms > 0)
    set_expires (m, m->cfg->expires_ms);
  /* The meter starts with the VM answering: boot time is the host's.  */
  {
    cleanup_free char *ledger_dir = rt_strdup_printf ("%s/ledger", m->ctx->data_dir);
    cleanup_free char *ledger = rt_strdup_printf ("%s/ledger/ledger.jsonl", m->ctx->data_dir);
    struct timeval second = { 1, 0 };
    if (ledger == NULL || ledger_dir == NULL)
      return rt_error_oom (err);
    ret = rt_rates_load (m->ctx, &m->rates, err);
    if (ret == 0)
      ret = rt_mkdir_p (ledger_dir, 0700, err);
    if (ret < 0)
      return ret;
    m->ledger_fd = open (ledger, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (m->ledger_fd < 0)
      return rt_error_set (err, errno, "startup_failed", "cannot open the ledger '%s': %s", ledger, strerror (errno));
    m->ev_meter = event_new (m->base, -1, EV_PERSIST, on_meter, m);
    if (m->ev_meter == NULL)
      return rt_error_set (err, ENOMEM, "startup_failed", "cannot set up the event loop");
    meter_start (m);
    event_add (m->ev_meter, &second);
  }
  set_str (m, "state", "running");
  ledger_write (m);
  return rt_store_write_state (m->cfg->dir, m->state, err);
}

static void __attribute__ ((noreturn))
monitor_main (rt_context *ctx, const struct rt_monitor_config *cfg, int sync_fd, int claim_fd)
{
  struct mon m = { .ctx = ctx, .cfg = cfg, .chan_fd = -1, .next_stream = 1, .owner_pidfd = -1, .claim_fd = 4,
                   .net = { -1, -1, -1, -1, -1, -1 }, .ledger_fd = -1 };
  cleanup_free char *log = rt_strdup_printf ("%s/monitor.log", cfg->dir);
  rt_error *err = NULL;
  sigset_t none;
  int fd;

  /* Nothing of the caller's may leak into a process that lives on: its
     terminal, its pipes, its signal mask.  */
  sigemptyset (&none);
  sigprocmask (SIG_SETMASK, &none, NULL);
  signal (SIGPIPE, SIG_IGN);
  signal (SIGINT, SIG_IGN);
  signal (SIGHUP, SIG_IGN);
  fd = open ("/dev/null", O_RDWR);
  dup2 (fd, 0);
  dup2 (fd, 1);
  if (log)
    {
      int lfd = open (log, O_WRONLY | O_CREAT | O_APPEND, 0600);
      if (lfd >= 0)
        fd = lfd;
    }
  dup2 (fd, 2);
  /* The two pipes to the creator become fds 3 and 4, everything else goes.  */
  if (sync_fd == 4 || claim_fd == 3)
    {
      int tmp = fcntl (sync_fd, F_DUPFD_CLOEXEC, 10);
      sync_fd = tmp >= 0 ? tmp : sync_fd;
    }
  dup3 (claim_fd, 4, O_CLOEXEC);
  if (sync_fd != 3)
    dup3 (sync_fd, 3, O_CLOEXEC);
  sync_fd = 3;
  close_range (5, ~0U, 0);
  fcntl (3, F_SETFD, FD_CLOEXEC);
  fcntl (4, F_SETFD, FD_CLOEXEC);

  m.state = json_object_get (cfg->state);
  if (cfg->no_wait)
    {
      /* The caller gets the id now; the pid file tells the reaper this
         sandbox is alive while it boots.  */
      cleanup_free char *pidfile = rt_strdup_printf ("%s/monitor.pid", cfg->dir);
      if (pidfile)
        rt_write_pidfile (pidfile, getpid (), NULL);
      report (sync_fd, NULL);
    }
  if (monitor_start (&m, &err) < 0)
    {
      if (cfg->no_wait)
        {
          /* Nobody waits for the error: the record carries it.  */
          char now[32];
          rt_format_time (rt_epoch_ms (), now);
          set_str (&m, "state", "stopped");
          set_str (&m, "stopReason", "startup_failed");
          set_str (&m, "endedAt", now);
          json_object_object_add (m.state, "error", error_object (err->code, err->msg, err->hint));
          rt_store_write_record (ctx, m.state, NULL);
        }
      /* QEMU and the state dir go before the caller hears of it.  */
      rt_vm_kill (&m.vm);
      rt_rm_rf (cfg->dir, NULL);
      if (!cfg->no_wait)
        report (sync_fd, err);
      rt_error_free (err);
      _exit (1);
    }
  if (!cfg->no_wait)
    report (sync_fd, NULL);
  event_base_dispatch (m.base);
  mon_stop (&m, "host_stopped");
  rt_rm_rf (cfg->dir, NULL);
  _exit (0);
}

int
rt_monitor_spawn (rt_context *ctx, const struct rt_monitor_config *cfg, rt_error **err)
{
  int sync[2], claim[2];
  pid_t pid;
  int status;
  char buf[8192];
  size_t fill = 0;

  if (pipe2 (sync, O_CLOEXEC) < 0)
    return rt_error_set (err, errno, "startup_failed", "pipe: %s", strerror (errno));
  if (pipe2 (claim, O_CLOEXEC) < 0)
    {
      close (sync[0]);
      close (sync[1]);
      return rt_error_set (err, errno, "startup_failed", "pipe: %s", strerror (errno));
    }
  pid = fork ();
  if (pid < 0)
    {
      close (sync[0]);
      close (sync[1]);
      close (claim[0]);
      close (claim[1]);
      return rt_error_set (err, errno, "startup_failed", "fork: %s", strerror (errno));
    }
  if (pid == 0)
    {
      /* Double fork: the monitor is nobody's child we would have to reap,
         and setsid keeps the terminal's signals away from it.  */
      close (sync[0]);
      close (claim[1]);
      setsid ();
      pid = fork ();
      if (pid != 0)
        _exit (pid < 0 ? 1 : 0);
      monitor_main (ctx, cfg, sync[1], claim[0]);
    }
  close (sync[1]);
  close (claim[0]);
  while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
    ;
  for (;;)
    {
      ssize_t n = read (sync[0], buf + fill, sizeof (buf) - 1 - fill);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      fill += n;
      if (fill >= sizeof (buf) - 1)
        break;
    }
  close (sync[0]);
  buf[fill] = '\0';
  if (strncmp (buf, "OK\n", 3) == 0)
    {
      /* Claimed: from here the caller has the handle (a kill -9 before
         this point stops the sandbox; see on_claim).  */
      rt_write_all (claim[1], "C", 1);
      close (claim[1]);
      return 0;
    }
  close (claim[1]);
  {
    cleanup_json json_object *o = json_tokener_parse (buf);
    if (rt_error_from_json (o, err) < 0)
      return -EIO;
  }
  return rt_error_set (err, EIO, "startup_failed", "the sandbox's monitor died while starting");
}
