/* serve.c - `runtime serve`: the HTTP API of docs/API.md on this machine.  */
#include <signal.h>
#include <stdio.h>

#include "cli.h"

static const struct cli_opt serve_opts[] = {
  { "listen", "ADDR:PORT", "where to listen; plain HTTP only on a loopback address", RT_SERVE_DEFAULT_LISTEN, false },
  { "tls-cert", "FILE", "a PEM certificate (chain): HTTPS, needed on any other address", NULL, false },
  { "tls-key", "FILE", "the certificate's PEM private key", NULL, false },
  { "nats", "URLS",
    "many hosts: be a replica of the API over the `runtime node`s of this NATS cluster (comma-separated "
    "nats:// or tls:// URLs); with a password in them, prefer RUNTIME_SERVE_NATS",
    "$RUNTIME_SERVE_NATS, or none: this machine's sandboxes", false },
  { "replicas", "N", "the catalog's copies if this replica makes it: 1, 3 or 5", "3", false },
  { "nats-ca", "FILE", "the NATS servers' CA (PEM) for tls:// URLs", "$RUNTIME_SERVE_NATS_CA, or the system's", false },
  { "nats-cert", "FILE", "this replica's NATS client certificate (PEM)", "$RUNTIME_SERVE_NATS_CERT, or none", false },
  { "nats-key", "FILE", "its private key (PEM)", "$RUNTIME_SERVE_NATS_KEY, or in --nats-cert", false },
  { "cluster-key", "FILE", "with --nats: the cluster key of the nodes (runtime node --cluster-key)",
    "$RUNTIME_SERVE_CLUSTER_KEY", false },
  { NULL, NULL, NULL, NULL, false },
};

static int
serve_run (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  rt_error *err = NULL;
  int code = 1;

  unsigned long replicas = 3;

  if (!cli_start (cmd, argc, argv, &a, &ctx, &code))
    return code;
  if (cli_opt_uint (cmd, &a, "replicas", 1, 5, &replicas) < 0)
    return 1;
  if (replicas != 1 && replicas != 3 && replicas != 5)
    return cli_usage_error ("give --replicas 1, 3 or 5", "the catalog's copies must be 1, 3 or 5");
  rt_serve_opts opts = {
    .listen = cli_opt (cmd, &a, "listen"),
    .tls_cert = cli_opt (cmd, &a, "tls-cert"),
    .tls_key = cli_opt (cmd, &a, "tls-key"),
    .nats = cli_opt_or_env (cmd, &a, "nats", "RUNTIME_SERVE_NATS"),
    .replicas = (unsigned) replicas,
    .nats_ca = cli_opt_or_env (cmd, &a, "nats-ca", "RUNTIME_SERVE_NATS_CA"),
    .nats_cert = cli_opt_or_env (cmd, &a, "nats-cert", "RUNTIME_SERVE_NATS_CERT"),
    .nats_key = cli_opt_or_env (cmd, &a, "nats-key", "RUNTIME_SERVE_NATS_KEY"),
    .cluster_key = cli_opt_or_env (cmd, &a, "cluster-key", "RUNTIME_SERVE_CLUSTER_KEY"),
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
  "only what it made. With --nats, a replica of the API over many hosts: creates are placed on the `runtime "
  "node`s of that NATS cluster, every later call goes to the host holding the sandbox, lists are gathered "
  "from all; any number of replicas may run. Stops on SIGTERM or Ctrl-C; sandboxes keep running.",
  "[--listen ADDR:PORT] [--tls-cert FILE --tls-key FILE] [--nats URL[,URL…] --cluster-key FILE [--replicas N] "
  "[--nats-ca FILE …]]", "runtime serve --listen 127.0.0.1:8430", serve_opts,
  false, 0, 0, "",
};

int
cli_cmd_serve (int argc, char **argv)
{
  return cli_run_single (&serve_cmd, argc, argv);
}
