/* node.c - `runtime node`: this host in a cluster of many hosts, over NATS
   (rt_node).  */
#include "cli.h"

static const struct cli_opt node_opts[] = {
  { "nats", "URLS", "the NATS servers (nats:// or tls://), comma-separated; all of a cluster's, for failover", NULL,
    false },
  { "name", "NAME", "this host's name in the cluster: letters, digits, _ and -", "the host name", false },
  { "replicas", "N", "the catalog's copies if this node makes it: 1, 3 or 5", "3", false },
  { "nats-ca", "FILE", "the NATS servers' CA (PEM) for tls:// URLs", "the system's", false },
  { "nats-cert", "FILE", "this node's client certificate (PEM), when the servers ask for one", "none", false },
  { "nats-key", "FILE", "its private key (PEM)", "in --nats-cert", false },
  { NULL, NULL, NULL, NULL, false },
};

static int
node_run (struct cli_command *cmd, int argc, char **argv)
{
  cleanup_cli_args struct cli_args a;
  cleanup_context rt_context *ctx = NULL;
  rt_error *err = NULL;
  unsigned long replicas = 3;
  int code = 1;

  if (!cli_start (cmd, argc, argv, &a, &ctx, &code))
    return code;
  if (cli_opt (cmd, &a, "nats") == NULL)
    return cli_usage_error ("give --nats nats://HOST:PORT[,…]", "runtime node needs the NATS cluster");
  if (cli_opt_uint (cmd, &a, "replicas", 1, 5, &replicas) < 0)
    return 1;
  rt_node_opts opts = {
    .nats = cli_opt (cmd, &a, "nats"),
    .name = cli_opt (cmd, &a, "name"),
    .replicas = (unsigned) replicas,
    .ca_file = cli_opt (cmd, &a, "nats-ca"),
    .cert_file = cli_opt (cmd, &a, "nats-cert"),
    .key_file = cli_opt (cmd, &a, "nats-key"),
  };
  if (rt_node (ctx, &opts, &err) < 0)
    return cli_lib_fail (err);
  return 0;
}

static struct cli_command node_cmd = {
  "node", node_run,
  "Serve this host to a cluster of many hosts (in progress): publish its capacity every 2 s on NATS "
  "(runtime.node.NAME.capacity), keep it in the cluster's catalog (JetStream key-value bucket runtime-catalog, "
  "key node.NAME), answer pings, and answer API calls for its sandboxes on runtime.node.NAME.api with runtime "
  "serve's handlers and this host's tokens. Survives a NATS server going away. Stops on SIGTERM or Ctrl-C; "
  "sandboxes keep running.",
  "--nats URL[,URL…] [--name NAME] [--replicas N] [--nats-ca FILE [--nats-cert FILE --nats-key FILE]]",
  "runtime node --nats nats://10.0.0.1:4222,nats://10.0.0.2:4222,nats://10.0.0.3:4222 --name host-a", node_opts,
  false, 0, 0, "",
};

int
cmd_node (int argc, char **argv)
{
  return cli_run_single (&node_cmd, argc, argv);
}
