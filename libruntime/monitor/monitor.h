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
 *   POST  ":spawn"   as :exec, in the background → the process {process,
 *                    state, exitCode, command, droppedBytes}
 *   POST  ":ps"      → every process
 *   POST  ":logs"    {process, follow?} → NDJSON: {"type":"dropped",bytes}?,
 *                    its kept output, its exit line when it ended
 *   POST  ":kill"    {process, signal?} → the process
 *   POST  ":extend"  {seconds} → the state object
 *   POST  ":stop" | ":pause" | ":wake"   → the state object
 *   POST  ":reserve" | ":claim" | ":claimed"  a spare's (spare.h)
 * Errors: HTTP 4xx/5xx with {"error":{code,message,hint}}: 404 for another
 * path, 405 for another method on a known one, 409 sandbox_not_ready once
 * it stops (but :stop and the GETs), 400 for a body that is not an object.
 */
#ifndef RT_MONITOR_H
#define RT_MONITOR_H

#include "net/egress.h"
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
};

/* Starts the monitor (double fork, setsid) and waits until it reports the
   sandbox ready (0) or its startup error (<0, @err set).  */
int rt_monitor_spawn (rt_context *ctx, const struct rt_monitor_config *cfg, rt_error **err);

#endif
