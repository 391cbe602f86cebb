/* test-idle.c - the :update body (monitor/idle.h): what idle pause and
   auto-wake settings a client may set, and that anything else (a wrong
   type, a value out of range, a member nobody knows) is refused by name
   before it touches the sandbox.  Then the library's side
   (sandbox/update.h) on a fake state dir with no VM: a sandbox paused to
   disk (state "paused", no monitor) gets its settings in state.json, and
   the verbs that reach the guest say sandbox_paused, or wake it.  */
#include <string.h>
#include <sys/stat.h>

#include "monitor/idle.h"
#include "sandbox/fork.h"
#include "common/pidfile.h"
#include "records/store.h"
#include "sandbox/update.h"
#include "tap.h"

/* mon_idle_parse_update of @text; @msg "code: message" when refused.  */
static int
parse (const char *text, int *idle, int *wake, char msg[256])
{
  json_object *body = json_tokener_parse (text);
  rt_error *err = NULL;
  int ret = mon_idle_parse_update (body, idle, wake, &err);

  msg[0] = '\0';
  if (err)
    snprintf (msg, 256, "%s: %s", err->code, err->msg);
  rt_error_free (err);
  json_object_put (body);
  return ret;
}

static json_object *
state_of (rt_sandbox *sb)
{
  char path[600], *data = NULL;
  json_object *o;

  snprintf (path, sizeof path, "%s/state.json", sb->dir);
  if (rt_read_file (path, &data, NULL, NULL) < 0)
    return NULL;
  o = json_tokener_parse (data);
  free (data);
  return o;
}

static void
put_state (rt_sandbox *sb, const char *text)
{
  json_object *o = json_tokener_parse (text);
  mkdir (sb->dir, 0700);
  rt_store_write_state (sb->dir, o, NULL);
  json_object_put (o);
}

/* The settings of @sb's state.json as "IDLE/WAKE".  */
static const char *
settings (rt_sandbox *sb)
{
  static char out[64];
  json_object *o = state_of (sb);
  snprintf (out, sizeof out, "%lld/%s", (long long) rt_json_i64 (o, "idlePauseSeconds"),
            json_object_get_boolean (json_object_object_get (o, "autoWake")) ? "on" : "off");
  json_object_put (o);
  return out;
}

static void
library (void)
{
  static const char *const argv[] = { "true", NULL };
  char dir[] = "/tmp/rt-idle.XXXXXX", pidfile[600];
  rt_context *ctx = NULL;
  rt_error *err = NULL;
  rt_exec_result res;
  rt_sandbox *sb;
  char *json = NULL;
  int ret;

  if (mkdtemp (dir) == NULL)
    return;
  setenv ("RUNTIME_DATA_DIR", dir, 1);
  setenv ("RUNTIME_STATE_DIR", dir, 1);
  if (rt_context_new (&ctx, &err) < 0)
    return;
  sb = rt_sandbox_handle_new (ctx, "sb-idle");
  put_state (sb, "{\"id\":\"sb-idle\",\"state\":\"paused\",\"idlePauseSeconds\":0,\"autoWake\":false}");

  ret = rt_sandbox_exec (sb, argv, NULL, &res, &err);
  ok (ret < 0 && err && strcmp (err->code, "sandbox_paused") == 0 && strcmp (err->msg, "sandbox sb-idle is paused") == 0
          && err->hint && strcmp (err->hint, "runtime sandbox wake sb-idle (or turn on --auto-wake)") == 0,
      "paused to disk, no auto-wake: exec says sandbox_paused, with the wake as its hint");
  rt_error_free (err);
  err = NULL;
  ret = rt_sandbox_ps_json (sb, &json, &err);
  ok (ret < 0 && err && strcmp (err->code, "sandbox_paused") == 0, "and so does ps");
  rt_error_free (err);
  err = NULL;

  ret = rt_sandbox_update (sb, 600, 1, &json, &err);
  ok (ret == 0 && strcmp (settings (sb), "600/on") == 0 && json && strstr (json, "\"idlePauseSeconds\":600"),
      "update of a paused sandbox: state.json rewritten (%s)", settings (sb));
  free (json);
  json = NULL;
  ret = rt_sandbox_update (sb, -1, 0, NULL, &err);
  ok (ret == 0 && strcmp (settings (sb), "600/off") == 0, "-1 keeps a setting (%s)", settings (sb));
  ret = rt_sandbox_update (sb, 5, 1, NULL, &err);
  ok (ret < 0 && err && strcmp (err->code, "invalid_request") == 0 && strcmp (settings (sb), "600/off") == 0,
      "5 s refused, nothing written");
  rt_error_free (err);
  err = NULL;
  ret = rt_sandbox_update (sb, -1, 2, NULL, &err);
  ok (ret < 0 && err && strcmp (err->code, "invalid_request") == 0, "autoWake 2 refused");
  rt_error_free (err);
  err = NULL;

  rt_sandbox_update (sb, -1, 1, NULL, NULL);
  ret = rt_sandbox_auto_wake (sb, &err);
  ok (ret < 0 && err && strcmp (err->code, "sandbox_paused") != 0,
      "auto-wake on: the wake is tried (here it has nothing to wake: %s)", err ? err->code : "none");
  rt_error_free (err);
  err = NULL;

  put_state (sb, "{\"id\":\"sb-idle\",\"state\":\"running\",\"autoWake\":false}");
  ok (rt_sandbox_auto_wake (sb, NULL) == 0, "a running sandbox is not woken");
  /* An in-memory pause: the monitor lives and answers for itself.  */
  put_state (sb, "{\"id\":\"sb-idle\",\"state\":\"paused\",\"idlePauseSeconds\":30,\"autoWake\":false}");
  snprintf (pidfile, sizeof pidfile, "%s/monitor.pid", sb->dir);
  rt_write_pidfile (pidfile, getpid (), NULL);
  ok (rt_sandbox_auto_wake (sb, NULL) == 0, "paused with a live monitor: left to the monitor");
  ret = rt_sandbox_update (sb, 60, -1, NULL, &err);
  ok (ret < 0 && err && strcmp (err->code, "sandbox_not_ready") == 0 && strcmp (settings (sb), "30/off") == 0,
      "with a live monitor the update goes to it, not to state.json");
  rt_error_free (err);

  rt_sandbox_close (sb);
  rt_rm_rf (dir, NULL);
  rt_context_free (ctx);
}

int
main (void)
{
  static const char *const bad[] = {
    "{\"idlePauseSeconds\":9}",
    "{\"idlePauseSeconds\":86401}",
    "{\"idlePauseSeconds\":-1}",
    "{\"idlePauseSeconds\":\"60\"}",
    "{\"idlePauseSeconds\":60.5}",
    "{\"idlePauseSeconds\":true}",
    "{\"idlePauseSeconds\":null}",
    "{\"idlePauseSeconds\":4294967306}",
    "{\"autoWake\":1}",
    "{\"autoWake\":\"true\"}",
    "{\"autoWake\":null}",
  };
  char msg[256];
  int idle, wake;

  ok (parse ("{}", &idle, &wake, msg) == 0 && idle == -1 && wake == -1, "an empty update keeps both");
  ok (parse ("{\"idlePauseSeconds\":0}", &idle, &wake, msg) == 0 && idle == 0 && wake == -1, "0 turns idle pause off");
  ok (parse ("{\"idlePauseSeconds\":10}", &idle, &wake, msg) == 0 && idle == 10, "10 s is the least");
  ok (parse ("{\"idlePauseSeconds\":86400}", &idle, &wake, msg) == 0 && idle == 86400, "a day is the most");
  ok (parse ("{\"autoWake\":true,\"idlePauseSeconds\":300}", &idle, &wake, msg) == 0 && idle == 300 && wake == 1,
      "both at once");
  ok (parse ("{\"autoWake\":false}", &idle, &wake, msg) == 0 && wake == 0 && idle == -1, "autoWake off");
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    ok (parse (bad[i], &idle, &wake, msg) < 0 && strncmp (msg, "invalid_request: ", 17) == 0, "%s refused (%s)", bad[i],
        msg);
  ok (parse ("{\"name\":\"x\",\"autoWake\":true,\"bogus\":1}", &idle, &wake, msg) < 0 && strstr (msg, "'name'")
          && strstr (msg, "'bogus'") && !strstr (msg, "'autoWake'"),
      "unknown members are named, known ones not (%s)", msg);
  {
    /* A flood of long unknown names stays one bounded message.  */
    char big[8192] = "{";
    for (int i = 0; i < 100; i++)
      snprintf (big + strlen (big), sizeof big - strlen (big), "%s\"member-with-a-long-name-%03d\":1", i ? "," : "", i);
    strcat (big, "}");
    ok (parse (big, &idle, &wake, msg) < 0 && strstr (msg, "member-with-a-long-name-000"),
        "many unknown members: %.60s…", msg);
  }
  library ();
  return tap_done ();
}
