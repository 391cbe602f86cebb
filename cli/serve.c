/* serve.c - `runtime serve`: the HTTP API of docs/API.md on this machine.  */
#include <signal.h>
#include <stdio.h>

#include "cli.h"

static const struct cli_opt serve_opts[] = {
  { "listen", "ADDR:PORT", "where to listen; plain HTTP only on a loopback address", RT_SERVE_DEFAULT_LISTEN, false },
  { "tls-cert", "FILE", "a PEM certificate (chain): HTTPS, needed on any other address", NULL, false },
  { "tls-key", "FILE", "the certificate's PEM private key", NULL, false },
  { NULL, NULL, NULL, NULL, false },
};

static int
serve_run (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  rt_error *err = NULL;
  int code = 1;

  if (!cli_start (cmd, argc, argv, &a, &ctx, &code))
    return code;
  rt_serve_opts opts = {
    .listen = cli_opt (cmd, &a, "listen"),
    .tls_cert = cli_opt (cmd, &a, "tls-cert"),
    .tls_key = cli_opt (cmd, &a, "tls-key"),
  };
  /* A client that leaves mid-answer must not end the server.  */
  signal (SIGPIPE, SIG_IGN);
  if (rt_serve (ctx, &opts, &err) < 0)
    return cli_lib_fail (err);
  return 0;
}

static struct cli_command serve_cmd = {
  "serve", serve_run,
  "Serve the HTTP API (docs/API.md) for this machine's sandboxes: the hosted SDKs and `runtime` with "
  "RUNTIME_API_URL and RUNTIME_API_KEY work against it. Each token (runtime token create) is a tenant that sees "
  "only what it made. Stops on SIGTERM or Ctrl-C; sandboxes keep running.",
  "[--listen ADDR:PORT] [--tls-cert FILE --tls-key FILE]", "runtime serve --listen 127.0.0.1:8430", serve_opts,
  false, 0, 0, "",
};

int
cmd_serve (int argc, char **argv)
{
  return cli_run_single (&serve_cmd, argc, argv);
}
