/* ledger.h - <data>/ledger/ledger.jsonl: what every sandbox ran and was
 * charged, written by its monitor, read by `runtime usage` and the trial.
 *
 * One JSON object a line, appended with one write(2) on an O_APPEND fd (the
 * lines of concurrent monitors never interleave), then fdatasync.  Records
 * are cumulative: the last line of a sandbox is its whole account, so a
 * lost or torn line costs at most one interval; a reader keeps the last
 * complete line per id and skips one cut short.
 *
 * A record, fields in this order:
 *   t            string   when it was written, UTC "YYYY-MM-DDTHH:MM:SS.mmmZ"
 *   id           string   the sandbox id
 *   name         string   its name, or null
 *   funding      string   "trial" or "paid" (null: an older sandbox, paid)
 *   createdAt    string   when it was created, same format as t
 *   state        string   "running", "paused", "stopped" (its state then)
 *   stopReason   string   once stopped: "requested", "time_limit",
 *                         "host_stopped"; null before
 *   tenant       string   the API token that made it (core/context.h);
 *                         absent for the host's own sandboxes
 *   vcpu         integer  vCPUs
 *   memoryMiB    integer  memory, MiB
 *   runningUs    integer  wall-clock running time so far, microseconds
 *                         (from the VM answering; paused time excluded)
 *   cpuUs        integer  measured CPU time of its vCPU threads, microseconds
 *   billedCpuUs  integer  CPU time billed, microseconds: per sample,
 *                         max(measured, floor × wall) (price.h)
 *   micros       integer  charged so far, microdollars; 0 for a trial
 *
 * When: once when the VM answers (state "running"), then every
 * RT_LEDGER_INTERVAL_S seconds while the monitor runs (running or paused),
 * at each pause (state "paused") and at the stop (state "stopped").
 */
#ifndef RT_LEDGER_H
#define RT_LEDGER_H

#include <stdint.h>

#include "core/context.h"

/* Seconds between two records of a live sandbox.  */
#define RT_LEDGER_INTERVAL_S 5

/* The numbers of a record; the rest comes from the sandbox's state.  */
struct rt_ledger_usage
{
  unsigned vcpu;
  unsigned memory_mib;
  uint64_t running_us, cpu_us, billed_cpu_us;
  int64_t micros;
};

/* Opens the ledger for appending (creating <data>/ledger, 0700, and the
   file, 0600) into *@fd; startup_failed when it cannot.  */
int rt_ledger_open (rt_context *ctx, int *fd, rt_error **err);

/* Appends one record: t, then id, name, funding, createdAt, state,
   stopReason and (when set) tenant from @state (a sandbox state object),
   then @u.  Best effort: a record that cannot be written is lost, the
   next one covers it.  */
void rt_ledger_write (int fd, json_object *state, const struct rt_ledger_usage *u);

/* Every sandbox's last record, in the order they first appear in the
   ledger, as a new JSON array in *@out.  */
int rt_ledger_fold (rt_context *ctx, json_object **out, rt_error **err);

/* Drops from the folded @rows every record not of @tenant (records
   without one are the host's own).  */
void rt_ledger_keep_tenant (json_object *rows, const char *tenant);

#endif
