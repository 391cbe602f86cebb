/* test-cluster-serve.c - `runtime serve --nats` (libruntime/serve/
   cluster*.c) as a user runs it, against three real nats-servers on
   loopback (arguments: tests/fixtures/nats-cluster.sh, the built runtime),
   with the nodes played by this test on its own NATS connection, so that
   a node can misbehave as a broken-into host would.  No VM.  Checked:
   /v1/nodes needs a token and lists the host heard, not one whose report
   names another host; a create placed on it is recorded (`node`,
   Runtime-Node) and routed back to it; an Idempotency-Key makes one create;
   another tenant's sandbox is 404 without asking the host; answers that
   are no answer (not JSON, a status out of range, a body not base64) are
   502 or 503 and the replica stays up; a stream is passed on chunk by
   chunk and a stream the host disowns ('x') ends; a host silent for 10 s
   is lost (its sandbox host_lost, a call 409 sandbox_stopped) and, heard
   again, reconciled: what it runs that the catalog has ended or lacks is
   stopped on it; SIGTERM ends the replica with 0.  */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster/bus.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "nats-fixture.h"
#include "tap.h"

static char top[64], dir[128], keyfile[200];
static struct rt_seal_key cluster_key;
static const char *fixture, *runtime;
static int port;

/* The fake host "fa": what it answers, and what it was asked.  */
enum mode
{
  M_OK,
  M_GARBAGE,
  M_BAD_STATUS,
  M_BAD_BODY,
  M_STREAM,
  M_STREAM_DISOWNED,
};
static struct
{
  pthread_mutex_t mu;
  enum mode mode;
  bool reporting;
  int creates, pulls, lists, secret_puts, secret_deletes;
  bool value_seen;
  char stop_asked[512];
  rt_bus *bus;
} fa = { PTHREAD_MUTEX_INITIALIZER, M_OK, true, 0, 0, 0, 0, 0, false, "", NULL };

static char *
b64 (const char *s)
{
  size_t n = strlen (s);
  char *out = malloc (4 * ((n + 2) / 3) + 1);
  EVP_EncodeBlock ((unsigned char *) out, (const unsigned char *) s, (int) n);
  return out;
}

static void
reply_json (const struct rt_bus_msg *m, int status, const char *body)
{
  cleanup_free char *enc = b64 (body);
  cleanup_free char *text = NULL;
  if (asprintf (&text, "{\"status\":%d,\"contentType\":\"application/json\",\"headers\":{},\"body\":\"%s\"}", status,
                enc)
      > 0)
    rt_bus_publish (fa.bus, m->reply, text, strlen (text), NULL);
}

static void
on_api (void *data, const struct rt_bus_msg *m)
{
  const char *req = m->data;
  enum mode mode;

  (void) data;
  pthread_mutex_lock (&fa.mu);
  mode = fa.mode;
  bool list = memmem (req, m->len, "\"GET\"", 5) && memmem (req, m->len, "\"/v1/sandboxes\"", 15);
  if (memmem (req, m->len, "\"POST\"", 6) && memmem (req, m->len, "\"/v1/sandboxes\"", 15))
    fa.creates++;
  fa.lists += list;
  if (memmem (req, m->len, "/v1/egress-secrets/API_KEY", 26))
    {
      fa.secret_puts += memmem (req, m->len, "\"PUT\"", 5) != NULL;
      fa.secret_deletes += memmem (req, m->len, "\"DELETE\"", 8) != NULL;
      /* "s3cret" base64'd within the body's base64: its JSON carries it.  */
      fa.value_seen |= memmem (req, m->len, "InMzY3JldC", 10) != NULL;
    }
  pthread_mutex_unlock (&fa.mu);
  if (memmem (req, m->len, ":fork\"", 6) && mode == M_OK)
    return reply_json (m, 200,
                       "{\"sandboxes\":[{\"id\":\"sb-fork1\",\"kind\":\"sandbox\",\"state\":\"running\"}]}");
  /* A list whose pages never end.  */
  if (list && mode == M_OK)
    return reply_json (m, 200,
                       "{\"data\":[{\"id\":\"sb-fake1\",\"kind\":\"sandbox\",\"state\":\"running\"}],"
                       "\"nextCursor\":\"again\"}");
  switch (mode)
    {
    case M_GARBAGE:
      rt_bus_publish (fa.bus, m->reply, "not json", 8, NULL);
      return;
    case M_BAD_STATUS:
      rt_bus_publish (fa.bus, m->reply, "{\"status\":99999,\"body\":\"\"}", 26, NULL);
      return;
    case M_BAD_BODY:
      rt_bus_publish (fa.bus, m->reply, "{\"status\":200,\"body\":\"@@@\"}", 27, NULL);
      return;
    case M_STREAM:
    case M_STREAM_DISOWNED:
      {
        static const char head[] = "{\"status\":200,\"contentType\":\"application/x-ndjson\",\"headers\":{},"
                                   "\"stream\":\"0123456789abcdef0123456789abcdef\"}";
        rt_bus_publish (fa.bus, m->reply, head, sizeof head - 1, NULL);
        return;
      }
    case M_OK:
    default:
      reply_json (m, memmem (req, m->len, "\"POST\"", 6) ? 201 : 200,
                  "{\"id\":\"sb-fake1\",\"kind\":\"sandbox\",\"state\":\"running\",\"createdAt\":\"2026-01-01T00:00:00Z\"}");
    }
}

static void
on_pull (void *data, const struct rt_bus_msg *m)
{
  int n;

  (void) data;
  pthread_mutex_lock (&fa.mu);
  n = ++fa.pulls;
  bool disowned = fa.mode == M_STREAM_DISOWNED;
  pthread_mutex_unlock (&fa.mu);
  if (m->reply == NULL)
    return;
  if (disowned)
    rt_bus_publish (fa.bus, m->reply, "x", 1, NULL);
  else if (memmem (m->data, m->len, "\"seq\":1}", 8))
    rt_bus_publish (fa.bus, m->reply, "dhello\n", 7, NULL);
  else
    rt_bus_publish (fa.bus, m->reply, "ebye\n", 5, NULL);
  (void) n;
}

static void
on_host (void *data, const struct rt_bus_msg *m)
{
  static const char list[] = "{\"sandboxes\":[{\"id\":\"sb-fake1\",\"tenant\":\"alice\",\"state\":\"running\"},"
                             "{\"id\":\"sb-stray\",\"tenant\":\"bob\",\"state\":\"running\"}]}";
  (void) data;
  if (m->reply == NULL)
    return;
  if (memmem (m->data, m->len, "\"stop\"", 6))
    {
      pthread_mutex_lock (&fa.mu);
      snprintf (fa.stop_asked, sizeof fa.stop_asked, "%.*s", (int) m->len, (const char *) m->data);
      pthread_mutex_unlock (&fa.mu);
      rt_bus_publish (fa.bus, m->reply, "{\"stopped\":[],\"failed\":[]}", 26, NULL);
      return;
    }
  rt_bus_publish (fa.bus, m->reply, list, sizeof list - 1, NULL);
}

static void *
reporter (void *arg)
{
  static const char report[] = "{\"name\":\"fa\",\"vcpus\":{\"total\":8,\"used\":0,\"free\":8},"
                               "\"memory\":{\"totalBytes\":17179869184,\"freeBytes\":17179869184},\"spares\":[]}";
  static const char forged[] = "{\"name\":\"fa\",\"vcpus\":{\"total\":999,\"used\":-5,\"free\":999}}";
  (void) arg;
  for (;;)
    {
      pthread_mutex_lock (&fa.mu);
      bool on = fa.reporting;
      pthread_mutex_unlock (&fa.mu);
      if (on)
        rt_bus_publish (fa.bus, "runtime.node.fa.capacity", report, sizeof report - 1, NULL);
      /* A report in another host's subject naming fa: not taken.  */
      rt_bus_publish (fa.bus, "runtime.node.fb.capacity", forged, sizeof forged - 1, NULL);
      usleep (500 * 1000);
    }
  return NULL;
}

static void
set_mode (enum mode m)
{
  pthread_mutex_lock (&fa.mu);
  fa.mode = m;
  pthread_mutex_unlock (&fa.mu);
}

static char *
make_token (const char *name)
{
  char cmd[400], *tok = calloc (1, 128);
  FILE *p;

  snprintf (cmd, sizeof cmd, "%s token create %s 2>/dev/null", runtime, name);
  p = popen (cmd, "r");
  if (p == NULL || fgets (tok, 128, p) == NULL)
    *tok = '\0';
  if (p)
    pclose (p);
  tok[strcspn (tok, "\n")] = '\0';
  return tok;
}

/* One HTTP call with curl: its status (0: none), its body (and headers
   with -i when @headers) in @out.  */
static int
http (const char *token, const char *method, const char *path, const char *body, const char *extra, bool headers,
      char *out, size_t size)
{
  char cmd[1200], file[200];
  int status = 0;
  FILE *p;

  snprintf (file, sizeof file, "%s/body", top);
  snprintf (cmd, sizeof cmd,
            "curl -s -m 60 %s -o %s -w '%%{http_code}' -X %s %s%s%s %s%s%s 'http://127.0.0.1:%d%s'", headers ? "-i" : "",
            file, method, token ? "-H 'Authorization: Bearer " : "", token ? token : "", token ? "'" : "",
            body ? "-d '" : "", body ? body : "", body ? "'" : "", port, path);
  if (extra)
    {
      char with[1400];
      snprintf (with, sizeof with, "%s %s", cmd, extra);
      memcpy (cmd, with, sizeof cmd - 1);
      cmd[sizeof cmd - 1] = '\0';
    }
  p = popen (cmd, "r");
  if (p == NULL || fscanf (p, "%d", &status) != 1)
    status = 0;
  if (p)
    pclose (p);
  out[0] = '\0';
  FILE *f = fopen (file, "r");
  if (f)
    {
      size_t n = fread (out, 1, size - 1, f);
      out[n] = '\0';
      fclose (f);
    }
  return status;
}

static int
free_port (void)
{
  struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  socklen_t len = sizeof a;
  int fd = socket (AF_INET, SOCK_STREAM, 0), p = 0;

  if (fd >= 0 && bind (fd, (struct sockaddr *) &a, sizeof a) == 0 && getsockname (fd, (struct sockaddr *) &a, &len) == 0)
    p = ntohs (a.sin_port);
  if (fd >= 0)
    close (fd);
  return p;
}

static pid_t
start_serve (const char *urls, const char *log)
{
  char listen[32];
  pid_t pid = fork ();

  snprintf (listen, sizeof listen, "127.0.0.1:%d", port);
  if (pid == 0)
    {
      if (freopen (log, "w", stderr) == NULL)
        _exit (127);
      execl (runtime, runtime, "serve", "--nats", urls, "--listen", listen, (char *) NULL);
      _exit (127);
    }
  return pid;
}

static bool
wait_for (const char *token, const char *path, const char *want, int ms, char *out, size_t size)
{
  for (int waited = 0; waited < ms; waited += 250)
    {
      if (http (token, "GET", path, NULL, NULL, false, out, size) == 200 && strstr (out, want))
        return true;
      usleep (250 * 1000);
    }
  return false;
}

static void
check_calls (const char *alice, const char *bob)
{
  char out[8192];

  ok (wait_for (NULL, "/v1/health", "", 10000, out, sizeof out), "the replica answers");
  ok (http (NULL, "GET", "/v1/nodes", NULL, NULL, false, out, sizeof out) == 401, "/v1/nodes without a token: 401");
  ok (wait_for (alice, "/v1/nodes", "\"fa\"", 10000, out, sizeof out) && strstr (out, "\"state\":\"up\""),
      "the host heard is listed up: %.100s", out);
  ok (strstr (out, "\"fb\"") == NULL, "a report naming another host than its subject's is not taken");

  set_mode (M_GARBAGE);
  ok (http (alice, "POST", "/v1/sandboxes", "{\"vcpu\":1,\"memoryMiB\":512}", NULL, false, out, sizeof out) == 503,
      "a host answering no JSON: the create is 503 (%.80s)", out);
  set_mode (M_BAD_STATUS);
  ok (http (alice, "POST", "/v1/sandboxes", "{}", NULL, false, out, sizeof out) == 503,
      "a status out of range: 503 (%.80s)", out);
  set_mode (M_BAD_BODY);
  ok (http (alice, "POST", "/v1/sandboxes", "{}", NULL, false, out, sizeof out) == 503,
      "a body not base64: 503 (%.80s)", out);
  ok (http (alice, "POST", "/v1/sandboxes", "[1]", NULL, false, out, sizeof out) == 400,
      "a body that is no JSON object: 400, the host not asked");

  set_mode (M_OK);
  pthread_mutex_lock (&fa.mu);
  fa.creates = 0;
  pthread_mutex_unlock (&fa.mu);
  ok (http (alice, "POST", "/v1/sandboxes", "{\"vcpu\":1,\"memoryMiB\":512}", "-H 'Idempotency-Key: k1'", true, out,
            sizeof out)
              == 201
          && strstr (out, "Runtime-Node: fa") && strstr (out, "\"node\":\"fa\""),
      "a create placed on the host: 201, Runtime-Node and node (%.*s)", (int) strcspn (out, "\r\n"), out);
  ok (http (alice, "POST", "/v1/sandboxes", "{\"vcpu\":1,\"memoryMiB\":512}", "-H 'Idempotency-Key: k1'", true, out,
            sizeof out)
              == 201
          && strstr (out, "Idempotency-Replayed: true"),
      "the same Idempotency-Key again: replayed");
  pthread_mutex_lock (&fa.mu);
  ok (fa.creates == 1, "and the host asked once: %d", fa.creates);
  pthread_mutex_unlock (&fa.mu);
  ok (http (alice, "POST", "/v1/sandboxes", "{\"vcpu\":2}", "-H 'Idempotency-Key: k1'", false, out, sizeof out) == 409,
      "that key with another body: 409 (%.60s)", out);
  ok (http (alice, "GET", "/v1/sandboxes/sb-fake1", NULL, NULL, false, out, sizeof out) == 200
          && strstr (out, "\"node\":\"fa\""),
      "GET routed to its host");
  ok (http (bob, "GET", "/v1/sandboxes/sb-fake1", NULL, NULL, false, out, sizeof out) == 404,
      "another tenant's sandbox: 404");
  ok (http (alice, "POST", "/v1/sandboxes/sb-fake1:fork", "{}", NULL, false, out, sizeof out) == 200
          && http (alice, "GET", "/v1/sandboxes/sb-fork1", NULL, NULL, false, out, sizeof out) == 200,
      "a fork's sandboxes are recorded on the parent's host and found");
  ok (http (bob, "GET", "/v1/sandboxes/sb-fork1", NULL, NULL, false, out, sizeof out) == 404,
      "and are the parent's tenant's only");
  ok (http (alice, "GET", "/v1/sandboxes/sb-nope", NULL, NULL, false, out, sizeof out) == 404, "an unknown id: 404");
  ok (http (alice, "GET", "/v1/sandboxes/..%2f..", NULL, NULL, false, out, sizeof out) == 404,
      "an id that is no catalog key: 404");

  set_mode (M_STREAM);
  ok (http (alice, "POST", "/v1/sandboxes/sb-fake1:exec", "{\"argv\":[\"true\"],\"stream\":true}", NULL, false, out,
            sizeof out)
              == 200
          && strcmp (out, "hello\nbye\n") == 0,
      "a stream passed on chunk by chunk: '%.*s'…", (int) strcspn (out, "\r\n"), out);
  set_mode (M_STREAM_DISOWNED);
  ok (http (alice, "POST", "/v1/sandboxes/sb-fake1:exec", "{\"argv\":[\"true\"],\"stream\":true}", NULL, false, out,
            sizeof out)
              == 200
          && out[0] == '\0',
      "a stream the host disowns ends: '%s'", out);
  set_mode (M_OK);
  ok (http (alice, "GET", "/v1/sandboxes", NULL, NULL, false, out, sizeof out) == 200 && strstr (out, "sb-fake1"),
      "the list gathered from the host");
  pthread_mutex_lock (&fa.mu);
  ok (fa.lists == 2, "a host whose cursor does not move is not asked again: %d", fa.lists);
  pthread_mutex_unlock (&fa.mu);
}

static int
counted (int *what)
{
  pthread_mutex_lock (&fa.mu);
  int n = *what;
  pthread_mutex_unlock (&fa.mu);
  return n;
}

/* Messages a subscriber of every subject without the key heard, and
   those with a secret's value in the clear (the catalog's writes too).  */
static atomic_int heard_all, heard_value;

static void
on_any (void *data, const struct rt_bus_msg *m)
{
  (void) data;
  atomic_fetch_add (&heard_all, 1);
  if (memmem (m->data, m->len, "s3cret", 6) || memmem (m->data, m->len, "n3w", 3))
    atomic_fetch_add (&heard_value, 1);
}

static void
check_secrets (const char *alice, const char *urls)
{
  char out[8192];
  rt_bus *spy = NULL;
  rt_bus_sub *all = NULL;

  if (rt_bus_connect (&(struct rt_bus_opts){ .urls = urls, .name = "spy" }, &spy, NULL) == 0)
    rt_bus_subscribe (spy, ">", NULL, on_any, NULL, &all, NULL);
  usleep (300 * 1000);

  ok (http (alice, "PUT", "/v1/egress-secrets/bad-name", "{\"value\":\"x\",\"hosts\":[\"a.example\"]}", NULL, false, out,
            sizeof out)
          == 400,
      "a secret name that is none: 400 (%.60s)", out);
  ok (http (alice, "PUT", "/v1/egress-secrets/API_KEY", "{\"value\":\"x\",\"hosts\":[\"10.0.0.1\"]}", NULL, false, out,
            sizeof out)
          == 400,
      "a secret bound to an address: 400, checked as a host would (%.60s)", out);
  ok (http (alice, "PUT", "/v1/egress-secrets/API_KEY", "{\"value\":\"s3cret\",\"hosts\":[\"api.example.com\"]}", NULL,
            false, out, sizeof out)
              == 200
          && strstr (out, "s3cret") == NULL && strstr (out, "api.example.com"),
      "a secret kept by the replica, its value not answered: %.80s", out);
  ok (counted (&fa.secret_puts) == 0, "and sent to no host yet");
  ok (http (alice, "GET", "/v1/egress-secrets", NULL, NULL, false, out, sizeof out) == 200 && strstr (out, "API_KEY")
          && strstr (out, "s3cret") == NULL,
      "listed without its value");
  ok (http (alice, "POST", "/v1/sandboxes", "{\"vcpu\":1,\"memoryMiB\":512}", NULL, false, out, sizeof out) == 201
          && counted (&fa.secret_puts) == 1 && fa.value_seen,
      "a create on the host sends it the value first: %d", counted (&fa.secret_puts));
  ok (http (alice, "POST", "/v1/sandboxes", "{\"vcpu\":1,\"memoryMiB\":512}", NULL, false, out, sizeof out) == 201
          && counted (&fa.secret_puts) == 1,
      "once: the next create does not send it again");
  ok (http (alice, "PUT", "/v1/egress-secrets/API_KEY", "{\"value\":\"n3w\",\"hosts\":[\"api.example.com\"]}", NULL,
            false, out, sizeof out)
              == 200
          && counted (&fa.secret_puts) == 2,
      "a new value goes to the host that has the old one");
  ok (http (alice, "DELETE", "/v1/egress-secrets/API_KEY", NULL, NULL, false, out, sizeof out) == 200
          && counted (&fa.secret_deletes) == 1,
      "removed: removed from that host too");
  ok (http (alice, "DELETE", "/v1/egress-secrets/API_KEY", NULL, NULL, false, out, sizeof out) == 404,
      "removed again: 404");
  ok (all && atomic_load (&heard_all) > 0 && atomic_load (&heard_value) == 0,
      "a subscriber of every subject without the key read no value, the catalog's writes included (%d of %d)",
      atomic_load (&heard_value), atomic_load (&heard_all));
  rt_bus_unsubscribe (all);
  rt_bus_free (spy);
}

static void
check_lost (const char *alice)
{
  char out[8192];

  pthread_mutex_lock (&fa.mu);
  fa.reporting = false;
  pthread_mutex_unlock (&fa.mu);
  ok (wait_for (alice, "/v1/nodes", "\"lost\"", 20000, out, sizeof out), "silent 10 s: the host is lost");
  ok (http (alice, "GET", "/v1/sandboxes/sb-fake1", NULL, NULL, false, out, sizeof out) == 200
          && strstr (out, "\"host_lost\"") && strstr (out, "\"stopped\""),
      "its sandbox stopped, host_lost: %.120s", out);
  ok (http (alice, "POST", "/v1/sandboxes/sb-fake1:exec", "{\"argv\":[\"true\"]}", NULL, false, out, sizeof out)
          == 409,
      "a call to it: 409 (%.60s)", out);
  ok (http (alice, "POST", "/v1/sandboxes", "{}", NULL, false, out, sizeof out) == 503
          && strstr (out, "no_capacity"),
      "no host left to place on: 503 no_capacity");
  pthread_mutex_lock (&fa.mu);
  fa.reporting = true;
  pthread_mutex_unlock (&fa.mu);
  ok (wait_for (alice, "/v1/nodes", "\"up\"", 10000, out, sizeof out), "heard again: up");
  for (int i = 0; i < 40; i++)
    {
      pthread_mutex_lock (&fa.mu);
      bool asked = fa.stop_asked[0] != '\0';
      pthread_mutex_unlock (&fa.mu);
      if (asked)
        break;
      usleep (250 * 1000);
    }
  pthread_mutex_lock (&fa.mu);
  ok (strstr (fa.stop_asked, "sb-fake1") && strstr (fa.stop_asked, "sb-stray"),
      "reconciled: the ended sandbox and the one the catalog lacks stopped on it: %s", fa.stop_asked);
  pthread_mutex_unlock (&fa.mu);
}

int
main (int argc, char **argv)
{
  cleanup_free char *urls = NULL, *alice = NULL, *bob = NULL;
  char log[200], data[200], state[200];
  rt_bus_sub *s1 = NULL, *s2 = NULL, *s3 = NULL;
  rt_error *e = NULL;
  pthread_t t;
  pid_t serve;
  int status = -1;

  snprintf (top, sizeof top, "/tmp/rt-cserve.XXXXXX");
  if (argc < 3 || mkdtemp (top) == NULL)
    return 1;
  fixture = argv[1];
  runtime = argv[2];
  snprintf (dir, sizeof dir, "%s/cluster", top);
  snprintf (log, sizeof log, "%s/serve.log", top);
  snprintf (data, sizeof data, "%s/data", top);
  snprintf (state, sizeof state, "%s/state", top);
  setenv ("RUNTIME_DATA_DIR", data, 1);
  setenv ("RUNTIME_STATE_DIR", state, 1);
  setenv ("RUNTIME_ACCEL", "tcg", 1);
  unsetenv ("RUNTIME_API_URL");
  port = free_port ();
  snprintf (keyfile, sizeof keyfile, "%s/cluster.key", top);
  ok (nats_fixture_key (keyfile, &cluster_key) == 0, "a cluster key, the replica's and the fake host's");
  urls = nats_fixture_start (fixture, dir);
  ok (urls && rt_bus_connect (&(struct rt_bus_opts){ .urls = urls, .name = "fake-host", .key = &cluster_key },
                              &fa.bus, &e)
                  == 0,
      "three NATS servers on loopback; the fake host connected");
  if (fa.bus == NULL || rt_bus_subscribe (fa.bus, "runtime.node.fa.api", NULL, on_api, NULL, &s1, &e) < 0
      || rt_bus_subscribe (fa.bus, "runtime.node.fa.pull", NULL, on_pull, NULL, &s2, &e) < 0
      || rt_bus_subscribe (fa.bus, "runtime.node.fa.host", NULL, on_host, NULL, &s3, &e) < 0)
    {
      nats_fixture_stop (fixture, dir);
      return tap_done () | 1;
    }
  pthread_create (&t, NULL, reporter, NULL);
  pthread_detach (t);
  alice = make_token ("alice");
  bob = make_token ("bob");
  ok (*alice && *bob, "tokens made for two tenants");
  serve = start_serve (urls, log);
  check_calls (alice, bob);
  check_secrets (alice, urls);
  check_lost (alice);
  ok (kill (serve, 0) == 0, "the replica is still up after all that");
  kill (serve, SIGTERM);
  waitpid (serve, &status, 0);
  ok (WIFEXITED (status) && WEXITSTATUS (status) == 0, "SIGTERM ends it with 0");
  rt_error_free (e);
  nats_fixture_stop (fixture, dir);
  nats_fixture_done (tap_failed, log, top);
  return tap_done ();
}
