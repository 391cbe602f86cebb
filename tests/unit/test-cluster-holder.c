/* test-cluster-holder.c - what a broken-into host can make a `runtime
   serve --nats` replica do (libruntime/cluster/replica-snapshots.c and
   replica-answer.c), against three real nats-servers on loopback
   (arguments: tests/fixtures/nats-cluster.sh, the built runtime), the
   hosts played by this test: "nl" lies, "ng" is honest.  No VM.
   Checked: a snapshot's holder is the host that made it (recorded in the
   catalog), so a host claiming every snapshot id (200 as the tenant's,
   heard first) gets no create from it, no secret and no DELETE; a
   snapshot the catalog lacks is taken only from a 200 that is the asking
   tenant's (not from a 500, nor from another tenant's); and on one
   keep-alive connection, an answer with Transfer-Encoding: chunked or a
   204 with a body, followed by a pipelined request: exactly two
   well-framed answers, the first the sanitised one or 502, the second
   the real one.  */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cluster/bus.h"
#include "common/cleanup.h"
#include "nats-fixture.h"
#include "tap.h"

#define SNAP "snap-00000000000a" /* made through the replica */
#define OLD "snap-00000000000b"  /* on ng, not in the catalog */
#define FORGED "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 15\r\n\r\n{\"forged\":true}"

enum liar
{
  L_CLAIM, /* every snapshot the asking tenant's, on it */
  L_500,
  L_OTHER, /* every snapshot another tenant's */
};
enum frame
{
  F_PLAIN,
  F_CHUNKED,
  F_204_BODY,
};

/* What each fake host was asked.  */
struct host
{
  const char *name;
  int creates, secret_puts, deletes, asked;
};
static struct host ng = { "ng" }, nl = { "nl" };
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static enum liar liar = L_CLAIM;
static enum frame frame = F_PLAIN;
static bool ng_reports;
static rt_bus *bus;
static int port;

static void
reply (const struct rt_bus_msg *m, int status, const char *ctype, const char *headers, const char *body)
{
  size_t n = strlen (body);
  cleanup_free char *enc = malloc (4 * ((n + 2) / 3) + 1), *text = NULL;

  EVP_EncodeBlock ((unsigned char *) enc, (const unsigned char *) body, (int) n);
  if (asprintf (&text, "{\"status\":%d,\"contentType\":\"%s\",\"headers\":%s,\"body\":\"%s\"}", status, ctype, headers,
                enc)
      > 0)
    rt_bus_publish (bus, m->reply, text, strlen (text), NULL);
}

static bool
has (const struct rt_bus_msg *m, const char *s)
{
  return memmem (m->data, m->len, s, strlen (s)) != NULL;
}

/* The counts of @h for request @m.  */
static void
count (struct host *h, const struct rt_bus_msg *m)
{
  pthread_mutex_lock (&mu);
  h->asked++;
  h->creates += has (m, "\"POST\"") && has (m, "\"/v1/sandboxes\"");
  h->secret_puts += has (m, "\"PUT\"") && has (m, "/v1/egress-secrets/");
  h->deletes += has (m, "\"DELETE\"") && has (m, "/v1/snapshots/");
  pthread_mutex_unlock (&mu);
}

static void
on_liar (void *data, const struct rt_bus_msg *m)
{
  char body[256];
  enum liar mode;

  (void) data;
  count (&nl, m);
  pthread_mutex_lock (&mu);
  mode = liar;
  pthread_mutex_unlock (&mu);
  if (mode == L_500)
    return reply (m, 500, "application/json", "{}", "{\"error\":{\"code\":\"internal\"}}");
  snprintf (body, sizeof body, "{\"id\":\"%s\",\"kind\":\"snapshot\",\"name\":\"s1\",\"tenant\":\"%s\"}",
            has (m, OLD) ? OLD : SNAP, mode == L_OTHER ? "bob" : "alice");
  if (has (m, "\"POST\"") && has (m, "\"/v1/sandboxes\""))
    return reply (m, 201, "application/json", "{}", "{\"id\":\"sb-liar1\",\"kind\":\"sandbox\"}");
  reply (m, 200, "application/json", "{}", body);
}

static void
on_good (void *data, const struct rt_bus_msg *m)
{
  static const char snap[] = "{\"id\":\"" SNAP "\",\"kind\":\"snapshot\",\"name\":\"s1\",\"tenant\":\"alice\","
                             "\"createdAt\":\"2026-01-01T00:00:00Z\"}";
  static const char old[] = "{\"id\":\"" OLD "\",\"kind\":\"snapshot\",\"name\":\"s0\",\"tenant\":\"alice\"}";
  enum frame f;

  (void) data;
  count (&ng, m);
  pthread_mutex_lock (&mu);
  f = frame;
  pthread_mutex_unlock (&mu);
  if (has (m, "\"PUT\"") || has (m, "\"DELETE\""))
    return reply (m, 200, "application/json", "{}", "{}");
  if (has (m, "\"POST\"") && has (m, "\"/v1/sandboxes\""))
    return reply (m, 201, "application/json", "{}", "{\"id\":\"sb-good1\",\"kind\":\"sandbox\",\"state\":\"running\"}");
  if (has (m, ":snapshot\"") || has (m, SNAP))
    return reply (m, 200, "application/json", "{}", snap);
  if (has (m, OLD))
    return reply (m, 200, "application/json", "{}", old);
  /* GET /v1/sandboxes/sb-good1, framed as the test asks.  */
  if (f == F_CHUNKED)
    return reply (m, 200, "text/plain", "{\"Transfer-Encoding\":\"chunked\",\"X-Other\":\"1\"}", "0\r\n\r\n" FORGED);
  if (f == F_204_BODY)
    return reply (m, 204, "text/plain", "{}", FORGED);
  reply (m, 200, "application/json", "{\"Retry-After\":\"5\"}", "{\"id\":\"sb-good1\",\"kind\":\"sandbox\"}");
}

static void *
reporter (void *arg)
{
  static const char good[] = "{\"name\":\"ng\",\"vcpus\":{\"total\":8,\"used\":0,\"free\":8},"
                             "\"memory\":{\"totalBytes\":17179869184,\"freeBytes\":17179869184},\"spares\":[]}";
  /* No room: creates are placed on ng, only a snapshot could take one to nl.  */
  static const char bad[] = "{\"name\":\"nl\",\"vcpus\":{\"total\":0,\"used\":0,\"free\":0},"
                            "\"memory\":{\"totalBytes\":0,\"freeBytes\":0},\"spares\":[]}";
  (void) arg;
  for (;;)
    {
      pthread_mutex_lock (&mu);
      bool both = ng_reports;
      pthread_mutex_unlock (&mu);
      rt_bus_publish (bus, "runtime.node.nl.capacity", bad, sizeof bad - 1, NULL);
      if (both)
        rt_bus_publish (bus, "runtime.node.ng.capacity", good, sizeof good - 1, NULL);
      usleep (400 * 1000);
    }
  return NULL;
}

/* HTTP/1.1 by hand: a connection's bytes not yet read as an answer.  */
struct conn
{
  int fd;
  char buf[65536];
  size_t len;
};

struct answer
{
  int status;
  char head[4096];
  char body[8192];
};

static int
conn_open (struct conn *c)
{
  struct sockaddr_in a
      = { .sin_family = AF_INET, .sin_port = htons (port), .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  struct timeval tv = { 10, 0 };

  c->len = 0;
  c->buf[0] = '\0';
  c->fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c->fd < 0 || connect (c->fd, (struct sockaddr *) &a, sizeof a) < 0)
    return -1;
  return setsockopt (c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

/* At least @want bytes buffered (false at EOF or after 10 s).  */
static bool
fill (struct conn *c, size_t want)
{
  while (c->len < want)
    {
      ssize_t n = c->len < sizeof c->buf - 1 ? read (c->fd, c->buf + c->len, sizeof c->buf - 1 - c->len) : -1;
      if (n <= 0)
        return false;
      c->len += (size_t) n;
    }
  c->buf[c->len] = '\0';
  return true;
}

static void
take (struct conn *c, size_t n, char *into, size_t size)
{
  if (into)
    snprintf (into, size, "%.*s", (int) n, c->buf);
  memmove (c->buf, c->buf + n, c->len - n);
  c->len -= n;
  c->buf[c->len] = '\0';
}

/* A header's value in @head, as a client reads it (case aside).  */
static const char *
header (const char *head, const char *name)
{
  for (const char *p = strstr (head, "\r\n"); p; p = strstr (p + 2, "\r\n"))
    if (strncasecmp (p + 2, name, strlen (name)) == 0 && p[2 + strlen (name)] == ':')
      return p + 3 + strlen (name) + strspn (p + 3 + strlen (name), " ");
  return NULL;
}

/* One answer read off @c as RFC 9112 frames it: chunked, else
   Content-Length, no body for 1xx, 204 and 304.  */
static int
read_answer (struct conn *c, struct answer *a)
{
  char *end;
  const char *te, *cl;
  size_t got = 0;

  memset (a, 0, sizeof *a);
  for (size_t want = 1; (end = strstr (c->buf, "\r\n\r\n")) == NULL; want = c->len + 1)
    if (!fill (c, want))
      return -1;
  take (c, (size_t) (end - c->buf) + 4, a->head, sizeof a->head);
  if (sscanf (a->head, "HTTP/1.1 %d", &a->status) != 1)
    return -1;
  te = header (a->head, "Transfer-Encoding");
  cl = header (a->head, "Content-Length");
  if (a->status < 200 || a->status == 204 || a->status == 304)
    return 0;
  if (te && strncasecmp (te, "chunked", 7) == 0)
    for (;;)
      {
        unsigned long n;
        for (size_t want = 1; (end = strstr (c->buf, "\r\n")) == NULL; want = c->len + 1)
          if (!fill (c, want))
            return -1;
        n = strtoul (c->buf, NULL, 16);
        take (c, (size_t) (end - c->buf) + 2, NULL, 0);
        if (!fill (c, n + 2))
          return -1;
        if (got + n < sizeof a->body)
          memcpy (a->body + got, c->buf, n), got += n;
        take (c, n + 2, NULL, 0);
        if (n == 0)
          return 0;
      }
  if (cl == NULL || !fill (c, strtoul (cl, NULL, 10)))
    return -1;
  take (c, strtoul (cl, NULL, 10), a->body, sizeof a->body);
  return 0;
}

static char *
request (const char *token, const char *method, const char *path, const char *body)
{
  char *s = NULL;

  if (asprintf (&s, "%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %zu\r\n\r\n%s", method,
                path, token, body ? strlen (body) : 0, body ? body : "")
      < 0)
    return NULL;
  return s;
}

/* One call on its own connection: its status, the answer in @a.  */
static int
call (const char *token, const char *method, const char *path, const char *body, struct answer *a)
{
  cleanup_free char *req = request (token, method, path, body);
  struct conn c = { .fd = -1 };
  int status = 0;

  if (req && conn_open (&c) == 0 && write (c.fd, req, strlen (req)) == (ssize_t) strlen (req)
      && read_answer (&c, a) == 0)
    status = a->status;
  if (c.fd >= 0)
    close (c.fd);
  return status;
}

/* @s as one line of TAP (control bytes as '.'), at most 120 bytes.  */
static const char *
flat (const char *s)
{
  static char ring[4][128];
  static int next;
  char *out = ring[next++ % 4];
  size_t i = 0;

  for (; s[i] && i < sizeof ring[0] - 1; i++)
    out[i] = (unsigned char) s[i] < 0x20 ? '.' : s[i];
  out[i] = '\0';
  return out;
}

static int
asked (int *what)
{
  pthread_mutex_lock (&mu);
  int n = *what;
  pthread_mutex_unlock (&mu);
  return n;
}

static void
check_holder (const char *alice, const char *bob)
{
  struct answer a;

  ok (call (alice, "PUT", "/v1/egress-secrets/API_KEY", "{\"value\":\"s3cret\",\"hosts\":[\"api.example.com\"]}", &a)
          == 200,
      "a secret kept for alice");
  ok (call (alice, "POST", "/v1/sandboxes", "{\"vcpu\":1,\"memoryMiB\":512}", &a) == 201
          && strstr (a.head, "Runtime-Node: ng"),
      "a sandbox placed on ng (%d)", a.status);
  ok (call (alice, "POST", "/v1/sandboxes/sb-good1:snapshot", "{\"name\":\"s1\"}", &a) == 200 && strstr (a.body, SNAP),
      "its snapshot made on ng: %s", flat (a.body));
  int puts = asked (&ng.secret_puts), creates = asked (&ng.creates), before = asked (&nl.asked);
  ok (call (alice, "POST", "/v1/sandboxes", "{\"snapshot\":\"" SNAP "\"}", &a) == 201
          && strstr (a.head, "Runtime-Node: ng") && asked (&ng.creates) == creates + 1,
      "a create from it goes to ng, which made it (%d %s)", a.status, flat (a.body));
  ok (asked (&nl.creates) == 0 && asked (&nl.secret_puts) == 0,
      "nl, claiming every snapshot and heard first, gets no create and no secret (%d, %d)", asked (&nl.creates),
      asked (&nl.secret_puts));
  ok (asked (&nl.asked) == before, "nl is not even asked (%d then %d)", before, asked (&nl.asked));
  (void) puts;
  ok (call (alice, "GET", "/v1/snapshots/s1", NULL, &a) == 200 && strstr (a.head, "Runtime-Node: ng"),
      "by name: from ng too (%d)", a.status);
  ok (call (bob, "GET", "/v1/snapshots/" SNAP, NULL, &a) == 404 && asked (&nl.asked) == before,
      "alice's snapshot to bob: 404, no host asked (%d)", a.status);
  ok (call (alice, "DELETE", "/v1/snapshots/" SNAP, NULL, &a) == 200 && asked (&ng.deletes) == 1
          && asked (&nl.deletes) == 0,
      "its DELETE goes to ng only (%d, %d)", asked (&ng.deletes), asked (&nl.deletes));

  /* A snapshot the catalog lacks: looked up, nl first.  */
  for (int mode = L_500; mode <= L_OTHER; mode++)
    {
      const char *what = mode == L_500 ? "500" : "another tenant's 200";
      pthread_mutex_lock (&mu);
      liar = (enum liar) mode;
      pthread_mutex_unlock (&mu);
      ok (call (alice, "GET", "/v1/snapshots/" OLD, NULL, &a) == 200 && strstr (a.head, "Runtime-Node: ng"),
          "a snapshot not recorded, nl answering %s: found on ng (%d %s)", what, a.status, flat (a.body));
      ok (call (alice, "POST", "/v1/sandboxes", "{\"snapshot\":\"" OLD "\"}", &a) == 201
              && strstr (a.head, "Runtime-Node: ng"),
          "and created from on ng (%d %s)", a.status, flat (a.body));
      ok (asked (&nl.creates) == 0 && asked (&nl.secret_puts) == 0, "nl got no create and no secret");
    }
}

/* @r1 then @r2 written at once on one connection: both answers, and no
   byte more.  */
static void
pipelined (const char *alice, enum frame f, const char *what)
{
  cleanup_free char *r1 = request (alice, "GET", "/v1/sandboxes/sb-good1", NULL);
  cleanup_free char *r2 = request (alice, "GET", "/v1/me", NULL), *both = NULL;
  struct answer a1 = { 0 }, a2 = { 0 };
  struct conn c = { .fd = -1 };
  bool sent;

  pthread_mutex_lock (&mu);
  frame = f;
  pthread_mutex_unlock (&mu);
  sent = r1 && r2 && asprintf (&both, "%s%s", r1, r2) > 0 && conn_open (&c) == 0
         && write (c.fd, both, strlen (both)) == (ssize_t) strlen (both);
  ok (sent && read_answer (&c, &a1) == 0 && !header (a1.head, "Transfer-Encoding")
          && ((f == F_CHUNKED && a1.status == 200 && !header (a1.head, "X-Other")) || a1.status == 502),
      "%s: the first answer is the sanitised one or 502 (%s)", what, flat (a1.head));
  ok (sent && read_answer (&c, &a2) == 0 && a2.status == 200 && strstr (a2.body, "\"principalId\"")
          && !strstr (a2.body, "forged"),
      "%s: the second is the replica's own answer to the second request (%d %s)", what, a2.status, flat (a2.body));
  ok (sent && c.len == 0, "%s: and nothing after them (%zu bytes)", what, c.len);
  if (c.fd >= 0)
    close (c.fd);
}

static char *
make_token (const char *runtime, const char *name)
{
  char cmd[400], *tok = calloc (1, 128);
  FILE *p;

  snprintf (cmd, sizeof cmd, "%s token create %s 2>/dev/null", runtime, name);
  if ((p = popen (cmd, "r")) != NULL && fgets (tok, 128, p) == NULL)
    *tok = '\0';
  if (p)
    pclose (p);
  tok[strcspn (tok, "\n")] = '\0';
  return tok;
}

static bool
nodes_list (const char *token, const char *name)
{
  struct answer a;

  for (int i = 0; i < 60; i++, usleep (250 * 1000))
    if (call (token, "GET", "/v1/nodes", NULL, &a) == 200 && strstr (a.body, name))
      return true;
  return false;
}

int
main (int argc, char **argv)
{
  cleanup_free char *urls = NULL, *alice = NULL, *bob = NULL;
  char top[64] = "/tmp/rt-cholder.XXXXXX", dir[128], log[200], data[200], listen[32], keyfile[200];
  struct rt_seal_key key;
  rt_bus_sub *s1 = NULL, *s2 = NULL;
  struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  socklen_t salen = sizeof sa;
  rt_error *e = NULL;
  int status = -1, fd;
  pthread_t t;
  pid_t serve;

  if (argc < 3 || mkdtemp (top) == NULL)
    return 1;
  snprintf (dir, sizeof dir, "%s/cluster", top);
  snprintf (log, sizeof log, "%s/serve.log", top);
  snprintf (data, sizeof data, "%s/data", top);
  setenv ("RUNTIME_DATA_DIR", data, 1);
  snprintf (data, sizeof data, "%s/state", top);
  setenv ("RUNTIME_STATE_DIR", data, 1);
  unsetenv ("RUNTIME_API_URL");
  fd = socket (AF_INET, SOCK_STREAM, 0);
  if (fd >= 0 && bind (fd, (struct sockaddr *) &sa, sizeof sa) == 0
      && getsockname (fd, (struct sockaddr *) &sa, &salen) == 0)
    port = ntohs (sa.sin_port);
  close (fd);
  snprintf (keyfile, sizeof keyfile, "%s/cluster.key", top);
  ok (nats_fixture_key (keyfile, &key) == 0, "a cluster key, the replica's and the fake hosts'");
  urls = nats_fixture_start (argv[1], dir);
  ok (urls && rt_bus_connect (&(struct rt_bus_opts){ .urls = urls, .name = "fake-hosts", .key = &key }, &bus, &e) == 0
          && rt_bus_subscribe (bus, "runtime.node.nl.api", NULL, on_liar, NULL, &s1, &e) == 0
          && rt_bus_subscribe (bus, "runtime.node.ng.api", NULL, on_good, NULL, &s2, &e) == 0,
      "three NATS servers on loopback; the fake hosts subscribed");
  alice = make_token (argv[2], "alice");
  bob = make_token (argv[2], "bob");
  ok (bus && *alice && *bob, "tokens for two tenants");
  if (bus == NULL || !*alice)
    {
      nats_fixture_stop (argv[1], dir);
      return tap_done () | 1;
    }
  snprintf (listen, sizeof listen, "127.0.0.1:%d", port);
  if ((serve = fork ()) == 0)
    {
      if (freopen (log, "w", stderr) == NULL)
        _exit (127);
      execl (argv[2], argv[2], "serve", "--nats", urls, "--listen", listen, (char *) NULL);
      _exit (127);
    }
  pthread_create (&t, NULL, reporter, NULL);
  pthread_detach (t);
  /* nl heard first: a lookup over the hosts up asks it first.  */
  ok (nodes_list (alice, "\"nl\""), "the replica hears nl");
  pthread_mutex_lock (&mu);
  ng_reports = true;
  pthread_mutex_unlock (&mu);
  ok (nodes_list (alice, "\"ng\""), "then ng");
  check_holder (alice, bob);
  pipelined (alice, F_CHUNKED, "Transfer-Encoding: chunked from the host");
  pipelined (alice, F_204_BODY, "a 204 with a body from the host");
  ok (kill (serve, 0) == 0, "the replica is still up");
  kill (serve, SIGTERM);
  waitpid (serve, &status, 0);
  ok (WIFEXITED (status) && WEXITSTATUS (status) == 0, "SIGTERM ends it with 0");
  rt_error_free (e);
  rt_bus_unsubscribe (s1);
  rt_bus_unsubscribe (s2);
  nats_fixture_stop (argv[1], dir);
  nats_fixture_done (tap_failed, log, top);
  return tap_done ();
}
