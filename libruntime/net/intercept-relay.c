/* intercept-relay.c - the TLS path to a host bound to a secret (see
   intercept-relay.h).  */
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <string.h>

#include "net/intercept-relay.h"
#include "net/intercept.h"
#include "net/relay.h"
#include "net/rewrite.h"
#include "net/scrub.h"

bool
rt_intercept_relay_name_bound (struct rt_proxy *px, const char *name)
{
  cleanup_error rt_error *err = NULL;
  struct rt_secret_binding *b = NULL;
  size_t n = 0;

  if (px->ic == NULL || rt_intercept_bindings (px->ic, name, &b, &n, &err) < 0)
    return false;
  rt_secret_bindings_free (b, n);
  return n > 0;
}

void
rt_intercept_relay_bind (struct conn *c)
{
  cleanup_error rt_error *err = NULL;

  if (c->px->ic == NULL || c->name == NULL || !c->tls)
    return;
  /* A store that cannot be read swaps nothing: the placeholder goes out
     as it is, which gives nothing away.  */
  if (rt_intercept_bindings (c->px->ic, c->name, &c->bind, &c->n_bind, &err) < 0)
    return;
  c->intercept = c->n_bind > 0;
  /* The certificates and SNI name the host without its trailing dot.  */
  if (c->intercept && strlen (c->name) > 1 && c->name[strlen (c->name) - 1] == '.')
    c->name[strlen (c->name) - 1] = '\0';
}

const char *
rt_intercept_relay_failure (struct conn *c)
{
  SSL *ssl = bufferevent_openssl_get_ssl (c->up);

  if (ssl && SSL_get_verify_result (ssl) != X509_V_OK)
    return "untrusted_certificate";
  if (bufferevent_get_openssl_error (c->up))
    return "tls_failed";
  return "connect_failed";
}

void
rt_intercept_relay_server_tls (struct conn *c, bufferevent_event_cb on_done)
{
  struct timeval tv = { DIAL_TIMEOUT_S, 0 };
  SSL *ssl = rt_intercept_server_ssl (c->px->ic, c->name);
  /* Deferred callbacks: a filter calls them from inside a write, and
     the relay must not run inside itself.  */
  struct bufferevent *raw = c->up, *tls
      = ssl ? bufferevent_openssl_filter_new (c->px->base, raw, ssl, BUFFEREVENT_SSL_CONNECTING,
                                              BEV_OPT_DEFER_CALLBACKS)
            : NULL;
  if (tls == NULL)
    {
      SSL_free (ssl);
      rt_conn_refuse (c, "tls_failed");
      return;
    }
  c->up = tls;
  /* Many servers close without close_notify; HTTP frames its own end.  */
  bufferevent_openssl_set_allow_dirty_shutdown (c->up, 1);
  bufferevent_setcb (c->up, NULL, NULL, on_done, c);
  /* The handshake is bounded both ways; the socket itself is not.  */
  bufferevent_set_timeouts (raw, NULL, NULL);
  bufferevent_set_timeouts (c->up, &tv, &tv);
  /* Nothing is queued on a fresh connection, so no write event would
     start the handshake: start it.  */
  bufferevent_trigger (raw, EV_WRITE, BEV_TRIG_IGNORE_WATERMARKS);
}

/* The guest's side gets the rewriter.  */
int
rt_intercept_relay_guest (struct conn *c)
{
  SSL *ssl = rt_intercept_guest_ssl (c->px->ic, c->name);
  struct bufferevent *raw = c->guest, *tls = NULL;
  bool pending = evbuffer_get_length (bufferevent_get_input (raw)) > 0;

  c->rw = rt_rewrite_new (c->bind, c->n_bind, c->name, c->port);
  if (ssl && c->rw)
    tls = bufferevent_openssl_filter_new (c->px->base, raw, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_DEFER_CALLBACKS);
  if (tls == NULL)
    {
      SSL_free (ssl);
      rt_conn_reset (c, "refused", "tls_failed");
      return -1;
    }
  c->guest = tls;
  bufferevent_openssl_set_allow_dirty_shutdown (c->guest, 1);
  /* The ClientHello the sniffer read is already waiting: no new read
     event will come for it.  */
  if (pending)
    bufferevent_trigger (raw, EV_READ, BEV_TRIG_IGNORE_WATERMARKS);
  return 0;
}

void
rt_intercept_relay_rewrite (struct conn *c)
{
  struct evbuffer *in, *out;
  size_t n;

  if (c->up == NULL)
    return;
  in = bufferevent_get_input (c->guest);
  out = bufferevent_get_output (c->up);

  while ((n = evbuffer_get_length (in)) > 0)
    {
      size_t look = n < RT_REWRITE_MAX_HEAD ? n : RT_REWRITE_MAX_HEAD, take = 0, head_len = 0;
      const char *p = (const char *) evbuffer_pullup (in, look), *why = "bad_request";
      char *head = NULL;
      bool forbidden;
      int r = rt_rewrite_step (c->rw, p, look, &take, &head, &head_len, &why);

      if (r < 0)
        {
          /* Not a request we may pass: nothing more goes to the server.
             Plain HTTP, checked only (rt_relay_check_requests): another
             host is a name that does not agree.  */
          if (!c->intercept && strcmp (why, "host_mismatch") == 0)
            why = "name_mismatch";
          rt_relay_release (c->px, c->up, false);
          c->up = NULL;
          forbidden = strcmp (why, "host_mismatch") == 0 || strcmp (why, "name_mismatch") == 0
                      || strcmp (why, "placeholder_misplaced") == 0;
          rt_conn_answer (c, forbidden ? 403 : 400, forbidden ? "Forbidden" : "Bad Request", why);
          return;
        }
      if (r == RT_REWRITE_MORE)
        break;
      c->bytes_out += take;
      if (r == RT_REWRITE_PASS)
        evbuffer_remove_buffer (in, out, take);
      else
        {
          evbuffer_drain (in, take);
          evbuffer_add (out, head, head_len);
          explicit_bzero (head, head_len);
          free (head);
        }
    }
  if (evbuffer_get_length (out) >= RELAY_HIGH)
    bufferevent_disable (c->guest, EV_READ);
}

static void
emit_to (void *arg, const char *p, size_t n)
{
  evbuffer_add (arg, p, n);
}

int
rt_intercept_relay_scrub (struct conn *c, bool eof)
{
  struct evbuffer *in = bufferevent_get_input (c->up), *out = bufferevent_get_output (c->guest);
  struct rt_scrub *s = rt_rewrite_scrub (c->rw);
  struct evbuffer_iovec v[16];
  const char *why = "bad_response";
  int r = 0;

  /* The bytes where they lie, segment by segment: the scrubber keeps
     what it cannot decide yet.  */
  while (r == 0 && evbuffer_get_length (in) > 0)
    {
      int k = evbuffer_peek (in, -1, NULL, v, 16);
      size_t took = 0;
      for (int i = 0; i < k && i < 16 && r == 0; i++)
        {
          r = rt_scrub_feed (s, v[i].iov_base, v[i].iov_len, emit_to, out, &why);
          took += v[i].iov_len;
        }
      c->bytes_in += took;
      evbuffer_drain (in, took);
    }
  if (r == 0 && eof)
    r = rt_scrub_end (s, emit_to, out, &why);
  if (r < 0)
    {
      /* An answer that could carry a value unseen: nothing more of it.  */
      rt_relay_release (c->px, c->up, false);
      c->up = NULL;
      rt_conn_answer (c, 502, "Bad Gateway", why);
      return -1;
    }
  if (evbuffer_get_length (out) >= RELAY_HIGH)
    bufferevent_disable (c->up, EV_READ);
  return 0;
}
