/* test-idle.c - the :update body (monitor/idle.h): what idle pause and
   auto-wake settings a client may set, and that anything else (a wrong
   type, a value out of range, a member nobody knows) is refused by name
   before it touches the sandbox.  */
#include <string.h>

#include "monitor/idle.h"
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

int
main (void)
{
  static const char *const bad[] = {
    "{\"idlePauseSeconds\":9}",       "{\"idlePauseSeconds\":86401}", "{\"idlePauseSeconds\":-1}",
    "{\"idlePauseSeconds\":\"60\"}",  "{\"idlePauseSeconds\":60.5}",  "{\"idlePauseSeconds\":true}",
    "{\"idlePauseSeconds\":null}",    "{\"idlePauseSeconds\":4294967306}", "{\"autoWake\":1}",
    "{\"autoWake\":\"true\"}",        "{\"autoWake\":null}",
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
    ok (parse (big, &idle, &wake, msg) < 0 && strstr (msg, "member-with-a-long-name-000"), "many unknown members: %.60s…",
        msg);
  }
  return tap_done ();
}
