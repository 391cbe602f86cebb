/* test-serve-spend.c - the spend watch's decision (serve/spend.h): which
   tenants reached their token's --max-cost by the ledger's rows, each
   sandbox's last record summed per tenant; a token without a limit, a row
   of another tenant or of none (the host's) never counts.  */
#include <json-c/json.h>
#include <string.h>

#include "serve/spend.h"
#include "tap.h"

static json_object *
row (const char *tenant, int64_t micros)
{
  json_object *o = json_object_new_object ();

  if (tenant)
    json_object_object_add (o, "tenant", json_object_new_string (tenant));
  json_object_object_add (o, "micros", json_object_new_int64 (micros));
  return o;
}

int
main (void)
{
  json_object *rows = json_object_new_array ();
  struct rt_token_info t[4] = { { .name = "alice", .max_cost_micros = 10 },
                                { .name = "bob", .max_cost_micros = 10 },
                                { .name = "carol", .max_cost_micros = 0 },
                                { .name = "dave", .max_cost_micros = 1 } };
  bool over[4];
  int64_t charged[4];
  size_t n;

  json_object_array_add (rows, row ("alice", 4));
  json_object_array_add (rows, row ("alice", 6));
  json_object_array_add (rows, row ("bob", 9));
  json_object_array_add (rows, row ("carol", 1000000));
  json_object_array_add (rows, row (NULL, 50));
  json_object_array_add (rows, row ("alicex", 50));
  n = srv_spend_over (rows, t, 4, over, charged);
  ok (n == 1, "one tenant is over (%zu)", n);
  ok (over[0] && charged[0] == 10, "alice: 4 + 6 reaches its 10");
  ok (!over[1] && charged[1] == 9, "bob: 9 of 10 is under");
  ok (!over[2] && charged[2] == 1000000, "carol: no limit, never over");
  ok (!over[3] && charged[3] == 0, "dave: nothing charged (the host's row, alicex's not his)");
  json_object_array_add (rows, row ("bob", 1));
  n = srv_spend_over (rows, t, 4, over, charged);
  ok (n == 2 && over[1], "bob's next sandbox takes him to his limit");
  ok (srv_spend_over (rows, t, 0, over, charged) == 0, "no limited token: none");
  json_object_put (rows);
  return tap_done ();
}
