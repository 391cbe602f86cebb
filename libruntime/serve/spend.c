/* spend.c - the spend watch (see spend.h).  */
#include <event2/event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing/ledger.h"
#include "common/util.h"
#include "core/state.h"
#include "records/handle.h"
#include "records/list.h"
#include "serve/server-internal.h"
#include "serve/spend.h"
#include "serve/workers.h"

size_t
srv_spend_over (json_object *rows, const struct rt_token_info *tokens, size_t n, bool *over, int64_t *charged)
{
  size_t count = 0;

  for (size_t k = 0; k < n; k++)
    charged[k] = 0;
  for (size_t i = 0; i < json_object_array_length (rows); i++)
    {
      json_object *row = json_object_array_get_idx (rows, i);
      const char *tenant = rt_json_str (row, "tenant");
      for (size_t k = 0; tenant && k < n; k++)
        if (strcmp (tokens[k].name, tenant) == 0)
          charged[k] += rt_json_i64 (row, "micros");
    }
  for (size_t k = 0; k < n; k++)
    {
      over[k] = tokens[k].max_cost_micros > 0 && charged[k] >= tokens[k].max_cost_micros;
      count += over[k];
    }
  return count;
}

/* Pauses the running sandbox @id of @tenant (stops it when it cannot be
   paused), saying so on stderr: the server's log.  */
static void
pause_spent (rt_context *ctx, const char *tenant, const char *id, int64_t charged, int64_t max)
{
  cleanup_sandbox rt_sandbox *sb = rt_sandbox_handle_new (ctx, id);
  cleanup_error rt_error *err = NULL;
  const char *done = "paused";

  if (sb == NULL)
    return;
  if (rt_sandbox_pause (sb, &err) < 0)
    {
      fprintf (stderr, "runtime serve: cannot pause %s (%s): stopping it\n", id, err->msg);
      rt_error_free (steal_pointer (&err));
      done = rt_sandbox_stop (sb, &err) < 0 ? "could not stop" : "stopped";
    }
  fprintf (stderr, "runtime serve: tenant %s spent %lld of its --max-cost %lld microdollars: %s %s\n", tenant,
           (long long) charged, (long long) max, done, id);
}

/* Every running sandbox of the tenants @over.  */
static void
pause_tenants (rt_context *ctx, const struct rt_token_info *tokens, size_t n, const bool *over, const int64_t *charged)
{
  cleanup_json json_object *live = NULL;

  if (rt_store_list_unscoped (ctx, false, &live, NULL) < 0)
    return;
  for (size_t i = 0; i < json_object_array_length (live); i++)
    {
      json_object *o = json_object_array_get_idx (live, i);
      const char *tenant = rt_json_str (o, "tenant"), *id = rt_json_str (o, "id"), *st = rt_json_str (o, "state");
      if (tenant == NULL || id == NULL || st == NULL || rt_state_is (st, RT_SANDBOX_PAUSED)
          || rt_state_is (st, RT_SANDBOX_PAUSING) || rt_state_is (st, RT_SANDBOX_STOPPED))
        continue;
      for (size_t k = 0; k < n; k++)
        if (over[k] && strcmp (tokens[k].name, tenant) == 0)
          pause_spent (ctx, tenant, id, charged[k], tokens[k].max_cost_micros);
    }
}

/* One round, from the tokens file as it is now.  */
static void
spend_round (rt_context *ctx)
{
  struct rt_tokens *all = NULL;
  cleanup_json json_object *rows = NULL;
  struct rt_token_info *limited = NULL;
  bool *over = NULL;
  int64_t *charged = NULL;
  size_t n = 0, cap = 0;

  if (rt_tokens_open (ctx, &all, NULL) < 0)
    return;
  for (size_t i = 0; rt_tokens_at (all, i); i++)
    cap++;
  limited = calloc (cap ? cap : 1, sizeof *limited);
  for (size_t i = 0; limited && rt_tokens_at (all, i); i++)
    if (rt_tokens_at (all, i)->max_cost_micros > 0)
      limited[n++] = *rt_tokens_at (all, i);
  rt_tokens_free (all);
  over = calloc (n ? n : 1, sizeof *over);
  charged = calloc (n ? n : 1, sizeof *charged);
  /* No token with a --max-cost: not even the ledger is read.  */
  if (n > 0 && over && charged && rt_ledger_fold (ctx, &rows, NULL) == 0
      && srv_spend_over (rows, limited, n, over, charged) > 0)
    pause_tenants (ctx, limited, n, over, charged);
  free (limited);
  free (over);
  free (charged);
}

static void *
spend_main (void *arg)
{
  struct srv *s = arg;
  rt_context *ctx = NULL;

  if (rt_context_dup (s->ctx, &ctx, NULL) == 0)
    spend_round (ctx);
  rt_context_free (ctx);
  srv_round_done (s, &s->spending);
  return NULL;
}

static void
on_spend (evutil_socket_t fd, short what, void *arg)
{
  struct srv *s = arg;

  (void) fd;
  (void) what;
  srv_round_start (s, &s->spending, spend_main);
}

int
srv_spend_watch (struct srv *s)
{
  static const struct timeval every = { SRV_SPEND_EVERY_S, 0 };

  s->spend_timer = event_new (s->base, -1, EV_PERSIST, on_spend, s);
  if (s->spend_timer == NULL || event_add (s->spend_timer, &every) < 0)
    return -1;
  return 0;
}
