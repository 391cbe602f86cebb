/* test-project.c - copy a project into a sandbox, run its tests, copy
 * the report out.
 *
 *   cc test-project.c $(pkg-config --cflags --libs libruntime) -o test-project
 *   ./test-project ./myproject ./out
 *
 * Runs `sh run-tests.sh` in the copied project (it writes report.txt);
 * the report lands in OUT_DIR; exits with the tests' exit code.  The
 * sandbox has no internet: tests run on what the project brings.
 */
#include <runtime.h>
#include <stdio.h>
#include <string.h>

static int
print_output (void *data, int stream, const char *buf, size_t len)
{
  (void) data;
  return fwrite (buf, 1, len, stream == 1 ? stdout : stderr) == len ? 0 : -1;
}

static int
fail (rt_sandbox *sb, rt_context *ctx, rt_error *err)
{
  fprintf (stderr, "test-project: %s: %s\n", err->code, err->msg);
  rt_error_free (err);
  if (sb)
    rt_sandbox_destroy (sb, NULL);
  rt_context_free (ctx);
  return 1;
}

int
main (int argc, char **argv)
{
  rt_context *ctx = NULL;
  rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  rt_exec_result res;
  rt_sandbox_config cfg = { .vcpu = 1, .memory_mib = 1024, .ephemeral = true, .no_internet = true };
  const char *const argv_tests[] = { "sh", "run-tests.sh", NULL };
  char dir[512], report[600];
  const char *name;
  rt_exec_opts opts = { .cancel_fd = -1, .on_output = print_output, .timeout_ms = 600000 };

  if (argc != 3)
    {
      fprintf (stderr, "usage: %s PROJECT_DIR OUT_DIR\n", argv[0]);
      return 2;
    }
  name = strrchr (argv[1], '/') && strrchr (argv[1], '/')[1] ? strrchr (argv[1], '/') + 1 : argv[1];
  snprintf (dir, sizeof dir, "/workspace/%s", name);
  snprintf (report, sizeof report, "%s/report.txt", dir);
  opts.cwd = dir;
  if (rt_context_new (&ctx, &err) < 0 || rt_sandbox_create (ctx, &cfg, &sb, &err) < 0)
    return fail (NULL, ctx, err);
  if (rt_sandbox_copy_in (sb, argv[1], "/workspace", NULL, &err) < 0
      || rt_sandbox_exec (sb, argv_tests, &opts, &res, &err) < 0
      || rt_sandbox_copy_out (sb, report, argv[2], NULL, NULL, &err) < 0)
    return fail (sb, ctx, err);
  fprintf (stderr, "test-project: tests exited %d; report in %s/report.txt\n", res.exit_code, argv[2]);
  if (rt_sandbox_destroy (sb, &err) < 0)
    return fail (NULL, ctx, err);
  rt_context_free (ctx);
  return res.exit_code;
}
