/* runtime.h - libruntime: throwaway QEMU microVM sandboxes for untrusted code.
 *
 * Every fallible function takes `rt_error **err` last and returns a negative
 * errno-style value with *err set on failure; success never touches *err.
 * Handles are opaque.  Nothing here keeps global state: a rt_context carries
 * the directories and options, and may be used from one thread at a time.
 * Out of memory is "internal" everywhere.  Functions taking a rt_sandbox
 * handle also fail with "sandbox_not_ready" when its monitor cannot be
 * reached (the sandbox stopped meanwhile).  Strings and JSON handed out
 * through char ** are the caller's to free().
 */
#ifndef RUNTIME_H
#define RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * rt_error - what went wrong
 * @status: errno-style cause (positive)
 * @code:   stable machine-readable code: "usage", "not_found",
 *          "startup_failed", "image_not_found", "internal", …
 * @msg:    one line for a person
 * @hint:   what to do about it, or NULL
 */
typedef struct rt_error
{
  int status;
  char *code;
  char *msg;
  char *hint;
} rt_error;

/**
 * rt_error_free - free an error and its strings
 * @err: the error, or NULL (nothing happens)
 */
void rt_error_free (rt_error *err);

/**
 * rt_version - the library's version
 * Return: a static string such as "0.1.0" (not to be freed).
 */
const char *rt_version (void);

/*
 * Limits the library checks.  A caller that checks its input early (the
 * CLI does, to report a typo before a VM boots) uses these, not copies.
 */
#define RT_MAX_VCPU 16                    /* rt_sandbox_config.vcpu: 1 to this */
#define RT_MIN_MEMORY_MIB 256             /* .memory_mib: from this ... */
#define RT_MAX_MEMORY_MIB 65536           /* ... to this */
#define RT_MIN_DISK_MIB 4096              /* .disk_mib: the image's file system, ... */
#define RT_MAX_DISK_MIB 65536             /* ... to this */
#define RT_MIN_LEASE_S 60                 /* .timeout_s: from this ... */
#define RT_MAX_LEASE_S 3600               /* ... to this; also the furthest rt_sandbox_extend moves an end */
#define RT_MAX_NAME 63                    /* .name: bytes */
#define RT_MAX_LABELS 32                  /* .labels: entries */
#define RT_MAX_ENV 32                     /* .env: variables */
#define RT_MAX_ENV_BYTES (32 * 1024)      /* .env: their bytes together */
#define RT_MAX_STDIN (1024 * 1024)        /* rt_exec_opts.stdin_len */
#define RT_MAX_EXEC_TIMEOUT_S (24 * 3600) /* the longest command timeout the CLI accepts */
#define RT_MAX_SECRET_NAME 64             /* rt_secret_set: @name, bytes */
#define RT_MAX_SECRET_VALUE 8192          /* rt_secret_set: @len */
#define RT_MAX_SECRET_HOSTS 16            /* rt_secret_set: @hosts, entries */
#define RT_MAX_SECRET_RULES 16            /* rt_secret_opts.rules, entries */

/**
 * rt_env_name_valid - is this a portable environment variable name
 * @s:   the name (need not be NUL-terminated)
 * @len: how many chars of @s are the name
 *
 * Names are [A-Za-z_][A-Za-z0-9_]*: what rt_sandbox_config.env,
 * rt_exec_opts.env, rt_build_opts.env and rt_secret_set accept.
 * Return: true when the @len chars of @s are one.
 */
bool rt_env_name_valid (const char *s, size_t len);

/**
 * rt_text_escape - text from a sandbox made safe to show on a terminal
 * @text:      the text (NULL is taken as "")
 * @multiline: keep newlines and tabs (a log, a hint); else they are
 *             escaped too, so one value stays on one line (a table cell)
 *
 * A guest controls file names, command lines and log lines: an escape
 * sequence in them would drive the user's terminal (retitle it, rewrite
 * what is on screen).  Control characters, C1 controls and bytes that are
 * not UTF-8 become \xHH; everything else, other UTF-8 included, is kept.
 * Return: a new string (free() it), or NULL when out of memory.
 */
char *rt_text_escape (const char *text, bool multiline);

typedef struct rt_context rt_context;

/**
 * rt_progress_fn - receives one line of progress ("Fetching the kernel…")
 * for slow first-use steps; NULL silences them.
 */
typedef void (*rt_progress_fn) (void *data, const char *line);

/**
 * rt_context_new - a context with directories from the environment
 * @out: the new context
 * @err: set on failure
 *
 * State: $RUNTIME_STATE_DIR, else /run/runtime (root) or
 * $XDG_RUNTIME_DIR/runtime.  Data: $RUNTIME_DATA_DIR, else /var/lib/runtime
 * (root) or $XDG_DATA_HOME/runtime.  Cache: $RUNTIME_CACHE_DIR, else
 * /var/cache/runtime (root) or $XDG_CACHE_HOME/runtime.  Also read:
 * RUNTIME_ACCEL (kvm|tcg), RUNTIME_KERNEL (a kernel .deb to use),
 * RUNTIME_QEMU (the qemu-system-x86_64 binary), RUNTIME_AGENT (the guest
 * agent binary).  Nothing is created on disk until it is needed.
 *
 * Client mode: with RUNTIME_API_URL set (and RUNTIME_API_KEY, its Bearer
 * token), the functions the CLI's sandbox, image, secrets, snapshot and
 * usage commands use ask that server (`runtime serve`, docs/API.md) and
 * answer as they do locally; those that need this machine (egress log,
 * image export, import and warm, pools, rt_chat, rt_run_python) fail with
 * "unsupported_remote".  A URL without a key fails at the first call
 * ("unauthorized"); plain http:// is accepted only for localhost,
 * 127.0.0.1, [::1] and runtime.internal.
 * Return: 0, or <0 with @err set ("internal": out of memory).
 */
int rt_context_new (rt_context **out, rt_error **err);

/**
 * rt_context_free - free a context; its sandboxes keep running
 * @ctx: the context, or NULL (nothing happens)
 */
void rt_context_free (rt_context *ctx);

/**
 * rt_context_set_progress - where first-use progress lines go
 * @ctx:  the context
 * @fn:   called with each line, or NULL for silence (the default)
 * @data: passed to @fn
 */
void rt_context_set_progress (rt_context *ctx, rt_progress_fn fn, void *data);

/**
 * rt_context_accel - the accelerator sandboxes use, "kvm" or "tcg"
 * @ctx: the context
 * @out: set to a static string
 * @err: set on failure
 *
 * RUNTIME_ACCEL wins; otherwise a probe boot decides (KVM only when a guest
 * really boots on it quickly) and the answer is cached.
 * Errors: "usage" (RUNTIME_ACCEL neither kvm nor tcg), "startup_failed"
 * (QEMU missing or not starting for the probe), "internal" (the kernel).
 * Return: 0, or <0 with @err set.
 */
int rt_context_accel (rt_context *ctx, const char **out, rt_error **err);

/**
 * rt_context_set_tenant - scope a context to one tenant (an API token)
 * @ctx:    the context
 * @tenant: a token's name, [a-z0-9][a-z0-9_-]{0,31}; NULL for the host's
 *          own view (the CLI without RUNTIME_API_URL), which sees and
 *          changes everything
 * @err:    "invalid_request" (a bad name)
 *
 * A tenant context sees only what it made: sandboxes it created (another
 * tenant's or an untenanted one answers "not_found", as a missing one),
 * their snapshots, images it built plus the base images (removing a base
 * image answers "permission_denied"), its own secrets (a store of its own:
 * <data>/tenants/<name>/secrets.json) and its usage.  Sandbox names are
 * unique per tenant (the host's untenanted sandboxes are one more
 * owner); in the host view a name means the host's own sandbox of that
 * name, else the one tenant's that has it, else it is ambiguous
 * ("invalid_request"); an id always works.  Pools and image warm are the
 * host's: "permission_denied" in a tenant context.
 * Return: 0, or <0 with @err set.
 */
int rt_context_set_tenant (rt_context *ctx, const char *tenant, rt_error **err);

/**
 * rt_token_limits - what one API token may hold at once; 0 is no limit
 * @max_sandboxes:   live sandboxes (running or paused)
 * @max_vcpu:        vCPUs summed over its live sandboxes
 * @max_cost_micros: microdollars charged to it in all
 * @rate:            requests per second; 0 is the default, 50/s with a
 *                   burst of 100 (RT_TOKEN_DEFAULT_RATE, _BURST)
 * @max_snapshots:   snapshots it keeps at once; 0 is the default, 32
 *                   (RT_TOKEN_DEFAULT_SNAPSHOTS): each holds a VM's disk
 *                   and RAM on the host, so there is always a limit
 */
typedef struct rt_token_limits
{
  unsigned max_sandboxes;
  unsigned max_vcpu;
  int64_t max_cost_micros;
  unsigned rate;
  unsigned max_snapshots;
} rt_token_limits;

#define RT_TOKEN_DEFAULT_RATE 50      /* rt_token_limits.rate 0: requests a second */
#define RT_TOKEN_DEFAULT_BURST 100    /* and the burst the server allows */
#define RT_TOKEN_DEFAULT_SNAPSHOTS 32 /* rt_token_limits.max_snapshots 0 */

/**
 * rt_token_create - make an API token, which is a tenant of that name
 * @ctx:    the context (the host view)
 * @name:   the token's (and tenant's) name, as rt_context_set_tenant
 * @limits: its limits, or NULL for none
 * @token:  set to the token, "rt_" and 40 random base32 characters
 *          (free()); returned only here: <data>/tokens.json (0600) keeps
 *          its SHA-256
 * @err:    "invalid_request", "name_taken", "permission_denied" (a tenant
 *          context)
 * Return: 0, or <0 with @err set.
 */
int rt_token_create (rt_context *ctx, const char *name, const rt_token_limits *limits, char **token, rt_error **err);

/**
 * rt_token_list_json - the API tokens, never their hashes
 * @ctx:  the context (the host view)
 * @json: [{name, createdAt, maxSandboxes, maxVcpu, maxCostMicros, rate,
 *        maxSnapshots (0: the default), prefix (the token's first 7 characters)}] oldest first (free())
 * @err:  "permission_denied" (a tenant context), "internal"
 * Return: 0, or <0 with @err set.
 */
int rt_token_list_json (rt_context *ctx, char **json, rt_error **err);

/**
 * rt_token_remove - revoke an API token and stop its tenant's sandboxes
 * @ctx:  the context (the host view)
 * @name: the token's name
 * @err:  "not_found", "permission_denied" (a tenant context), or a
 *        sandbox's rt_sandbox_remove error
 *
 * Every sandbox of the tenant, paused ones included, stops as
 * rt_sandbox_stop does (its record written, its usage kept); then the
 * token goes: it no longer authenticates.
 * Return: 0, or <0 with @err set.
 */
int rt_token_remove (rt_context *ctx, const char *name, rt_error **err);

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
 *                 however it exits (what `sandbox run` uses)
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
  bool cold;             /* boot, even when a template fits (--cold) */
  const char *snapshot;  /* continue from this snapshot (id or name): its
                            image and shape; vcpu/memory_mib/disk_mib/image
                            must be 0/NULL or the snapshot's own */
  unsigned idle_pause_s; /* > 0: pause to disk after this many seconds
                            without a command, copy, process output or API
                            call and under 2 % CPU (--idle-pause) */
  bool auto_wake;        /* a command, copy or listing of a paused sandbox
                            wakes it first (--auto-wake) */
} rt_sandbox_config;

typedef struct rt_sandbox rt_sandbox;

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
 * sandbox with secrets or --get-or-create), whose id it keeps.  On failure nothing is left
 * behind: no QEMU, no monitor, no state directory.
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
 * @err: "not_found"; "sandbox_not_ready" when it has stopped
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
 * @timeout_ms: kill the command's process group after this (0: 24 h)
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

/**
 * rt_sandbox_cat - stream a file's bytes out of the sandbox
 * @sb:   the sandbox
 * @path: absolute path in the sandbox
 * @opts: on_output/data receive the bytes (stream 1); cancel_fd as for exec
 * @err:  "usage" (relative path), "file_not_found", "is_a_directory"
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_cat (rt_sandbox *sb, const char *path, const rt_exec_opts *opts, rt_error **err);

/**
 * rt_sandbox_files_json - list a directory (or one file) in the sandbox
 * @sb:    the sandbox
 * @path:  absolute path
 * @depth: how many levels below @path (1: its entries)
 * @json:  set to a JSON array of {type ("d"|"l"|"-"), size, path}, sorted
 * @err:   "usage" (relative path), "file_not_found"
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_files_json (rt_sandbox *sb, const char *path, unsigned depth, char **json, rt_error **err);

/* The default of rt_copy_opts.max_size: 10 GiB.  */
#define RT_COPY_MAX_SIZE_DEFAULT (10ULL << 30)

/**
 * rt_copy_opts - how to copy; all-zero (or NULL) means the defaults
 * @cancel_fd:  when readable, the copy stops and leaves nothing
 *              ("interrupted"); -1 (or 0) for none
 * @follow:     in: a symlink named as the source is copied as what it
 *              points to (refused otherwise)
 * @keep_links: out: the copied item may itself be a symlink (refused
 *              otherwise); symlinks inside it must stay inside it either way
 * @max_size:   out: at most this many bytes land, counted as the archive
 *              does (file bytes plus 512 per entry); 0 means
 *              RT_COPY_MAX_SIZE_DEFAULT
 */
typedef struct rt_copy_opts
{
  int cancel_fd;
  bool follow;
  bool keep_links;
  uint64_t max_size;
} rt_copy_opts;

/**
 * rt_copy_result - what a copy out wrote, and what it left out
 * @bytes:     file bytes written
 * @skipped:   entries not written: the sum of the counts below
 * @devices:   block and character device nodes
 * @fifos:     FIFOs
 * @links:     symlinks whose target leaves the copied tree (absolute ones
 *             always do)
 * @hardlinks: hard links to anything but a file copied before them
 * @others:    entries outside the copied item, unsafe names, other types
 */
typedef struct rt_copy_result
{
  uint64_t bytes;
  unsigned skipped;
  unsigned devices;
  unsigned fifos;
  unsigned links;
  unsigned hardlinks;
  unsigned others;
} rt_copy_result;

/**
 * rt_sandbox_copy_in - copy a host file or directory into the sandbox
 * @sb:   the sandbox
 * @src:  host path (a directory is copied whole, modes kept; symlinks in
 *        it are copied as symlinks)
 * @dst:  absolute sandbox path; an existing directory receives @src by name
 * @opts: cancel_fd, follow; NULL for the defaults
 * @err:  "usage", "file_not_found" (either side), "invalid_request" (@src
 *        is a symlink and @opts->follow is not set), "interrupted"
 * Streamed as a tar archive; the copy lands under its name only when whole.
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_copy_in (rt_sandbox *sb, const char *src, const char *dst, const rt_copy_opts *opts, rt_error **err);

/**
 * rt_sandbox_copy_out - copy a sandbox file or directory to the host
 * @sb:   the sandbox
 * @src:  absolute sandbox path
 * @dst:  host path; an existing directory receives @src by name
 * @opts: cancel_fd, keep_links, max_size; NULL for the defaults
 * @res:  filled with the bytes written and the entries skipped; may be NULL
 * @err:  "usage", "file_not_found", "download_incomplete" (cut short,
 *        larger than @opts->max_size, or no room on the host's disk),
 *        "invalid_request" (@src is a symlink and @opts->keep_links is
 *        not set), "interrupted"
 * The guest is not trusted: only regular files, directories and symlinks
 * that stay inside the copy are written, without setuid, setgid or sticky
 * bits and within the caller's umask; the rest is skipped and counted in
 * @res.  Written into a private directory and renamed when complete: a
 * copy that fails never appears under @dst.
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_copy_out (rt_sandbox *sb, const char *src, const char *dst, const rt_copy_opts *opts,
                         rt_copy_result *res, rt_error **err);

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
 * rt_snapshot_list_json - every snapshot as a JSON array of
 * rt_snapshot_get_json objects, oldest first ("[]" when none)
 * @ctx:  the context
 * @json: set to the text (free it)
 * @err:  set on failure
 * Return: 0, or <0 with @err set.
 */
int rt_snapshot_list_json (rt_context *ctx, char **json, rt_error **err);

/**
 * rt_snapshot_get_json - one snapshot: {id, kind: "snapshot", name,
 * labels, state ("ready"), sourceSandboxId, image, shape {vcpu,
 * memoryMiB, diskMiB}, storedBytes (on disk), memoryBytes (its saved RAM,
 * compressed), memoryDataBytes (that RAM's non-zero pages), diskBytes,
 * createdAt, path, tenant (only when a tenant's sandbox was its source)}
 * @ctx:  the context (a tenant's sees only its own: rt_context_set_tenant)
 * @ref:  its id or name
 * @json: set to the text (free it)
 * @err:  "not_found"
 * Return: 0, or <0 with @err set.
 */
int rt_snapshot_get_json (rt_context *ctx, const char *ref, char **json, rt_error **err);

/**
 * rt_snapshot_remove - delete a snapshot; sandboxes made from it run on
 * @ctx: the context
 * @ref: its id or name
 * @err: "not_found"
 * Return: 0, or <0 with @err set.
 */
int rt_snapshot_remove (rt_context *ctx, const char *ref, rt_error **err);

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
 * Idempotent: an unknown or already removed @ref is not an error.
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
 * rt_build_opts - what `runtime image build` makes; steps run in this
 * order: @files, @apt, @pip, @npm, @run (each list in its own order)
 * @from:      the image to start from (default "runtime")
 * @apt, @pip, @npm: NULL-terminated package names (a version may follow:
 *             "pkg=1.2", "pkg==1.2", "pkg@1.2")
 * @run:       NULL-terminated shell commands, run as root with no network
 * @files:     NULL-terminated "SRC:DST" (a host file or folder, an absolute
 *             path in the image)
 * @env:       NULL-terminated "K=V" added to the image's environment
 * @workdir:   the image's working directory (default: the base's)
 * @name:      "NAME" or "NAME:TAG" (default "image")
 * @dir:       a folder holding runtime.json ({base, apt, pip, npm,
 *             commands, files, env, workdir}); its files' SRC are relative
 *             to it.  Its lists come before the flags' lists.
 * @no_cache:  run every step even when a cached layer exists
 * @apt_mirror: a Debian mirror ("http[s]://HOST[/PATH]") that the apt steps
 *             use and are the only host they reach; NULL: the hosts of the
 *             default image's sources as this host built it.  Never the
 *             sources of the image being built: those are the guest's.
 * @log_fd:    where the steps' progress and output go (-1: nowhere)
 */
typedef struct rt_build_opts
{
  const char *from;
  const char *const *apt;
  const char *const *pip;
  const char *const *npm;
  const char *const *run;
  const char *const *files;
  const char *const *env;
  const char *workdir;
  const char *name;
  const char *dir;
  bool no_cache;
  int log_fd;
  const char *apt_mirror;
} rt_build_opts;

/**
 * rt_image_build - build an image, one layer per step
 * @ctx:  the context
 * @opts: what to build
 * @id:  the new image's id (free())
 * @err: "build_failed" names the step and carries its last output lines;
 *       "invalid_request" for a bad package name, file or recipe
 *
 * Each step runs as root in a build sandbox whose network reaches only
 * what the step needs (Debian's archive for apt, PyPI for pip, the npm
 * registry for npm, nothing otherwise); a step whose parent, text and
 * inputs were built before reuses its layer without running.  A failed
 * build leaves no image.
 * Return: 0, or <0 with @err set.
 */
int rt_image_build (rt_context *ctx, const rt_build_opts *opts, char **id, rt_error **err);

/**
 * rt_image_list_json - every image version
 * @ctx:  the context
 * @json: set to [{id, name, version, tags, layers, env, workdir, created,
 *        sizeBytes}] (free()); "[]" when there are none
 * @err:  set on failure
 * Return: 0, or <0 with @err set.
 */
int rt_image_list_json (rt_context *ctx, char **json, rt_error **err);
/**
 * rt_image_get_json - one image, as in rt_image_list_json
 * @ctx:  the context
 * @ref:  id, name, name:tag, name@version, or an id prefix of 12+
 * @json: set to the object (free())
 * @err:  "image_not_found"
 * Return: 0, or <0 with @err set.
 */
int rt_image_get_json (rt_context *ctx, const char *ref, char **json, rt_error **err);
/**
 * rt_image_remove - forget an image version, its boot disk and the layers
 * no other image uses
 * @ctx: the context
 * @ref: as for rt_image_get_json
 * @err: "image_not_found"; "invalid_request" while a live sandbox runs it
 * Return: 0, or <0 with @err set.
 */
int rt_image_remove (rt_context *ctx, const char *ref, rt_error **err);
/**
 * rt_image_warm - make the template that sandboxes of an image and shape
 * start from (they boot cold until it exists)
 * @ctx:        the context
 * @ref:        as for rt_image_get_json; NULL: "runtime"
 * @vcpu:       the shape's vCPUs (0: 2)
 * @memory_mib: its memory (0: 4096)
 * @json:       set to the template {key, imageId, vcpu, memoryMiB,
 *              createdAt, makeMs, sizeBytes, fresh} (free()); NULL allowed.
 *              "fresh" is false when it existed already
 * @err:        "image_not_found", "invalid_request" (a bad shape),
 *              "startup_failed" (the template VM did not boot or save)
 *
 * A template is a booted, warmed VM saved to disk: its RAM, device state
 * and disk overlay.  It is made again when any of its inputs changes (the
 * image, the shape, the kernel, the agent, QEMU).
 * Return: 0, or <0 with @err set.
 */
int rt_image_warm (rt_context *ctx, const char *ref, unsigned vcpu, unsigned memory_mib, char **json, rt_error **err);
/**
 * rt_pool_set - keep @spares paused clones of an image and shape ready
 * @ctx:        the context
 * @ref:        an image, as for rt_image_get_json; NULL: "runtime"
 * @spares:     how many (0 to 64; 0 keeps the pool but stops its spares)
 * @vcpu:       the shape's vCPUs (0: 2)
 * @memory_mib: its memory (0: 4096)
 * @json:       set to {image, imageId, vcpu, memoryMiB, spares, ready}
 *              (free()); NULL allowed
 * @err:        "image_not_found", "invalid_request", "quota_exceeded" (all
 *              spares together may hold at most RUNTIME_POOL_MAX_MIB,
 *              default a tenth of the host's RAM)
 *
 * A create of exactly that image and shape (and no secrets) claims a
 * spare: its rules, env, name, lease and funding apply before it resumes.
 * Spares use no CPU and are not billed; a claimed one is replaced in the
 * background, and after a reboot the next create of the shape makes
 * them again.  Returns once the template and the spares are made.
 * Return: 0, or <0 with @err set.
 */
int rt_pool_set (rt_context *ctx, const char *ref, unsigned spares, unsigned vcpu, unsigned memory_mib, char **json,
                 rt_error **err);
/**
 * rt_pool_list_json - the pools
 * @ctx:  the context
 * @json: set to [{image, imageId, vcpu, memoryMiB, spares, ready}] (free())
 * @err:  set on failure
 * Return: 0, or <0 with @err set.
 */
int rt_pool_list_json (rt_context *ctx, char **json, rt_error **err);
/**
 * rt_pool_remove - forget the pools of an image and stop their spares
 * @ctx: the context
 * @ref: the image, as for rt_pool_set
 * @err: "not_found" when it has no pool, "image_not_found"
 * Return: 0, or <0 with @err set.
 */
int rt_pool_remove (rt_context *ctx, const char *ref, rt_error **err);
/**
 * rt_image_export - write an image as a portable tar: manifest.json and
 * layers/<sha256>.tar.zst (written under a temporary name, then renamed)
 * @ctx:  the context
 * @ref:  as for rt_image_get_json
 * @path: the tar file to write
 * @err:  "image_not_found", "internal" (cannot write @path)
 * Return: 0, or <0 with @err set.
 */
int rt_image_export (rt_context *ctx, const char *ref, const char *path, rt_error **err);
/**
 * rt_image_import - add an exported image; every layer is checked against
 * its digest and the manifest against its id, every layer's entries for
 * unsafe paths, device nodes and writes through symlinks ("invalid_request"
 * if not: the store is left as it was).  The image becomes its name's next
 * version, tagged latest only when it is newer than the name's latest.
 * @ctx:  the context
 * @path: the tar rt_image_export wrote
 * @id:   set to the image's id (free())
 * @err:  "file_not_found", "invalid_request"
 * Return: 0 imported, 1 already in the store (left as it was), or a
 * negative errno-style value with @err set.
 */
int rt_image_import (rt_context *ctx, const char *path, char **id, rt_error **err);

/**
 * rt_usage_json - what was used and charged, from the ledger
 * @ctx:  the context
 * @json: {trial_hours_left, charged_micros, charged_usd, sandboxes: [{resource_id,
 *        name, kind, state, funding, created_at, vcpu, memory_mib, running_seconds,
 *        active_cpu_seconds, memory_gib_seconds, charged_usd}]} newest first, at
 *        most 100 (free())
 * @err:  set on failure (an unreadable ledger)
 * Return: 0, or <0 with @err set.
 */
int rt_usage_json (rt_context *ctx, char **json, rt_error **err);

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

/**
 * rt_run_python - the seed's tool handler: run @code in a fresh sandbox
 * @ctx:      the context
 * @code:     the program, written to /workspace/main.py
 * @packages: NULL-terminated PyPI names (optionally ==VERSION), or NULL
 * @image:    image to boot, or NULL for the default
 * @result:   JSON (free()): {exit_code, timed_out, stdout, stderr}; or
 *            {stage:"install", stderr} when pip failed; or {error} for a
 *            package name that is not one (no sandbox is made then)
 * @charged_micros: if not NULL, what the sandbox cost is added here
 * @err:      as for rt_sandbox_create and rt_sandbox_exec; a failing
 *            program or pip is a result, not an error
 *
 * The packages are installed (pip, 180 s) while only pypi.org and
 * *.pythonhosted.org are reachable; then the internet is switched off and
 * the program runs (60 s).  The sandbox is always removed.
 * Return: 0, or <0 with @err set.
 */
int rt_run_python (rt_context *ctx, const char *code, const char *const *packages, const char *image, char **result,
                   int64_t *charged_micros, rt_error **err);

typedef void (*rt_chat_event_fn) (void *data, const char *line);

/**
 * rt_chat_opts - an OpenAI-compatible tool-call loop (DeepSeek)
 * @api_key:  sent as "Authorization: Bearer"; never printed, never in a sandbox
 * @base_url: default https://api.deepseek.com
 * @model:    default deepseek-flash
 * @image:    image for run_python's sandboxes (NULL: default)
 * @prompt:   the user's message
 * @max_turns: requests at most (default 8)
 * @strict:   the /beta base path and "strict": true on the tool
 * @stream:   server-sent events; text goes to @on_text as it arrives
 * @on_text:  streamed answer text (stream 1), or NULL
 * @on_event: one line per tool call and outcome, retries; or NULL
 * @cancel_fd: when readable (a signalfd for Ctrl-C), the chat stops at once:
 *            the running tool call's sandbox is removed, "interrupted";
 *            -1 or 0 for none
 * @install_timeout_s, @run_timeout_s: pip install and main.py (180, 60)
 * @connect_timeout_s: connecting to the API (15)
 * @read_timeout_s: the API silent this long is an error (120)
 * @retry_after_max_s: the longest Retry-After honoured (30)
 * @now:      the clock that picks peak or off-peak prices (Unix time)
 *
 * Zero takes the default; the limits and @now exist for tests.
 */
typedef struct rt_chat_opts
{
  const char *api_key;
  const char *base_url;
  const char *model;
  const char *image;
  const char *prompt;
  unsigned max_turns;
  bool strict;
  bool stream;
  rt_output_fn on_text;
  rt_chat_event_fn on_event;
  void *data;
  int cancel_fd;
  unsigned install_timeout_s;
  unsigned run_timeout_s;
  unsigned connect_timeout_s;
  unsigned read_timeout_s;
  unsigned retry_after_max_s;
  int64_t now;
} rt_chat_opts;

/**
 * rt_chat - ask until the model answers without tool calls
 * @ctx:        the context
 * @opts:       the conversation (rt_chat_opts)
 * @transcript: JSON (free()): {answer, model, messages, usage {prompt_tokens,
 *              completion_tokens}, cost {model_micros (null for a model of
 *              unknown price), sandbox_micros}}.  Set on failure too once
 *              a request was made (no answer then): what was already spent.
 * @err: "invalid_request" (no key, HTTP 4xx, too many turns),
 *       "quota_exceeded" (HTTP 429 after retries), "internal" (5xx after
 *       retries, unreachable API, connect or read timeout), "interrupted"
 * Return: 0, or <0 with @err set.
 */
int rt_chat (rt_context *ctx, const rt_chat_opts *opts, char **transcript, rt_error **err);

/**
 * rt_secret_set - store a secret bound to hosts
 * @ctx:     the context
 * @name:    [A-Za-z_][A-Za-z0-9_]*, the variable sandboxes see
 * @value:   the value (@len bytes, 1 to 8192, no NUL, no line break inside)
 * @len:     its length
 * @hosts:   NULL-terminated host names or *.domain patterns (1 to 16)
 * @header:  with @format: a header the proxy sets on those hosts, e.g.
 *           "Authorization" and "Bearer {value}"; both NULL for none
 * @format:  the header's value, holding {value} once, on one line
 * @placeholder: what sandboxes see (free()); kept when the value changes
 * @err:     "invalid_request" (a bad name, value, header or format),
 *           "usage" (not 1 to 16 hosts; @header without @format)
 *
 * The store (<data>/secrets.json) is mode 0600 and written atomically;
 * a store others can read is refused ("invalid_request").
 * Return: 0, or <0 with @err set.
 */
int rt_secret_set (rt_context *ctx, const char *name, const char *value, size_t len, const char *const *hosts,
                   const char *header, const char *format, char **placeholder, rt_error **err);

/* Where and when the egress proxy swaps a secret in (rt_secret_set_opts).  */
typedef struct rt_secret_opts
{
  const char *const *hosts; /* as rt_secret_set's @hosts */
  const char *header;       /* as rt_secret_set's @header, or NULL */
  const char *format;       /* as rt_secret_set's @format, or NULL */
  bool in_url;              /* also in the request line (path, query); else headers only */
  const char *const *rules; /* "METHOD:/path-glob" (METHOD may be *), NULL-terminated, at most
                               RT_MAX_SECRET_RULES; NULL or none: every request to @hosts */
} rt_secret_opts;

/**
 * rt_secret_set_opts - store a secret, with where and when it is swapped in
 * @ctx:     the context
 * @name:    as for rt_secret_set
 * @value:   as for rt_secret_set
 * @len:     its length
 * @opts:    hosts, header and format as for rt_secret_set; in_url and rules
 * @placeholder: what sandboxes see (free()); kept when the value changes
 * @err:     as for rt_secret_set, and "invalid_request" for a bad rule,
 *           "usage" for too many
 *
 * A value is swapped into the headers where its placeholder appears (and
 * the --header), never into the request line unless @opts->in_url; answers
 * from the hosts have every occurrence of the value replaced by the
 * placeholder before the sandbox sees them.
 * Return: 0, or <0 with @err set.
 */
int rt_secret_set_opts (rt_context *ctx, const char *name, const char *value, size_t len, const rt_secret_opts *opts,
                        char **placeholder, rt_error **err);
/**
 * rt_secret_list_json - the stored secrets, never a value
 * @ctx:  the context
 * @json: set to [{name, hosts, header, format, placeholder, rules, inUrl,
 *        createdAt, updatedAt}] (free(); the times null in a store from before)
 * @err:  "invalid_request" (a store others can read)
 * Return: 0, or <0 with @err set.
 */
int rt_secret_list_json (rt_context *ctx, char **json, rt_error **err);
/**
 * rt_secret_remove - forget a secret
 * @ctx:  the context
 * @name: its name
 * @err:  "not_found" when there is none
 * Return: 0, or <0 with @err set.
 */
int rt_secret_remove (rt_context *ctx, const char *name, rt_error **err);

/* Where `runtime serve` listens unless told otherwise.  */
#define RT_SERVE_DEFAULT_LISTEN "127.0.0.1:8430"

/**
 * rt_serve_opts - how `runtime serve` listens; all-zero means the defaults
 * @listen:   "ADDR:PORT" or "[V6]:PORT" (default RT_SERVE_DEFAULT_LISTEN;
 *            port 0 picks a free one); plain HTTP only on a loopback address
 * @tls_cert: a PEM certificate (chain) file: HTTPS; with @tls_key
 * @tls_key:  its PEM private key file
 * @nats:     many hosts: the NATS servers' URLs (as rt_node_opts's); the
 *            server is then a replica of the API over the cluster's
 *            `runtime node`s (docs/ARCHITECTURE.md, "Many hosts"), not
 *            this machine's sandboxes
 * @replicas, @nats_ca, @nats_cert, @nats_key: as rt_node_opts's
 */
typedef struct rt_serve_opts
{
  const char *listen;
  const char *tls_cert;
  const char *tls_key;
  const char *nats;
  unsigned replicas;
  const char *nats_ca;
  const char *nats_cert;
  const char *nats_key;
} rt_serve_opts;

/**
 * rt_serve - answer the HTTP API of docs/API.md until SIGTERM or SIGINT
 * @ctx:  the context (the host's view; each request acts as its token's
 *        tenant)
 * @opts: how to listen, or NULL for the defaults
 * @err:  "usage" (a bad address), "invalid_request" (plain HTTP on an
 *        address other than loopback, or an unusable certificate), "busy"
 *        (the port is taken)
 *
 * Prints "runtime serve: listening on URL" and one line per request on
 * stderr.  Requests run on threads of their own (libevent is switched to
 * pthreads locking for the process).  On a signal it stops accepting,
 * ends open streams with a `continue` event, waits up to 10 s for the
 * requests it is answering, and returns; sandboxes keep running.
 * Return: 0 after a signal, or <0 with @err set (nothing was served).
 */
int rt_serve (rt_context *ctx, const rt_serve_opts *opts, rt_error **err);

/**
 * rt_node_list_json - the hosts of a cluster of many hosts, as a `runtime
 * serve --nats` replica sees them: a JSON array of {name, state ("up" or
 * "lost"), lastSeenAt, lostAt, report (the host's last capacity report)}
 * @ctx:  a client context (RUNTIME_API_URL naming a replica)
 * @json: *json gets the text (free it)
 * @err:  "usage" (a context of this machine: it has no cluster), or the
 *        server's error
 *
 * Return: 0, or <0 with @err set.
 */
int rt_node_list_json (rt_context *ctx, char **json, rt_error **err);

/**
 * rt_node_opts - how `runtime node` joins the cluster of many hosts
 * @nats:     the NATS servers' URLs, comma-separated (nats://HOST:PORT, or
 *            tls://; credentials as nats://USER:PASS@HOST:PORT)
 * @name:     this host's name in the cluster, [A-Za-z0-9_-]{1,64}; NULL
 *            for the host name up to its first dot
 * @replicas: the catalog's copies when this node makes it: 1, 3 or 5 (0:
 *            3); an existing catalog must have as many
 * @ca_file:  TLS: the NATS servers' CA (PEM), or NULL
 * @cert_file: TLS: this node's client certificate (PEM), or NULL
 * @key_file: its private key (NULL: in @cert_file)
 */
typedef struct rt_node_opts
{
  const char *nats;
  const char *name;
  unsigned replicas;
  const char *ca_file;
  const char *cert_file;
  const char *key_file;
} rt_node_opts;

/**
 * rt_node - serve this host to the cluster until SIGTERM or SIGINT
 * @ctx:  the context (the host's view)
 * @opts: the cluster and the name
 * @err:  "usage" (no or a bad URL, a bad name or replica count, a
 *        catalog with other replicas), "cluster_unavailable" (no NATS
 *        server answered), "name_taken" (a node of that name answers
 *        already)
 *
 * Publishes the host's capacity (vCPUs and memory total, used and free,
 * sandboxes running and paused, ready spares per shape, the accelerator)
 * every 2 s on runtime.node.NAME.capacity, keeps it under node.NAME in
 * the cluster's catalog (a JetStream key-value bucket, compare-and-set)
 * when its NATS user may (else it says so and reports on NATS only,
 * trying the catalog again every 30 s), answers runtime.node.NAME.ping
 * with it, and answers API calls for this host's sandboxes on
 * runtime.node.NAME.api with runtime serve's route handlers.  A NATS server lost is left
 * for another of @nats, for ever.  SIGTERM and SIGINT are blocked in the
 * calling thread meanwhile (threads it starts inherit that) and taken by
 * sigtimedwait: on one it marks its catalog entry "stopped" and returns;
 * sandboxes keep running.  Prints "runtime node: …" lines on stderr.
 * Return: 0 after a signal, or <0 with @err set.
 */
int rt_node (rt_context *ctx, const rt_node_opts *opts, rt_error **err);

#ifdef __cplusplus
}
#endif

#endif
