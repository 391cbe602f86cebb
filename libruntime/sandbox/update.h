/* update.h - a sandbox's idle pause and auto-wake settings
 * (rt_sandbox_update, in runtime.h), auto-wake (rt_sandbox_auto_wake, in
 * fork.h), and the error of a paused sandbox that is not woken.
 *
 * The settings live in the sandbox's state (idlePauseSeconds, autoWake):
 * its monitor changes them when it runs (POST :update, monitor/idle.h);
 * a sandbox paused to disk has no monitor, so they are rewritten in its
 * state.json, where its wake reads them.
 */
#ifndef RT_SANDBOX_UPDATE_H
#define RT_SANDBOX_UPDATE_H

#include "sandbox/handle.h"

/* "sandbox_paused": what a verb that reaches the guest says of a paused
   sandbox it does not wake.  Return: -EAGAIN.  */
int rt_sandbox_paused_error (rt_sandbox *sb, rt_error **err);

/* The local driver (public/driver.h): these do what include/runtime.h
   says of their rt_ names, on this machine.  */
int rt_local_sandbox_update (rt_sandbox *sb, int idle_pause_s, int auto_wake, char **json, rt_error **err);

#endif
