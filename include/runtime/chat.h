/* runtime/chat.h - an LLM tool-call loop (chat) and its tool, which runs
 * Python in a fresh sandbox.
 *
 * A part of <runtime.h>, which callers include (not this file) and whose
 * top comment tells the conventions: errors, handles, who frees what.  It
 * includes the parts it needs, so it also compiles alone.
 */
#ifndef RUNTIME_CHAT_H
#define RUNTIME_CHAT_H

#include "exec.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * rt_run_python - an LLM tool handler: run Python @code in a fresh sandbox
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
 * rt_chat_opts - an OpenAI-compatible tool-call loop
 * @api_key:  sent as "Authorization: Bearer"; never printed, never in a sandbox
 * @base_url: the API's base URL (NULL: the built-in provider's)
 * @model:    the model to ask (NULL: the built-in provider's default)
 * @image:    image for run_python's sandboxes (NULL: default)
 * @prompt:   the user's message
 * @max_turns: requests at most (default 8)
 * @strict:   "strict": true on the tool's schema, asked of the provider's
 *            beta path under @base_url
 * @stream:   server-sent events; text goes to @on_text as it arrives
 * @on_text:  streamed answer text (stream 1), or NULL
 * @on_event: one line per tool call and outcome, retries; or NULL
 * @cancel_fd: when readable (a signalfd for SIGINT, say), the chat stops at
 *            once: the running tool call's sandbox is removed,
 *            "interrupted"; -1 or 0 for none
 * @install_timeout_s, @run_timeout_s: pip install and main.py (180, 60)
 * @connect_timeout_s: connecting to the API (15)
 * @read_timeout_s: the API silent this long is an error (120)
 * @retry_after_max_s: the longest Retry-After honoured (30)
 * @now:      the time (Unix) whose prices the model's cost is counted at,
 *            for a provider whose prices change with the hour (0: now)
 *
 * Zero takes the default; the limits and @now exist for tests.  README.md
 * names the built-in provider; its URL, default model and prices are kept
 * in the library, not here, as they follow the provider's.
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

#ifdef __cplusplus
}
#endif

#endif
