/* phase.h - the monitor's lifecycle as a type: the phases a sandbox's
 * monitor goes through, which may follow which, and the one function that
 * moves it on and writes the state name the records show ("state" in
 * state.json and in the record; other processes read it).
 *
 *   STARTING  -> SPARE, RUNNING, STOPPED (a start that failed), PAUSED (a
 *                wake that failed before its guest ran: it stays paused)
 *   SPARE     -> RUNNING (claimed), STOPPING
 *   RUNNING   -> CAPTURING, PAUSING, STOPPING
 *   CAPTURING -> RUNNING (resumed), STOPPING
 *   PAUSING   -> PAUSED (saved), RUNNING (not saved: resumed), STOPPING
 *   PAUSED    -> STOPPING (a stop that came before the loop ended)
 *   STOPPING  -> STOPPED
 *
 * Every phase but CAPTURING shows as itself; a capture shows as
 * "running".  STARTING is never entered: it is where a monitor begins,
 * its state object as its creator wrote it ("starting"; a wake's
 * "resuming").  CAPTURING, PAUSING and the way back to RUNNING happen
 * within one callback of the event loop (the capture blocks it), so
 * api.sock never answers in them.
 *
 * The monitor's other booleans are not phases: a spare's claim not yet
 * confirmed (spare.h), the channel quiesced (channel.h), how it started
 * (clone, ran) and whether it was paused to disk (paused_to_disk, which a
 * stop after the pause does not undo: the state dir stays at the exit).
 */
#ifndef RT_MONITOR_PHASE_H
#define RT_MONITOR_PHASE_H

#include <stdbool.h>

struct mon;

enum mon_phase
{
  MON_STARTING,  /* "starting": the VM boots or loads, the agent answers */
  MON_SPARE,     /* "spare": started, its guest paused, nobody's yet */
  MON_RUNNING,   /* "running" */
  MON_CAPTURING, /* "running": a snapshot or a fork's capture */
  MON_PAUSING,   /* "pausing": saved to disk for a pause */
  MON_PAUSED,    /* "paused": saved, QEMU gone, the loop ending */
  MON_STOPPING,  /* "stopping": QEMU, the network, the execs going */
  MON_STOPPED,   /* "stopped": the record written, the loop ending */
};

/* Moves @m to @p and sets "state" in its state object to @p's name; the
   caller saves it (mon_save_state) once the rest of what the phase shows
   is set.  A transition the table does not allow is a bug: it is logged
   (monitor.log) and the phase stays.  Return: true when @p was entered.  */
bool mon_enter (struct mon *m, enum mon_phase p);

/* The table itself: whether @to may follow @from, and the state name @p
   shows (NULL out of range).  */
bool mon_phase_may_follow (enum mon_phase from, enum mon_phase to);
const char *mon_phase_state (enum mon_phase p);

/* STOPPING or STOPPED: stopping twice is stopping once.  */
bool mon_stopping (const struct mon *m);

#endif
