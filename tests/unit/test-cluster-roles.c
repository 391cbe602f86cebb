/* test-cluster-roles.c - the NATS users and permissions of many hosts
   (docs/cluster/nats-auth.conf, its path the second argument) on three
   real nats-servers clustered on loopback with TLS
   (tests/fixtures/nats-cluster.sh, the first).  Checked: a wrong password
   and a client without the cluster's CA are refused; a node's capacity
   reports reach serve, one forged in another node's name does not; serve's
   request reaches the node it names and the node answers it; a node can
   neither take another node's requests nor ask a node anything; a node
   cannot open the catalog, serve can and uses it.  */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/bus.h"
#include "cluster/catalog.h"
#include "tap.h"

static char dir[256], ca[300];
static const char *fixture;
static atomic_int got_host1, got_forged;

static void
stop_cluster (void)
{
  char cmd[600];
  snprintf (cmd, sizeof cmd, "%s stop %s", fixture, dir);
  if (system (cmd) != 0)
    fprintf (stderr, "# could not stop the cluster\n");
}

/* The first server's port, from "tls://127.0.0.1:PORT,…".  */
static int
first_port (const char *urls)
{
  const char *colon = strchr (urls + 6, ':');
  return colon ? atoi (colon + 1) : 0;
}

static rt_bus *
connect_as (int port, const char *user, const char *pass, const char *ca_file, rt_error **e)
{
  char url[256];
  rt_bus *b = NULL;

  snprintf (url, sizeof url, "tls://%s:%s@127.0.0.1:%d", user, pass, port);
  if (rt_bus_connect (&(struct rt_bus_opts){ .urls = url, .name = user, .ca_file = ca_file }, &b, e) < 0)
    return NULL;
  return b;
}

static void
on_capacity (void *data, const struct rt_bus_msg *m)
{
  (void) data;
  if (strcmp (m->subject, "runtime.node.host1.capacity") == 0)
    got_host1++;
  else
    got_forged++;
}

static void
answer (void *data, const struct rt_bus_msg *m)
{
  rt_bus *b = data;
  char out[128];
  int n = snprintf (out, sizeof out, "%s:%.*s", m->subject, (int) m->len, (const char *) m->data);
  if (m->reply)
    rt_bus_publish (b, m->reply, out, (size_t) n, NULL);
}

static bool
has_code (rt_error *e, const char *code)
{
  return e && strcmp (e->code, code) == 0;
}

int
main (int argc, char **argv)
{
  char tmpl[] = "/tmp/rt-test-roles-XXXXXX", cmd[1200], urls[4096] = "", *reply = NULL;
  rt_bus *serve = NULL, *host1 = NULL, *host2 = NULL, *bad = NULL;
  rt_bus_sub *caps = NULL, *s1 = NULL, *s2 = NULL, *steal = NULL;
  rt_catalog *c = NULL;
  rt_error *e = NULL;
  size_t len = 0;
  int port;
  FILE *p;

  if (argc < 3 || mkdtemp (tmpl) == NULL)
    return 99;
  fixture = argv[1];
  snprintf (dir, sizeof dir, "%s/c", tmpl);
  snprintf (ca, sizeof ca, "%s/tls/ca.pem", dir);
  /* The servers read the passwords from their environment (nats-auth.conf).  */
  setenv ("RT_NATS_SERVE_PASS", "serve-pass-0123", 1);
  setenv ("RT_NATS_NODE_HOST1_PASS", "host1-pass-4567", 1);
  setenv ("RT_NATS_NODE_HOST2_PASS", "host2-pass-89ab", 1);
  setenv ("RT_NATS_NODE_HOST3_PASS", "host3-pass-cdef", 1);
  snprintf (cmd, sizeof cmd, "NATS_AUTH='%s' NATS_TLS=1 %s start %s 3", argv[2], fixture, dir);
  p = popen (cmd, "r");
  if (p && fgets (urls, sizeof urls, p) == NULL)
    urls[0] = '\0';
  if (p)
    pclose (p);
  urls[strcspn (urls, "\n")] = '\0';
  ok (strncmp (urls, "tls://", 6) == 0, "three NATS servers with TLS and the example's users: %s", urls);
  port = first_port (urls);

  bad = connect_as (port, "serve", "wrong", ca, &e);
  ok (bad == NULL && e, "a wrong password is refused: %s", e ? e->msg : "(connected)");
  rt_error_free (e), e = NULL;
  rt_bus_free (bad);
  bad = connect_as (port, "serve", "serve-pass-0123", NULL, &e);
  ok (bad == NULL && e, "a client that does not trust the cluster's CA is refused");
  rt_error_free (e), e = NULL;
  rt_bus_free (bad);

  serve = connect_as (port, "serve", "serve-pass-0123", ca, &e);
  host1 = connect_as (port, "node-host1", "host1-pass-4567", ca, &e);
  host2 = connect_as (port, "node-host2", "host2-pass-89ab", ca, &e);
  ok (serve && host1 && host2, "serve and two nodes connect with their own passwords%s%s", e ? ": " : "",
      e ? e->msg : "");
  rt_error_free (e), e = NULL;
  if (serve == NULL || host1 == NULL || host2 == NULL)
    goto out;

  /* Capacity: a node's own reports reach serve; one in host2's name from
     host1 is dropped by the server.  */
  ok (rt_bus_subscribe (serve, "runtime.node.*.capacity", NULL, on_capacity, NULL, &caps, &e) == 0,
      "serve reads every node's capacity reports");
  usleep (200 * 1000);
  rt_bus_publish (host1, "runtime.node.host1.capacity", "{}", 2, NULL);
  rt_bus_publish (host1, "runtime.node.host2.capacity", "{}", 2, NULL);
  for (int i = 0; i < 30 && got_host1 == 0; i++)
    usleep (100 * 1000);
  usleep (300 * 1000);
  ok (got_host1 == 1, "a node's own capacity report reaches serve");
  ok (got_forged == 0, "a report forged in another node's name does not");

  /* Requests: serve asks host1 and host1 answers (a response to a request
     it was given, the only publish besides its reports).  */
  ok (rt_bus_subscribe (host1, "runtime.node.host1.api", NULL, answer, host1, &s1, &e) == 0
          && rt_bus_subscribe (host2, "runtime.node.host2.api", NULL, answer, host2, &s2, &e) == 0,
      "each node takes its own requests");
  /* host1 also tries to take host2's: the server refuses it the subscription.  */
  rt_bus_subscribe (host1, "runtime.node.host2.api", "steal", answer, host1, &steal, NULL);
  usleep (300 * 1000);
  ok (rt_bus_request (serve, "runtime.node.host1.api", "hi", 2, 3000, &reply, &len, &e) == 0
          && strcmp (reply, "runtime.node.host1.api:hi") == 0,
      "serve's request reaches host1, whose answer comes back: %s", reply ? reply : e ? e->msg : "");
  free (reply), reply = NULL;
  rt_error_free (e), e = NULL;
  /* host2 leaves: were host1's stolen subscription live it would answer.  */
  rt_bus_unsubscribe (s2), s2 = NULL;
  usleep (300 * 1000);
  ok (rt_bus_request (serve, "runtime.node.host2.api", "hi", 2, 1500, &reply, &len, &e) < 0
          && has_code (e, "node_unreachable"),
      "a node cannot take another node's requests");
  free (reply), reply = NULL;
  rt_error_free (e), e = NULL;
  ok (rt_bus_request (host2, "runtime.node.host1.api", "hi", 2, 1500, &reply, &len, &e) < 0,
      "a node cannot ask another node anything");
  free (reply), reply = NULL;
  rt_error_free (e), e = NULL;
  /* The pulls of a stream and the host's list and stops: serve's to ask,
     the node's own to take, no other node's.  */
  for (const char *const *w = (const char *const[]){ "pull", "host", NULL }; *w; w++)
    {
      char subject[64];
      rt_bus_sub *mine = NULL;
      snprintf (subject, sizeof subject, "runtime.node.host1.%s", *w);
      ok (rt_bus_subscribe (host1, subject, NULL, answer, host1, &mine, &e) == 0, "host1 takes its own %s", subject);
      rt_error_free (e), e = NULL;
      usleep (200 * 1000);
      ok (rt_bus_request (serve, subject, "hi", 2, 3000, &reply, &len, &e) == 0, "serve asks %s", subject);
      free (reply), reply = NULL;
      rt_error_free (e), e = NULL;
      ok (rt_bus_request (host2, subject, "hi", 2, 1500, &reply, &len, &e) < 0, "another node cannot ask %s",
          subject);
      free (reply), reply = NULL;
      rt_error_free (e), e = NULL;
      rt_bus_unsubscribe (mine);
    }

  /* The catalog is serve's alone.  */
  ok (rt_catalog_open (host1, 3, &c, &e) < 0, "a node cannot open the catalog");
  rt_error_free (e), e = NULL;
  rt_catalog_free (c), c = NULL;
  ok (rt_catalog_open (serve, 3, &c, &e) == 0 && rt_catalog_create (c, "sb.sb-1", "{\"node\":\"host1\"}", NULL, &e) == 0,
      "serve opens the catalog (3 replicas) and writes it%s%s", e ? ": " : "", e ? e->msg : "");
  rt_error_free (e), e = NULL;

out:
  rt_catalog_free (c);
  rt_bus_unsubscribe (steal);
  rt_bus_unsubscribe (s1);
  rt_bus_unsubscribe (s2);
  rt_bus_unsubscribe (caps);
  rt_bus_free (host2);
  rt_bus_free (host1);
  rt_bus_free (serve);
  stop_cluster ();
  rmdir (tmpl);
  return tap_done ();
}
