/* bus.c - the NATS connection (see bus.h), on nats.c.  */
#include <errno.h>
#include <nats/nats.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/bus.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "core/context.h"

#define MAX_SERVERS 16
#define CONNECT_TIMEOUT_MS 2000
#define RECONNECT_WAIT_MS 250

struct rt_bus
{
  natsConnection *nc;
  natsOptions *opts;
  jsCtx *js;
};

struct rt_bus_sub
{
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

/* @urls split at commas into @out (pointers into @copy).  */
static int
split_urls (char *copy, const char *out[MAX_SERVERS], int *n, rt_error **err)
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
  if (split_urls (copy, servers, &n, err) < 0 || natsOptions_Create (&b->opts) != NATS_OK
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
  natsStatus s = natsConnection_Publish (b->nc, subject, data, (int) len);
  return s == NATS_OK ? 0 : nats_error (err, s, "cluster_unavailable", "cannot publish");
}

static void
on_msg (natsConnection *nc, natsSubscription *sub, natsMsg *m, void *closure)
{
  rt_bus_sub *s = closure;
  struct rt_bus_msg msg = { natsMsg_GetSubject (m), natsMsg_GetReply (m), natsMsg_GetData (m),
                            (size_t) natsMsg_GetDataLength (m) };
  (void) nc, (void) sub;

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

int
rt_bus_request (rt_bus *b, const char *subject, const void *data, size_t len, int timeout_ms, char **reply,
                size_t *reply_len, rt_error **err)
{
  natsMsg *m = NULL;
  natsStatus s = natsConnection_Request (&m, b->nc, subject, data, (int) len, timeout_ms);
  int n;

  if (s == NATS_NO_RESPONDERS || s == NATS_TIMEOUT)
    return rt_error_set (err, EHOSTUNREACH, "node_unreachable", "nobody answered on %s", subject);
  if (s != NATS_OK)
    return nats_error (err, s, "cluster_unavailable", "cannot send a request");
  n = natsMsg_GetDataLength (m);
  *reply = malloc (n + 1);
  if (*reply == NULL)
    {
      natsMsg_Destroy (m);
      return rt_error_oom (err);
    }
  memcpy (*reply, natsMsg_GetData (m), n);
  (*reply)[n] = '\0';
  *reply_len = n;
  natsMsg_Destroy (m);
  return 0;
}

void *
rt_bus_jetstream (rt_bus *b)
{
  return b->js;
}
