/* run-command.c - run one command in a fresh sandbox through libruntime.
 *
 *   cc run-command.c $(pkg-config --cflags --libs libruntime) -o run-command
 *   ./run-command python3 -c 'print(6*7)'
 *
 * Exits with the command's exit code, like `runtime sandbox run`.
 */
#include <runtime.h>
#include <stdio.h>
#include <unistd.h>

static int
print_output (void *data, int stream, const char *buf, size_t len)
{
  (void) data;
  return fwrite (buf, 1, len, stream == 1 ? stdout : stderr) == len ? 0 : -1;
}

static int
fail (rt_error *err)
{
  fprintf (stderr, "run-command: %s: %s\n", err->code, err->msg);
  if (err->hint)
    fprintf (stderr, "hint: %s\n", err->hint);
  rt_error_free (err);
  return 1;
}

int
main (int argc, char **argv)
{
  rt_context *ctx = NULL;
  rt_sandbox *sb = NULL;
  rt_error *err = NULL;
  rt_exec_result res;
  rt_exec_opts opts = { .cancel_fd = -1, .on_output = print_output, .timeout_ms = 60000 };
  rt_sandbox_config cfg = { .vcpu = 1, .memory_mib = 1024, .ephemeral = true };

  if (argc < 2)
    {
      fprintf (stderr, "usage: %s CMD [ARG…]\n", argv[0]);
      return 2;
    }
  if (rt_context_new (&ctx, &err) < 0)
    return fail (err);
  if (rt_sandbox_create (ctx, &cfg, &sb, &err) < 0)
    {
      rt_context_free (ctx);
      return fail (err);
    }
  fprintf (stderr, "sandbox %s is up\n", rt_sandbox_id (sb));
  /* C does not add the inner const to main's char ** by itself.  */
  if (rt_sandbox_exec (sb, (const char *const *) (argv + 1), &opts, &res, &err) < 0)
    {
      rt_sandbox_destroy (sb, NULL);
      rt_context_free (ctx);
      return fail (err);
    }
  fflush (stdout);
  if (rt_sandbox_destroy (sb, &err) < 0)
    {
      rt_context_free (ctx);
      return fail (err);
    }
  rt_context_free (ctx);
  return res.exit_code;
}
