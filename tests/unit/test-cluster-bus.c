/* test-cluster-bus.c - the NATS connection and the replicated catalog
   (libruntime/cluster/bus.c, catalog.c) against three real nats-servers
   clustered on loopback (tests/fixtures/nats-cluster.sh, its path the
   first argument).  Checked: bad and unreachable URLs refused with one
   error each; request/reply; a request nobody subscribes to is
   node_unreachable; the catalog (3 replicas) creates a key once (a second
   create is a conflict), refuses a stale update, lists by prefix,
   deletes, refuses keys outside its scheme; with the server the client is
   connected to killed, the client reconnects to another and the catalog
   and requests go on; an unsubscribe called while the handler runs
   returns only once it has returned, so its data may be freed then.
   With the cluster key (cluster/seal.h): a URL off loopback that is plain
   or has no credentials is refused before any connection; a keyed
   subscriber refuses a request of a publisher without the key (one plain
   error answer, its handler never called) and the same sealed request
   replayed; a passive subscriber reads nothing of a sealed payload; a
   keyed requester refuses an answer not sealed for its inbox.  */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/bus.h"
#include "cluster/catalog.h"
#include "common/util.h"
#include "nats-fixture.h"
#include "tap.h"

static char dir[256];
static const char *fixture;

static void
stop_cluster (void)
{
  nats_fixture_stop (fixture, dir);
}

static char *
start_cluster (void)
{
  return nats_fixture_start (fixture, dir);
}

static bool
has_code (rt_error *e, const char *code)
{
  return e && strcmp (e->code, code) == 0;
}

static void
echo (void *data, const struct rt_bus_msg *m)
{
  rt_bus *b = data;
  char out[256];
  int n = snprintf (out, sizeof out, "echo:%.*s", (int) m->len, (const char *) m->data);
  if (m->reply)
    rt_bus_publish (b, m->reply, out, n, NULL);
}

/* A handler that takes its time, writing to its data at the end: freed
   too early, the write lands in freed memory (and ASan or valgrind say
   so) and `finished` is not yet set when unsubscribe returns.  */
struct slow
{
  atomic_int started, finished;
  char scratch[64];
};

static void
slow_handler (void *data, const struct rt_bus_msg *m)
{
  struct slow *sl = data;
  (void) m;

  atomic_store (&sl->started, 1);
  usleep (400 * 1000);
  memset (sl->scratch, 'x', sizeof sl->scratch);
  atomic_store (&sl->finished, 1);
}

static void
test_unsubscribe_waits (rt_bus *b)
{
  struct slow *sl = calloc (1, sizeof *sl);
  rt_error *e = NULL;
  rt_bus_sub *sub = NULL;
  int finished = 0;

  ok (sl && rt_bus_subscribe (b, "rt.test.slow", NULL, slow_handler, sl, &sub, &e) == 0, "a slow subscriber");
  ok (rt_bus_publish (b, "rt.test.slow", "go", 2, &e) == 0, "a message to it");
  for (int i = 0; i < 100 && sl && !atomic_load (&sl->started); i++)
    usleep (20 * 1000);
  ok (sl && atomic_load (&sl->started), "its handler is running");
  rt_bus_unsubscribe (sub);
  finished = sl ? atomic_load (&sl->finished) : 0;
  ok (finished, "unsubscribe returned only after the handler did");
  free (sl);
  rt_error_free (e);
}

static void
test_refused (void)
{
  rt_error *e = NULL;
  rt_bus *b = NULL;

  ok (rt_bus_connect (&(struct rt_bus_opts){ .urls = "http://127.0.0.1:4222" }, &b, &e) < 0 && has_code (e, "usage"),
      "an http:// URL is refused as usage");
  rt_error_free (e), e = NULL;
  ok (rt_bus_connect (&(struct rt_bus_opts){ .urls = "" }, &b, &e) < 0 && has_code (e, "usage"), "no URL is usage");
  rt_error_free (e), e = NULL;
  /* Port 1 on loopback: nothing listens there.  */
  ok (rt_bus_connect (&(struct rt_bus_opts){ .urls = "nats://127.0.0.1:1" }, &b, &e) < 0
          && has_code (e, "cluster_unavailable"),
      "a cluster nobody answers for is cluster_unavailable");
  rt_error_free (e);
}

static void
test_off_loopback (void)
{
  rt_error *e = NULL;
  rt_bus *b = NULL;

  /* .invalid never resolves: nothing is reached, whatever is checked.  */
  ok (rt_bus_connect (&(struct rt_bus_opts){ .urls = "nats://127.0.0.1:1,nats://u:p@node.invalid:4222" }, &b, &e) < 0
          && has_code (e, "usage") && strstr (e->msg, "plain NATS only on a loopback address"),
      "plain nats:// off loopback refused: %s", e ? e->msg : "(connected)");
  rt_error_free (e), e = NULL;
  ok (rt_bus_connect (&(struct rt_bus_opts){ .urls = "tls://node.invalid:4222" }, &b, &e) < 0 && has_code (e, "usage")
          && strstr (e->msg, "credential-less"),
      "tls:// off loopback without credentials refused: %s", e ? e->msg : "(connected)");
  rt_error_free (e), e = NULL;
  ok (rt_bus_connect (&(struct rt_bus_opts){ .urls = "tls://u:p@node.invalid:4222" }, &b, &e) < 0
          && has_code (e, "cluster_unavailable"),
      "tls:// with credentials is tried: %s", e ? e->msg : "(connected)");
  rt_error_free (e);
}

/* What the passive subscriber saw on rt.test.sealed.  */
static struct
{
  pthread_mutex_t mu;
  unsigned char frame[4096];
  size_t len;
  int n;
} spied = { PTHREAD_MUTEX_INITIALIZER };
static atomic_int sealed_calls;

static void
spy (void *data, const struct rt_bus_msg *m)
{
  (void) data;
  pthread_mutex_lock (&spied.mu);
  if (m->len <= sizeof spied.frame)
    memcpy (spied.frame, m->data, spied.len = m->len);
  spied.n++;
  pthread_mutex_unlock (&spied.mu);
}

static void
sealed_echo (void *data, const struct rt_bus_msg *m)
{
  atomic_fetch_add (&sealed_calls, 1);
  echo (data, m);
}

static void
test_sealed (const char *urls, const struct rt_seal_key *key)
{
  static const char secret[] = "{\"tenant\":\"alice\",\"value\":\"sk-live-0123456789\"}";
  rt_bus *kb = NULL, *hostile = NULL;
  rt_bus_sub *sub = NULL, *spy_sub = NULL;
  rt_error *e = NULL;
  char *reply = NULL;
  size_t len = 0;

  ok (rt_bus_connect (&(struct rt_bus_opts){ .urls = urls, .name = "keyed", .key = key }, &kb, &e) == 0
          && rt_bus_connect (&(struct rt_bus_opts){ .urls = urls, .name = "hostile" }, &hostile, &e) == 0
          && rt_bus_subscribe (kb, "rt.test.sealed", NULL, sealed_echo, kb, &sub, &e) == 0
          && rt_bus_subscribe (hostile, "rt.test.sealed", NULL, spy, NULL, &spy_sub, &e) == 0,
      "a keyed bus and one without the key");
  if (sub == NULL || spy_sub == NULL)
    goto out;
  /* The subscriptions known to every server of the cluster.  */
  usleep (300 * 1000);
  ok (rt_bus_request (hostile, "rt.test.sealed", secret, strlen (secret), 2000, &reply, &len, &e) == 0
          && strstr (reply, "\"unauthorized\"") && atomic_load (&sealed_calls) == 0,
      "a request without the key: refused, its handler not called: %.90s", reply ? reply : e->msg);
  free (reply), reply = NULL;
  ok (rt_bus_request (kb, "rt.test.sealed", secret, strlen (secret), 2000, &reply, &len, &e) == 0
          && strncmp (reply, "echo:{", 6) == 0 && atomic_load (&sealed_calls) == 1,
      "a sealed one is answered, sealed: %.40s", reply ? reply : e->msg);
  free (reply), reply = NULL;
  pthread_mutex_lock (&spied.mu);
  ok (spied.n >= 1 && spied.len > 0 && !memmem (spied.frame, spied.len, "sk-live", 7)
          && !memmem (spied.frame, spied.len, "alice", 5),
      "a passive subscriber reads neither the value nor the tenant");
  unsigned char frame[4096];
  size_t flen = spied.len;
  memcpy (frame, spied.frame, flen);
  pthread_mutex_unlock (&spied.mu);
  ok (rt_bus_request (hostile, "rt.test.sealed", frame, flen, 2000, &reply, &len, &e) == 0 && strstr (reply, "replay")
          && atomic_load (&sealed_calls) == 1,
      "the sealed request replayed: refused: %.90s", reply ? reply : e->msg);
  free (reply), reply = NULL;
  /* The hostile side answers a keyed request itself: not sealed.  */
  rt_bus_unsubscribe (sub), sub = NULL;
  rt_bus_unsubscribe (spy_sub), spy_sub = NULL;
  if (rt_bus_subscribe (hostile, "rt.test.sealed", NULL, echo, hostile, &spy_sub, &e) == 0 && usleep (300 * 1000) == 0)
    ok (rt_bus_request (kb, "rt.test.sealed", "x", 1, 2000, &reply, &len, &e) < 0 && has_code (e, "unauthorized"),
        "an answer not sealed for its inbox: refused: %s", e ? e->msg : reply);
  free (reply);
out:
  rt_error_free (e);
  rt_bus_unsubscribe (sub);
  rt_bus_unsubscribe (spy_sub);
  rt_bus_free (kb);
  rt_bus_free (hostile);
}

static void
test_catalog (rt_catalog *c)
{
  rt_error *e = NULL;
  uint64_t rev = 0, rev2 = 0;
  char *v = NULL, **keys = NULL;
  size_t n = 0;

  ok (rt_catalog_create (c, "sb.sb-1", "{\"node\":\"a\"}", &rev, &e) == 0 && rev > 0, "a sandbox's entry is made");
  ok (rt_catalog_create (c, "sb.sb-1", "{\"node\":\"b\"}", NULL, &e) < 0 && has_code (e, "conflict"),
      "a second create of it is a conflict");
  rt_error_free (e), e = NULL;
  ok (rt_catalog_get (c, "sb.sb-1", &v, &rev2, &e) == 0 && strcmp (v, "{\"node\":\"a\"}") == 0 && rev2 == rev,
      "it reads back with its revision (the first create's value)");
  free (v), v = NULL;
  ok (rt_catalog_update (c, "sb.sb-1", "{\"node\":\"c\"}", rev + 7, NULL, &e) < 0 && has_code (e, "conflict"),
      "an update from a stale revision is a conflict");
  rt_error_free (e), e = NULL;
  ok (rt_catalog_update (c, "sb.sb-1", "{\"node\":\"c\"}", rev, &rev2, &e) == 0 && rev2 > rev,
      "an update from the revision read is taken");
  ok (rt_catalog_create (c, "sb.sb-2", "{}", NULL, &e) == 0 && rt_catalog_create (c, "idem.t1.abc", "{}", NULL, &e) == 0,
      "more entries");
  ok (rt_catalog_keys (c, "sb.", &keys, &n, &e) == 0 && n == 2 && keys[2] == NULL, "the keys under a prefix: %zu", n);
  for (size_t i = 0; i < n; i++)
    free (keys[i]);
  free (keys);
  /* A read may be served by a replica a moment behind the write (the
     bucket's direct gets): the delete shows within a second.  */
  bool gone = false;
  ok (rt_catalog_delete (c, "sb.sb-2", &e) == 0, "an entry deleted");
  for (int i = 0; i < 20 && !gone; i++)
    {
      rt_error_free (e), e = NULL;
      free (v), v = NULL;
      gone = rt_catalog_get (c, "sb.sb-2", &v, NULL, &e) < 0 && has_code (e, "not_found");
      if (!gone)
        usleep (50 * 1000);
    }
  ok (gone, "a deleted entry is not_found");
  rt_error_free (e), e = NULL;
  ok (rt_catalog_create (c, "sb.sb-2", "{\"again\":1}", &rev, &e) == 0, "and can be made again");
  ok (rt_catalog_create (c, "sb.sb-2", "{}", NULL, &e) < 0 && has_code (e, "conflict"),
      "but only once after its delete");
  rt_error_free (e), e = NULL;
  ok (rt_catalog_delete (c, "sb.sb-2", &e) == 0
          && rt_catalog_update (c, "sb.sb-2", "{}", rev, NULL, &e) < 0 && has_code (e, "conflict"),
      "an update of a deleted entry from its old revision is a conflict");
  rt_error_free (e), e = NULL;
  ok (rt_catalog_update (c, "sb.none", "{}", 3, NULL, &e) < 0 && has_code (e, "conflict"),
      "an update of an entry never made is a conflict");
  rt_error_free (e), e = NULL;
  ok (!rt_catalog_key_valid ("sb.a b") && !rt_catalog_key_valid ("") && !rt_catalog_key_valid (".sb")
          && !rt_catalog_key_valid ("sb..x") && !rt_catalog_key_valid ("sb.") && !rt_catalog_key_valid ("sb.*")
          && !rt_catalog_key_valid ("sb.>") && rt_catalog_key_valid ("idem.tenant-a.0f_9"),
      "keys outside the scheme are refused");
  ok (rt_catalog_create (c, "sb.*", "{}", NULL, &e) < 0 && has_code (e, "usage"), "a wildcard key is usage");
  rt_error_free (e);
}

/* Retries @what for up to 15 s while the client reconnects.  */
#define EVENTUALLY(what)                                                                                               \
  ({                                                                                                                   \
    bool done_ = false;                                                                                                \
    for (int i_ = 0; i_ < 150 && !done_; i_++)                                                                         \
      {                                                                                                                \
        rt_error *e_ = NULL;                                                                                           \
        rt_error **err = &e_;                                                                                          \
        done_ = (what);                                                                                                \
        rt_error_free (e_);                                                                                            \
        if (!done_)                                                                                                    \
          usleep (100 * 1000);                                                                                         \
      }                                                                                                                \
    done_;                                                                                                             \
  })

static void
test_server_lost (rt_bus *b, rt_catalog *c)
{
  char *reply = NULL, *v = NULL, url[256] = "", file[16];
  size_t len = 0;
  int pid = 0;

  /* The server the client is on (nats.c shuffles the list): server K's
     client port is the one in the URL it is connected to.  */
  if (rt_bus_server_url (b, url, sizeof url) == 0 && strrchr (url, ':'))
    for (int k = 1; k <= 3 && pid == 0; k++)
      {
        char want[512];
        snprintf (want, sizeof want, "%s/url.%d", dir, k);
        FILE *f = fopen (want, "r");
        if (f && fgets (want, sizeof want, f) && strstr (want, strrchr (url, ':')))
          {
            snprintf (file, sizeof file, "pid.%d", k);
            pid = nats_fixture_read_int (dir, file);
          }
        if (f)
          fclose (f);
      }
  ok (pid > 0 && kill (pid, SIGKILL) == 0, "the NATS server the client is on (%s) killed", url);
  ok (EVENTUALLY (rt_catalog_create (c, "sb.sb-3", "{}", NULL, err) == 0 || (*err && has_code (*err, "conflict"))),
      "the catalog takes a new entry through the two left");
  ok (EVENTUALLY (rt_catalog_get (c, "sb.sb-1", &v, NULL, err) == 0), "and reads the old ones");
  free (v);
  ok (EVENTUALLY (rt_bus_request (b, "rt.test.echo", "again", 5, 2000, &reply, &len, err) == 0), "requests go on");
  ok (reply && strcmp (reply, "echo:again") == 0, "answered right: %s", reply ? reply : "(none)");
  free (reply);
}

int
main (int argc, char **argv)
{
  cleanup_free char *urls = NULL;
  rt_error *e = NULL;
  rt_bus *b = NULL;
  rt_bus_sub *sub = NULL;
  rt_catalog *c = NULL;
  char *reply = NULL, tmpl[] = "/tmp/rt-nats.XXXXXX", keyfile[300];
  struct rt_seal_key key;
  size_t len = 0;

  if (argc < 2 || mkdtemp (tmpl) == NULL)
    return 1;
  fixture = argv[1];
  snprintf (dir, sizeof dir, "%s/cluster", tmpl);
  test_refused ();
  test_off_loopback ();
  urls = start_cluster ();
  ok (urls && *urls, "three NATS servers clustered on loopback: %s", urls ? urls : "(none)");
  ok (urls && rt_bus_connect (&(struct rt_bus_opts){ .urls = urls, .name = "test" }, &b, &e) == 0,
      "connected to the cluster");
  if (b == NULL)
    {
      stop_cluster ();
      rmdir (tmpl);
      return tap_done () | 1;
    }
  ok (rt_bus_subscribe (b, "rt.test.echo", "echoers", echo, b, &sub, &e) == 0, "a queue subscription");
  ok (rt_bus_request (b, "rt.test.echo", "hello", 5, 2000, &reply, &len, &e) == 0 && strcmp (reply, "echo:hello") == 0,
      "request/reply: %s", reply ? reply : "(none)");
  free (reply), reply = NULL;
  ok (rt_bus_request (b, "rt.test.nobody", "x", 1, 2000, &reply, &len, &e) < 0 && has_code (e, "node_unreachable"),
      "a request nobody subscribes to is node_unreachable");
  rt_error_free (e), e = NULL;
  test_unsubscribe_waits (b);
  snprintf (keyfile, sizeof keyfile, "%s/cluster.key", tmpl);
  if (nats_fixture_key (keyfile, &key) == 0)
    test_sealed (urls, &key);
  unlink (keyfile);
  ok (rt_catalog_open (b, 3, &c, &e) == 0, "the catalog opened with 3 replicas%s%s", e ? ": " : "", e ? e->msg : "");
  rt_error_free (e), e = NULL;
  if (c)
    {
      rt_catalog *c1 = NULL;
      ok (rt_catalog_open (b, 1, &c1, &e) < 0 && has_code (e, "usage") && e->hint && strstr (e->msg, "3 replicas"),
          "opened again asking for 1 replica: refused, %s", e ? e->msg : "(no error)");
      rt_error_free (e), e = NULL;
      rt_catalog_free (c1);
      test_catalog (c);
      test_server_lost (b, c);
    }
  rt_catalog_free (c);
  rt_bus_unsubscribe (sub);
  rt_bus_free (b);
  stop_cluster ();
  rmdir (tmpl);
  return tap_done ();
}
