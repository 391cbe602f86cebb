/* spend.h - a tenant that reached its token's --max-cost stops being
   billed: every SRV_SPEND_EVERY_S seconds the server folds the ledger, and
   pauses (to disk: paused time is free) each running sandbox of a tenant
   charged its limit or more; one that cannot be paused is stopped.  Its
   requests that would run or wake one are refused meanwhile
   (srv_quota_spend, quota.c), so it stays paused until the limit is
   raised (`runtime token`) or the sandbox deleted.  */
#ifndef RT_SERVE_SPEND_H
#define RT_SERVE_SPEND_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "serve/tokens.h"

#define SRV_SPEND_EVERY_S 10

/* For each of the @n tokens, whether its tenant is at its max_cost_micros
   (0: none) by the ledger's @rows (rt_ledger_fold's): @over[i], and what
   it was charged, @charged[i].  Return: how many are over.  */
size_t srv_spend_over (json_object *rows, const struct rt_token_info *tokens, size_t n, bool *over, int64_t *charged);

struct srv;
/* Arms the server's spend timer on its loop (loop thread, at setup); each
   round runs on a thread of its own counted as a worker, one at a time.
   Return: 0, or -1 when the timer cannot be made.  */
int srv_spend_watch (struct srv *s);

#endif
