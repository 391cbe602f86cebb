/* runtime/sandbox.h - one sandbox: its configuration, create and open, its
 * lifecycle (stop, pause, wake, lease, remove), network rules, record and
 * metrics, and its snapshot, fork and update.
 *
 * A part of <runtime.h>, which callers include (not this file) and whose
 * top comment tells the conventions: errors, handles, who frees what.  It
 * includes the parts it needs, so it also compiles alone.
 */
#ifndef RUNTIME_SANDBOX_H
#define RUNTIME_SANDBOX_H

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * rt_sandbox_config - how to make a sandbox; all-zero means the defaults
 * @vcpu:          virtual CPUs (default 2, 1–16)
 * @memory_mib:    guest memory (default 4096, 256–65536)
 * @disk_mib:      disk size (default 4096)
 * @image:         image reference (default "runtime")
 * @name:          a name unique among live sandboxes, or NULL
 * @labels:        NULL-terminated "key=value" strings (at most 32), or NULL
 * @env:           NULL-terminated "K=V" strings given to every command (at
 *                 most 32 / 32 KiB; names [A-Za-z_][A-Za-z0-9_]*); only their
 *                 names are ever shown again
 * @timeout_s:     the lease: seconds until @on_timeout happens (default
 *                 1800, 60–3600)
 * @on_timeout:    "pause" (default) or "stop"
 * @get_or_create: with @name: when a live sandbox has that name, open it
 *                 instead of failing with name_taken
 * @ephemeral:     stop the sandbox when the process that created it exits,
 *                 however it exits (a sandbox for one run)
 * @no_wait:       return as soon as the monitor runs, while the VM boots
 *                 (state "starting"; a failed boot ends as stopReason
 *                 "startup_failed"; commands get sandbox_not_ready until
 *                 it is running)
 * @no_internet:   refuse every connection out of the sandbox
 * @allow:         NULL-terminated destinations the sandbox may reach (host
 *                 names, "*.domain" for its subdomains, IP addresses,
 *                 CIDRs); NULL or empty: the public internet
 * @deny:          NULL-terminated destinations refused even when allowed
 * @funding:       "trial" (the 50 free hours: at most 2 vCPU, 4096 MiB, 8
 *                 running, ports 80 and 443 only; never falls back to
 *                 paid), "paid", or NULL: trial while hours remain
 * @max_cost_micros: > 0: refuse ("invalid_request") a paid sandbox whose
 *                 first lease with every vCPU busy could cost more
 */
typedef struct rt_sandbox_config
{
  unsigned vcpu;
  unsigned memory_mib;
  unsigned disk_mib;
  const char *image;
  const char *name;
  const char *const *labels;
  const char *const *env;
  unsigned timeout_s;
  const char *on_timeout;
  bool get_or_create;
  bool ephemeral;
  bool no_wait;
  bool no_internet;
  const char *const *allow;
  const char *const *deny;
  const char *funding;
  int64_t max_cost_micros;
  bool cold;             /* boot, even when a template fits */
  const char *snapshot;  /* continue from this snapshot (id or name): its
                            image and shape; vcpu/memory_mib/disk_mib/image
                            must be 0/NULL or the snapshot's own */
  unsigned idle_pause_s; /* > 0: pause to disk after this many seconds
                            without a command, copy, process output or API
                            call and under 2 % CPU */
  bool auto_wake;        /* a command, copy or listing of a paused sandbox
                            wakes it first */
} rt_sandbox_config;

typedef struct rt_sandbox rt_sandbox;

/**
 * rt_sandbox_config_check - whether rt_sandbox_create takes a configuration
 * (since LIBRUNTIME_0.2)
 * @cfg:   the configuration (NULL: the defaults, which it takes)
 * @field: if not NULL, set to the name of the first wrong field of
 *         rt_sandbox_config ("vcpu", "memory_mib", "name", "labels", …),
 *         or to NULL when none is
 * @err:   "invalid_request", "invalid_env" or "env_too_large" (env),
 *         "usage" (get_or_create without a name); the message starts with
 *         the field's name, so a caller that names fields otherwise (a
 *         command line's flags, an API's keys) can say it in its terms
 *
 * Checks each field on its own: sizes within the RT_MIN_ and RT_MAX_
 * limits, a name of 1 to RT_MAX_NAME bytes without a space, a control
 * character or '/', labels "key=value" with distinct keys, env "K=V" with
 * portable names.  What needs the machine (the image, the snapshot, the
 * funding left, the network's entries) is checked by rt_sandbox_create.
 * rt_sandbox_create makes this check first.
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_config_check (const rt_sandbox_config *cfg, const char **field, rt_error **err);

/**
 * rt_sandbox_create - boot a sandbox and wait until its agent answers
 * @ctx: the context
 * @cfg: configuration, or NULL for the defaults
 * @out: a handle to the running sandbox (free with rt_sandbox_close)
 * @err: set on failure ("startup_failed" carries the console's last lines,
 *       "name_taken", "invalid_request", "invalid_env", "image_not_found")
 *
 * The sandbox is owned by its own monitor process and outlives the caller
 * until it is stopped or its lease ends.  It starts from a template of
 * its image and shape when one exists (rt_image_warm; unless cfg->cold),
 * or claims a warm spare of exactly that shape (rt_pool_set; never for a
 * sandbox with secrets or cfg->get_or_create), whose id it keeps.  On
 * failure nothing is left behind: no QEMU, no monitor, no state directory.
 * @cfg is checked first by rt_sandbox_config_check (which, since
 * LIBRUNTIME_0.2, also refuses a name with a space, a control character
 * or '/' and a label key given twice).
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_create (rt_context *ctx, const rt_sandbox_config *cfg, rt_sandbox **out, rt_error **err);

/**
 * rt_sandbox_set_network - replace a sandbox's egress rules, live
 * @sb:       the sandbox
 * @internet: false refuses every connection
 * @allow:    NULL-terminated destinations (see rt_sandbox_config), or NULL
 *            for the public internet
 * @deny:     NULL-terminated destinations refused even when allowed, or NULL
 * @json:     if not NULL, the new rules {internet, allow, deny, closed} as
 *            JSON (free()), closed counting the open connections cut
 * @err:      set on failure ("invalid_request" for a bad entry)
 *
 * The whole rule set is replaced; every open connection the new rules
 * refuse is closed before this returns.
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_set_network (rt_sandbox *sb, bool internet, const char *const *allow, const char *const *deny,
                            char **json, rt_error **err);

/**
 * rt_sandbox_egress_log - where a sandbox's egress log is
 * @ctx:  the context
 * @ref:  id or name of a live or ended sandbox
 * @path: the log's path (free()); one JSON object per line: time, kind
 *        (dns, connect, http, tcp), name, address, port, decision
 *        (allowed, refused, cut), reason, bytesOut, bytesIn
 * @err:  set on failure ("not_found")
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_egress_log (rt_context *ctx, const char *ref, char **path, rt_error **err);

/**
 * rt_sandbox_open - a handle to a live sandbox
 * @ctx: the context
 * @ref: its id, or its name when exactly one live sandbox has it
 * @out: the handle (free with rt_sandbox_close)
 * @err: "not_found"; "sandbox_stopped" when it has stopped (was
 *       "sandbox_not_ready" before LIBRUNTIME_0.2)
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_open (rt_context *ctx, const char *ref, rt_sandbox **out, rt_error **err);

/**
 * rt_sandbox_close - free a handle; the sandbox keeps running
 * @sb: the handle, or NULL (nothing happens)
 */
void rt_sandbox_close (rt_sandbox *sb);

/**
 * rt_sandbox_id - the sandbox's id
 * @sb: the sandbox
 * Return: "sb-…", owned by @sb (valid until rt_sandbox_close).
 */
const char *rt_sandbox_id (rt_sandbox *sb);

/**
 * rt_sandbox_stop - stop the sandbox: its VM ends, its record stays
 * @sb:  the sandbox (the handle stays valid)
 * @err: "cleanup_failed" when the monitor did not confirm within 30 s
 * Stopping a sandbox that already stopped is not an error.
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_stop (rt_sandbox *sb, rt_error **err);

/**
 * rt_sandbox_destroy - stop the sandbox and free the handle (also on error)
 * @sb:  the sandbox, or NULL (nothing happens, 0)
 * @err: as for rt_sandbox_stop
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_destroy (rt_sandbox *sb, rt_error **err);

/**
 * rt_sandbox_pause - save the sandbox to disk and end its VM (state
 * paused): memory, device state and disk go under the data dir, QEMU and
 * the monitor exit, no host memory or CPU is used and nothing is billed
 * @sb:  the sandbox
 * @err: "sandbox_not_ready" (it is stopping or not running), "busy" (a
 *       command is running: it would be cut)
 * Pausing a paused sandbox is not an error.
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_pause (rt_sandbox *sb, rt_error **err);

/**
 * rt_sandbox_wake - restore a paused sandbox: the same processes, files
 * and guest state; connections to the outside are reset, as after a
 * network cut; a lease that ended restarts
 * @sb:  the sandbox
 * @err: set on failure ("trial_exhausted" when a trial sandbox has no
 *       hours left); the sandbox stays paused
 * Waking a running sandbox is not an error.
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_wake (rt_sandbox *sb, rt_error **err);

/**
 * rt_sandbox_snapshot - save a running or paused sandbox as a snapshot
 * (memory, processes and disk) that new sandboxes continue from
 * (rt_sandbox_config.snapshot); a running sandbox is paused for the
 * capture and resumed
 * @sb:     the sandbox
 * @name:   a name unique among snapshots, or NULL
 * @labels: NULL-terminated "key=value" strings, or NULL
 * @json:   set to the snapshot object (see rt_snapshot_get_json; free it)
 * @err:    "sandbox_not_ready", "name_taken", "invalid_request"
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_snapshot (rt_sandbox *sb, const char *name, const char *const *labels, char **json, rt_error **err);

/**
 * rt_sandbox_fork - @count new sandboxes, each continuing the source's
 * processes with its own copy of memory and disk, made unique (ids,
 * hostname, random state); the source runs on after a short pause
 * @sb:     the source sandbox (running)
 * @count:  1 to RT_MAX_FORK
 * @name:   the children's name (with -1, -2… when @count > 1), or NULL
 * @labels: NULL-terminated "key=value" strings, or NULL
 * @ids:    set to the children's ids, NULL-terminated (free each, then it)
 * @err:    as rt_sandbox_snapshot and rt_sandbox_create; on failure no
 *          child is left
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_fork (rt_sandbox *sb, unsigned count, const char *name, const char *const *labels, char ***ids,
                     rt_error **err);
#define RT_MAX_FORK 16

/**
 * rt_sandbox_update - change a sandbox's idle pause and auto-wake
 * @sb:           the sandbox (running or paused)
 * @idle_pause_s: seconds (0 turns it off), or -1 to keep it
 * @auto_wake:    1 on, 0 off, -1 to keep it
 * @json:         set to its rt_sandbox_get_json object (free it), or NULL
 * @err:          "invalid_request", "sandbox_not_ready"
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_update (rt_sandbox *sb, int idle_pause_s, int auto_wake, char **json, rt_error **err);

/**
 * rt_sandbox_extend - move the lease's end
 * @sb:         the sandbox
 * @seconds:    added to the current end, which may be at most 1 h from now
 *              ("invalid_request" otherwise)
 * @expires_at: set to the new end, RFC 3339 UTC (free it)
 * @err:        "invalid_request" (past the hour)
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_extend (rt_sandbox *sb, unsigned seconds, char **expires_at, rt_error **err);

/**
 * rt_sandbox_remove - stop a sandbox if it runs and forget its record
 * @ctx: the context
 * @ref: its id or name
 * @err: as for rt_sandbox_stop
 * Idempotent for a sandbox that was: one removed already (its id is in
 * the ledger) is not an error; one that never was is "not_found".
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_remove (rt_context *ctx, const char *ref, rt_error **err);

/**
 * rt_sandbox_get_json - a sandbox as a JSON object (live or ended):
 * {id, kind, name, labels, state, funding, vcpu, memoryMiB, diskMiB, image,
 *  timeoutSeconds, onLeaseEnd, createdAt, expiresAt, endedAt, stopReason,
 *  network, envNames, cpuSeconds, runningSeconds, chargedMicros, jail,
 *  start ("cold", "template", "spare" or "snapshot"), template (its key, or
 *  null), snapshot (its id, or null), readyMs (the create call to running,
 *  as the monitor measured it), idlePauseSeconds, autoWake, tenant (the
 *  token that made it: only when one did), and while paused pausedAt and
 *  paused {path, storedBytes}}
 * @ctx:  the context (a tenant's sees only its own: rt_context_set_tenant)
 * @ref:  its id or name
 * @json: set to the text (free it)
 * @err:  "not_found"
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_get_json (rt_context *ctx, const char *ref, char **json, rt_error **err);

/**
 * rt_sandbox_list_json - every live sandbox (and ended ones with @all) as a
 * JSON array of rt_sandbox_get_json objects, oldest first
 * @ctx:  the context
 * @all:  include the ended sandboxes whose records remain
 * @json: set to the text (free it); "[]" when there are none
 * @err:  set on failure
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_list_json (rt_context *ctx, bool all, char **json, rt_error **err);

/**
 * enum rt_sandbox_state - where a sandbox is in its life: the "state" of
 * its rt_sandbox_get_json object, by value (since LIBRUNTIME_0.2)
 * @RT_SANDBOX_STARTING: being made: its VM boots, or comes from a
 *                       template, a spare or a snapshot
 * @RT_SANDBOX_RUNNING:  up: commands, copies and sessions work
 * @RT_SANDBOX_PAUSING:  being saved to disk (rt_sandbox_pause, an idle
 *                       pause)
 * @RT_SANDBOX_PAUSED:   saved to disk with no VM (rt_sandbox_wake
 *                       restores it)
 * @RT_SANDBOX_RESUMING: being restored from disk
 * @RT_SANDBOX_STOPPING: its VM ends
 * @RT_SANDBOX_STOPPED:  ended; its record stays until rt_sandbox_remove
 *
 * The values are fixed; a later version may add states after these.
 */
enum rt_sandbox_state
{
  RT_SANDBOX_STARTING,
  RT_SANDBOX_RUNNING,
  RT_SANDBOX_PAUSING,
  RT_SANDBOX_PAUSED,
  RT_SANDBOX_RESUMING,
  RT_SANDBOX_STOPPING,
  RT_SANDBOX_STOPPED,
};

/**
 * rt_sandbox_state - the state of the sandbox a handle names (live or
 * ended), without parsing JSON (since LIBRUNTIME_0.2)
 * @sb:    the sandbox
 * @state: set to its state
 * @err:   "not_found" (its record was removed), "internal" (a state this
 *         library has no value for, as a newer server may report), or as
 *         for rt_sandbox_get_json
 *
 * Reads what rt_sandbox_get_json reads, on this machine or in client mode
 * from the server, so it answers whether or not the sandbox's monitor
 * runs.
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_state (rt_sandbox *sb, enum rt_sandbox_state *state, rt_error **err);

/**
 * rt_sandbox_state_name - a state's name, as the "state" of
 * rt_sandbox_get_json spells it (since LIBRUNTIME_0.2)
 * @state: the state
 * Return: "starting", "running", "pausing", "paused", "resuming",
 * "stopping" or "stopped" (static, not to be freed); NULL for a value
 * that is none of enum rt_sandbox_state.
 */
const char *rt_sandbox_state_name (enum rt_sandbox_state state);

/**
 * rt_sandbox_state_parse - the state a name stands for (since
 * LIBRUNTIME_0.2)
 * @name:  a name as rt_sandbox_state_name gives it, matched exactly; NULL
 *         is no name
 * @state: set to the state when @name is one; may be NULL to only check
 * Return: 0 (and *@state set) when @name is one of the seven names, else
 * -1 (*@state untouched).
 */
int rt_sandbox_state_parse (const char *name, enum rt_sandbox_state *state);

/**
 * rt_sandbox_metrics_json - a running sandbox now
 * @sb:   the sandbox
 * @json: {id, vcpu, cpuPercent (of all its vCPUs, over the last second),
 *        memoryMiB, guestMemoryTotalMiB, guestMemoryAvailableMiB (the guest's
 *        own figures, never billed), cpuSeconds, chargedMicros} (free())
 * @err:  set on failure
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_metrics_json (rt_sandbox *sb, char **json, rt_error **err);

#ifdef __cplusplus
}
#endif

#endif
