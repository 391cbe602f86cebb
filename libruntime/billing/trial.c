/* trial.c - the free trial's accounting (see trial.h).  */
#include <string.h>

#include "billing/ledger.h"
#include "billing/trial.h"
#include "records/store.h"
#include "records/list.h"

static int64_t
get_i64 (json_object *o, const char *key)
{
  json_object *v;
  return json_object_object_get_ex (o, key, &v) ? json_object_get_int64 (v) : 0;
}

/* Under the trial lock: what is used, with @reserved pruned to live
   sandboxes.  */
static int
tally (rt_context *ctx, json_object *reserved, int64_t *used_us, int *running, rt_error **err)
{
  cleanup_json json_object *rows = NULL, *live = NULL, *live_ids = json_object_new_object ();
  cleanup_json json_object *ledger_ids = json_object_new_object ();
  const char *gone[256];
  size_t ngone = 0;
  int ret = rt_ledger_fold (ctx, &rows, err);

  if (ret == 0)
    ret = rt_store_list_unscoped (ctx, false, &live, err);
  if (ret < 0)
    return ret;
  for (size_t i = 0; i < json_object_array_length (live); i++)
    json_object_object_add (live_ids, rt_json_str (json_object_array_get_idx (live, i), "id"), NULL);
  *used_us = 0;
  *running = 0;
  for (size_t i = 0; i < json_object_array_length (rows); i++)
    {
      json_object *o = json_object_array_get_idx (rows, i);
      const char *funding = rt_json_str (o, "funding"), *id = rt_json_str (o, "id");
      int64_t ran = get_i64 (o, "runningUs");
      if (id)
        json_object_object_add (ledger_ids, id, NULL);
      if (funding == NULL || strcmp (funding, "trial") != 0 || id == NULL)
        continue;
      if (json_object_object_get_ex (live_ids, id, NULL))
        {
          int64_t held = get_i64 (reserved, id);
          *used_us += held > ran ? held : ran;
        }
      else
        *used_us += ran;
    }
  {
    json_object_object_foreach (reserved, id, v)
    {
      if (!json_object_object_get_ex (live_ids, id, NULL))
        {
          if (ngone < 256)
            gone[ngone++] = id;
          continue;
        }
      (*running)++;
      /* Booting, not yet in the ledger: its lease is held all the same.  */
      if (!json_object_object_get_ex (ledger_ids, id, NULL))
        *used_us += json_object_get_int64 (v);
    }
  }
  for (size_t i = 0; i < ngone; i++)
    json_object_object_del (reserved, gone[i]);
  return 0;
}

/* Takes trial.lock, and first the store lock into @store_lock unless the
   caller holds it (create does).  tally() counts as live only sandboxes
   with a state.json, and a creator reserves before it writes that file:
   without the store lock, a concurrent tally (extend, wake) would see the
   new reservation as a dead sandbox's, prune it and write trial.json back
   without it.  Creators write state.json under the store lock, so holding
   it here means every reservation's sandbox is visible.  The order is
   always store lock, then trial.lock.  */
static int
locked_state (rt_context *ctx, int *store_lock, int *lock, json_object **reserved, char **path, rt_error **err)
{
  cleanup_free char *lockpath = rt_strdup_printf ("%s/trial.lock", ctx->data_dir);
  cleanup_free char *text = NULL;
  cleanup_error rt_error *e = NULL;
  int ret;

  *path = rt_strdup_printf ("%s/trial.json", ctx->data_dir);
  if (lockpath == NULL || *path == NULL)
    return rt_error_oom (err);
  ret = store_lock ? rt_store_lock (ctx, store_lock, err) : 0;
  if (ret == 0)
    ret = rt_mkdir_p (ctx->data_dir, 0755, err);
  if (ret == 0)
    ret = rt_lock_file (lockpath, lock, err);
  if (ret < 0)
    return ret;
  if (rt_read_file (*path, &text, NULL, &e) == 0)
    *reserved = json_tokener_parse (text);
  if (*reserved == NULL || !json_object_is_type (*reserved, json_type_object))
    {
      json_object_put (*reserved);
      *reserved = json_object_new_object ();
    }
  return *reserved ? 0 : rt_error_oom (err);
}

int
rt_trial_left (rt_context *ctx, int64_t *left_us, int *running, rt_error **err)
{
  cleanup_close int store_lock = -1, lock = -1;
  cleanup_json json_object *reserved = NULL;
  cleanup_free char *path = NULL;
  int64_t used;
  int n, ret = locked_state (ctx, &store_lock, &lock, &reserved, &path, err);

  if (ret == 0)
    ret = tally (ctx, reserved, &used, &n, err);
  if (ret < 0)
    return ret;
  *left_us = used < RT_TRIAL_US ? RT_TRIAL_US - used : 0;
  if (running)
    *running = n;
  return 0;
}

#define STR_(x) #x
#define STR(x) STR_ (x)

/* Why a sandbox with no funding asked for is not the trial's, or NULL
   when it may be.  */
static const char *
why_paid (unsigned vcpu, unsigned memory_mib, int running, int64_t left, unsigned lease_s)
{
  if (vcpu > RT_TRIAL_MAX_VCPU)
    return STR (RT_TRIAL_MAX_VCPU) " vCPUs are the trial's most";
  if (memory_mib > RT_TRIAL_MAX_MIB)
    return STR (RT_TRIAL_MAX_MIB) " MiB is the trial's most";
  if (running >= RT_TRIAL_MAX_RUNNING)
    return STR (RT_TRIAL_MAX_RUNNING) " trial sandboxes run, the trial's most";
  if (left < 60LL * 1000000)
    return "the trial's hours are used up";
  if (left < (int64_t) lease_s * 1000000)
    return "the lease is longer than the trial's hours left";
  return NULL;
}

int
rt_trial_reserve (rt_context *ctx, const char *id, const char *want, unsigned vcpu, unsigned memory_mib,
                  unsigned *lease_s, const char **funding, const char **why, rt_error **err)
{
  cleanup_close int lock = -1;
  cleanup_json json_object *reserved = NULL;
  cleanup_free char *path = NULL;
  int64_t used, left;
  int running, ret = locked_state (ctx, NULL, &lock, &reserved, &path, err);
  bool trial;

  if (ret == 0)
    ret = tally (ctx, reserved, &used, &running, err);
  if (ret < 0)
    return ret;
  left = used < RT_TRIAL_US ? RT_TRIAL_US - used : 0;
  if (want && strcmp (want, "trial") == 0)
    {
      if (vcpu > RT_TRIAL_MAX_VCPU || memory_mib > RT_TRIAL_MAX_MIB)
        {
          rt_error_set (err, EINVAL, "invalid_trial", "a trial sandbox has at most %d vCPU and %d MiB, not %u and %u",
                        RT_TRIAL_MAX_VCPU, RT_TRIAL_MAX_MIB, vcpu, memory_mib);
          return rt_error_hint (err, "ask for less, or use --paid");
        }
      if (running >= RT_TRIAL_MAX_RUNNING)
        {
          rt_error_set (err, EBUSY, "trial_busy", "%d trial sandboxes are running already, the most there can be",
                        running);
          return rt_error_hint (err, "stop one (runtime sandbox ls), or use --paid");
        }
      if (left < 60LL * 1000000)
        {
          rt_error_set (err, EDQUOT, "trial_exhausted", "the 50 free trial hours are used up");
          return rt_error_hint (err, "use --paid; runtime usage shows what was used");
        }
      trial = true;
    }
  else if (want)
    trial = false;
  else
    {
      const char *w = why_paid (vcpu, memory_mib, running, left, *lease_s);
      trial = w == NULL;
      if (why)
        *why = w;
    }
  *funding = trial ? "trial" : "paid";
  if (!trial)
    return rt_write_file_atomic (path, json_object_to_json_string (reserved),
                                 strlen (json_object_to_json_string (reserved)), 0644, err);
  if ((int64_t) *lease_s * 1000000 > left)
    *lease_s = left / 1000000;
  json_object_object_add (reserved, id, json_object_new_int64 ((int64_t) *lease_s * 1000000));
  return rt_write_file_atomic (path, json_object_to_json_string (reserved),
                               strlen (json_object_to_json_string (reserved)), 0644, err);
}

int
rt_trial_hold (rt_context *ctx, const char *id, int64_t ran_us, int64_t *lease_us, bool shorten, rt_error **err)
{
  cleanup_close int store_lock = -1, lock = -1;
  cleanup_json json_object *reserved = NULL;
  cleanup_free char *path = NULL;
  int64_t used, held, can;
  json_object *v;
  int running, ret = locked_state (ctx, &store_lock, &lock, &reserved, &path, err);

  if (ret == 0)
    ret = tally (ctx, reserved, &used, &running, err);
  if (ret < 0)
    return ret;
  held = json_object_object_get_ex (reserved, id, &v) ? json_object_get_int64 (v) : 0;
  if (ran_us + *lease_us <= held)
    return 0;
  /* @used counts this sandbox at max(held, ran) already (tally).  */
  can = (used < RT_TRIAL_US ? RT_TRIAL_US - used : 0) + (held > ran_us ? held : ran_us) - ran_us;
  if (shorten && can >= 60LL * 1000000 && can < *lease_us)
    *lease_us = can;
  if (*lease_us > can)
    {
      rt_error_set (err, EDQUOT, "trial_exhausted", "the trial has %.2f h left, not enough for this lease",
                    (used < RT_TRIAL_US ? RT_TRIAL_US - used : 0) / 3.6e9);
      return rt_error_hint (err, shorten ? "runtime usage shows what was used; a --paid sandbox can carry on"
                                         : "extend by less");
    }
  json_object_object_add (reserved, id, json_object_new_int64 (ran_us + *lease_us));
  return rt_write_file_atomic (path, json_object_to_json_string (reserved),
                               strlen (json_object_to_json_string (reserved)), 0644, err);
}
