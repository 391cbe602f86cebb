/* test-trial.c - a reservation made at create is not lost to a concurrent
   extend or wake of another trial sandbox (rt_trial_hold) in the window
   before the new sandbox's state.json exists.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "records/store.h"
#include "tap.h"
#include "billing/trial.h"

static bool
reserved (const char *dir, const char *id)
{
  char path[512], *text = NULL;
  rt_error *err = NULL;
  bool found;

  snprintf (path, sizeof path, "%s/data/trial.json", dir);
  if (rt_read_file (path, &text, NULL, &err) < 0)
    {
      rt_error_free (err);
      return false;
    }
  found = strstr (text, id) != NULL;
  free (text);
  return found;
}

int
main (void)
{
  char dir[] = "/tmp/rt-trial.XXXXXX", path[512];
  rt_context *ctx = NULL;
  rt_error *err = NULL;
  const char *funding = NULL;
  unsigned lease = 600;
  int lock = -1, status;
  json_object *state;
  pid_t child;

  if (mkdtemp (dir) == NULL)
    return 1;
  snprintf (path, sizeof path, "%s/data", dir);
  setenv ("RUNTIME_DATA_DIR", path, 1);
  snprintf (path, sizeof path, "%s/state", dir);
  setenv ("RUNTIME_STATE_DIR", path, 1);
  if (rt_context_new (&ctx, &err) < 0)
    return 1;

  /* A creator, as rt_sandbox_create: the store lock, the sandbox's dir,
     the reservation; state.json comes later.  */
  ok (rt_store_lock (ctx, &lock, &err) == 0, "the creator holds the store lock");
  snprintf (path, sizeof path, "%s/state/sb-00000000000a", dir);
  mkdir (path, 0700);
  ok (rt_trial_reserve (ctx, "sb-00000000000a", "trial", 1, 256, &lease, &funding, NULL, &err) == 0
          && strcmp (funding, "trial") == 0,
      "a trial sandbox reserves its lease");
  ok (reserved (dir, "sb-00000000000a"), "… in trial.json");

  /* Meanwhile another sandbox's monitor takes a longer lease.  */
  child = fork ();
  if (child == 0)
    {
      int64_t more = 1800LL * 1000000;
      /* A monitor is another process: the creator's lock is not its own.  */
      close (lock);
      _exit (rt_trial_hold (ctx, "sb-00000000000b", 0, &more, false, NULL) == 0 ? 0 : 1);
    }
  usleep (300 * 1000);
  ok (waitpid (child, &status, WNOHANG) == 0, "the other sandbox's hold waits for the creator");
  state = json_object_new_object ();
  json_object_object_add (state, "id", json_object_new_string ("sb-00000000000a"));
  json_object_object_add (state, "state", json_object_new_string ("starting"));
  json_object_object_add (state, "funding", json_object_new_string ("trial"));
  rt_store_write_state (path, state, NULL);
  json_object_put (state);
  close (lock);
  ok (waitpid (child, &status, 0) == child && WIFEXITED (status) && WEXITSTATUS (status) == 0,
      "… and then holds its lease");
  ok (reserved (dir, "sb-00000000000a"), "the creator's reservation was not lost");
  ok (reserved (dir, "sb-00000000000b"), "… and the other one is there too");

  rt_context_free (ctx);
  snprintf (path, sizeof path, "rm -rf '%s'", dir);
  if (system (path) != 0)
    return 1;
  return tap_done ();
}
