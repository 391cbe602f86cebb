/* run-python.c - an LLM tool handler as a C function: run a Python
 * program a model wrote, with the packages it asked for, in a fresh
 * sandbox; print the JSON result the model gets back.
 *
 *   cc run-python.c $(pkg-config --cflags --libs libruntime) -o run-python
 *   ./run-python 'import requests; print(requests.__version__)' requests
 *
 * The packages are installed while only PyPI is reachable, then the
 * internet is switched off and the program runs with a 60 s limit; the
 * sandbox is always removed.  Result: {exit_code, timed_out, stdout,
 * stderr}, or {stage:"install", stderr}, or {error} for a bad name.
 */
#include <runtime.h>
#include <stdio.h>
#include <stdlib.h>

/* What a tool-call loop calls for every run_python request.  */
static char *
run_python (rt_context *ctx, const char *code, const char *const *packages)
{
  rt_error *err = NULL;
  char *result = NULL;

  if (rt_run_python (ctx, code, packages, NULL, &result, NULL, &err) < 0)
    {
      /* The model gets an error object too, not a crash.  */
      fprintf (stderr, "run-python: %s: %s\n", err->code, err->msg);
      rt_error_free (err);
      return NULL;
    }
  return result;
}

int
main (int argc, char **argv)
{
  rt_context *ctx = NULL;
  rt_error *err = NULL;
  char *result;

  if (argc < 2)
    {
      fprintf (stderr, "usage: %s CODE [PACKAGE…]\n", argv[0]);
      return 2;
    }
  if (rt_context_new (&ctx, &err) < 0)
    {
      fprintf (stderr, "run-python: %s\n", err->msg);
      rt_error_free (err);
      return 1;
    }
  result = run_python (ctx, argv[1], (const char *const *) (argv + 2));
  rt_context_free (ctx);
  if (result == NULL)
    return 1;
  printf ("%s\n", result);
  free (result);
  return 0;
}
