/* monitor.h - the per-sandbox monitor process (conmon-style).
 *
 * It owns the QEMU process, the agent channel and the sandbox's state dir,
 * serves <dir>/api.sock (HTTP/1.1 + JSON, NDJSON for exec streams) to any
 * number of clients at once, enforces the lease, and when the VM ends for
 * any reason writes the sandbox's record and removes everything it made.
 *
 * API (all under /v1/sandboxes/{id}; the table is in routes.c):
 *   GET   ""         the state object (rt_sandbox_get_json's shape)
 *   GET   "/network" the egress rules {internet, allow, deny}
 *   PUT   "/network" replaces them, live → {internet, allow, deny, closed}
 *   GET   "/metrics" {id, state, vcpu, cpuPercent, memoryMiB,
 *                    runningSeconds, cpuSeconds, chargedMicros}
 *   POST  ":exec"    {argv, env?, cwd?, user?, timeoutMs?, stdin? (base64),
 *                    stdinPath?}
 *                    → 200 NDJSON: {"type":"start","execId"}, {"type":"stdout"|
 *                    "stderr","data":base64}…, then {"type":"exit",exitCode,
 *                    signal,timedOut,durationMs} or {"type":"error","error"}
 *   POST  ":signal"  {execId, signal} → the state object
 *   POST  ":spawn"   as :exec, in the background, keepStdin? and pty?
 *                    {cols, rows} too → the process {process, state,
 *                    exitCode, command, droppedBytes, pty, stdinOpen,
 *                    stdinOffset, …}
 *   POST  ":ps"      → every process
 *   POST  ":logs"    {process, follow?} → NDJSON: {"type":"dropped",bytes}?,
 *                    its kept output, its exit line when it ended
 *   POST  ":kill"    {process, signal?} → the process
 *   POST  ":write"   {process, data (base64), offset, eof?} → {process,
 *                    offset (the accepted end), stdinOpen} (proc-stdin.h)
 *   POST  ":resize"  {process, cols, rows} → {process, pty}
 *   POST  ":extend"  {seconds} → the state object
 *   POST  ":stop" | ":pause" | ":wake"   → the state object
 *   POST  ":reserve" | ":claim" | ":claimed"  a spare's (spare.h)
 *   POST  ":pause"   saves the sandbox under its disk dir and ends QEMU and
 *                    the monitor (state "paused"; rt_sandbox_wake starts a
 *                    new monitor from it)
 *   POST  ":snapshot" {id, name?, labels?} → the snapshot object: captured
 *                    into <data>/snapshots/<id> (snapshot/store.h), the
 *                    sandbox resumed
 *   POST  ":fork"    {id} → {snapshot: id}: the same capture, as
 *                    <data>/snapshots/.fork-<id>, for rt_sandbox_fork to
 *                    start the children from (a monitor cannot start VMs)
 *   POST  ":update"  {idlePauseSeconds?, autoWake?} → the state object
 * Errors: HTTP 4xx/5xx with {"error":{code,message,hint}}: 404 for another
 * path, 405 for another method on a known one, 409 sandbox_not_ready once
 * it stops (but :stop and the GETs), 400 for a body that is not an object.
 */
#ifndef RT_MONITOR_H
#define RT_MONITOR_H

#include "net/egress.h"
#include "snapshot/saved.h"
#include "template/template.h"
#include "vmm/vm.h"

struct rt_monitor_config
{
  const char *id;
  const char *dir;
  struct rt_vm_config vm;
  char **env;            /* image env + the sandbox's --env, for every exec */
  const char *workdir;
  json_object *state;    /* the initial state object */
  int64_t expires_ms;    /* lease end, epoch ms; 0: no lease */
  unsigned timeout_s;
  bool stop_on_timeout;
  pid_t owner;           /* stop when this process exits; 0 for none */
  bool no_wait;          /* report ready before the boot */
  struct rt_egress_rules net; /* the egress rules at start */
  const char *egress_log;     /* JSON lines, one per connection */
  char **secret_env;          /* NAME=placeholder of its secrets, or NULL */
  const struct rt_template *tmpl; /* start from this template (a clone), or
                                     NULL for a cold boot; a clone that
                                     cannot start boots cold instead */
  int64_t start_ms;           /* when the create call began, epoch ms:
                                 readyMs counts from it */
  bool spare;                 /* a spare of tmpl (monitor/spare.h): paused,
                                 unlisted, unbilled until claimed */
  /* Snapshots, fork, pause to disk (snapshot/saved.h).  */
  const struct rt_saved *saved; /* continue from this saved VM, or NULL */
  enum rt_restore_mode restore; /* with @saved: RT_RESTORE_CHILD (a
                                   snapshot's child) or RT_RESTORE_WAKE
                                   (this sandbox, paused: its processes,
                                   meter and settings are in saved's
                                   meta.json) */
  unsigned idle_pause_s;        /* > 0: pause to disk after this long idle */
  bool auto_wake;               /* shown in the state; the library acts on it */
};

/* Starts the monitor (double fork, setsid) and waits until it reports the
   sandbox ready (0) or its startup error (<0, @err set).  */
int rt_monitor_spawn (rt_context *ctx, const struct rt_monitor_config *cfg, rt_error **err);

#endif
