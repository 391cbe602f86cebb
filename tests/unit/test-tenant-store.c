/* test-tenant-store.c - sandboxes of tenants in the store (records
   written by hand, core/context.h): a tenant lists and finds only its
   own, another's answers as a missing one; names are per owner, the host
   view taking its own first and calling a name only tenants share
   ambiguous.  Snapshots the same way.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/context.h"
#include "tap.h"

static char dir[] = "/tmp/test-tenant-store-XXXXXX";

static void
record (const char *id, const char *name, const char *tenant)
{
  char path[600];
  FILE *f;

  snprintf (path, sizeof path, "%s/data/sandboxes/%s.json", dir, id);
  f = fopen (path, "w");
  if (f == NULL)
    return;
  fprintf (f, "{\"id\":\"%s\",\"name\":\"%s\",\"state\":\"stopped\",\"createdAt\":\"2026-01-01T00:00:00.000Z\"%s%s%s}",
           id, name, tenant ? ",\"tenant\":\"" : "", tenant ? tenant : "", tenant ? "\"" : "");
  fclose (f);
}

/* A snapshot of a sandbox of @tenant, as a capture leaves it.  */
static void
snapshot (const char *id, const char *name, const char *tenant)
{
  char path[600];
  FILE *f;

  snprintf (path, sizeof path, "%s/data/snapshots/%s", dir, id);
  mkdir (path, 0700);
  snprintf (path, sizeof path, "%s/data/snapshots/%s/meta.json", dir, id);
  f = fopen (path, "w");
  if (f == NULL)
    return;
  fprintf (
      f, "{\"id\":\"%s\",\"name\":\"%s\",\"createdAt\":\"2026-01-01T00:00:00.000Z\",\"sandbox\":{\"state\":{%s%s%s}}}",
      id, name, tenant ? "\"tenant\":\"" : "", tenant ? tenant : "", tenant ? "\"" : "");
  fclose (f);
}

static void
test_snapshots (rt_context *ta, rt_context *tb, rt_context *host)
{
  char path[600], *json = NULL;
  rt_error *err = NULL;

  snprintf (path, sizeof path, "%s/data/snapshots", dir);
  mkdir (path, 0700);
  snapshot ("snap-000000000001", "base", "ta");
  snapshot ("snap-000000000002", "base", NULL);
  ok (rt_snapshot_list_json (tb, &json, &err) == 0 && strcmp (json, "[]") == 0, "tb lists no snapshot: %s", json);
  free (json);
  ok (rt_snapshot_list_json (ta, &json, &err) == 0 && strstr (json, "000001") && !strstr (json, "000002"),
      "ta lists its own only");
  free (json);
  ok (rt_snapshot_get_json (ta, "base", &json, &err) == 0 && strstr (json, "000001"), "ta's 'base' is its own");
  free (json);
  ok (rt_snapshot_get_json (host, "snap-000000000001", &json, &err) == 0, "the host gets ta's");
  free (json);
  ok (rt_snapshot_get_json (tb, "snap-000000000001", &json, &err) < 0 && strcmp (err->code, "not_found") == 0,
      "tb's get of ta's: not_found");
  rt_error_free (err);
  err = NULL;
  ok (rt_snapshot_remove (tb, "snap-000000000001", &err) < 0 && strcmp (err->code, "not_found") == 0,
      "tb's remove of ta's: not_found");
  rt_error_free (err);
  err = NULL;
  ok (rt_snapshot_get_json (ta, "snap-000000000001", &json, &err) == 0, "ta's is still there");
  free (json);
}

/* The id @ctx finds for @ref, or the error's code and message.  */
static const char *
find (rt_context *ctx, const char *ref, char *buf, size_t size)
{
  char *json = NULL;
  rt_error *err = NULL;

  if (rt_sandbox_get_json (ctx, ref, &json, &err) == 0)
    {
      const char *id = strstr (json, "\"id\":\"");
      snprintf (buf, size, "%.15s", id ? id + 6 : "?");
    }
  else
    snprintf (buf, size, "%s: %s", err->code, err->msg);
  free (json);
  rt_error_free (err);
  return buf;
}

static char *
list (rt_context *ctx)
{
  char *json = NULL;
  rt_error *err = NULL;

  if (rt_sandbox_list_json (ctx, true, &json, &err) < 0)
    {
      rt_error_free (err);
      return strdup ("");
    }
  return json;
}

int
main (void)
{
  rt_context *ta = NULL, *tb = NULL, *host = NULL;
  rt_error *err = NULL;
  char a[256], b[256], path[600], *json;
  struct stat st;

  if (mkdtemp (dir) == NULL)
    return 1;
  snprintf (path, sizeof path, "%s/data", dir);
  setenv ("RUNTIME_DATA_DIR", path, 1);
  mkdir (path, 0700);
  snprintf (path, sizeof path, "%s/data/sandboxes", dir);
  mkdir (path, 0700);
  snprintf (path, sizeof path, "%s/state", dir);
  setenv ("RUNTIME_STATE_DIR", path, 1);
  mkdir (path, 0700);
  if (rt_context_new (&ta, &err) < 0 || rt_context_new (&tb, &err) < 0 || rt_context_new (&host, &err) < 0
      || rt_context_set_tenant (ta, "ta", &err) < 0 || rt_context_set_tenant (tb, "tb", &err) < 0)
    return 1;
  record ("sb-000000000001", "dev", "ta");
  record ("sb-000000000002", "dev", "tb");
  record ("sb-000000000003", "dev", NULL);
  record ("sb-000000000004", "shared", "ta");
  record ("sb-000000000005", "shared", "tb");

  ok (strcmp (find (ta, "dev", a, sizeof a), "sb-000000000001") == 0, "ta's 'dev' is its own: %s", a);
  ok (strcmp (find (tb, "dev", a, sizeof a), "sb-000000000002") == 0, "tb's 'dev' is its own: %s", a);
  ok (strcmp (find (host, "dev", a, sizeof a), "sb-000000000003") == 0, "the host's 'dev' is the host's own: %s", a);
  ok (strncmp (find (host, "shared", a, sizeof a), "invalid_request: more than one", 30) == 0,
      "a name only tenants share is ambiguous for the host: %s", a);
  ok (strcmp (find (ta, "shared", a, sizeof a), "sb-000000000004") == 0, "but not for either of them");
  find (ta, "sb-000000000002", a, sizeof a);
  find (ta, "sb-000000000009", b, sizeof b);
  ok (strcmp (a, "not_found: no sandbox 'sb-000000000002'") == 0
          && strcmp (b, "not_found: no sandbox 'sb-000000000009'") == 0,
      "tb's id answers ta as a missing one: %s", a);
  ok (strncmp (find (ta, "sb-000000000003", a, sizeof a), "not_found", 9) == 0, "so does the host's");
  json = list (ta);
  ok (strstr (json, "000001") && strstr (json, "000004") && !strstr (json, "000002") && !strstr (json, "000003")
          && !strstr (json, "000005"),
      "ta's list: its two only");
  free (json);
  json = list (host);
  ok (strstr (json, "000001") && strstr (json, "000002") && strstr (json, "000003") && strstr (json, "000005"),
      "the host's list: all");
  free (json);
  ok (rt_sandbox_remove (ta, "sb-000000000002", &err) < 0 && strcmp (err->code, "not_found") == 0,
      "ta's remove of tb's: as of one that never was, not_found");
  rt_error_free (err);
  err = NULL;
  snprintf (path, sizeof path, "%s/data/sandboxes/sb-000000000002.json", dir);
  ok (stat (path, &st) == 0, "and tb's record is still there");
  ok (rt_sandbox_egress_log (ta, "sb-000000000002", &json, &err) < 0 && strcmp (err->code, "not_found") == 0,
      "no egress log of tb's for ta");
  rt_error_free (err);
  err = NULL;
  ok (rt_sandbox_remove (ta, "dev", &err) == 0 && stat (path, &st) == 0
          && strcmp (find (tb, "dev", a, sizeof a), "sb-000000000002") == 0
          && strncmp (find (ta, "dev", b, sizeof b), "not_found", 9) == 0,
      "ta's remove of 'dev' removes its own only");

  test_snapshots (ta, tb, host);
  rt_context_free (ta);
  rt_context_free (tb);
  rt_context_free (host);
  snprintf (path, sizeof path, "rm -rf '%s'", dir);
  if (system (path) != 0)
    ok (0, "cleanup");
  return tap_done ();
}
