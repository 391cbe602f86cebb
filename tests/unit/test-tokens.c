/* test-tokens.c - the API token store (serve/tokens.h): create, check a
   right, wrong and revoked token, the file's mode, the token's text
   nowhere on disk, a change seen at the next check, bad names and a
   duplicate; what a tenant context may not do; a tenant's usage.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/context.h"
#include "serve/tokens.h"
#include "tap.h"

static char dir[] = "/tmp/test-tokens-XXXXXX", path[512];

static char *
file_text (void)
{
  char *text = NULL;
  return rt_read_file (path, &text, NULL, NULL) == 0 ? text : strdup ("");
}

static bool
fails_with (int ret, rt_error **err, const char *code)
{
  bool yes = ret < 0 && *err && strcmp ((*err)->code, code) == 0;
  rt_error_free (*err);
  *err = NULL;
  return yes;
}

/* A tenant's charges are its own ledger lines' (the last per sandbox);
   lines without a tenant are the host's.  */
static void
test_usage (rt_context *ctx)
{
  char ledger[600], *json = NULL;
  struct rt_tenant_usage u;
  rt_error *err = NULL;
  FILE *f;

  snprintf (ledger, sizeof ledger, "%s/ledger", dir);
  mkdir (ledger, 0700);
  snprintf (ledger, sizeof ledger, "%s/ledger/ledger.jsonl", dir);
  f = fopen (ledger, "w");
  fputs ("{\"id\":\"sb-1\",\"tenant\":\"bob\",\"micros\":100}\n"
         "{\"id\":\"sb-2\",\"micros\":7000}\n"
         "{\"id\":\"sb-1\",\"tenant\":\"bob\",\"micros\":250}\n"
         "{\"id\":\"sb-3\",\"tenant\":\"bobby\",\"micros\":9}\n",
         f);
  fclose (f);
  ok (rt_tenant_usage_get (ctx, "bob", &u, &err) == 0 && u.charged_micros == 250 && u.sandboxes == 0 && u.vcpu == 0,
      "bob's charges: its last line only, nobody else's (%lld)", (long long) u.charged_micros);
  ok (rt_context_set_tenant (ctx, "bob", &err) == 0 && rt_usage_json (ctx, &json, &err) == 0 && strstr (json, "sb-1")
          && !strstr (json, "sb-2") && !strstr (json, "sb-3") && strstr (json, "\"charged_micros\":250"),
      "bob's usage: its rows and total only");
  free (json);
  ok (rt_context_set_tenant (ctx, NULL, &err) == 0 && rt_usage_json (ctx, &json, &err) == 0 && strstr (json, "sb-2")
          && strstr (json, "sb-3") && strstr (json, "\"charged_micros\":7259"),
      "the host's usage: every line");
  free (json);
  rt_error_free (err);
}

static void
test_names (rt_context *ctx)
{
  static const char *const bad[]
      = { "", "Dev", "-dev", "_x", "a/b", "a b", "dev.", "x123456789012345678901234567890123", "é", NULL };
  rt_error *err = NULL;
  char *tok = NULL;

  for (const char *const *b = bad; *b; b++)
    ok (fails_with (rt_token_create (ctx, *b, NULL, &tok, &err), &err, "invalid_request"), "name '%s' refused", *b);
  ok (fails_with (rt_context_set_tenant (ctx, "Bad!", &err), &err, "invalid_request"), "a bad tenant name refused");
  ok (rt_tenant_name_ok ("a") && rt_tenant_name_ok ("0-x_y") && rt_tenant_name_ok ("x1234567890123456789012345678901"),
      "good names (1 and 32 characters, digits, '-', '_')");
}

int
main (void)
{
  rt_context *ctx = NULL;
  rt_error *err = NULL;
  struct rt_tokens *t = NULL;
  struct rt_token_info info;
  rt_token_limits lim = { .max_sandboxes = 3, .max_vcpu = 4, .max_cost_micros = 2500000, .rate = 7 };
  char *a = NULL, *b = NULL, *json = NULL, *text;
  struct stat st;

  if (mkdtemp (dir) == NULL)
    return 1;
  setenv ("RUNTIME_DATA_DIR", dir, 1);
  setenv ("RUNTIME_STATE_DIR", dir, 1);
  snprintf (path, sizeof path, "%s/tokens.json", dir);
  umask (0);
  if (rt_context_new (&ctx, &err) < 0)
    return 1;

  ok (rt_tokens_open (ctx, &t, &err) == 0, "no store yet: opened, empty");
  ok (rt_tokens_check (t, "rt_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", &info) == 0, "no token is valid then");
  ok (rt_token_create (ctx, "alice", &lim, &a, &err) == 0, "token created");
  ok (a && strncmp (a, "rt_", 3) == 0 && strlen (a) == 43 && strspn (a + 3, "abcdefghijklmnopqrstuvwxyz234567") == 40,
      "rt_ and 40 base32 characters: %s", a ? "yes" : "none");
  ok (stat (path, &st) == 0 && (st.st_mode & 0777) == 0600, "tokens.json is 0600 under umask 0 (%03o)",
      (unsigned) (st.st_mode & 0777));
  text = file_text ();
  ok (a && strstr (text, a) == NULL && strstr (text, a + 3) == NULL, "the token's text is nowhere in the file");
  free (text);

  ok (rt_tokens_check (t, a, &info) == 1, "a token made after open is valid at once (reload)");
  ok (strcmp (info.name, "alice") == 0 && info.max_sandboxes == 3 && info.max_vcpu == 4
          && info.max_cost_micros == 2500000 && info.rate == 7,
      "its tenant and limits");
  {
    char wrong[64];
    snprintf (wrong, sizeof wrong, "%s", a);
    wrong[10] = wrong[10] == 'a' ? 'b' : 'a';
    ok (rt_tokens_check (t, wrong, &info) == 0, "one character changed: invalid");
    wrong[42] = '\0';
    ok (rt_tokens_check (t, wrong, &info) == 0, "cut short: invalid");
    ok (rt_tokens_check (t, NULL, &info) == 0 && rt_tokens_check (t, "", &info) == 0, "none, empty: invalid");
  }
  ok (fails_with (rt_token_create (ctx, "alice", NULL, &b, &err), &err, "name_taken"), "a duplicate: name_taken");
  ok (rt_token_create (ctx, "bob", NULL, &b, &err) == 0 && strcmp (a, b) != 0, "a second token, another text");
  ok (rt_tokens_check (t, b, &info) == 1 && strcmp (info.name, "bob") == 0 && info.rate == 0, "bob's is bob's");

  ok (rt_token_list_json (ctx, &json, &err) == 0, "listed");
  ok (json && strstr (json, "\"alice\"") && strstr (json, "\"bob\"") && strstr (json, "sha256") == NULL
          && strstr (json, "\"maxCostMicros\":2500000"),
      "list: both, limits, never the hash: %s", json ? json : "");
  {
    char prefix[16];
    snprintf (prefix, 8, "%s", a);
    ok (json && strstr (json, prefix), "list: the 7-character prefix");
  }
  free (json);

  ok (rt_token_remove (ctx, "alice", &err) == 0, "alice removed");
  ok (rt_tokens_check (t, a, &info) == 0, "a removed token is revoked at once");
  ok (rt_tokens_check (t, b, &info) == 1, "the other still works");
  ok (fails_with (rt_token_remove (ctx, "alice", &err), &err, "not_found"), "removed twice: not_found");
  {
    char *again = NULL;
    ok (fails_with (rt_token_create (ctx, "alice", NULL, &again, &err), &err, "name_taken") && again == NULL,
        "a removed token's name is not given again (its tenant's things stay under it)");
  }

  chmod (path, 0644);
  ok (fails_with (rt_token_list_json (ctx, &json, &err), &err, "invalid_request"), "a store others read: refused");
  ok (rt_tokens_check (t, b, &info) == 0, "and no token is valid from it");
  chmod (path, 0600);

  test_names (ctx);
  test_usage (ctx);
  ok (rt_context_set_tenant (ctx, "bob", &err) == 0, "a tenant context");
  ok (fails_with (rt_token_create (ctx, "eve", NULL, &json, &err), &err, "permission_denied"),
      "a tenant cannot make tokens");
  ok (fails_with (rt_token_list_json (ctx, &json, &err), &err, "permission_denied"), "nor list them");
  ok (fails_with (rt_token_remove (ctx, "bob", &err), &err, "permission_denied"), "nor remove them");

  rt_tokens_free (t);
  rt_context_free (ctx);
  free (a);
  free (b);
  {
    char cmd[600];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system (cmd) != 0)
      ok (0, "cleanup");
  }
  return tap_done ();
}
