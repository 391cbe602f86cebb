/* listen.c - where `runtime serve` listens: the address (plain HTTP on
   loopback only) and TLS (see listen.h).  */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/bufferevent_ssl.h>
#include <netdb.h>
#include <openssl/err.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"
#include "serve/listen.h"

static bool
is_loopback (const struct sockaddr *sa)
{
  if (sa->sa_family == AF_INET)
    return (ntohl (((const struct sockaddr_in *) sa)->sin_addr.s_addr) >> 24) == 127;
  if (sa->sa_family == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK (&((const struct sockaddr_in6 *) sa)->sin6_addr);
  return false;
}

/* "ADDR:PORT" or "[V6]:PORT" into host and port.  */
static int
split_listen (const char *listen, char *host, size_t hostlen, char *port, size_t portlen, rt_error **err)
{
  const char *colon = strrchr (listen, ':');
  const char *h = listen;
  size_t n;

  if (colon == NULL || colon[1] == '\0' || strspn (colon + 1, "0123456789") != strlen (colon + 1))
    goto bad;
  n = colon - listen;
  if (n >= 2 && h[0] == '[' && h[n - 1] == ']')
    {
      h++;
      n -= 2;
    }
  if (n == 0 || n >= hostlen || strlen (colon + 1) >= portlen)
    goto bad;
  memcpy (host, h, n);
  host[n] = '\0';
  snprintf (port, portlen, "%s", colon + 1);
  return 0;
bad:
  rt_error_set (err, EINVAL, "usage", "--listen wants ADDR:PORT, not '%s'", listen);
  return rt_error_hint (err, "e.g. --listen 127.0.0.1:8430");
}

int
srv_listen (const rt_serve_opts *opts, bool tls, int *out, rt_error **err)
{
  const char *where = opts->listen ? opts->listen : RT_SERVE_DEFAULT_LISTEN;
  struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM }, *ai = NULL;
  struct sockaddr_storage bound;
  socklen_t blen = sizeof bound;
  char host[256], port[16], shown[INET6_ADDRSTRLEN];
  cleanup_close int fd = -1;
  int one = 1, rc;

  if (split_listen (where, host, sizeof host, port, sizeof port, err) < 0)
    return -1;
  rc = getaddrinfo (host, port, &hints, &ai);
  if (rc != 0)
    return rt_error_set (err, EINVAL, "usage", "cannot listen on %s: %s", where, gai_strerror (rc));
  if (!tls && !is_loopback (ai->ai_addr))
    {
      freeaddrinfo (ai);
      rt_error_set (err, EPERM, "invalid_request", "plain HTTP only on a loopback address, not %s", where);
      return rt_error_hint (err, "give --tls-cert FILE and --tls-key FILE, or listen on 127.0.0.1");
    }
  fd = socket (ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0)
    setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd < 0 || bind (fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen (fd, 1024) < 0)
    {
      int e = errno;
      freeaddrinfo (ai);
      rt_error_set (err, e, e == EADDRINUSE ? "busy" : "internal", "cannot listen on %s: %s", where, strerror (e));
      return rt_error_hint (err, "pick another port with --listen ADDR:PORT");
    }
  freeaddrinfo (ai);
  getsockname (fd, (struct sockaddr *) &bound, &blen);
  if (bound.ss_family == AF_INET6)
    inet_ntop (AF_INET6, &((struct sockaddr_in6 *) &bound)->sin6_addr, shown, sizeof shown);
  else
    inet_ntop (AF_INET, &((struct sockaddr_in *) &bound)->sin_addr, shown, sizeof shown);
  fprintf (stderr, "runtime serve: listening on %s://%s%s%s:%u\n", tls ? "https" : "http",
           bound.ss_family == AF_INET6 ? "[" : "", shown, bound.ss_family == AF_INET6 ? "]" : "",
           ntohs (bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *) &bound)->sin6_port
                                              : ((struct sockaddr_in *) &bound)->sin_port));
  *out = fd;
  fd = -1;
  return 0;
}

struct bufferevent *
srv_tls_bev (struct event_base *base, void *arg)
{
  SSL *ssl = SSL_new (arg);

  return ssl ? bufferevent_openssl_socket_new (base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE)
             : NULL;
}

SSL_CTX *
srv_tls_context (const rt_serve_opts *opts, rt_error **err)
{
  SSL_CTX *ssl = SSL_CTX_new (TLS_server_method ());
  unsigned long e;
  char buf[256];

  if (ssl == NULL)
    {
      rt_error_oom (err);
      return NULL;
    }
  SSL_CTX_set_min_proto_version (ssl, TLS1_2_VERSION);
  if (SSL_CTX_use_certificate_chain_file (ssl, opts->tls_cert) == 1
      && SSL_CTX_use_PrivateKey_file (ssl, opts->tls_key, SSL_FILETYPE_PEM) == 1
      && SSL_CTX_check_private_key (ssl) == 1)
    return ssl;
  SSL_CTX_free (ssl);
  e = ERR_get_error ();
  ERR_error_string_n (e, buf, sizeof buf);
  ERR_clear_error ();
  rt_error_set (err, EINVAL, "invalid_request", "cannot use --tls-cert %s and --tls-key %s: %s", opts->tls_cert,
                opts->tls_key, buf);
  rt_error_hint (err, "a PEM certificate (chain) and its PEM private key");
  return NULL;
}

