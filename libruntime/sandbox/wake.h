/* wake.h - pause to disk and wake (rt_sandbox_pause, rt_sandbox_wake),
   and what a woken sandbox or a snapshot's child needs of its saved VM to
   get a monitor (snapshot/saved.h).  */
#ifndef RT_SANDBOX_WAKE_H
#define RT_SANDBOX_WAKE_H

#include "monitor/monitor.h"
#include "sandbox/handle.h"

/* What a monitor started from @saved runs with that the saved VM does
   not hold, read from its meta.json's "sandbox": the environment (with
   the secrets' placeholders), the workdir, the secrets' env; the strings
   are @saved's.  */
struct rt_saved_settings
{
  char **env;         /* NULL-terminated, the pointers to free */
  char **secret_env;  /* NULL-terminated, the pointers to free */
  const char *workdir;
  bool stop_on_timeout;
  bool trial;
};
int rt_saved_settings_get (const struct rt_saved *saved, struct rt_saved_settings *out, rt_error **err);
void rt_saved_settings_clear (struct rt_saved_settings *s);

/* Holds <state dir>/wake.lock in *fd: one waker, stopper or snapshot of
   a paused sandbox at a time.  */
int rt_sandbox_lock_wake (rt_sandbox *sb, int *fd, rt_error **err);

/* The sandbox's state.json; NULL ("not_found") when it has none.  */
json_object *rt_sandbox_read_state (rt_sandbox *sb, rt_error **err);

/* 1 when sandbox @sb is paused to disk (its state says so and no
   monitor runs), 0 when not, <0 on error.  */
int rt_sandbox_is_paused (rt_sandbox *sb, rt_error **err);

/* Ends sandbox @sb paused to disk (stop, rm): its record written with
   @reason, its saved VM and disk removed.  0 too when it is not paused.  */
int rt_sandbox_end_paused (rt_sandbox *sb, const char *reason, rt_error **err);

/* The local driver (public/driver.h): these do what include/runtime.h
   says of their rt_ names, on this machine.  */
int rt_local_sandbox_pause (rt_sandbox *sb, rt_error **err);
int rt_local_sandbox_wake (rt_sandbox *sb, rt_error **err);

#endif
