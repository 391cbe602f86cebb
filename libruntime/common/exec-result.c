/* exec-result.c - an exec's end from and to JSON (exec-result.h).  */
#include <signal.h>
#include <string.h>

#include "common/exec-result.h"

/* A signal by number or by name; 0 for anything else.  128+N must stay an
   exit code, hence below 128.  */
static int
signal_of (json_object *v)
{
  const char *s;

  if (json_object_is_type (v, json_type_int))
    {
      int64_t n = json_object_get_int64 (v);
      return n > 0 && n < 128 ? (int) n : 0;
    }
  if (!json_object_is_type (v, json_type_string))
    return 0;
  s = json_object_get_string (v);
  if (strncmp (s, "SIG", 3) == 0)
    s += 3;
  for (int i = 1; i < NSIG && i < 128; i++)
    if (sigabbrev_np (i) && strcmp (sigabbrev_np (i), s) == 0)
      return i;
  return 0;
}

void
rt_exec_result_from_json (json_object *o, rt_exec_result *res)
{
  const char *state = rt_json_str (o, "state");
  json_object *v;
  int64_t code = 255, ms;

  res->signal = json_object_object_get_ex (o, "signal", &v) ? signal_of (v) : 0;
  if (json_object_object_get_ex (o, "exitCode", &v) && json_object_is_type (v, json_type_int))
    code = json_object_get_int64 (v);
  else if (res->signal)
    code = 128 + res->signal;
  res->exit_code = code >= 0 && code <= 255 ? (int) code : 255;
  res->timed_out = (json_object_object_get_ex (o, "timedOut", &v) && json_object_is_type (v, json_type_boolean)
                    && json_object_get_boolean (v))
                   || (state && strcmp (state, "timed_out") == 0);
  if (res->timed_out)
    res->exit_code = 124;
  ms = rt_json_i64 (o, "durationMs");
  res->duration_ms = ms > 0 ? (uint64_t) ms : 0;
}

void
rt_exec_result_to_json (const rt_exec_result *res, json_object *o)
{
  json_object_object_add (o, "exitCode", json_object_new_int (res->exit_code));
  json_object_object_add (o, "signal", json_object_new_int (res->signal));
  json_object_object_add (o, "timedOut", json_object_new_boolean (res->timed_out));
  json_object_object_add (o, "durationMs", json_object_new_int64 ((int64_t) res->duration_ms));
}
