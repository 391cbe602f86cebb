/* test-exec-result.c - rt_exec_result_from_json: whatever a hostile guest
   puts in its EXIT frame (or the server in its exit event), the result is
   an exit code 0..255 and a signal below 128; the honest shapes read as
   they are.  */
#include <string.h>

#include "common/exec-result.h"
#include "tap.h"

/* @json read; NULL for a payload that is not JSON.  */
static rt_exec_result
read_result (const char *json)
{
  cleanup_json json_object *o = json ? json_tokener_parse (json) : NULL;
  rt_exec_result res;

  memset (&res, 0x5a, sizeof (res));
  res.interrupted = false;
  rt_exec_result_from_json (o, &res);
  return res;
}

static void
is_exit (const char *json, int exit_code, int sig, const char *what)
{
  rt_exec_result r = read_result (json);

  ok (r.exit_code == exit_code && r.signal == sig, "%s", what);
  if (r.exit_code != exit_code || r.signal != sig)
    printf ("# got exit %d signal %d, want %d %d\n", r.exit_code, r.signal, exit_code, sig);
}

int
main (void)
{
  rt_exec_result r;

  r = read_result ("{\"exitCode\":3,\"signal\":0,\"timedOut\":false,\"durationMs\":42}");
  ok (r.exit_code == 3 && r.signal == 0 && !r.timed_out && r.duration_ms == 42 && !r.interrupted,
      "the agent's EXIT reads as it is");
  is_exit ("{\"exitCode\":137,\"signal\":9}", 137, 9, "a kill: 128+9 and signal 9");
  is_exit ("{\"signal\":9}", 137, 9, "no exitCode after a signal: 128+signal");
  is_exit ("{\"signal\":\"SIGKILL\"}", 137, 9, "a signal by name (the API's)");
  is_exit ("{\"signal\":\"TERM\",\"exitCode\":143}", 143, 15, "a name without SIG");
  is_exit ("{\"exitCode\":99999999999999}", 255, 0, "a huge exitCode: 255");
  is_exit ("{\"exitCode\":18446744073709551615}", 255, 0, "an exitCode past int64: 255");
  is_exit ("{\"exitCode\":256}", 255, 0, "256: 255");
  is_exit ("{\"exitCode\":-1}", 255, 0, "a negative exitCode: 255");
  is_exit ("{\"exitCode\":-2147483648}", 255, 0, "INT_MIN: 255");
  is_exit ("{\"exitCode\":-9223372036854775808}", 255, 0, "INT64_MIN: 255");
  is_exit ("{\"exitCode\":\"7\"}", 255, 0, "a string exitCode: 255, not 7");
  is_exit ("{\"exitCode\":3.5}", 255, 0, "a fractional exitCode: 255");
  is_exit ("{\"exitCode\":true}", 255, 0, "a boolean exitCode: 255");
  is_exit ("{\"exitCode\":null}", 255, 0, "a null exitCode: 255");
  is_exit ("{\"exitCode\":[1]}", 255, 0, "an array exitCode: 255");
  is_exit ("{}", 255, 0, "no exitCode: 255");
  is_exit (NULL, 255, 0, "a payload that is not JSON: 255");
  is_exit ("[0]", 255, 0, "JSON that is not an object: 255");
  is_exit ("{\"signal\":2147483647}", 255, 0, "a huge signal without exitCode: 255, signal 0 (no 128+N overflow)");
  is_exit ("{\"signal\":9223372036854775807,\"exitCode\":1}", 1, 0, "a huge signal: 0");
  is_exit ("{\"signal\":-9}", 255, 0, "a negative signal: 0");
  is_exit ("{\"signal\":128}", 255, 0, "signal 128 would make 256: 0");
  is_exit ("{\"signal\":\"SIGNOPE\"}", 255, 0, "an unknown signal name: 0");
  is_exit ("{\"signal\":\"SIG\"}", 255, 0, "SIG alone: 0");
  is_exit ("{\"signal\":{}}", 255, 0, "a signal object: 0");
  r = read_result ("{\"exitCode\":0,\"timedOut\":true}");
  ok (r.exit_code == 124 && r.timed_out, "timedOut: 124");
  r = read_result ("{\"exitCode\":999,\"state\":\"timed_out\"}");
  ok (r.exit_code == 124 && r.timed_out, "the API's state timed_out: 124");
  r = read_result ("{\"exitCode\":5,\"timedOut\":\"yes\"}");
  ok (r.exit_code == 5 && !r.timed_out, "a timedOut that is not a boolean is not a timeout");
  r = read_result ("{\"exitCode\":0,\"durationMs\":-5}");
  ok (r.duration_ms == 0, "a negative duration: 0");
  r = read_result ("{\"exitCode\":0,\"durationMs\":\"x\"}");
  ok (r.duration_ms == 0, "a string duration: 0");
  {
    cleanup_json json_object *o = json_object_new_object ();
    rt_exec_result in = { .exit_code = 124, .signal = 0, .timed_out = true, .duration_ms = 7 }, back;
    rt_exec_result_to_json (&in, o);
    memset (&back, 0, sizeof (back));
    rt_exec_result_from_json (o, &back);
    ok (back.exit_code == 124 && back.timed_out && back.duration_ms == 7 && back.signal == 0,
        "written and read back, the same");
  }
  return tap_done ();
}
