/* chat.c - a model's tool-call loop against an OpenAI-compatible API
   (client.c), every run_python call in a fresh sandbox (python.c).  */
#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "public/driver.h"
#include "llm/chat.h"
#include "llm/client.h"
#include "llm/python.h"
#include "remote/http.h"

bool
rt_chat_cancelled (const rt_chat_opts *o)
{
  struct pollfd p = { .fd = o->cancel_fd, .events = POLLIN };
  return o->cancel_fd > 0 && poll (&p, 1, 0) > 0;
}

int
rt_chat_interrupted (rt_error **err)
{
  return rt_error_set (err, EINTR, "interrupted", "interrupted by a signal; the tool call's sandbox, if any, was removed");
}

/* ---- prices -------------------------------------------------------------- */

/* µ$ per million tokens (input, output) off-peak; peak doubles.  */
static bool
model_price (const char *model, int64_t *in, int64_t *out)
{
  if (strcmp (model, "deepseek-flash") == 0)
    {
      *in = 150000;
      *out = 600000;
      return true;
    }
  if (strcmp (model, "deepseek-v4-pro") == 0)
    {
      *in = 660000;
      *out = 1980000;
      return true;
    }
  return false;
}

/* 01:00-04:00 and 06:00-10:00 UTC on weekdays.  */
static bool
peak_at (time_t t)
{
  struct tm tm;

  gmtime_r (&t, &tm);
  if (tm.tm_wday == 0 || tm.tm_wday == 6)
    return false;
  return (tm.tm_hour >= 1 && tm.tm_hour < 4) || (tm.tm_hour >= 6 && tm.tm_hour < 10);
}

/* ---- the loop ---------------------------------------------------------------- */

static json_object *
tool_schema (bool strict)
{
  json_object *tool = json_object_new_object (), *fn = json_object_new_object (), *params = json_object_new_object ();
  json_object *props = json_object_new_object (), *code = json_object_new_object (), *pk = json_object_new_object ();
  json_object *items = json_object_new_object (), *req = json_object_new_array ();

  json_object_object_add (code, "type", json_object_new_string ("string"));
  json_object_object_add (code, "description", json_object_new_string ("the Python 3 program (main.py)"));
  json_object_object_add (items, "type", json_object_new_string ("string"));
  json_object_object_add (pk, "type", json_object_new_string ("array"));
  json_object_object_add (pk, "items", items);
  json_object_object_add (pk, "description", json_object_new_string ("PyPI packages to install first"));
  json_object_object_add (props, "code", code);
  json_object_object_add (props, "packages", pk);
  json_object_array_add (req, json_object_new_string ("code"));
  json_object_array_add (req, json_object_new_string ("packages"));
  json_object_object_add (params, "type", json_object_new_string ("object"));
  json_object_object_add (params, "properties", props);
  json_object_object_add (params, "required", req);
  json_object_object_add (params, "additionalProperties", json_object_new_boolean (0));
  json_object_object_add (fn, "name", json_object_new_string ("run_python"));
  json_object_object_add (fn, "description",
                          json_object_new_string ("Run a Python 3 program in a fresh sandbox: the packages are "
                                                  "installed from PyPI, then the internet is off; 60 s limit. "
                                                  "Returns exit_code, timed_out, stdout, stderr."));
  json_object_object_add (fn, "parameters", params);
  if (strict)
    json_object_object_add (fn, "strict", json_object_new_boolean (1));
  json_object_object_add (tool, "type", json_object_new_string ("function"));
  json_object_object_add (tool, "function", fn);
  return tool;
}

static char **
packages_of (json_object *args)
{
  json_object *p;
  size_t n;
  char **v;

  if (!json_object_object_get_ex (args, "packages", &p) || !json_object_is_type (p, json_type_array))
    return calloc (1, sizeof (char *));
  n = json_object_array_length (p);
  v = calloc (n + 1, sizeof (char *));
  for (size_t i = 0; v && i < n; i++)
    v[i] = strdup (json_object_get_string (json_object_array_get_idx (p, i)) ?: "");
  return v;
}

static void RT_PRINTF (2, 3)
event (const rt_chat_opts *o, const char *fmt, ...)
{
  char line[512];
  va_list ap;

  if (o->on_event == NULL)
    return;
  va_start (ap, fmt);
  vsnprintf (line, sizeof line, fmt, ap);
  va_end (ap);
  o->on_event (o->data, line);
}

/* One tool call: its result message.  */
static int
handle_call (rt_context *ctx, const rt_chat_opts *o, json_object *call, int n, json_object *messages,
             int64_t *sandbox_micros, rt_error **err)
{
  json_object *fn = json_object_object_get (call, "function"), *msg = json_object_new_object ();
  const char *name = fn ? rt_json_str (fn, "name") : NULL, *args_text = fn ? rt_json_str (fn, "arguments") : NULL;
  cleanup_json json_object *args = args_text ? json_tokener_parse (args_text) : NULL;
  cleanup_free char *result = NULL;
  cleanup_strv char **pkgs = NULL;
  int ret = 0;

  json_object_object_add (msg, "role", json_object_new_string ("tool"));
  json_object_object_add (msg, "tool_call_id", json_object_new_string (rt_json_str (call, "id") ?: ""));
  if (name == NULL || strcmp (name, "run_python") != 0 || args == NULL || rt_json_str (args, "code") == NULL)
    {
      result = strdup ("{\"error\":\"unknown tool or bad arguments: call run_python with {code, packages}\"}");
      event (o, "runtime: tool call #%d (%s): refused: unknown tool or bad arguments", n, name ? name : "no name");
    }
  else
    {
      uint64_t t0;
      cleanup_json json_object *r = NULL;
      pkgs = packages_of (args);
      t0 = rt_now_ms ();
      ret = rt_chat_run_python (ctx, o, rt_json_str (args, "code"), (const char *const *) pkgs, &result,
                                sandbox_micros, err);
      if (ret < 0)
        {
          json_object_put (msg);
          return ret;
        }
      r = json_tokener_parse (result);
      if (r && json_object_object_get_ex (r, "error", NULL))
        event (o, "runtime: run_python #%d: refused: %s", n, rt_json_str (r, "error"));
      else if (r)
        {
          json_object *p = json_object_object_get (args, "packages");
          size_t np = p && json_object_is_type (p, json_type_array) ? json_object_array_length (p) : 0;
          json_object *to = json_object_object_get (r, "timed_out"), *ec = json_object_object_get (r, "exit_code");
          double took = (rt_now_ms () - t0) / 1e3;
          if (json_object_object_get_ex (r, "stage", NULL))
            event (o, "runtime: run_python #%d (%zu package%s): pip install failed in %.1f s", n, np,
                   np == 1 ? "" : "s", took);
          else
            event (o, "runtime: run_python #%d (%zu package%s): %s %d in %.1f s", n, np, np == 1 ? "" : "s",
                   to && json_object_get_boolean (to) ? "timed out, exit" : "exit",
                   ec ? json_object_get_int (ec) : -1, took);
        }
    }
  if (result == NULL)
    {
      json_object_put (msg);
      return rt_error_oom (err);
    }
  json_object_object_add (msg, "content", json_object_new_string (result));
  json_object_array_add (messages, msg);
  return 0;
}

int
rt_chat (rt_context *ctx, const rt_chat_opts *o, char **transcript, rt_error **err)
{
  if (rt_local_only (ctx, "chat", err) < 0)
    return -ENOTSUP;
  cleanup_json json_object *messages = json_object_new_array (), *req = json_object_new_object (), *tools = NULL;
  cleanup_json json_object *out = json_object_new_object ();
  cleanup_free char *url = NULL;
  const char *model = o->model ? o->model : "deepseek-flash", *base = o->base_url ? o->base_url : "https://api.deepseek.com";
  int64_t in_tokens = 0, out_tokens = 0, model_micros = 0, sandbox_micros = 0, pin = 0, pout = 0;
  bool priced = model_price (model, &pin, &pout);
  unsigned max_turns = o->max_turns ? o->max_turns : 8;
  int calls = 0, ret = 0;
  json_object *user;

  /* A --base-url that is no URL is a mistake of its own, said first.  */
  if (rt_chat_api_url (base, o->strict, &url, err) < 0)
    return -EINVAL;
  if (o->api_key == NULL || *o->api_key == '\0')
    {
      rt_error_set (err, EINVAL, "invalid_request", "DEEPSEEK_API_KEY is not set");
      return rt_error_hint (err, "export DEEPSEEK_API_KEY=… (it is sent to the API only, never into a sandbox)");
    }
  tools = json_object_new_array ();
  json_object_array_add (tools, tool_schema (o->strict));
  user = json_object_new_object ();
  json_object_object_add (user, "role", json_object_new_string ("user"));
  json_object_object_add (user, "content", json_object_new_string (o->prompt));
  json_object_array_add (messages, user);
  json_object_object_add (req, "model", json_object_new_string (model));
  json_object_object_add (req, "messages", json_object_get (messages));
  json_object_object_add (req, "tools", json_object_get (tools));
  if (o->stream)
    {
      json_object *so = json_object_new_object ();
      json_object_object_add (req, "stream", json_object_new_boolean (1));
      json_object_object_add (so, "include_usage", json_object_new_boolean (1));
      json_object_object_add (req, "stream_options", so);
    }
  for (unsigned turn = 0; ret == 0; turn++)
    {
      json_object *msg = NULL, *usage = NULL, *tc;
      bool peak = peak_at (o->now ? (time_t) o->now : time (NULL));
      if (turn >= max_turns)
        {
          rt_error_set (err, EINVAL, "invalid_request", "no answer after %u turns: the model still calls run_python",
                        max_turns);
          ret = rt_error_hint (err, "raise --max-turns (at most 64), or ask for less");
          break;
        }
      ret = rt_chat_api_call (o, url, req, &msg, &usage, err);
      if (ret < 0)
        break;
      if (usage)
        {
          int64_t i = json_object_get_int64 (json_object_object_get (usage, "prompt_tokens"));
          int64_t u = json_object_get_int64 (json_object_object_get (usage, "completion_tokens"));
          in_tokens += i;
          out_tokens += u;
          if (priced)
            model_micros += ((i * pin + u * pout) * (peak ? 2 : 1) + 500000) / 1000000;
          json_object_put (usage);
        }
      /* Whole, reasoning_content included: the API wants it back.  */
      json_object_array_add (messages, msg);
      if (!json_object_object_get_ex (msg, "tool_calls", &tc) || tc == NULL || json_object_array_length (tc) == 0)
        {
          json_object_object_add (out, "answer", json_object_get (json_object_object_get (msg, "content")));
          break;
        }
      for (size_t i = 0; ret == 0 && i < json_object_array_length (tc); i++)
        ret = handle_call (ctx, o, json_object_array_get_idx (tc, i), ++calls, messages, &sandbox_micros, err);
    }
  /* A failure midway still says what was spent.  */
  {
    json_object *u = json_object_new_object (), *c = json_object_new_object ();
    json_object_object_add (u, "prompt_tokens", json_object_new_int64 (in_tokens));
    json_object_object_add (u, "completion_tokens", json_object_new_int64 (out_tokens));
    json_object_object_add (c, "model_micros", priced ? json_object_new_int64 (model_micros) : NULL);
    json_object_object_add (c, "sandbox_micros", json_object_new_int64 (sandbox_micros));
    json_object_object_add (out, "model", json_object_new_string (model));
    json_object_object_add (out, "messages", json_object_get (messages));
    json_object_object_add (out, "usage", u);
    json_object_object_add (out, "cost", c);
  }
  *transcript = strdup (json_object_to_json_string_ext (out, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  if (ret < 0)
    return ret;
  return *transcript ? 0 : rt_error_oom (err);
}
