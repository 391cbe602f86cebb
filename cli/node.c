/* node.c - `runtime node`: this host in a cluster of many hosts, over NATS
   (rt_node).  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const struct cli_opt node_opts[] = {
  { "nats", "URLS",
    "the NATS servers (tls://USER:PASS@HOST:PORT; nats:// only on loopback), comma-separated; all of a cluster's, "
    "for failover. With a password in them, prefer RUNTIME_NODE_NATS: a command line is readable by every user of "
    "the host",
    "$RUNTIME_NODE_NATS", false },
  { "name", "NAME", "this host's name in the cluster: letters, digits, _ and -", "$RUNTIME_NODE_NAME, or the host name",
    false },
  { "replicas", "N", "the catalog's copies if this node makes it: 1, 3 or 5", "3", false },
  { "nats-ca", "FILE", "the NATS servers' CA (PEM) for tls:// URLs", "$RUNTIME_NODE_NATS_CA, or the system's", false },
  { "nats-cert", "FILE", "this node's client certificate (PEM), when the servers ask for one",
    "$RUNTIME_NODE_NATS_CERT, or none", false },
  { "nats-key", "FILE", "its private key (PEM)", "$RUNTIME_NODE_NATS_KEY, or in --nats-cert", false },
  { "cluster-key", "FILE",
    "the cluster key every node and replica shares: 32 random bytes, mode 0600 (head -c 32 /dev/urandom > FILE); "
    "a NATS message not sealed with it is refused",
    "$RUNTIME_NODE_CLUSTER_KEY", false },
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
  if (cli_opt_or_env (cmd, &a, "nats", "RUNTIME_NODE_NATS") == NULL)
    return cli_usage_error ("give --nats tls://USER:PASS@HOST:PORT[,…] or set RUNTIME_NODE_NATS",
                            "runtime node needs the NATS cluster");
  if (cli_opt_uint (cmd, &a, "replicas", 1, 5, &replicas) < 0)
    return 1;
  if (replicas != 1 && replicas != 3 && replicas != 5)
    return cli_usage_error ("give --replicas 1, 3 or 5", "the catalog's copies must be 1, 3 or 5");
  rt_node_opts opts = {
    .nats = cli_opt_or_env (cmd, &a, "nats", "RUNTIME_NODE_NATS"),
    .name = cli_opt_or_env (cmd, &a, "name", "RUNTIME_NODE_NAME"),
    .replicas = (unsigned) replicas,
    .ca_file = cli_opt_or_env (cmd, &a, "nats-ca", "RUNTIME_NODE_NATS_CA"),
    .cert_file = cli_opt_or_env (cmd, &a, "nats-cert", "RUNTIME_NODE_NATS_CERT"),
    .key_file = cli_opt_or_env (cmd, &a, "nats-key", "RUNTIME_NODE_NATS_KEY"),
    .cluster_key = cli_opt_or_env (cmd, &a, "cluster-key", "RUNTIME_NODE_CLUSTER_KEY"),
  };
  if (rt_node (ctx, &opts, &err) < 0)
    return cli_lib_fail (err);
  return 0;
}

static int
list_nodes (rt_context *ctx, struct cli_args *a, char **json, rt_error **err)
{
  (void) a;
  return rt_node_list_json (ctx, json, err);
}

static const char *
field (json_object *o, const char *a, const char *b)
{
  json_object *v = json_object_object_get (o, a);
  return json_object_get_string (b ? json_object_object_get (v, b) : v);
}

static void
nodes_table (json_object *arr)
{
  printf ("%-20s %-5s %5s %10s %9s %-24s\n", "NAME", "STATE", "VCPUS", "FREE MIB", "SANDBOXES", "LAST SEEN");
  for (size_t i = 0; i < json_object_array_length (arr); i++)
    {
      json_object *o = json_object_array_get_idx (arr, i), *r = json_object_object_get (o, "report");
      char vcpus[32];
      long long free_b = json_object_get_int64 (json_object_object_get (json_object_object_get (r, "memory"),
                                                                         "freeBytes"));
      snprintf (vcpus, sizeof vcpus, "%s/%s", field (r, "vcpus", "free") ? field (r, "vcpus", "free") : "-",
                field (r, "vcpus", "total") ? field (r, "vcpus", "total") : "-");
      printf ("%-20s %-5s %5s %10lld %9s %-24s\n", field (o, "name", NULL), field (o, "state", NULL), vcpus,
              free_b >> 20, field (r, "sandboxes", "total") ? field (r, "sandboxes", "total") : "-",
              field (o, "lastSeenAt", NULL) ? field (o, "lastSeenAt", NULL) : "-");
    }
}

static int
node_ls (struct cli_command *cmd, int argc, char **argv)
{
  return cli_show_json (cmd, argc, argv, list_nodes, nodes_table);
}


static struct cli_command node_ls_cmds[] = {
  { "ls", node_ls,
    "List the hosts of a cluster as a runtime serve --nats replica sees them: state (up, or lost after 10 s "
    "without a report), vCPUs free of total, memory free, sandboxes, last report. Asks the replica named by "
    "RUNTIME_API_URL.",
    "", "RUNTIME_API_URL=http://127.0.0.1:8430 RUNTIME_API_KEY=… runtime node ls", cli_no_opts, false, 0, 0, NULL },
  { NULL, NULL, NULL, NULL, NULL, NULL, false, 0, 0, NULL },
};

static struct cli_command node_cmd = {
  "node", node_run,
  "Serve this host to a cluster of many hosts: publish its capacity every 2 s on NATS "
  "(runtime.node.NAME.capacity), keep it in the cluster's catalog (JetStream key-value bucket runtime-catalog, "
  "key node.NAME), answer pings, and answer API calls for its sandboxes on runtime.node.NAME.api with runtime "
  "serve's handlers, acting as the tenant each names (one of this host's tokens). Settings may come from the "
  "environment instead (RUNTIME_NODE_NATS, RUNTIME_NODE_NAME, RUNTIME_NODE_NATS_CA, RUNTIME_NODE_NATS_CERT, "
  "RUNTIME_NODE_NATS_KEY, RUNTIME_NODE_CLUSTER_KEY; an option wins), which keeps a password off the command line. Survives a NATS server going away. Stops on SIGTERM or Ctrl-C; "
  "sandboxes keep running. `runtime node ls` lists the cluster's hosts through a runtime serve --nats replica.",
  "--cluster-key FILE [--nats URL[,URL…]] [--name NAME] [--replicas N] [--nats-ca FILE [--nats-cert FILE "
  "--nats-key FILE]]",
  "RUNTIME_NODE_NATS=tls://node-host-a:PASS@10.0.0.1:4222,tls://node-host-a:PASS@10.0.0.2:4222 runtime node "
  "--nats-ca ca.pem --cluster-key /etc/runtime/cluster.key --name host-a", node_opts,
  false, 0, 0, "",
};

int
cli_cmd_node (int argc, char **argv)
{
  if (argc >= 2 && strcmp (argv[1], "ls") == 0)
    return cli_group_dispatch ("node", node_ls_cmds, argc, argv);
  return cli_run_single (&node_cmd, argc, argv);
}
