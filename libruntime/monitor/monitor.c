/* monitor.c - the per-sandbox monitor process: spawned by a double fork,
   it starts the VM and its network, reports readiness to its creator,
   then runs one libevent loop serving api.sock (routes.c) and the agent
   channel (channel.c) until the sandbox stops.  See monitor.h for the API
   it serves and monitor-internal.h for how its files divide the work.  */
#include <event2/buffer.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "monitor/channel.h"
#include "monitor/clone.h"
#include "monitor/spare.h"
#include "vmm/guest-ops.h"
#include "monitor/exec.h"
#include "monitor/idle.h"
#include "monitor/lifecycle.h"
#include "vmm/privs.h"
#include "monitor/proc-stdin.h"
#include "monitor/procs.h"
#include "monitor/reply.h"
#include "monitor/routes.h"
#include "monitor/session.h"
#include "net/intercept.h"
#include "net/proxy.h"
#include "common/pidfile.h"
#include "records/store.h"
#include "vmm/channel.h"

/* TCG on a loaded 2-core host can take several seconds to boot.  */
#define BOOT_TIMEOUT_MS 60000
/* Time for the last replies to reach their clients before the monitor exits.  */
#define EXIT_FLUSH_MS 100

void
mon_set_str (struct mon *m, const char *key, const char *value)
{
  json_object_object_add (m->state, key, value ? json_object_new_string (value) : NULL);
}

void
mon_save_state (struct mon *m)
{
  rt_store_write_state (m->cfg->dir, m->state, NULL);
}

/* ---- stop --------------------------------------------------------------- */

static void
end_loop (evutil_socket_t fd, short what, void *arg)
{
  (void) fd, (void) what;
  event_base_loopbreak (arg);
}

void
mon_end_loop_soon (struct mon *m)
{
  struct timeval flush = { 0, EXIT_FLUSH_MS * 1000 };

  event_base_once (m->base, -1, EV_TIMEOUT, end_loop, m->base, &flush);
}

void
mon_stop (struct mon *m, const char *reason)
{
  /* A spare nobody claimed was never a sandbox of anyone's: its meter
     never ran, and it leaves no record.  */
  bool unclaimed = m->phase == MON_SPARE;
  char now[32];

  if (mon_stopping (m) || !mon_enter (m, MON_STOPPING))
    return;
  mon_save_state (m);
  if (m->ev_qemu)
    event_del (m->ev_qemu);
  /* The last of the meter, before QEMU and its threads go.  */
  if (!unclaimed)
    rt_meter_stop (&m->meter);
  /* The root disk is a throwaway overlay: SIGKILL is safe and fastest.  */
  rt_vm_kill (&m->vm);
  mon_forget_layers (m);
  if (m->ram_fd >= 0)
    close (m->ram_fd);
  m->ram_fd = -1;
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
  mon_chan_close (m);
  mon_exec_fail_all (m, "sandbox_not_ready", "the sandbox stopped");
  rt_format_time (rt_epoch_ms (), now);
  mon_enter (m, MON_STOPPED);
  mon_set_str (m, "stopReason", reason);
  mon_set_str (m, "endedAt", now);
  if (!unclaimed)
    {
      rt_meter_record (&m->meter);
      rt_store_write_record (m->ctx, m->state, NULL);
    }
  mon_save_state (m);
  mon_end_loop_soon (m);
}

static void
on_qemu_exit (evutil_socket_t fd, short what, void *arg)
{
  (void) fd, (void) what;
  mon_stop (arg, "host_stopped");
}

/* An ephemeral sandbox's creator is gone (even by kill -9): nobody will
   use the sandbox again.  */
static void
on_owner_exit (evutil_socket_t fd, short what, void *arg)
{
  (void) fd, (void) what;
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
  (void) fd, (void) what;
  mon_stop (arg, "host_stopped");
}

/* ---- start-up ----------------------------------------------------------- */

static void
report (int sync_fd, const rt_error *err)
{
  if (err == NULL)
    rt_write_all (sync_fd, "OK\n", 3);
  else
    {
      json_object *o = mon_error_object (err->code, err->msg, err->hint);
      const char *s = json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN);
      rt_write_all (sync_fd, s, strlen (s));
      json_object_put (o);
    }
  close (sync_fd);
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
  rt_console_drain (&m->console);
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

/* A boot: the guest's RAM a new memfd, QEMU maps it shared so that the
   sandbox can be saved (snapshot/saved.h).  */
static int
boot_cold (struct mon *m, struct rt_vm_config *vm, rt_error **err)
{
  m->ram_fd = memfd_create ("runtime-ram", MFD_CLOEXEC);
  if (m->ram_fd < 0 || ftruncate (m->ram_fd, (off_t) vm->memory_mib << 20) < 0)
    return rt_error_set (err, errno, "startup_failed", "cannot make the guest's memory: %s", strerror (errno));
  vm->ram_fd = m->ram_fd;
  return rt_vm_start (m->ctx, vm, &m->vm, err);
}

/* The network namespace, then QEMU in it with the tap.  */
static int
start_vm (struct mon *m, rt_error **err)
{
  struct rt_vm_config vm = m->cfg->vm;
  cleanup_free char *cmdline = NULL;
  int ret, console_end = -1;

  ret = rt_netns_create (&m->net, &m->cfg->net, err);
  if (ret == 0)
    ret = rt_console_open (&m->console, m->cfg->dir, &console_end, err);
  if (ret < 0)
    return ret;
  cmdline = rt_strdup_printf ("%s%srt.net=" RT_NET_GUEST "," RT_NET_GATEWAY, vm.cmdline ? vm.cmdline : "",
                              vm.cmdline ? " " : "");
  if (cmdline == NULL)
    return rt_error_oom (err);
  vm.cmdline = cmdline;
  m->overlay_path = rt_strdup_printf ("%s/overlay.qcow2", vm.disk_dir ? vm.disk_dir : vm.dir);
  if (m->overlay_path == NULL)
    return rt_error_oom (err);
  vm.tap_fd = m->net.tap_fd;
  vm.netns_fd = m->net.ns_fd;
  vm.console_fd = console_end;
  vm.trial = m->cfg->net.trial;
  /* A snapshot's child or a woken sandbox starts from its saved VM or
     not at all.  */
  if (m->cfg->saved)
    {
      ret = mon_clone_start (m, &vm, true, err);
      m->clone = ret == 0;
      if (ret < 0)
        {
          close (console_end);
          return ret;
        }
    }
  else if (m->cfg->tmpl)
    {
      ret = mon_clone_start (m, &vm, !m->cfg->spare, err);
      m->clone = ret == 0;
      /* A template that cannot be used is a slower start, not a failed
         one: the reason lands in monitor.log.  A spare is a clone or
         nothing.  */
      if (ret < 0 && m->cfg->spare)
        {
          close (console_end);
          return ret;
        }
      if (ret < 0)
        {
          cleanup_free char *why = rt_text_escape ((*err)->msg, false);
          fprintf (stderr, "cannot start from template %s, booting cold: %s\n", m->cfg->tmpl->key,
                   why ? why : "?");
          rt_error_free (*err);
          *err = NULL;
        }
    }
  ret = m->clone ? 0 : boot_cold (m, &vm, err);
  close (console_end);
  if (ret < 0)
    return ret;
  /* QEMU holds the tap now: when it dies, the tap goes.  */
  close (m->net.tap_fd);
  m->net.tap_fd = -1;
  return 0;
}

/* "jail" in the state object: QEMU's uid, the jail's setup time and the
   limits this host could not set (vmm/cgroup.h); {"enabled": false,
   "setupUs"} (fork to exec, the baseline of tests/bench/cold-run) under
   RUNTIME_UNSAFE_NO_JAIL.  */
static void
set_jail_state (struct mon *m)
{
  json_object *j = json_object_new_object ();
  const char *missing = m->vm.cgroup.missing;

  json_object_object_add (j, "enabled", json_object_new_boolean (m->vm.jailed));
  json_object_object_add (j, "setupUs", json_object_new_int64 ((int64_t) m->vm.jail_setup_us));
  if (m->vm.jailed)
    {
      json_object_object_add (j, "uid", json_object_new_int64 (m->vm.lease.uid));
      json_object_object_add (j, "missingLimits", missing ? json_object_new_string (missing) : NULL);
    }
  json_object_object_add (m->state, "jail", j);
}

/* Waits for the agent to answer, greets it, and hands the channel to the
   event loop.  */
static int
connect_agent (struct mon *m, rt_error **err)
{
  struct rt_channel ch;
  int ret;

  /* A spare's guest is paused: it is made unique when claimed
     (spare.c).  */
  if (m->cfg->spare)
    ret = rt_channel_attach (&ch, m->vm.agent_sock, m->vm.pidfd, BOOT_TIMEOUT_MS, err);
  else if (m->clone)
    ret = mon_clone_restore (m, &ch, err);
  else
    ret = rt_channel_connect (&ch, m->vm.agent_sock, m->vm.pidfd, &m->console, BOOT_TIMEOUT_MS, err);

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
  mon_chan_take (m, &ch);
  return 0;
}

/* The event loop, api.sock on it, and the egress proxy.  */
static int
serve_api (struct mon *m, rt_error **err)
{
  int api_fd = rt_listen_unix (m->api_sock, SOCK_NONBLOCK, err);

  if (api_fd < 0)
    return api_fd;
  m->base = event_base_new ();
  m->http = m->base ? evhttp_new (m->base) : NULL;
  if (m->http == NULL)
    return rt_error_set (err, ENOMEM, "startup_failed", "cannot set up the event loop");
  evhttp_set_max_body_size (m->http, MAX_BODY);
  evhttp_set_max_headers_size (m->http, MAX_HEADERS);
  evhttp_set_allowed_methods (m->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT);
  evhttp_set_gencb (m->http, mon_handle_request, m);
  if (evhttp_accept_socket (m->http, api_fd) < 0)
    return rt_error_set (err, EIO, "startup_failed", "cannot serve '%s'", m->api_sock);
  if (mon_session_listen (m, err) < 0)
    return -1;
  m->trial = m->cfg->net.trial;
  m->proxy = rt_proxy_new (m->base, &m->net, &m->cfg->net, m->cfg->egress_log, m->resolve,
                           m->intercept, err);
  return m->proxy ? 0 : -1;
}

static void
on_console (evutil_socket_t fd, short what, void *arg)
{
  struct mon *m = arg;
  (void) fd, (void) what;
  if (rt_console_drain (&m->console) != 0)
    event_del (m->ev_console);
}

int
mon_watch_owner (struct mon *m, pid_t owner, rt_error **err)
{
  m->owner_pidfd = pidfd_open (owner, 0);
  if (m->owner_pidfd < 0)
    return rt_error_set (err, errno, "startup_failed", "pidfd_open: %s", strerror (errno));
  m->ev_owner = event_new (m->base, m->owner_pidfd, EV_READ, on_owner_exit, m);
  if (m->ev_owner == NULL || event_add (m->ev_owner, NULL) < 0)
    return rt_error_set (err, ENOMEM, "startup_failed", "cannot set up the event loop");
  return 0;
}

/* The channel, the console, QEMU's exit, the lease, SIGTERM, the owner and
   the claim.  */
static int
watch_events (struct mon *m, rt_error **err)
{
  m->ev_console = event_new (m->base, m->console.sock, EV_READ | EV_PERSIST, on_console, m);
  if (m->ev_console == NULL || event_add (m->ev_console, NULL) < 0)
    return rt_error_set (err, ENOMEM, "startup_failed", "cannot set up the event loop");
  if (mon_chan_watch (m, err) < 0)
    return -1;
  m->ev_qemu = event_new (m->base, m->vm.pidfd, EV_READ, on_qemu_exit, m);
  m->ev_lease = evtimer_new (m->base, mon_on_lease, m);
  m->ev_term = evsignal_new (m->base, SIGTERM, on_term, m);
  if (!m->ev_qemu || !m->ev_lease || !m->ev_term)
    return rt_error_set (err, ENOMEM, "startup_failed", "cannot set up the event loop");
  /* Opened before readiness is reported, so the owner is still there:
     a pidfd cannot name a recycled pid.  */
  if (m->cfg->owner > 0 && mon_watch_owner (m, m->cfg->owner, err) < 0)
    return -1;
  m->ev_claim = event_new (m->base, m->claim_fd, EV_READ, on_claim, m);
  if (m->ev_claim == NULL)
    return rt_error_set (err, ENOMEM, "startup_failed", "cannot set up the event loop");
  event_add (m->ev_claim, NULL);
  /* A spare's channel is read once it is claimed and restored.  */
  if (!m->cfg->spare)
    mon_chan_read_start (m);
  event_add (m->ev_qemu, NULL);
  event_add (m->ev_term, NULL);
  /* A woken or forked sandbox's processes may hold stdin for the guest.  */
  mon_procs_stdin_pump (m);
  return 0;
}

static void
on_record (void *arg)
{
  mon_save_state (arg);
}

/* The meter starts with the VM answering: boot time is the host's.  */
int
mon_start_meter (struct mon *m, rt_error **err)
{
  struct rt_meter *mt = &m->meter;
  int ret;

  mt->vcpu = m->cfg->vm.vcpu;
  mt->memory_mib = m->cfg->vm.memory_mib;
  mt->trial = m->trial;
  mt->state = m->state;
  mt->on_record = on_record;
  mt->arg = m;
  ret = rt_rates_load (m->ctx, &mt->rates, err);
  if (ret == 0)
    ret = rt_ledger_open (m->ctx, &mt->ledger_fd, err);
  if (ret == 0)
    ret = rt_meter_start (mt, m->base, m->vm.pid, err);
  return ret;
}

/* How the sandbox started ("cold" or "template", with the template's
   key) and how long from the create call to running.  */
static void
set_start_state (struct mon *m)
{
  int64_t ready = m->cfg->start_ms > 0 ? rt_epoch_ms () - m->cfg->start_ms : 0;

  const char *snap = m->cfg->saved ? rt_json_str (m->cfg->saved->meta, "id") : NULL;

  mon_set_str (m, "start", snap ? "snapshot" : m->clone ? "template" : "cold");
  mon_set_str (m, "template", m->clone && !snap ? m->cfg->tmpl->key : NULL);
  mon_set_str (m, "snapshot", snap);
  json_object_object_add (m->state, "readyMs", json_object_new_int64 (ready > 0 ? ready : 0));
}

static int
monitor_start (struct mon *m, rt_error **err)
{
  cleanup_free char *pidfile = rt_strdup_printf ("%s/monitor.pid", m->cfg->dir);
  cleanup_free char *qemufile = rt_strdup_printf ("%s/qemu.pid", m->cfg->dir);
  int ret;

  m->api_sock = rt_strdup_printf ("%s/api.sock", m->cfg->dir);
  m->qmp_sock = rt_strdup_printf ("%s/qmp.sock", m->cfg->dir);
  if (pidfile == NULL || qemufile == NULL || m->api_sock == NULL || m->qmp_sock == NULL)
    return rt_error_oom (err);
  ret = rt_write_pidfile (pidfile, getpid (), err);
  /* Its processes first: the RESTORE keeps the ones the monitor follows.  */
  if (ret == 0 && m->cfg->saved)
    ret = mon_procs_load (m, mon_saved_member (m, "procs"), m->cfg->restore != RT_RESTORE_WAKE, err);
  if (ret == 0)
    ret = start_vm (m, err);
  if (ret < 0)
    return ret;
  rt_write_pidfile (qemufile, m->vm.pid, NULL);
  set_jail_state (m);
  /* Everything that needed more than the kept set is made, and what
     will need it at the end is forked (QEMU's ender); the guest's first
     bytes (the channel, the console) are read only after this.  */
  ret = rt_vm_end_arm (&m->vm, err);
  if (ret == 0)
    ret = rt_drop_privileges (RT_MONITOR_KEPT_CAPS, err);
  if (ret == 0)
    ret = connect_agent (m, err);
  if (ret == 0)
    ret = serve_api (m, err);
  if (ret == 0)
    ret = watch_events (m, err);
  if (ret < 0)
    return ret;
  /* What a woken sandbox's processes are owed goes out now.  */
  mon_chan_quiet_end (m);
  /* An ephemeral sandbox is bounded by its creator's life and its
     command's timeout: a lease would only freeze a long command.  */
  if (m->cfg->spare)
    {
      mon_enter (m, MON_SPARE);
      set_start_state (m);
      return rt_store_write_state (m->cfg->dir, m->state, err);
    }
  if (m->cfg->expires_ms > 0)
    mon_set_expires (m, m->cfg->expires_ms);
  ret = mon_start_meter (m, err);
  if (ret < 0)
    return ret;
  mon_enter (m, MON_RUNNING);
  if (m->cfg->saved && m->cfg->restore == RT_RESTORE_WAKE)
    mon_clone_woken (m);
  else
    set_start_state (m);
  mon_idle_start (m);
  rt_meter_record (&m->meter);
  return rt_store_write_state (m->cfg->dir, m->state, err);
}

/* Wipes the block exec left for the environment ([env_start, env_end),
   fields 50 and 51 of /proc/self/stat): /proc/PID/environ shows it,
   whatever environ points at now.  Strings a program put elsewhere
   (setenv, putenv) are only dropped by clearenv.  */
static void
wipe_exec_env (void)
{
  char buf[2048];
  unsigned long start = 0, end = 0;
  int fd = open ("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read (fd, buf, sizeof buf - 1);
  char *p;

  if (fd >= 0)
    close (fd);
  if (n <= 0)
    return;
  buf[n] = '\0';
  /* Field 2 (the name) may hold spaces: count from its closing ')'.  */
  p = strrchr (buf, ')');
  for (int field = 2; p && field < 50; field++)
    p = strchr (p + 1, ' ');
  if (p == NULL || sscanf (p, " %lu %lu", &start, &end) != 2 || start == 0 || end <= start)
    return;
  explicit_bzero ((void *) start, end - start);
}

/* The monitor outlives its caller and holds the sandbox's secrets: it
   keeps nothing of the caller's it does not need.  Not dumpable, so
   /proc/PID/{environ,mem,fd} are root's and no other process of the
   same user may ptrace it; "/" as its cwd; an environment of PATH and the
   CA paths OpenSSL reads for the egress proxy (intercept.c), nothing else
   (no DEEPSEEK_API_KEY of the caller's reaches it or QEMU), the caller's
   strings wiped, not only dropped.  Returns
   RUNTIME_RESOLVE, read first (NULL when unset).  */
static char *
clean_process (void)
{
  static const char *const keep[] = { "SSL_CERT_FILE", "SSL_CERT_DIR" };
  char *kept[2] = { NULL, NULL };
  const char *v = getenv ("RUNTIME_RESOLVE");
  char *resolve = v ? strdup (v) : NULL;

  prctl (PR_SET_DUMPABLE, 0);
  if (chdir ("/") < 0)
    _exit (1);
  for (size_t i = 0; i < 2; i++)
    kept[i] = (v = getenv (keep[i])) ? strdup (v) : NULL;
  wipe_exec_env ();
  clearenv ();
  setenv ("PATH", RT_CLEAN_PATH, 1);
  for (size_t i = 0; i < 2; i++)
    {
      if (kept[i])
        setenv (keep[i], kept[i], 1);
      free (kept[i]);
    }
  return resolve;
}

/* A start that failed: nothing of it is left before the caller hears of
   it.  A sandbox that could not wake stays paused as it was, unless its
   guest ran (and wrote its disk under the saved memory): then it ends,
   with a record.  With --no-wait nobody waits for the error: the record
   carries it.  */
static void
startup_failed (struct mon *m, const rt_error *err)
{
  const struct rt_monitor_config *cfg = m->cfg;
  bool waking = cfg->saved && cfg->restore == RT_RESTORE_WAKE;
  char now[32];

  if (waking && !m->ran)
    {
      m->vm.keep_disk = true;
      rt_vm_kill (&m->vm);
      rt_netns_close (&m->net);
      mon_enter (m, MON_PAUSED);
      mon_save_state (m);
      return;
    }
  if (cfg->no_wait || waking)
    {
      rt_format_time (rt_epoch_ms (), now);
      mon_enter (m, MON_STOPPED);
      mon_set_str (m, "stopReason", "startup_failed");
      mon_set_str (m, "endedAt", now);
      json_object_object_del (m->state, "paused");
      json_object_object_add (m->state, "error", mon_error_object (err->code, err->msg, err->hint));
      rt_store_write_record (m->ctx, m->state, NULL);
    }
  rt_vm_kill (&m->vm);
  rt_rm_rf (cfg->dir, NULL);
}

static void __attribute__ ((noreturn))
monitor_main (rt_context *ctx, const struct rt_monitor_config *cfg, int sync_fd, int claim_fd)
{
  struct mon m = { .ctx = ctx, .cfg = cfg, .phase = MON_STARTING, .chan = MON_CHAN_INIT, .spare = MON_SPARE_INIT,
                   .next_stream = 1, .next_proc = 1, .owner_pidfd = -1, .claim_fd = 4, .ram_fd = -1,
                   .layer_fds = { -1, -1, -1, -1, -1, -1, -1, -1 },
                   .net = { -1, -1, -1, -1, -1, -1 }, .meter = { .ledger_fd = -1 },
                   .console = { .sock = -1, .log_fd = -1 } };
  cleanup_free char *log = rt_strdup_printf ("%s/monitor.log", cfg->dir);
  rt_error *err = NULL;
  sigset_t none;
  int fd;

  /* Nothing of the caller's may leak into a process that lives on: its
     terminal, its pipes, its signal mask.  */
  m.resolve = clean_process ();
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
  /* Its secrets are its tenant's, whoever started the monitor (a wake).  */
  rt_tenant_adopt (ctx, cfg->state);
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
      startup_failed (&m, err);
      if (!cfg->no_wait)
        report (sync_fd, err);
      rt_error_free (err);
      _exit (1);
    }
  if (!cfg->no_wait)
    report (sync_fd, NULL);
  event_base_dispatch (m.base);
  /* Paused to disk: the state dir, the disk and the saved VM are the
     sandbox now (rt_sandbox_wake).  */
  if (m.paused_to_disk)
    _exit (0);
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

  /* On the creator's stderr: the monitor's own goes to monitor.log.  */
  if (ctx->unsafe_no_jail)
    rt_progress (ctx, "warning: QEMU runs without its jail (RUNTIME_UNSAFE_NO_JAIL=1): test use only");
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
