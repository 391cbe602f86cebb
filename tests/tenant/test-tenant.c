/* test-tenant.c - tenants (rt_context_set_tenant) kept apart, through the
   public API: one small sandbox of tenant "ta" is invisible to tenant "tb"
   (open, get, list, remove, egress log answer as for a missing one), gets
   ta's secrets and no one else's; images, pools, usage and token rm
   (which stops it).  Boots one VM: an integration test, run under the
   machine lock.  */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime.h"
#include "../unit/tap.h"

static char state_dir[] = "/tmp/rt-tenant-XXXXXX";

/* The error's code (or "ok"), the error freed.  */
static const char *
code_of (int ret, rt_error **err, char buf[64])
{
  snprintf (buf, 64, "%s", ret == 0 ? "ok" : *err ? (*err)->code : "?");
  rt_error_free (*err);
  *err = NULL;
  return buf;
}

static rt_context *
context (const char *tenant)
{
  rt_context *ctx = NULL;
  rt_error *err = NULL;

  if (rt_context_new (&ctx, &err) < 0 || rt_context_set_tenant (ctx, tenant, &err) < 0)
    {
      fprintf (stderr, "context: %s\n", err ? err->msg : "?");
      exit (1);
    }
  return ctx;
}

static bool
lists (rt_context *ctx, bool all, const char *id)
{
  char *json = NULL;
  rt_error *err = NULL;
  bool yes = rt_sandbox_list_json (ctx, all, &json, &err) == 0 && strstr (json, id) != NULL;

  rt_error_free (err);
  free (json);
  return yes;
}

static bool
usage_has (rt_context *ctx, const char *id)
{
  char *json = NULL;
  rt_error *err = NULL;
  bool yes = rt_usage_json (ctx, &json, &err) == 0 && strstr (json, id) != NULL;

  rt_error_free (err);
  free (json);
  return yes;
}

static int
keep_stdout (void *data, int stream, const char *buf, size_t len)
{
  char *out = data;
  size_t have = strlen (out);

  if (stream == 1 && have + len < 256)
    memcpy (out + have, buf, len), out[have + len] = '\0';
  return 0;
}

/* What tenant "tb" and the host see of ta's sandbox @id (named "dev").  */
static void
test_lookups (rt_context *a, rt_context *b, rt_context *host, const char *id)
{
  rt_sandbox *sb = NULL;
  rt_error *err = NULL, *missing = NULL;
  char *json = NULL, c[64];

  ok (strcmp (code_of (rt_sandbox_open (b, id, &sb, &err), &err, c), "not_found") == 0, "tb opens ta's by id: %s", c);
  ok (strcmp (code_of (rt_sandbox_open (b, "dev", &sb, &err), &err, c), "not_found") == 0, "tb opens 'dev': %s", c);
  rt_sandbox_get_json (b, id, &json, &err);
  rt_sandbox_get_json (b, "sb-000000000000", &json, &missing);
  ok (err && missing && strcmp (err->code, missing->code) == 0 && strncmp (err->msg, "no sandbox '", 12) == 0
          && strcmp (err->hint ? err->hint : "", missing->hint ? missing->hint : "") == 0,
      "tb's get of ta's id answers as a missing one: %s", err ? err->msg : "no error");
  rt_error_free (err);
  rt_error_free (missing);
  err = NULL;
  ok (strcmp (code_of (rt_sandbox_egress_log (b, id, &json, &err), &err, c), "not_found") == 0,
      "tb gets no egress log of it: %s", c);
  ok (!lists (b, true, id), "tb's list (--all) lacks it");
  ok (lists (a, false, id) && lists (host, false, id), "ta's and the host's lists have it");
  ok (strcmp (code_of (rt_sandbox_remove (b, id, &err), &err, c), "not_found") == 0
          && rt_sandbox_open (a, id, &sb, &err) == 0,
      "tb's remove of it is not_found (as of one that never was): it still runs");
  rt_sandbox_close (sb);
  sb = NULL;
  ok (rt_sandbox_get_json (host, id, &json, &err) == 0 && strstr (json, "\"tenant\":\"ta"),
      "the host sees it, stamped with its tenant");
  free (json);
  json = NULL;
  ok (rt_sandbox_open (a, "dev", &sb, &err) == 0, "ta opens it by name");
  rt_sandbox_close (sb);
  rt_error_free (err);
}

/* Images and pools: the default image is everyone's, not a tenant's to
   remove; pools are the host's.  */
static void
test_shared (rt_context *a, rt_context *b)
{
  rt_error *err = NULL;
  char *json = NULL, c[64];

  ok (rt_image_get_json (b, "runtime", &json, &err) == 0, "tb sees the default image");
  free (json);
  json = NULL;
  ok (strcmp (code_of (rt_image_remove (a, "runtime", &err), &err, c), "permission_denied") == 0,
      "ta may not remove it: %s", c);
  ok (strcmp (code_of (rt_pool_list_json (a, &json, &err), &err, c), "permission_denied") == 0,
      "pools are the host's: %s", c);
}

int
main (void)
{
  rt_context *a, *b, *host;
  rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  char *ph = NULL, *json = NULL, *token = NULL, id[32] = "", out[256] = "", c[64], ta[32];
  const char *hosts[] = { "example.com", NULL };
  const char *printenv[] = { "sh", "-c", "printf %s \"$TA_TOKEN\"", NULL };
  rt_exec_result res = { 0 };
  rt_exec_opts eo = { .on_output = keep_stdout, .data = out };
  rt_sandbox_config cfg = { .vcpu = 1, .memory_mib = 512, .name = "dev", .no_internet = true, .cold = true };

  if (mkdtemp (state_dir) == NULL)
    return 1;
  setenv ("RUNTIME_STATE_DIR", state_dir, 1);
  if (getenv ("RUNTIME_TEST_DATA"))
    setenv ("RUNTIME_DATA_DIR", getenv ("RUNTIME_TEST_DATA"), 1);
  setenv ("RUNTIME_TEMPLATES", "off", 1);
  /* A removed token's name stays taken (its tenant's records keep it):
     each run has a name of its own, the data dir being the suite's.  */
  snprintf (ta, sizeof ta, "ta%d", (int) getpid ());
  a = context (ta);
  b = context ("tb");
  host = context (NULL);
  ok (rt_token_create (host, ta, NULL, &token, &err) == 0, "token ta made");
  free (token);

  ok (rt_secret_set (a, "TA_TOKEN", "s3cret-of-ta", 12, hosts, NULL, NULL, &ph, &err) == 0, "ta stores a secret");
  ok (rt_secret_list_json (b, &json, &err) == 0 && strcmp (json, "[]") == 0, "tb's secrets: none (%s)",
      json ? json : "");
  free (json);
  ok (rt_secret_list_json (host, &json, &err) == 0 && strstr (json, "TA_TOKEN") == NULL, "the host's store lacks it");
  free (json);
  json = NULL;

  if (rt_sandbox_create (a, &cfg, &sb, &err) < 0)
    {
      ok (0, "ta's sandbox starts: %s", err->msg);
      return tap_done ();
    }
  snprintf (id, sizeof id, "%s", rt_sandbox_id (sb));
  ok (1, "ta's sandbox %s runs (1 vCPU, 512 MiB)", id);
  ok (rt_sandbox_exec (sb, printenv, &eo, &res, &err) == 0 && ph && strcmp (out, ph) == 0,
      "it sees ta's secret as its placeholder (%s)", out);
  rt_sandbox_close (sb);
  test_lookups (a, b, host, id);
  test_shared (a, b);

  ok (usage_has (a, id) && usage_has (host, id), "ta's and the host's usage count it");
  ok (!usage_has (b, id), "tb's usage does not");
  ok (rt_token_remove (host, ta, &err) == 0, "token ta removed");
  ok (strcmp (code_of (rt_sandbox_open (a, id, &sb, &err), &err, c), "sandbox_stopped") == 0,
      "its sandbox was stopped (%s)", c);
  ok (rt_sandbox_get_json (a, id, &json, &err) == 0 && strstr (json, "\"stopReason\":\"requested\""),
      "with its record written");
  free (json);
  ok (usage_has (a, id) && !usage_has (b, id), "its usage stays ta's");
  ok (rt_secret_list_json (a, &json, &err) == 0 && strcmp (json, "[]") == 0, "ta's secrets are gone with the token");
  free (json);

  rt_sandbox_remove (host, id, NULL);
  rt_secret_remove (a, "TA_TOKEN", NULL);
  {
    char cmd[1024];
    snprintf (cmd, sizeof cmd, "rm -rf '%s' '%s/tenants/ta' '%s/tenants/tb'", state_dir,
              getenv ("RUNTIME_DATA_DIR") ? getenv ("RUNTIME_DATA_DIR") : "/nonexistent",
              getenv ("RUNTIME_DATA_DIR") ? getenv ("RUNTIME_DATA_DIR") : "/nonexistent");
    if (system (cmd) != 0)
      ok (0, "cleanup");
  }
  free (ph);
  rt_context_free (a);
  rt_context_free (b);
  rt_context_free (host);
  return tap_done ();
}
