/* test-state.c - enum rt_sandbox_state: each value's name and back, bad
   names and values out of range; rt_sandbox_state on the records of
   ended sandboxes (no VM): a known state, an unknown one, none, and a
   sandbox without a record; and in client mode, against a server of one
   fixed answer on 127.0.0.1: a known state and one this library has no
   value for.  */
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "records/handle.h"
#include "records/store.h"
#include "tap.h"

static const char *const names[] = { "starting", "running", "pausing", "paused", "resuming", "stopping", "stopped" };
#define N_NAMES (sizeof (names) / sizeof (names[0]))

static void
test_names (void)
{
  enum rt_sandbox_state state;

  for (size_t i = 0; i < N_NAMES; i++)
    {
      const char *name = rt_sandbox_state_name ((enum rt_sandbox_state) i);
      state = i ? RT_SANDBOX_STARTING : RT_SANDBOX_STOPPED;
      ok (name && strcmp (name, names[i]) == 0, "value %zu is named %s", i, names[i]);
      ok (rt_sandbox_state_parse (names[i], &state) == 0 && state == (enum rt_sandbox_state) i, "%s parses to %zu",
          names[i], i);
    }
  ok (rt_sandbox_state_parse ("paused", NULL) == 0, "a NULL @state only checks the name");
  ok (RT_SANDBOX_STOPPED == N_NAMES - 1, "seven values, the last stopped");
}

static void
test_bad (void)
{
  static const char *const bad[]
      = { "", "spare", "Running", "RUNNING", "running ", " running", "run", "stoppedx", "ready", "live", "1" };
  enum rt_sandbox_state state = RT_SANDBOX_RESUMING;

  ok (rt_sandbox_state_parse (NULL, &state) < 0 && state == RT_SANDBOX_RESUMING, "NULL is no name, state untouched");
  for (size_t i = 0; i < sizeof (bad) / sizeof (bad[0]); i++)
    ok (rt_sandbox_state_parse (bad[i], &state) < 0 && state == RT_SANDBOX_RESUMING, "'%s' is no state", bad[i]);
  ok (rt_sandbox_state_name ((enum rt_sandbox_state) N_NAMES) == NULL, "value %zu (one past stopped): NULL", N_NAMES);
  ok (rt_sandbox_state_name ((enum rt_sandbox_state) 1000) == NULL, "value 1000: NULL");
  ok (rt_sandbox_state_name ((enum rt_sandbox_state) (-1)) == NULL, "value -1: NULL");
}

/* rt_sandbox_state of a handle on @id, whose record (when @state_json is
   not NULL) is {"id": @id} and @state_json's members: 0 with *state set,
   or the error's code in @code.  */
static int
state_of (rt_context *ctx, const char *id, const char *state_json, enum rt_sandbox_state *state, char code[64])
{
  cleanup_sandbox rt_sandbox *sb = rt_sandbox_handle_new (ctx, id);
  rt_error *err = NULL;
  int ret;

  if (state_json)
    {
      json_object *rec = json_tokener_parse (state_json);
      json_object_object_add (rec, "id", json_object_new_string (id));
      ret = rt_store_write_record (ctx, rec, &err);
      json_object_put (rec);
      if (ret < 0)
        {
          printf ("# %s: %s\n", id, err->msg);
          rt_error_free (err);
          return ret;
        }
    }
  ret = rt_sandbox_state (sb, state, &err);
  snprintf (code, 64, "%s", err ? err->code : "no error");
  rt_error_free (err);
  return ret;
}

static void
test_records (rt_context *ctx)
{
  enum rt_sandbox_state state = RT_SANDBOX_STARTING;
  char code[64];

  ok (state_of (ctx, "sb-state-stopped", "{\"state\": \"stopped\"}", &state, code) == 0 && state == RT_SANDBOX_STOPPED,
      "an ended sandbox's record: stopped (%s)", code);
  ok (state_of (ctx, "sb-state-paused", "{\"state\": \"paused\"}", &state, code) == 0 && state == RT_SANDBOX_PAUSED,
      "a record that says paused: paused (%s)", code);
  state = RT_SANDBOX_RUNNING;
  ok (state_of (ctx, "sb-state-spare", "{\"state\": \"spare\"}", &state, code) < 0 && strcmp (code, "internal") == 0
          && state == RT_SANDBOX_RUNNING,
      "a state with no value: internal (%s), state untouched", code);
  ok (state_of (ctx, "sb-state-none", "{}", &state, code) < 0 && strcmp (code, "internal") == 0,
      "no state at all: internal (%s)", code);
  ok (state_of (ctx, "sb-state-number", "{\"state\": 3}", &state, code) < 0 && strcmp (code, "internal") == 0,
      "a state that is no string: internal (%s)", code);
  ok (state_of (ctx, "sb-state-gone", NULL, &state, code) < 0 && strcmp (code, "not_found") == 0,
      "no record: not_found (%s)", code);
}

/* A server that answers every request with 200 and @body, until killed;
   its port in *port.  */
static pid_t
serve_body (const char *body, int *port)
{
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  socklen_t len = sizeof (a);
  int s = socket (AF_INET, SOCK_STREAM, 0);
  pid_t pid;

  if (s < 0 || bind (s, (struct sockaddr *) &a, sizeof (a)) < 0 || listen (s, 8) < 0
      || getsockname (s, (struct sockaddr *) &a, &len) < 0)
    {
      if (s >= 0)
        close (s);
      return -1;
    }
  *port = ntohs (a.sin_port);
  pid = fork ();
  if (pid != 0)
    {
      close (s);
      return pid;
    }
  for (;;)
    {
      char head[8192] = "", reply[1024];
      size_t got = 0;
      ssize_t n;
      int c = accept (s, NULL, NULL), m;

      /* The whole request head (a GET has no body), then the answer.  */
      while (c >= 0 && strstr (head, "\r\n\r\n") == NULL && got < sizeof (head) - 1
             && (n = read (c, head + got, sizeof (head) - 1 - got)) > 0)
        got += (size_t) n;
      m = snprintf (reply, sizeof (reply),
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                    "Connection: close\r\n\r\n%s",
                    strlen (body), body);
      if (c < 0 || write (c, reply, (size_t) m) != m)
        _exit (1);
      close (c);
    }
}

/* rt_sandbox_state in client mode, the server answering @body.  */
static int
remote_state (const char *body, enum rt_sandbox_state *state, char code[64])
{
  char url[64];
  int port = 0, ret = -1;
  pid_t pid = serve_body (body, &port);
  rt_context *ctx = NULL;

  snprintf (code, 64, "no server");
  snprintf (url, sizeof (url), "http://127.0.0.1:%d", port);
  setenv ("RUNTIME_API_URL", url, 1);
  setenv ("RUNTIME_API_KEY", "rt_test", 1);
  if (pid > 0 && rt_context_new (&ctx, NULL) == 0)
    ret = state_of (ctx, "sb-000000000001", NULL, state, code);
  rt_context_free (ctx);
  unsetenv ("RUNTIME_API_URL");
  unsetenv ("RUNTIME_API_KEY");
  if (pid > 0)
    {
      kill (pid, SIGKILL);
      waitpid (pid, NULL, 0);
    }
  return ret;
}

static void
test_remote (void)
{
  enum rt_sandbox_state state = RT_SANDBOX_STARTING;
  char code[64];

  ok (remote_state ("{\"id\": \"sb-000000000001\", \"state\": \"paused\"}", &state, code) == 0
          && state == RT_SANDBOX_PAUSED,
      "client mode: the server's paused (%s)", code);
  ok (remote_state ("{\"id\": \"sb-000000000001\", \"state\": \"hibernating\"}", &state, code) < 0
          && strcmp (code, "internal") == 0 && state == RT_SANDBOX_PAUSED,
      "client mode: a state the library has no value for is internal (%s)", code);
}

int
main (void)
{
  char dir[] = "/tmp/test-state-XXXXXX";
  rt_context *ctx = NULL;
  rt_error *err = NULL;

  test_names ();
  test_bad ();
  if (mkdtemp (dir) == NULL)
    return 1;
  setenv ("RUNTIME_DATA_DIR", dir, 1);
  setenv ("RUNTIME_STATE_DIR", dir, 1);
  setenv ("RUNTIME_CACHE_DIR", dir, 1);
  unsetenv ("RUNTIME_API_URL");
  ok (rt_context_new (&ctx, &err) == 0, "a context of this machine");
  if (ctx)
    test_records (ctx);
  rt_context_free (ctx);
  test_remote ();
  rt_rm_rf (dir, NULL);
  return tap_done ();
}
