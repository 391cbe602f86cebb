/* bus.c - the NATS connection (see bus.h), on nats.c.  */
#include <errno.h>
#include <nats/nats.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/bus.h"
#include "common/b64.h"
#include "common/cleanup.h"
#include "common/clock.h"
#include "common/util.h"
#include "core/context.h"

#define MAX_SERVERS 16
#define CONNECT_TIMEOUT_MS 2000
#define RECONNECT_WAIT_MS 250
/* A message published (a report, an answer) is good this long, and a
   request at least as long: clocks of hosts may be this far apart.  */
#define PUBLISH_TTL_MS 60000
/* Refusals are said at most this often (a flood says one line).  */
#define REFUSED_SAY_MS 10000

struct rt_bus
{
  natsConnection *nc;
  natsOptions *opts;
  jsCtx *js;
  bool keyed;
  struct rt_seal_key key;
  struct rt_nonce_cache nonces;
  char name[80];
  pthread_mutex_t mu; /* for the refusals' count */
  uint64_t refused_said;
  unsigned refused;
};

struct rt_bus_sub
{
  rt_bus *bus;
  natsSubscription *sub;
  rt_bus_handler fn;
  void *data;
  /* Set by the subscription's thread once it has run its last handler
     and will touch nothing of ours again.  */
  pthread_mutex_t mu;
  pthread_cond_t cond;
  bool done;
};

static int
nats_error (rt_error **err, natsStatus s, const char *code, const char *what)
{
  const char *detail = nats_GetLastError (NULL);
  return rt_error_set (err, EIO, code, "%s: %s", what, detail && *detail ? detail : natsStatus_GetText (s));
}

/* Whether the host of URL @u (after its scheme) is a loopback address.  */
static bool
loopback_host (const char *u)
{
  const char *h = strstr (u, "://"), *at;
  char host[256];
  size_t n;

  h = h ? h + 3 : u;
  at = strrchr (h, '@');
  h = at ? at + 1 : h;
  if (*h == '[')
    n = strcspn (++h, "]");
  else
    n = strcspn (h, ":/");
  if (n == 0 || n >= sizeof host)
    return false;
  memcpy (host, h, n);
  host[n] = '\0';
  return strcmp (host, "localhost") == 0 || strcmp (host, "::1") == 0
         || (strncmp (host, "127.", 4) == 0 && strspn (host, "0123456789.") == n);
}

/* Off loopback, NATS only with TLS and credentials: a plain connection
   is read by anyone on the way, an open server lets anyone publish.  */
static int
check_safe (const char *u, const struct rt_bus_opts *o, rt_error **err)
{
  const char *h = strstr (u, "://") + 3, *at = strrchr (h, '@');
  bool tls = strncmp (u, "tls://", 6) == 0 || o->ca_file || o->cert_file;
  bool creds = (at && memchr (h, ':', (size_t) (at - h))) || o->cert_file;

  if (loopback_host (u) || (tls && creds))
    return 0;
  rt_error_set (err, EPERM, "usage", "%s NATS only on a loopback address, not %.80s", tls ? "credential-less" : "plain",
                at ? at + 1 : h);
  return rt_error_hint (err, "give tls://USER:PASS@HOST:PORT URLs (or --nats-cert) with --nats-ca FILE, as "
                             "docs/cluster.md shows, or use 127.0.0.1");
}

/* @urls split at commas into @out (pointers into @copy).  */
static int
split_urls (char *copy, const struct rt_bus_opts *o, const char *out[MAX_SERVERS], int *n, rt_error **err)
{
  *n = 0;
  for (char *save = NULL, *u = strtok_r (copy, ",", &save); u; u = strtok_r (NULL, ",", &save))
    {
      if (*n == MAX_SERVERS)
        return rt_error_set (err, EINVAL, "usage", "at most %d NATS URLs", MAX_SERVERS);
      if (strncmp (u, "nats://", 7) != 0 && strncmp (u, "tls://", 6) != 0)
        {
          /* Said without what may be a password (user:pass@).  */
          const char *at = strrchr (u, '@');
          return rt_error_set (err, EINVAL, "usage", "'%s%.80s' is not a nats:// or tls:// URL", at ? "…@" : "",
                               at ? at + 1 : u);
        }
      out[(*n)++] = u;
    }
  for (int i = 0; i < *n; i++)
    if (check_safe (out[i], o, err) < 0)
      return -EPERM;
  if (*n == 0)
    return rt_error_set (err, EINVAL, "usage", "no NATS URL given");
  return 0;
}

static int
set_options (natsOptions *no, const struct rt_bus_opts *o, const char **servers, int n, rt_error **err)
{
  natsStatus s = natsOptions_SetServers (no, servers, n);

  if (s == NATS_OK && o->name)
    s = natsOptions_SetName (no, o->name);
  if (s == NATS_OK)
    s = natsOptions_SetTimeout (no, CONNECT_TIMEOUT_MS);
  /* A server lost is one the client leaves for another, for ever: the
     cluster is the only way in.  */
  if (s == NATS_OK)
    s = natsOptions_SetMaxReconnect (no, -1);
  if (s == NATS_OK)
    s = natsOptions_SetReconnectWait (no, RECONNECT_WAIT_MS);
  /* Only the servers named: the URLs a NATS cluster gossips are never
     checked against the loopback/TLS rule above (check_safe).  */
  if (s == NATS_OK)
    s = natsOptions_SetIgnoreDiscoveredServers (no, true);
  if (s == NATS_OK && (o->ca_file || o->cert_file))
    s = natsOptions_SetSecure (no, true);
  if (s == NATS_OK && o->ca_file)
    s = natsOptions_LoadCATrustedCertificates (no, o->ca_file);
  if (s == NATS_OK && o->cert_file)
    s = natsOptions_LoadCertificatesChain (no, o->cert_file, o->key_file ? o->key_file : o->cert_file);
  if (s != NATS_OK)
    return nats_error (err, s, "usage", "bad NATS options");
  return 0;
}

int
rt_bus_connect (const struct rt_bus_opts *o, rt_bus **out, rt_error **err)
{
  cleanup_free char *copy = o->urls ? strdup (o->urls) : NULL;
  const char *servers[MAX_SERVERS];
  rt_bus *b;
  natsStatus s;
  int n;

  if (o->urls == NULL || *o->urls == '\0')
    return rt_error_set (err, EINVAL, "usage", "no NATS URL given");
  if (copy == NULL || (b = calloc (1, sizeof *b)) == NULL)
    return rt_error_oom (err);
  pthread_mutex_init (&b->mu, NULL);
  snprintf (b->name, sizeof b->name, "%s", o->name ? o->name : "runtime");
  if (o->key)
    {
      b->keyed = true;
      b->key = *o->key;
      if (rt_nonce_cache_init (&b->nonces, err) < 0)
        {
          rt_bus_free (b);
          return -ENOMEM;
        }
    }
  if (split_urls (copy, o, servers, &n, err) < 0 || natsOptions_Create (&b->opts) != NATS_OK
      || set_options (b->opts, o, servers, n, err) < 0)
    {
      if (err && *err == NULL)
        rt_error_oom (err);
      rt_bus_free (b);
      return -EINVAL;
    }
  s = natsConnection_Connect (&b->nc, b->opts);
  if (s == NATS_OK)
    s = natsConnection_JetStream (&b->js, b->nc, NULL);
  if (s != NATS_OK)
    {
      nats_error (err, s, "cluster_unavailable", "cannot reach the NATS cluster");
      rt_bus_free (b);
      return -EIO;
    }
  *out = b;
  return 0;
}

void
rt_bus_free (rt_bus *b)
{
  if (b == NULL)
    return;
  jsCtx_Destroy (b->js);
  if (b->nc)
    {
      natsConnection_Close (b->nc);
      natsConnection_Destroy (b->nc);
    }
  natsOptions_Destroy (b->opts);
  rt_nonce_cache_fini (&b->nonces);
  OPENSSL_cleanse (&b->key, sizeof b->key);
  pthread_mutex_destroy (&b->mu);
  free (b);
}

bool
rt_bus_connected (rt_bus *b)
{
  return natsConnection_Status (b->nc) == NATS_CONN_STATUS_CONNECTED;
}

int
rt_bus_server_url (rt_bus *b, char *buf, size_t len)
{
  char *host, *at;

  if (natsConnection_GetConnectedUrl (b->nc, buf, len) != NATS_OK || *buf == '\0')
    return -1;
  /* nats.c gives it as it was given: user:pass@ dropped, the caller
     prints it.  */
  host = strstr (buf, "://");
  host = host ? host + 3 : buf;
  at = strrchr (host, '@');
  if (at)
    memmove (host, at + 1, strlen (at + 1) + 1);
  return 0;
}

size_t
rt_bus_max_payload (rt_bus *b)
{
  int64_t n = natsConnection_GetMaxPayload (b->nc);
  return n > 0 ? (size_t) n : 0;
}

int
rt_bus_publish (rt_bus *b, const char *subject, const void *data, size_t len, rt_error **err)
{
  cleanup_free unsigned char *frame = NULL;
  natsStatus s;

  if (b->keyed && rt_seal (&b->key, subject, rt_epoch_ms () + PUBLISH_TTL_MS, data, len, &frame, &len, err) < 0)
    return -EIO;
  s = natsConnection_Publish (b->nc, subject, frame ? frame : data, (int) len);
  return s == NATS_OK ? 0 : nats_error (err, s, "cluster_unavailable", "cannot publish");
}

/* A message not sealed with the key, or replayed: said (at most every
   REFUSED_SAY_MS) and answered in the plain, so that a peer with another
   key learns why; no handler sees it.  */
static void
refuse (rt_bus *b, natsMsg *m, const char *why)
{
  uint64_t now = rt_now_ms ();
  unsigned n = 0;
  char text[256];

  pthread_mutex_lock (&b->mu);
  b->refused++;
  if (b->refused_said == 0 || now - b->refused_said >= REFUSED_SAY_MS)
    {
      n = b->refused;
      b->refused = 0;
      b->refused_said = now;
    }
  pthread_mutex_unlock (&b->mu);
  if (n)
    fprintf (stderr, "%s: refused %u message%s on NATS, the last on %.100s: %s\n", b->name, n, n > 1 ? "s" : "",
             natsMsg_GetSubject (m), why);
  if (natsMsg_GetReply (m) == NULL)
    return;
  snprintf (text, sizeof text, "{\"error\":{\"code\":\"unauthorized\",\"status\":401,\"message\":\"%s\"}}", why);
  natsConnection_Publish (b->nc, natsMsg_GetReply (m), text, (int) strlen (text));
}

static void
on_msg (natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
  rt_bus_sub *s = closure;
  struct rt_bus_msg msg = { natsMsg_GetSubject (m), natsMsg_GetReply (m), natsMsg_GetData (m),
                            (size_t) natsMsg_GetDataLength (m) };
  cleanup_free unsigned char *plain = NULL;
  unsigned char nonce[RT_SEAL_NONCE_LEN];
  int64_t deadline = 0, now = rt_epoch_ms ();
  rt_error *e = NULL;
  (void) nc, (void) sub;

  if (s->bus->keyed)
    {
      int seen = 0;
      if (rt_unseal (&s->bus->key, msg.subject, now, msg.data, msg.len, &plain, &msg.len, nonce, &deadline, &e) < 0
          || (seen = rt_nonce_seen (&s->bus->nonces, nonce, deadline, now)) != 0)
        {
          refuse (s->bus, m, e ? e->msg : seen > 0 ? "the message is a replay" : "too many messages in flight");
          rt_error_free (e);
          natsMsg_Destroy (m);
          return;
        }
      msg.data = plain;
    }
  s->fn (s->data, &msg);
  natsMsg_Destroy (m);
}

/* nats.c calls this on the subscription's own thread as it ends, after
   its last message handler returned: drained, unsubscribed or closed.  */
static void
on_complete (void *closure)
{
  rt_bus_sub *s = closure;

  pthread_mutex_lock (&s->mu);
  s->done = true;
  pthread_cond_signal (&s->cond);
  pthread_mutex_unlock (&s->mu);
}

static void
sub_free (rt_bus_sub *s)
{
  natsSubscription_Destroy (s->sub);
  pthread_cond_destroy (&s->cond);
  pthread_mutex_destroy (&s->mu);
  free (s);
}

int
rt_bus_subscribe (rt_bus *b, const char *subject, const char *queue, rt_bus_handler fn, void *data,
                  rt_bus_sub **out, rt_error **err)
{
  rt_bus_sub *s = calloc (1, sizeof *s);
  natsStatus st;

  if (s == NULL)
    return rt_error_oom (err);
  s->bus = b;
  s->fn = fn;
  s->data = data;
  pthread_mutex_init (&s->mu, NULL);
  pthread_cond_init (&s->cond, NULL);
  st = queue ? natsConnection_QueueSubscribe (&s->sub, b->nc, subject, queue, on_msg, s)
             : natsConnection_Subscribe (&s->sub, b->nc, subject, on_msg, s);
  if (st != NATS_OK)
    {
      sub_free (s);
      return nats_error (err, st, "cluster_unavailable", "cannot subscribe");
    }
  st = natsSubscription_SetOnCompleteCB (s->sub, on_complete, s);
  if (st != NATS_OK)
    {
      /* Nothing would say when its thread is done with @s: leave @s to
         it rather than free what a handler may read.  */
      natsSubscription_Unsubscribe (s->sub);
      return nats_error (err, st, "cluster_unavailable", "cannot subscribe");
    }
  /* Subscribed once the server has it: a request right after must find
     it.  */
  st = natsConnection_Flush (b->nc);
  if (st != NATS_OK)
    {
      int ret = nats_error (err, st, "cluster_unavailable", "cannot subscribe");
      rt_bus_unsubscribe (s);
      return ret;
    }
  *out = s;
  return 0;
}

void
rt_bus_unsubscribe (rt_bus_sub *s)
{
  if (s == NULL)
    return;
  /* Drained: the server stops sending, what already arrived is handled,
     then the thread ends.  If the drain cannot start (the connection
     closed or down), an unsubscribe closes it: the thread ends after the
     handler it may be running.  Either way nats.c calls on_complete last,
     and only then may @s and the caller's data go.  */
  if (natsSubscription_Drain (s->sub) != NATS_OK)
    natsSubscription_Unsubscribe (s->sub);
  pthread_mutex_lock (&s->mu);
  while (!s->done)
    pthread_cond_wait (&s->cond, &s->mu);
  pthread_mutex_unlock (&s->mu);
  sub_free (s);
}

/* The answer @m to a request of a keyed bus, opened: it must be sealed
   for the inbox it came on, unique to that request.  */
static int
open_answer (rt_bus *b, const char *subject, natsMsg *m, unsigned char **out, size_t *out_len, rt_error **err)
{
  const char *data = natsMsg_GetData (m);
  size_t len = (size_t) natsMsg_GetDataLength (m);
  unsigned char nonce[RT_SEAL_NONCE_LEN];
  cleanup_json json_object *o = NULL;
  int64_t deadline;
  rt_error *e = NULL;

  if (rt_unseal (&b->key, natsMsg_GetSubject (m), rt_epoch_ms (), data, len, out, out_len, nonce, &deadline, &e) == 0)
    return 0;
  /* The other side's refusal (bus.c's refuse) is plain: said as it is.  */
  if (len && data[0] == '{' && (o = json_tokener_parse (data)) != NULL
      && rt_json_str (json_object_object_get (o, "error"), "message"))
    {
      rt_error_set (err, EACCES, "unauthorized", "the answer on %s refused the request: %.200s", subject,
                    rt_json_str (json_object_object_get (o, "error"), "message"));
      rt_error_free (e);
      return rt_error_hint (err, "every node and replica needs the same --cluster-key");
    }
  rt_error_set (err, EACCES, "unauthorized", "the answer on %s is refused: %s", subject, e->msg);
  rt_error_free (e);
  return -EACCES;
}

int
rt_bus_request (rt_bus *b, const char *subject, const void *data, size_t len, int timeout_ms, char **reply,
                size_t *reply_len, rt_error **err)
{
  cleanup_free unsigned char *frame = NULL;
  natsMsg *m = NULL;
  natsStatus s;
  int n, ret = 0;

  /* Good at least as long as a message published: a short request (a
     ping) must survive clocks a little apart; the nonce, not the
     deadline, keeps it from being taken twice.  */
  if (b->keyed
      && rt_seal (&b->key, subject, rt_epoch_ms () + (timeout_ms > PUBLISH_TTL_MS ? timeout_ms : PUBLISH_TTL_MS), data,
                  len, &frame, &len, err)
             < 0)
    return -EIO;
  s = natsConnection_Request (&m, b->nc, subject, frame ? (const void *) frame : data, (int) len, timeout_ms);
  if (s == NATS_NO_RESPONDERS || s == NATS_TIMEOUT)
    return rt_error_set (err, EHOSTUNREACH, "node_unreachable", "nobody answered on %s", subject);
  if (s != NATS_OK)
    return nats_error (err, s, "cluster_unavailable", "cannot send a request");
  if (b->keyed)
    ret = open_answer (b, subject, m, (unsigned char **) reply, reply_len, err);
  else if ((*reply = malloc ((n = natsMsg_GetDataLength (m)) + 1)) == NULL)
    ret = rt_error_oom (err);
  else
    {
      memcpy (*reply, natsMsg_GetData (m), n);
      (*reply)[n] = '\0';
      *reply_len = n;
    }
  natsMsg_Destroy (m);
  return ret;
}

int
rt_bus_seal_value (rt_bus *b, const char *label, const char *value, size_t len, char **b64, rt_error **err)
{
  cleanup_free unsigned char *frame = NULL;
  size_t n = 0;

  if (!b->keyed)
    return rt_error_set (err, EACCES, "unauthorized", "no cluster key to seal a value with");
  if (rt_seal_value (&b->key, label, value, len, &frame, &n, err) < 0)
    return -EIO;
  *b64 = rt_b64_encode (frame, n);
  return *b64 ? 0 : rt_error_oom (err);
}

int
rt_bus_open_value (rt_bus *b, const char *label, const char *b64, char **value, size_t *len, rt_error **err)
{
  cleanup_free uint8_t *frame = NULL;
  size_t n = 0;

  if (!b->keyed)
    return rt_error_set (err, EACCES, "unauthorized", "no cluster key to open a value with");
  if (rt_b64_decode_alloc (b64, strlen (b64), &frame, &n) < 0)
    return rt_error_set (err, EACCES, "unauthorized", "a sealed value that is not base64");
  return rt_unseal_value (&b->key, label, frame, n, (unsigned char **) value, len, err);
}

void *
rt_bus_jetstream (rt_bus *b)
{
  return b->js;
}
