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
 *
 * Callers include this file.  The declarations live in runtime/, a file
 * per concern, each included here after those it needs:
 *   runtime/base.h     errors, version, limits, names, text, the context
 *   runtime/sandbox.h  a sandbox: create, open, lifecycle, network, record
 *   runtime/exec.h     commands: exec, background processes, sessions
 *   runtime/files.h    files: cat, listing, copies in and out
 *   runtime/image.h    images, templates, pools, export, snapshots
 *   runtime/admin.h    API tokens, secrets, usage
 *   runtime/serve.h    the HTTP API server and cluster nodes
 *   runtime/chat.h     the LLM tool-call loop and its Python tool
 */
#ifndef RUNTIME_H
#define RUNTIME_H

#include "runtime/base.h"
#include "runtime/sandbox.h"
#include "runtime/exec.h"
#include "runtime/files.h"
#include "runtime/image.h"
#include "runtime/admin.h"
#include "runtime/serve.h"
#include "runtime/chat.h"

#endif
