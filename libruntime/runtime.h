/* runtime.h - libruntime: throwaway QEMU microVM sandboxes for untrusted code.
 *
 * Every fallible function takes `rt_error **err` last and returns a negative
 * errno-style value with *err set on failure; success never touches *err.
 * Handles are opaque.  Nothing here keeps global state: a rt_context carries
 * the directories and options, and may be used from one thread at a time.
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

/** rt_error_free - free an error (NULL is fine).  */
void rt_error_free (rt_error *err);

/** rt_version - the library's version string.  */
const char *rt_version (void);

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
 * agent binary).
 * Return: 0, or <0 with @err set.
 */
int rt_context_new (rt_context **out, rt_error **err);

/** rt_context_free - free a context (NULL is fine).  */
void rt_context_free (rt_context *ctx);

/** rt_context_set_progress - where first-use progress lines go.  */
void rt_context_set_progress (rt_context *ctx, rt_progress_fn fn, void *data);

/**
 * rt_context_accel - the accelerator sandboxes use, "kvm" or "tcg"
 * @ctx: the context
 * @out: set to a static string
 * @err: set on failure
 *
 * RUNTIME_ACCEL wins; otherwise a probe boot decides (KVM only when a guest
 * really boots on it quickly) and the answer is cached.
 * Return: 0, or <0 with @err set.
 */
int rt_context_accel (rt_context *ctx, const char **out, rt_error **err);

/**
 * rt_context_prepare - fetch the kernel, build the initramfs and the default
 * image if they are not cached yet, and decide the accelerator
 * Return: 0, or <0 with @err set.
 */
int rt_context_prepare (rt_context *ctx, rt_error **err);

/**
 * rt_sandbox_config - how to make a sandbox; all-zero means the defaults
 * @vcpu:       virtual CPUs (default 2, 1–16)
 * @memory_mib: guest memory (default 4096, 256–65536)
 * @image:      image reference (default "runtime")
 */
typedef struct rt_sandbox_config
{
  unsigned vcpu;
  unsigned memory_mib;
  const char *image;
} rt_sandbox_config;

typedef struct rt_sandbox rt_sandbox;

/**
 * rt_sandbox_create - boot a sandbox and wait until its agent answers
 * @ctx: the context (must outlive the sandbox)
 * @cfg: configuration, or NULL for the defaults
 * @out: the running sandbox
 * @err: set on failure ("startup_failed" carries the console's last lines)
 *
 * On failure nothing is left behind: no QEMU, no state directory.
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_create (rt_context *ctx, const rt_sandbox_config *cfg, rt_sandbox **out, rt_error **err);

/** rt_sandbox_id - the sandbox's id ("sb-…").  */
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
 */
typedef struct rt_exec_opts
{
  const char *cwd;
  char *const *env;
  const char *user;
  const void *stdin_data;
  size_t stdin_len;
  uint64_t timeout_ms;
  int cancel_fd;
  rt_output_fn on_output;
  void *data;
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
 * @opts: options, or NULL for the defaults
 * @res:  filled when the command ended (also on timeout or cancel)
 * @err:  set on failure of the sandbox or of the channel
 *
 * When the command's main process ends, every process in its group is
 * killed.
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_exec (rt_sandbox *sb, char *const argv[], const rt_exec_opts *opts, rt_exec_result *res, rt_error **err);

/**
 * rt_sandbox_destroy - stop the sandbox and remove everything it made
 * @sb:  the sandbox; freed in every case
 * @err: set when something could not be removed ("cleanup_failed")
 * Return: 0, or <0 with @err set.
 */
int rt_sandbox_destroy (rt_sandbox *sb, rt_error **err);

#ifdef __cplusplus
}
#endif

#endif
