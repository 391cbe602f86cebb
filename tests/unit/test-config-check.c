/* test-config-check.c - rt_sandbox_config_check, the one check of a
   sandbox's configuration that the library, the API server and the CLI
   share: which field each bad value is blamed on, with which code, and
   that the message starts with that field (callers rewrite it).  */
#include <string.h>

#include "common/util.h"
#include "tap.h"

struct row
{
  const char *what;
  rt_sandbox_config cfg;
  const char *field; /* NULL: accepted */
  const char *code;
};

static const char *const two[] = { "team=ml", "tier=a", NULL };
static const char *const no_eq[] = { "team", NULL };
static const char *const empty_key[] = { "=ml", NULL };
static const char *const dup_key[] = { "team=ml", "tier=a", "team=ops", NULL };
static const char *const env_ok[] = { "A=1", "_B=", NULL };
static const char *const env_digit[] = { "1X=2", NULL };
static const char *const env_no_eq[] = { "HOME", NULL };
static const char *const env_dash[] = { "A-B=1", NULL };

static const struct row rows[] = {
  { "the defaults", { 0 }, NULL, NULL },
  { "16 vCPUs", { .vcpu = 16 }, NULL, NULL },
  { "17 vCPUs", { .vcpu = 17 }, "vcpu", "invalid_request" },
  { "255 MiB", { .memory_mib = 255 }, "memory_mib", "invalid_request" },
  { "65537 MiB", { .memory_mib = 65537 }, "memory_mib", "invalid_request" },
  { "256 MiB", { .memory_mib = 256 }, NULL, NULL },
  { "a 4095 MiB disk", { .disk_mib = 4095 }, "disk_mib", "invalid_request" },
  { "a 59 s lease", { .timeout_s = 59 }, "timeout_s", "invalid_request" },
  { "a 3601 s lease", { .timeout_s = 3601 }, "timeout_s", "invalid_request" },
  { "an idle pause of 9 s", { .idle_pause_s = 9 }, "idle_pause_s", "invalid_request" },
  { "an idle pause of 86401 s", { .idle_pause_s = 86401 }, "idle_pause_s", "invalid_request" },
  { "on_timeout later", { .on_timeout = "later" }, "on_timeout", "invalid_request" },
  { "on_timeout stop", { .on_timeout = "stop" }, NULL, NULL },
  { "funding free", { .funding = "free" }, "funding", "invalid_request" },
  { "funding trial", { .funding = "trial" }, NULL, NULL },
  { "an empty name", { .name = "" }, "name", "invalid_request" },
  { "a name with a space", { .name = "my box" }, "name", "invalid_request" },
  { "a name with a tab", { .name = "my\tbox" }, "name", "invalid_request" },
  { "a name with an escape", { .name = "box\033[2J" }, "name", "invalid_request" },
  { "a name with DEL", { .name = "box\177" }, "name", "invalid_request" },
  { "a name with '/'", { .name = "a/b" }, "name", "invalid_request" },
  { "a name of 64 bytes", { .name = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" }, "name", "invalid_request" },
  { "a name of 63 bytes", { .name = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" }, NULL, NULL },
  { "a UTF-8 name", { .name = "d\xc3\xa9v" }, NULL, NULL },
  { "get_or_create without a name", { .get_or_create = true }, "get_or_create", "usage" },
  { "get_or_create with a name", { .get_or_create = true, .name = "dev" }, NULL, NULL },
  { "two labels", { .labels = two }, NULL, NULL },
  { "a label without '='", { .labels = no_eq }, "labels", "invalid_request" },
  { "a label without a key", { .labels = empty_key }, "labels", "invalid_request" },
  { "a label key twice", { .labels = dup_key }, "labels", "invalid_request" },
  { "env names", { .env = env_ok }, NULL, NULL },
  { "an env name with a digit first", { .env = env_digit }, "env", "invalid_env" },
  { "an env entry without '='", { .env = env_no_eq }, "env", "invalid_env" },
  { "an env name with '-'", { .env = env_dash }, "env", "invalid_env" },
  { "an ephemeral sandbox that pauses", { .ephemeral = true, .idle_pause_s = 60 }, "ephemeral", "invalid_request" },
  { "an ephemeral sandbox that wakes", { .ephemeral = true, .auto_wake = true }, "ephemeral", "invalid_request" },
};

static void
check (const char *what, const rt_sandbox_config *cfg, const char *field, const char *code)
{
  rt_error *err = NULL;
  const char *got = "unset";
  int ret = rt_sandbox_config_check (cfg, &got, &err);

  if (field == NULL)
    ok (ret == 0 && got == NULL && err == NULL, "accepted: %s", what);
  else
    ok (ret < 0 && got && strcmp (got, field) == 0 && err && strcmp (err->code, code) == 0
            && strncmp (err->msg, field, strlen (field)) == 0 && strchr (err->msg, '\033') == NULL,
        "refused: %s, as %s %s (%s: %s)", what, field, code, err ? err->code : "-", err ? err->msg : "no error");
  rt_error_free (err);
}

int
main (void)
{
  static const char *many_labels[RT_MAX_LABELS + 2], *many_env[RT_MAX_ENV + 2], *big_env[2];
  static char label_buf[RT_MAX_LABELS + 1][16], env_buf[RT_MAX_ENV + 1][16], big[RT_MAX_ENV_BYTES + 8];
  rt_sandbox_config cfg = { 0 };

  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    check (rows[i].what, &rows[i].cfg, rows[i].field, rows[i].code);
  check ("no configuration", NULL, NULL, NULL);

  for (int i = 0; i <= RT_MAX_LABELS; i++)
    {
      snprintf (label_buf[i], sizeof label_buf[i], "k%d=v", i);
      many_labels[i] = label_buf[i];
    }
  cfg.labels = many_labels;
  check ("33 labels", &cfg, "labels", "invalid_request");
  many_labels[RT_MAX_LABELS] = NULL;
  check ("32 labels", &cfg, NULL, NULL);

  cfg = (rt_sandbox_config){ 0 };
  for (int i = 0; i <= RT_MAX_ENV; i++)
    {
      snprintf (env_buf[i], sizeof env_buf[i], "V%d=1", i);
      many_env[i] = env_buf[i];
    }
  cfg.env = many_env;
  check ("33 env variables", &cfg, "env", "env_too_large");
  many_env[RT_MAX_ENV] = NULL;
  check ("32 env variables", &cfg, NULL, NULL);

  memset (big, 'x', sizeof big - 1);
  memcpy (big, "BIG=", 4);
  big_env[0] = big;
  cfg.env = big_env;
  check ("over 32 KiB of env", &cfg, "env", "env_too_large");

  /* The field is optional; the error is still set.  */
  {
    rt_error *err = NULL;
    rt_sandbox_config bad = { .vcpu = 99 };
    ok (rt_sandbox_config_check (&bad, NULL, &err) < 0 && err, "no @field: still refused");
    rt_error_free (err);
    ok (rt_sandbox_config_check (&bad, NULL, NULL) < 0, "no @err: still refused");
  }
  return tap_done ();
}
