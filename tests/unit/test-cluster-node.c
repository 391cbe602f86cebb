/* test-cluster-node.c - `runtime node` (libruntime/cluster/node.c) as a
   user runs it, against three real nats-servers on loopback (arguments:
   tests/fixtures/nats-cluster.sh, the built runtime).  No VM: its state,
   data and cache dirs are empty ones of its own, RUNTIME_ACCEL=tcg spares
   it the probe.  Checked: capacity reports arrive about every 2 s with
   the host's figures; it answers a ping; node.NAME appears in the catalog
   as "up"; a second node of the same name is refused; with the NATS
   server it is connected to killed, reports go on and the catalog entry
   moves on; API calls over NATS (runtime.node.NAME.api) are answered by
   the route handlers: 401 without a token, a tenant's empty list, 404 for
   a sandbox it does not have, 400 for a message that is not a request;
   SIGTERM ends it with 0 and the entry says "stopped".
   With the cluster key (cluster/seal.h), which this test's own bus and
   the nodes share: a publisher without it, naming tenant alice with
   raised limits or asking for her secrets, is refused (a plain
   unauthorized answer, nothing run); a passive subscriber of the node's
   subjects reads no secret value pushed to it; of two nodes started at
   once under one name, one runs and the other exits 1 (name_taken); a
   node whose catalog entry another run takes over stops serving and
   exits 1; a node refuses plain or credential-less NATS off loopback and
   a start without the key.  Against a
   nats-server without JetStream (as a node with the per-role credentials
   of docs/cluster/nats-auth.conf sees the cluster: no catalog), it
   reports all the same and says it has no catalog.
   With a third argument (docs/cluster/nats-auth.conf), only this: on
   three TLS servers with those users and permissions, the node as user
   node-host1 with --nats-ca reports to serve, answers serve's ping and
   API call through its reply permission, says it has no catalog (a node
   user has no JetStream), and exits 0 on SIGTERM.  */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster/bus.h"
#include "cluster/catalog.h"
#include "common/cleanup.h"
#include "common/sys.h"
#include "common/util.h"
#include "nats-fixture.h"
#include "tap.h"

#define MAX_BEATS 256

static char top[64], dir[128], keyfile[200];
static const char *fixture, *runtime;
static struct rt_seal_key cluster_key;

/* What the test's subscriber saw.  */
static struct
{
  pthread_mutex_t mu;
  uint64_t at[MAX_BEATS]; /* CLOCK_MONOTONIC ms */
  int n;
  char last[4096];
} seen = { PTHREAD_MUTEX_INITIALIZER };

static void
on_capacity (void *data, const struct rt_bus_msg *m)
{
  (void) data;
  pthread_mutex_lock (&seen.mu);
  if (seen.n < MAX_BEATS)
    seen.at[seen.n++] = rt_now_ms ();
  snprintf (seen.last, sizeof seen.last, "%.*s", (int) m->len, (const char *) m->data);
  pthread_mutex_unlock (&seen.mu);
}

static int
beats (void)
{
  pthread_mutex_lock (&seen.mu);
  int n = seen.n;
  pthread_mutex_unlock (&seen.mu);
  return n;
}

/* Waits up to @ms for the count of reports to reach @n.  */
static bool
wait_beats (int n, int ms)
{
  for (int waited = 0; waited < ms; waited += 50)
    {
      if (beats () >= n)
        return true;
      usleep (50 * 1000);
    }
  return beats () >= n;
}

static void
set_env (void)
{
  char state[200], data[200], cache[200];

  snprintf (state, sizeof state, "%s/state", top);
  snprintf (data, sizeof data, "%s/data", top);
  snprintf (cache, sizeof cache, "%s/cache", top);
  setenv ("RUNTIME_STATE_DIR", state, 1);
  setenv ("RUNTIME_DATA_DIR", data, 1);
  setenv ("RUNTIME_CACHE_DIR", cache, 1);
  setenv ("RUNTIME_ACCEL", "tcg", 1);
}

/* An API token of the node's data dir, made by `runtime token create`.  */
static char *
make_token (void)
{
  char cmd[400], *tok = calloc (1, 128);
  FILE *p;

  snprintf (cmd, sizeof cmd, "%s token create alice 2>/dev/null", runtime);
  p = popen (cmd, "r");
  if (p == NULL || tok == NULL || fgets (tok, 128, p) == NULL)
    *tok = '\0';
  if (p)
    pclose (p);
  tok[strcspn (tok, "\n")] = '\0';
  return tok;
}

/* An API call to the node over NATS: its status (-1: no answer) and its
   body's text in @body.  */
static int
api (rt_bus *b, const char *request, char *body, size_t size)
{
  cleanup_free char *reply = NULL;
  cleanup_json json_object *o = NULL;
  const char *b64;
  size_t len = 0;
  rt_error *e = NULL;
  int n;

  *body = '\0';
  if (rt_bus_request (b, "runtime.node.t1.api", request, strlen (request), 5000, &reply, &len, &e) < 0)
    {
      printf ("# %s\n", e->msg);
      rt_error_free (e);
      return -1;
    }
  o = json_tokener_parse (reply);
  b64 = rt_json_str (o, "body");
  if (b64 && strlen (b64) / 4 * 3 < size)
    {
      n = EVP_DecodeBlock ((unsigned char *) body, (const unsigned char *) b64, (int) strlen (b64));
      body[n > 0 ? n : 0] = '\0';
    }
  return o ? (int) rt_json_i64 (o, "status") : -1;
}

static void
check_api (rt_bus *b, const char *token)
{
  char req[512], body[4096];

  ok (api (b, "{\"method\":\"GET\",\"path\":\"/v1/sandboxes\"}", body, sizeof body) == 401
          && strstr (body, "unauthorized"),
      "an API call naming no tenant: 401 (%.60s)", body);
  /* A token is no way in: a node takes none (cluster/nats.h).  */
  snprintf (req, sizeof req,
            "{\"method\":\"GET\",\"path\":\"/v1/sandboxes\",\"headers\":{\"Authorization\":\"Bearer %s\"}}",
            token);
  ok (api (b, req, body, sizeof body) == 401, "with alice's token but no tenant named: 401 (%.60s)", body);
  ok (api (b, "{\"method\":\"GET\",\"path\":\"/v1/sandboxes\",\"tenant\":\"mallory\"}", body, sizeof body) == 401
          && strstr (body, "mallory"),
      "naming a tenant this host has no token of: 401 (%.60s)", body);
  ok (*token && api (b, "{\"method\":\"GET\",\"path\":\"/v1/sandboxes\",\"tenant\":\"alice\"}", body, sizeof body) == 200
          && strstr (body, "\"data\":[]"),
      "naming tenant alice: her sandboxes, none (%.60s)", body);
  snprintf (req, sizeof req,
            "{\"method\":\"POST\",\"path\":\"/v1/sandboxes/sb-none:exec\",\"tenant\":\"alice\","
            "\"query\":{\"x\":[\"1\",\"2\"]},\"headers\":{\"x-request-id\":\"nats-test-1\"},"
            "\"body\":\"eyJhcmd2IjpbInRydWUiXX0=\"}");
  ok (api (b, req, body, sizeof body) == 404 && strstr (body, "not_found") && strstr (body, "nats-test-1"),
      "an exec in a sandbox it does not have: 404 with the request id (%.60s)", body);
  ok (api (b, "not json", body, sizeof body) == 400, "a message that is no request: 400");
  /* A replica sends the token's limits with its name: no store needed.  */
  ok (api (b, "{\"method\":\"GET\",\"path\":\"/v1/sandboxes\",\"tenant\":\"zed\",\"limits\":{\"maxSandboxes\":2}}",
           body, sizeof body)
              == 200
          && strstr (body, "\"data\":[]"),
      "a tenant this host has no token of, with its limits: served (%.60s)", body);
  ok (api (b, "{\"method\":\"GET\",\"path\":\"/v1/sandboxes\",\"tenant\":\"../x\",\"limits\":{}}", body,
           sizeof body)
          == 401,
      "a tenant name that is none, even with limits: 401");
  ok (api (b, "{\"method\":\"GET\",\"path\":\"/v1/sandboxes\",\"tenant\":\"zed\",\"limits\":{\"maxVcpu\":-1,"
              "\"rate\":\"x\",\"maxCostMicros\":1e300}}",
           body, sizeof body)
          == 200,
      "limits out of range (negative, not numbers) do not break the request");
}

/* What the passive subscriber of runtime.node.t1.> heard: messages, and
   those with alice's secret value (raw or base64) or her name in clear.  */
static atomic_int heard, leaked;

static void
on_heard (void *data, const struct rt_bus_msg *m)
{
  (void) data;
  atomic_fetch_add (&heard, 1);
  for (const char *const *s = (const char *const[]){ "sk-live-4242", "eyJ2YWx1ZSI6", "alice", NULL }; *s; s++)
    if (memmem (m->data, m->len, *s, strlen (*s)))
      atomic_fetch_add (&leaked, 1);
}

/* A publisher without the key, acting as alice; a replica pushing her
   secret while a passive subscriber listens.  */
static void
check_hostile (const char *urls, rt_bus *b)
{
  /* {"value":"sk-live-4242-hunter2","hosts":["api.example.com"]} */
  static const char put[]
      = "{\"method\":\"PUT\",\"path\":\"/v1/egress-secrets/OPENAI\",\"tenant\":\"alice\",\"limits\":{},"
        "\"body\":\"eyJ2YWx1ZSI6InNrLWxpdmUtNDI0Mi1odW50ZXIyIiwiaG9zdHMiOlsiYXBpLmV4YW1wbGUuY29tIl19\"}";
  rt_bus *hostile = NULL;
  rt_bus_sub *spy = NULL;
  rt_error *e = NULL;
  char body[4096];
  int status;

  if (rt_bus_connect (&(struct rt_bus_opts){ .urls = urls, .name = "hostile" }, &hostile, &e) < 0
      || rt_bus_subscribe (hostile, "runtime.node.t1.>", NULL, on_heard, NULL, &spy, &e) < 0)
    {
      ok (false, "a connection without the key: %s", e->msg);
      rt_error_free (e);
      rt_bus_free (hostile);
      return;
    }
  status = api (b, put, body, sizeof body);
  ok (status == 200, "a replica (with the key) puts alice's secret on the node: %d (%.60s)", status, body);
  ok (atomic_load (&heard) >= 1 && atomic_load (&leaked) == 0,
      "a passive subscriber of runtime.node.t1.> reads neither the value nor the tenant (%d of %d)",
      atomic_load (&leaked), atomic_load (&heard));
  status = api (hostile, "{\"method\":\"GET\",\"path\":\"/v1/egress-secrets\",\"tenant\":\"alice\",\"limits\":{}}",
                body, sizeof body);
  /* Refused by the bus: {"error": …}, no status of a route's answer.  */
  ok (status == 0 && !strstr (body, "OPENAI"), "without the key, listing alice's secrets: refused (%d)", status);
  status = api (hostile,
                "{\"method\":\"POST\",\"path\":\"/v1/sandboxes\",\"tenant\":\"alice\","
                "\"limits\":{\"maxSandboxes\":1000},\"body\":\"e30=\"}",
                body, sizeof body);
  ok (status == 0, "without the key, a create as alice with her limits raised: refused (%d)", status);
  ok (api (b, "{\"method\":\"GET\",\"path\":\"/v1/egress-secrets\",\"tenant\":\"alice\",\"limits\":{}}", body,
           sizeof body)
              == 200
          && strstr (body, "OPENAI") && !strstr (body, "hunter2"),
      "with it, her list has the secret, not its value (%.60s)", body);
  rt_bus_unsubscribe (spy);
  rt_bus_free (hostile);
}

/* A follow of an image build's log that never ends: a record "building"
   by the node's own pid, as images.c keeps one.  */
#define FOLLOW_REQ                                                                                                    \
  "{\"method\":\"GET\",\"path\":\"/v1/images/bld-0123456789abcdef/logs\",\"query\":{\"follow\":\"true\"},"          \
  "\"tenant\":\"alice\",\"timeoutMs\":%d}"
#define CONCURRENT 64 /* SRV_MAX_INFLIGHT */

static rt_bus *follow_bus;

static void *
follow_one (void *arg)
{
  char req[256], body[512];
  int *status = arg;

  snprintf (req, sizeof req, FOLLOW_REQ, 4000);
  *status = api (follow_bus, req, body, sizeof body);
  return NULL;
}

static void
check_deadline (rt_bus *b, pid_t node)
{
  char path[300], req[256], body[512];
  cleanup_free char *reply = NULL;
  pthread_t t[CONCURRENT];
  int status[CONCURRENT], all = 0;
  size_t len = 0;
  uint64_t t0;
  FILE *f;

  snprintf (path, sizeof path, "mkdir -p %s/data/serve/builds/alice", top);
  if (system (path) != 0)
    return;
  snprintf (path, sizeof path, "%s/data/serve/builds/alice/bld-0123456789abcdef.json", top);
  f = fopen (path, "w");
  if (f)
    {
      fprintf (f, "{\"state\":\"building\",\"pid\":%d}\n", (int) node);
      fclose (f);
    }
  snprintf (req, sizeof req, FOLLOW_REQ, 1500);
  t0 = rt_now_ms ();
  ok (rt_bus_request (b, "runtime.node.t1.api", req, strlen (req), 10000, &reply, &len, NULL) == 0
          && strstr (reply, "\"status\":200") && strstr (reply, "\"truncated\":true") && rt_now_ms () - t0 >= 1400
          && rt_now_ms () - t0 < 4000,
      "a log follow that never ends is answered at its deadline (timeoutMs 1500: %llu ms), truncated",
      (unsigned long long) (rt_now_ms () - t0));
  follow_bus = b;
  for (int i = 0; i < CONCURRENT; i++)
    if (pthread_create (&t[i], NULL, follow_one, &status[i]) != 0)
      status[i] = -2;
  usleep (1000 * 1000);
  ok (api (b, "{\"method\":\"GET\",\"path\":\"/v1/sandboxes\",\"tenant\":\"alice\"}", body, sizeof body) == 429,
      "with %d of alice's follows running, her next request: 429 (%.60s)", CONCURRENT, body);
  for (int i = 0; i < CONCURRENT; i++)
    if (status[i] != -2)
      pthread_join (t[i], NULL);
  for (int i = 0; i < CONCURRENT; i++)
    all += status[i] == 200;
  ok (all == CONCURRENT, "and those %d end by their deadline: %d answered", CONCURRENT, all);
  ok (api (b, "{\"method\":\"GET\",\"path\":\"/v1/sandboxes\",\"tenant\":\"alice\"}", body, sizeof body) == 200,
      "then she is served again");
  unlink (path);
}

/* runtime node with --nats and --name; with @ca, as runtime-node.service
   starts it instead: every setting from the environment, only `runtime
   node` on the command line.  */
static pid_t
start_node_ca (const char *urls, const char *name, const char *log, const char *ca)
{
  pid_t pid = fork ();

  if (pid == 0)
    {
      int fd = open (log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
      if (fd >= 0)
        dup2 (fd, 2);
      if (ca == NULL)
        execl (runtime, runtime, "node", "--nats", urls, "--name", name, (char *) NULL);
      setenv ("RUNTIME_NODE_NATS", urls, 1);
      setenv ("RUNTIME_NODE_NAME", name, 1);
      setenv ("RUNTIME_NODE_NATS_CA", ca, 1);
      setenv ("RUNTIME_NODE_NATS_CERT", "", 1); /* left out in node.env */
      execl (runtime, runtime, "node", (char *) NULL);
      _exit (127);
    }
  return pid;
}

static pid_t
start_node (const char *urls, const char *name, const char *log)
{
  return start_node_ca (urls, name, log, NULL);
}

/* The exit status of @pid within @ms, or -1 (then it is killed).  */
static int
wait_exit (pid_t pid, int ms)
{
  int status = 0;

  for (int waited = 0; waited < ms; waited += 50)
    {
      if (waitpid (pid, &status, WNOHANG) == pid)
        return WIFEXITED (status) ? WEXITSTATUS (status) : 128 + WTERMSIG (status);
      usleep (50 * 1000);
    }
  kill (pid, SIGKILL);
  waitpid (pid, &status, 0);
  return -1;
}

/* Two nodes of one name started at once: one runs, the other exits 1
   (name_taken); then the survivor's catalog entry taken over by another
   run: it stops, exits 1, and says so.  */
static void
check_same_name (const char *urls, rt_catalog *c)
{
  char log_a[200], log_b[200], cmd[600], value[256];
  pid_t a, b;
  int ea = -1, eb = -1, status;
  uint64_t rev = 0;
  rt_error *e = NULL;

  snprintf (log_a, sizeof log_a, "%s/same-a.log", top);
  snprintf (log_b, sizeof log_b, "%s/same-b.log", top);
  a = start_node (urls, "t3", log_a);
  b = start_node (urls, "t3", log_b);
  /* Both past their start (a few reports) by then.  */
  usleep (5000 * 1000);
  if (waitpid (a, &status, WNOHANG) == a)
    ea = WIFEXITED (status) ? WEXITSTATUS (status) : 128;
  if (waitpid (b, &status, WNOHANG) == b)
    eb = WIFEXITED (status) ? WEXITSTATUS (status) : 128;
  snprintf (cmd, sizeof cmd, "grep -q name_taken %s", ea == 1 ? log_a : log_b);
  ok (((ea == 1 && eb == -1) || (eb == 1 && ea == -1)) && system (cmd) == 0,
      "two nodes named t3 started at once: one runs, the other exits 1 with name_taken (%d, %d)", ea, eb);
  pid_t alive = ea == -1 ? a : b;
  if (ea != -1 && eb != -1)
    return;
  snprintf (value, sizeof value, "{\"name\":\"t3\",\"state\":\"up\",\"instance\":\"another\",\"beatMs\":%lld}",
            (long long) rt_epoch_ms ());
  for (int i = 0; i < 5; i++)
    {
      cleanup_free char *old = NULL;
      if (rt_catalog_get (c, "node.t3", &old, &rev, NULL) == 0
          && rt_catalog_update (c, "node.t3", value, rev, NULL, &e) == 0)
        break;
      rt_error_free (e), e = NULL;
    }
  rt_error_free (e);
  status = wait_exit (alive, 8000);
  snprintf (cmd, sizeof cmd, "grep -q 'taken over' %s", alive == a ? log_a : log_b);
  ok (status == 1 && system (cmd) == 0, "its entry taken over by another run: it stops serving, exits 1 (%d)", status);
  /* Both ran (the race lost by neither): the other one goes too.  */
  if (ea == -1 && eb == -1)
    wait_exit (a, 100);
}

/* The field @key of the catalog entry node.t1 (a string or a number as
   text), or "" when there is none.  */
static void
entry_field (rt_catalog *c, const char *key, char *out, size_t size)
{
  cleanup_free char *v = NULL;
  cleanup_json json_object *o = NULL;
  json_object *f = NULL;
  rt_error *e = NULL;

  *out = '\0';
  if (rt_catalog_get (c, "node.t1", &v, NULL, &e) == 0 && (o = json_tokener_parse (v))
      && json_object_object_get_ex (o, key, &f))
    snprintf (out, size, "%s", json_object_get_string (f));
  rt_error_free (e);
}

/* The server whose monitoring page lists the connection
   runtime-node-t1, or 0.  */
static int
server_of_node (void)
{
  for (int k = 1; k <= 3; k++)
    {
      char file[16], cmd[256], buf[8192];
      size_t len;
      FILE *p;
      snprintf (file, sizeof file, "mon.%d", k);
      snprintf (cmd, sizeof cmd, "curl -sf 'http://127.0.0.1:%d/connz?limit=64'", nats_fixture_read_int (dir, file));
      if ((p = popen (cmd, "r")) == NULL)
        continue;
      len = fread (buf, 1, sizeof buf - 1, p);
      buf[len] = '\0';
      pclose (p);
      if (strstr (buf, "\"runtime-node-t1\""))
        return k;
    }
  return 0;
}

static void
check_reports (void)
{
  cleanup_json json_object *r = NULL;
  json_object *v = NULL, *total = NULL;
  uint64_t gap_min = UINT64_MAX, gap_max = 0;
  int n;

  ok (wait_beats (1, 8000), "a capacity report within 8 s of the start");
  ok (wait_beats (4, 8000), "and 3 more: %d", beats ());
  pthread_mutex_lock (&seen.mu);
  n = seen.n;
  for (int i = 1; i < n; i++)
    {
      uint64_t gap = seen.at[i] - seen.at[i - 1];
      gap_min = gap < gap_min ? gap : gap_min;
      gap_max = gap > gap_max ? gap : gap_max;
    }
  r = json_tokener_parse (seen.last);
  pthread_mutex_unlock (&seen.mu);
  ok (n >= 2 && gap_min >= 1500 && gap_max <= 2600, "about 2 s apart: %llu to %llu ms", (unsigned long long) gap_min,
      (unsigned long long) gap_max);
  ok (r && json_object_object_get_ex (r, "name", &v) && strcmp (json_object_get_string (v), "t1") == 0
          && json_object_object_get_ex (r, "accelerator", &v) && strcmp (json_object_get_string (v), "tcg") == 0,
      "a report names the node and its accelerator");
  ok (r && json_object_object_get_ex (r, "vcpus", &v) && json_object_object_get_ex (v, "total", &total)
          && json_object_get_int (total) == (int) sysconf (_SC_NPROCESSORS_ONLN)
          && json_object_object_get_ex (r, "sandboxes", &v) && json_object_object_get_ex (v, "total", &total)
          && json_object_get_int (total) == 0,
      "the host's vCPUs, no sandboxes");
}

static void
check_server_lost (rt_catalog *c)
{
  char seq_before[32], seq_after[32], file[16];
  int k = server_of_node (), pid, before;

  ok (k > 0, "the node's NATS server found: n%d", k);
  snprintf (file, sizeof file, "pid.%d", k);
  pid = k ? nats_fixture_read_int (dir, file) : 0;
  entry_field (c, "seq", seq_before, sizeof seq_before);
  before = beats ();
  ok (pid > 0 && kill (pid, SIGKILL) == 0, "that server killed");
  ok (wait_beats (before + 3, 12000), "reports go on: %d more", beats () - before);
  for (int i = 0; i < 50; i++)
    {
      entry_field (c, "seq", seq_after, sizeof seq_after);
      if (*seq_after && atoi (seq_after) > atoi (seq_before))
        break;
      usleep (200 * 1000);
    }
  ok (atoi (seq_after) > atoi (seq_before), "and the catalog entry moves on: seq %s to %s", seq_before, seq_after);
}

static void
show_log_if_failed (const char *log)
{
  char cmd[300];

  snprintf (cmd, sizeof cmd, "sed 's/^/# /' %s", log);
  if (tap_failed && system (cmd) != 0)
    fprintf (stderr, "# no log\n");
}

/* The cluster stopped, the test's dir removed, the plan printed.  */
static int
finish (void)
{
  char cmd[200];

  nats_fixture_stop (fixture, dir);
  snprintf (cmd, sizeof cmd, "rm -rf %s", top);
  if (system (cmd) != 0)
    fprintf (stderr, "# could not remove %s\n", top);
  return tap_done ();
}

/* A loopback port free now, or 0.  */
static int
free_port (void)
{
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  socklen_t len = sizeof a;
  int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = 0;

  if (fd >= 0 && bind (fd, (struct sockaddr *) &a, sizeof a) == 0
      && getsockname (fd, (struct sockaddr *) &a, &len) == 0)
    port = ntohs (a.sin_port);
  if (fd >= 0)
    close (fd);
  return port;
}

/* Counts the messages in the int at @data.  */
static void
count_msg (void *data, const struct rt_bus_msg *m)
{
  (void) m;
  __atomic_add_fetch ((int *) data, 1, __ATOMIC_SEQ_CST);
}

/* A stream longer than nats-server's default max_payload (1 MB): a done
   build's log of 3 MB, read without follow, is cut to fit; the reply
   arrives, says truncated, and is under the limit.  */
static void
check_cut (rt_bus *b, pid_t node)
{
  char path[300], cmd[400];
  const char *req = "{\"method\":\"GET\",\"path\":\"/v1/images/bld-00000000000000ff/logs\",\"tenant\":\"alice\"}";
  cleanup_free char *reply = NULL;
  size_t len = 0;
  FILE *f;

  snprintf (path, sizeof path, "%s/data/serve/builds/alice/bld-00000000000000ff.json", top);
  f = fopen (path, "w");
  if (f)
    {
      fprintf (f, "{\"state\":\"ready\",\"pid\":%d}\n", (int) node);
      fclose (f);
    }
  snprintf (cmd, sizeof cmd, "yes 'a line of the build log, over and over' | head -c 3000000 >%s/data/serve/builds/alice/"
            "bld-00000000000000ff.log", top);
  ok (system (cmd) == 0 && rt_bus_request (b, "runtime.node.t2.api", req, strlen (req), 10000, &reply, &len, NULL) == 0
          && strstr (reply, "\"status\":200") && strstr (reply, "\"truncated\":true") && len <= 1024 * 1024,
      "on a server with the default max_payload, a 3 MB log is cut to fit: %zu bytes, truncated", len);
}

/* One nats-server without JetStream: no catalog to be had.  */
static void
check_no_catalog (void)
{
  char url[64], port_s[16], log[200], cmd[300];
  rt_bus *b = NULL;
  rt_bus_sub *sub = NULL;
  rt_error *e = NULL;
  int port = free_port (), reports = 0;
  pid_t server, node = -1;

  snprintf (port_s, sizeof port_s, "%d", port);
  snprintf (url, sizeof url, "nats://127.0.0.1:%d", port);
  snprintf (log, sizeof log, "%s/node3.log", top);
  server = fork ();
  if (server == 0)
    {
      int null = open ("/dev/null", O_WRONLY | O_CLOEXEC);
      if (null >= 0)
        dup2 (null, 2);
      execlp ("nats-server", "nats-server", "-a", "127.0.0.1", "-p", port_s, (char *) NULL);
      _exit (127);
    }
  for (int i = 0; i < 50 && b == NULL; i++)
    if (rt_bus_connect (&(struct rt_bus_opts){ .urls = url, .key = &cluster_key }, &b, &e) < 0)
      {
        rt_error_free (e), e = NULL;
        usleep (100 * 1000);
      }
  if (b && rt_bus_subscribe (b, "runtime.node.t2.capacity", NULL, count_msg, &reports, &sub, &e) == 0)
    node = start_node (url, "t2", log);
  for (int i = 0; i < 150 && __atomic_load_n (&reports, __ATOMIC_SEQ_CST) < 2; i++)
    usleep (100 * 1000);
  ok (__atomic_load_n (&reports, __ATOMIC_SEQ_CST) >= 2, "without JetStream, reports all the same: %d",
      __atomic_load_n (&reports, __ATOMIC_SEQ_CST));
  snprintf (cmd, sizeof cmd, "grep -q 'no catalog' %s", log);
  ok (system (cmd) == 0, "saying it has no catalog");
  if (b)
    check_cut (b, node);
  ok (node > 0 && kill (node, SIGTERM) == 0 && wait_exit (node, 15000) == 0, "and SIGTERM ends it with 0");
  rt_error_free (e);
  rt_bus_unsubscribe (sub);
  rt_bus_free (b);
  kill (server, SIGTERM);
  wait_exit (server, 5000);
}

/* The node as user node-host1 of @auth on three TLS servers.  */
static int
roles_main (const char *auth)
{
  char cmd[800], url[300], ca[300], log[200], body[512];
  cleanup_free char *urls = malloc (4096), *reply = NULL;
  const char *colon;
  rt_bus *serve = NULL;
  rt_bus_sub *sub = NULL;
  rt_error *e = NULL;
  int reports = 0, port = 0;
  size_t len = 0;
  pid_t node = -1;
  FILE *p;

  /* The servers read the passwords from their environment.  */
  setenv ("RT_NATS_SERVE_PASS", "serve-pass-0123", 1);
  setenv ("RT_NATS_NODE_HOST1_PASS", "host1-pass-4567", 1);
  setenv ("RT_NATS_NODE_HOST2_PASS", "host2-pass-89ab", 1);
  setenv ("RT_NATS_NODE_HOST3_PASS", "host3-pass-cdef", 1);
  snprintf (cmd, sizeof cmd, "NATS_AUTH='%s' NATS_TLS=1 %s start %s 3", auth, fixture, dir);
  p = popen (cmd, "r");
  if (p == NULL || urls == NULL || fgets (urls, 4096, p) == NULL)
    *urls = '\0';
  if (p)
    pclose (p);
  colon = strchr (urls, ':') ? strchr (strchr (urls, ':') + 1, ':') : NULL;
  port = colon ? atoi (colon + 1) : 0;
  snprintf (ca, sizeof ca, "%s/tls/ca.pem", dir);
  snprintf (log, sizeof log, "%s/node.log", top);
  snprintf (url, sizeof url, "tls://serve:serve-pass-0123@127.0.0.1:%d", port);
  ok (port > 0
          && rt_bus_connect (&(struct rt_bus_opts){ .urls = url, .name = "serve", .ca_file = ca, .key = &cluster_key },
                             &serve, &e)
                 == 0
          && rt_bus_subscribe (serve, "runtime.node.host1.capacity", NULL, count_msg, &reports, &sub, &e) == 0,
      "three TLS servers with the example's users; serve connected and listening%s%s", e ? ": " : "", e ? e->msg : "");
  snprintf (url, sizeof url, "tls://node-host1:host1-pass-4567@127.0.0.1:%d", port);
  if (serve)
    node = start_node_ca (url, "host1", log, ca);
  for (int i = 0; i < 200 && __atomic_load_n (&reports, __ATOMIC_SEQ_CST) < 2; i++)
    usleep (100 * 1000);
  ok (__atomic_load_n (&reports, __ATOMIC_SEQ_CST) >= 2,
      "runtime node as node-host1, its settings in RUNTIME_NODE_NATS, _NAME, _NATS_CA, reports to serve: %d",
      __atomic_load_n (&reports, __ATOMIC_SEQ_CST));
  snprintf (cmd, sizeof cmd, "grep -q 'no catalog' %s", log);
  ok (system (cmd) == 0, "saying it has no catalog (a node user has no JetStream)");
  ok (serve && rt_bus_request (serve, "runtime.node.host1.ping", "", 0, 3000, &reply, &len, &e) == 0
          && strstr (reply, "\"host1\""),
      "it answers serve's ping");
  free (reply), reply = NULL;
  snprintf (body, sizeof body, "{\"method\":\"GET\",\"path\":\"/v1/sandboxes\"}");
  ok (serve && rt_bus_request (serve, "runtime.node.host1.api", body, strlen (body), 5000, &reply, &len, &e) == 0
          && strstr (reply, "\"status\":401"),
      "and serve's API call (401: no tenant)");
  ok (node > 0 && kill (node, SIGTERM) == 0 && wait_exit (node, 15000) == 0, "SIGTERM ends it with 0");
  snprintf (cmd, sizeof cmd, "grep -q 'via tls://127.0.0.1:' %s && ! grep -q host1-pass %s", log, log);
  ok (system (cmd) == 0, "its log names the server reached, never the password");
  show_log_if_failed (log);
  rt_error_free (e);
  rt_bus_unsubscribe (sub);
  rt_bus_free (serve);
  return finish ();
}

int
main (int argc, char **argv)
{
  cleanup_free char *urls = NULL, *reply = NULL, *token = NULL;
  char log[200], log2[200], field[64], cmd[1024];
  rt_error *e = NULL;
  rt_bus *b = NULL;
  rt_bus_sub *sub = NULL;
  rt_catalog *c = NULL;
  size_t len = 0;
  pid_t node;

  snprintf (top, sizeof top, "/tmp/rt-node.XXXXXX");
  if (argc < 3 || mkdtemp (top) == NULL)
    return 1;
  fixture = argv[1];
  runtime = argv[2];
  snprintf (dir, sizeof dir, "%s/cluster", top);
  snprintf (log, sizeof log, "%s/node.log", top);
  snprintf (log2, sizeof log2, "%s/node2.log", top);
  snprintf (keyfile, sizeof keyfile, "%s/cluster.key", top);
  if (argc > 3)
    {
      set_env ();
      if (nats_fixture_key (keyfile, &cluster_key) < 0)
        return 1;
      return roles_main (argv[3]);
    }
  ok (nats_fixture_key (keyfile, &cluster_key) == 0, "a cluster key");
  urls = nats_fixture_start (fixture, dir);
  ok (urls && rt_bus_connect (&(struct rt_bus_opts){ .urls = urls, .name = "test", .key = &cluster_key }, &b, &e) == 0,
      "three NATS servers clustered on loopback, connected");
  if (b == NULL || rt_bus_subscribe (b, "runtime.node.t1.capacity", NULL, on_capacity, NULL, &sub, &e) < 0)
    {
      nats_fixture_stop (fixture, dir);
      return tap_done () | 1;
    }
  set_env ();
  token = make_token ();
  ok (*token, "an API token made for the node's data dir");
  node = start_node (urls, "t1", log);
  check_reports ();
  ok (rt_bus_request (b, "runtime.node.t1.ping", "", 0, 2000, &reply, &len, &e) == 0 && strstr (reply, "\"t1\""),
      "it answers a ping: %.60s", reply ? reply : "(none)");
  ok (rt_catalog_open (b, 3, &c, &e) == 0, "the catalog opened");
  if (c)
    entry_field (c, "state", field, sizeof field);
  ok (c && strcmp (field, "up") == 0, "node.t1 in the catalog: %s", field);
  check_api (b, token);
  check_hostile (urls, b);
  check_deadline (b, node);
  ok (wait_exit (start_node (urls, "t1", log2), 10000) == 1, "a second node named t1 exits 1");
  snprintf (cmd, sizeof cmd, "grep -q name_taken %s", log2);
  ok (system (cmd) == 0, "saying name_taken");
  if (c)
    check_same_name (urls, c);
  if (c)
    check_server_lost (c);
  ok (kill (node, SIGTERM) == 0 && wait_exit (node, 15000) == 0, "SIGTERM ends it with 0");
  if (c)
    entry_field (c, "state", field, sizeof field);
  ok (c && strcmp (field, "stopped") == 0, "its catalog entry says so: %s", field);
  check_no_catalog ();
  snprintf (cmd, sizeof cmd, "! RUNTIME_API_URL=http://127.0.0.1:1 %s node --nats nats://127.0.0.1:1 2>%s/remote.log "
            "&& grep -q unsupported_remote %s/remote.log", runtime, top, top);
  ok (system (cmd) == 0, "on a remote context (RUNTIME_API_URL) it refuses to start: unsupported_remote");
  /* Each refused before any connection (.invalid never resolves).  */
  for (const char *const *t = (const char *const[]){ "nats://127.0.0.1:1,nats://u:p@node.invalid:4222",
                                                     "plain NATS only on a loopback address", "tls://node.invalid:4222",
                                                     "credential-less NATS only on a loopback", "nats://127.0.0.1:1",
                                                     "no cluster key", NULL };
       *t; t += 2)
    {
      snprintf (cmd, sizeof cmd,
                "! RUNTIME_NODE_CLUSTER_KEY=%s %s node --nats %s 2>%s/refused.log && grep -q '%s' %s/refused.log",
                strcmp (t[1], "no cluster key") == 0 ? "" : keyfile, runtime, t[0], top, t[1], top);
      ok (system (cmd) == 0, "it refuses to start on %s: %s", t[0], t[1]);
    }
  show_log_if_failed (log);
  rt_error_free (e);
  rt_catalog_free (c);
  rt_bus_unsubscribe (sub);
  rt_bus_free (b);
  return finish ();
}
