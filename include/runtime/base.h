/* runtime/base.h - errors, the version, the limits the library checks,
 * environment variable names, text made safe for a terminal, the context.
 *
 * A part of <runtime.h>, which callers include (not this file) and whose
 * top comment tells the conventions: errors, handles, who frees what.  It
 * includes the parts it needs, so it also compiles alone.
 */
#ifndef RUNTIME_BASE_H
#define RUNTIME_BASE_H

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
 * Return: a static string such as "0.2.0" (not to be freed).
 */
const char *rt_version (void);

/*
 * Limits the library checks.  A caller that checks its input early (to
 * report a typo before a VM boots) uses these, not copies.
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
#define RT_MAX_PTY_SIDE 1000              /* rt_exec_opts.pty_cols, .pty_rows, rt_session_resize: 1 to this */
#define RT_MAX_EXEC_TIMEOUT_S (24 * 3600) /* a cap, in seconds, for callers taking a command timeout */
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
 * what is on screen), a bidirectional control would make a name show as
 * another.  Control characters, C1 controls, the bidirectional controls
 * (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069) and bytes that
 * are not UTF-8 become \xHH, byte by byte; everything else, other UTF-8
 * included, is kept.
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
 * token), the functions on sandboxes (their commands, files and sessions
 * too), images, secrets, snapshots and usage ask that server (rt_serve's
 * HTTP API, docs/API.md) and answer as they do locally; those that need
 * this machine (egress log, image export, import and warm, pools,
 * rt_chat, rt_run_python) fail with "unsupported_remote".  A URL without a key fails at the first call
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
 * rt_context_can_manage - whether this caller may make and manage sandboxes
 * @ctx: the context
 * @err: set when it may not
 *
 * A local context needs root: a sandbox's network namespace, its QEMU's
 * own uid and its control group are root's to make, and its state is
 * root's to read.  A client context (RUNTIME_API_URL) may: its server
 * decides.  Reads nothing on disk, so a caller can ask before anything
 * else, once.
 * Errors: "permission_denied" (not root, locally), with a hint.
 * Return: 0, or <0 with @err set.
 */
int rt_context_can_manage (rt_context *ctx, rt_error **err);

/**
 * rt_context_set_tenant - scope a context to one tenant (an API token)
 * @ctx:    the context
 * @tenant: a token's name, [a-z0-9][a-z0-9_-]{0,31}; NULL for the host's
 *          own view (a new context's), which sees and changes everything
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

#ifdef __cplusplus
}
#endif

#endif
