/* trial.h - the free trial: 50 sandbox-hours of wall-clock running time
 * shared by every trial sandbox.  A live trial sandbox holds its whole
 * lease (reserved at create, <data>/trial.json); once it ends, only the
 * time it ran (the ledger's) counts and the rest is given back.
 */
#ifndef RT_TRIAL_H
#define RT_TRIAL_H

#include "core/context.h"

#define RT_TRIAL_US (50LL * 3600 * 1000000)
#define RT_TRIAL_MAX_RUNNING 8
#define RT_TRIAL_MAX_VCPU 2
#define RT_TRIAL_MAX_MIB 4096

/* Microseconds left, and (if @running) how many trial sandboxes run.  */
int rt_trial_left (rt_context *ctx, int64_t *left_us, int *running, rt_error **err);
/* Decides a new sandbox's funding (@want "trial", "paid" or NULL for
   trial while hours remain) and, for a trial, reserves its lease, which
   may be shortened to what is left.  invalid_trial, trial_busy,
   trial_exhausted for a --trial that cannot be.  *@why: with @want NULL
   and "paid" chosen, why (a static string), else left as it was.  The caller holds the
   store lock (rt_store_lock) and writes the sandbox's state.json before
   letting it go.  */
int rt_trial_reserve (rt_context *ctx, const char *id, const char *want, unsigned vcpu, unsigned memory_mib,
                      unsigned *lease_s, const char **funding, const char **why, rt_error **err);

/* A trial sandbox that ran @ran_us takes a lease of *@lease_us from now:
   it grew (extend) or began again (wake).  It then holds @ran_us +
   *@lease_us in all; trial_exhausted when the trial has not that.  With
   @shorten, a lease is cut to what is left, as at create, and refused
   only when less than a minute is.  Takes the store lock: not to be
   called with it held.  */
int rt_trial_hold (rt_context *ctx, const char *id, int64_t ran_us, int64_t *lease_us, bool shorten, rt_error **err);

#endif
