/* intercept.c - the per-install CA, certificates minted per host, and the
   TLS contexts of intercepted connections (see intercept.h).  */
#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "net/intercept.h"

#define CA_DAYS (10 * 365)
#define LEAF_DAYS 30
#define LEAF_CACHE 32

struct leaf
{
  char *host;
  X509 *cert;
  time_t made;
};

struct rt_intercept
{
  rt_context *ctx;
  char *const *given;
  X509 *ca;
  EVP_PKEY *ca_key, *leaf_key;
  SSL_CTX *guest_ctx, *server_ctx;
  struct leaf leaves[LEAF_CACHE];
  size_t next_leaf;
};

static int
ssl_error (rt_error **err, const char *what)
{
  char buf[256];
  unsigned long e = ERR_get_error ();

  ERR_error_string_n (e, buf, sizeof buf);
  ERR_clear_error ();
  return rt_error_set (err, EIO, "internal", "%s: %s", what, e ? buf : "OpenSSL failed");
}

static bool
add_ext (X509 *cert, X509 *issuer, int nid, const char *value)
{
  X509V3_CTX v3;
  X509_EXTENSION *ext;
  bool ok;

  X509V3_set_ctx (&v3, issuer, cert, NULL, NULL, 0);
  ext = X509V3_EXT_nconf_nid (NULL, &v3, nid, value);
  ok = ext && X509_add_ext (cert, ext, -1);
  X509_EXTENSION_free (ext);
  return ok;
}

/* A certificate for @key named @cn, valid from an hour ago (guest clocks
   drift) for @days, with a random serial; issuer and extensions are the
   caller's.  */
static X509 *
cert_new (EVP_PKEY *key, const char *cn, int days)
{
  X509 *x = X509_new ();
  X509_NAME *name = X509_NAME_new ();
  unsigned char serial[16];
  BIGNUM *bn = NULL;
  bool ok;

  ok = x && name && RAND_bytes (serial, sizeof serial) == 1;
  if (ok)
    {
      serial[0] &= 0x7f; /* positive */
      bn = BN_bin2bn (serial, sizeof serial, NULL);
      ok = bn && BN_to_ASN1_INTEGER (bn, X509_get_serialNumber (x)) && X509_set_version (x, 2)
           && X509_gmtime_adj (X509_getm_notBefore (x), -3600)
           && X509_gmtime_adj (X509_getm_notAfter (x), (long) days * 86400)
           && X509_NAME_add_entry_by_txt (name, "O", MBSTRING_ASC, (const unsigned char *) "runtime", -1, -1, 0)
           /* A CN holds at most 64 characters; the SAN is what counts.  */
           && (strlen (cn) > 64
               || X509_NAME_add_entry_by_txt (name, "CN", MBSTRING_UTF8, (const unsigned char *) cn, -1, -1, 0))
           && X509_set_subject_name (x, name) && X509_set_pubkey (x, key);
    }
  BN_free (bn);
  X509_NAME_free (name);
  if (!ok)
    {
      X509_free (x);
      return NULL;
    }
  return x;
}

static char *
ca_path (rt_context *ctx, const char *leaf)
{
  return rt_strdup_printf ("%s/ca/%s", ctx->data_dir, leaf);
}

/* Writes a new CA; the certificate last, since its presence means done.  */
static int
ca_make (rt_context *ctx, rt_error **err)
{
  cleanup_free char *key_path = ca_path (ctx, "egress-ca.key"), *cert_path = ca_path (ctx, "egress-ca.pem");
  EVP_PKEY *key = EVP_EC_gen ("P-256");
  unsigned char tag[4] = { 0 };
  char cn[64];
  X509 *x;

  /* Each install's CA its own name, so that two are never confused.  */
  RAND_bytes (tag, sizeof tag);
  snprintf (cn, sizeof cn, "runtime egress CA %02x%02x%02x%02x (this host only)", tag[0], tag[1], tag[2], tag[3]);
  x = key ? cert_new (key, cn, CA_DAYS) : NULL;
  BIO *kb = BIO_new (BIO_s_mem ()), *cb = BIO_new (BIO_s_mem ());
  char *kdata = NULL, *cdata = NULL;
  long klen = 0, clen = 0;
  int ret;

  if (key_path == NULL || cert_path == NULL)
    ret = rt_error_oom (err);
  else if (x == NULL || kb == NULL || cb == NULL || !X509_set_issuer_name (x, X509_get_subject_name (x))
           || !add_ext (x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0")
           || !add_ext (x, x, NID_key_usage, "critical,keyCertSign,cRLSign")
           || !add_ext (x, x, NID_subject_key_identifier, "hash") || !X509_sign (x, key, EVP_sha256 ())
           || !PEM_write_bio_PrivateKey (kb, key, NULL, NULL, 0, NULL, NULL) || !PEM_write_bio_X509 (cb, x))
    ret = ssl_error (err, "cannot make the egress CA");
  else
    {
      klen = BIO_get_mem_data (kb, &kdata);
      clen = BIO_get_mem_data (cb, &cdata);
      ret = rt_write_file_atomic (key_path, kdata, klen, 0600, err);
      if (ret == 0)
        ret = rt_write_file_atomic (cert_path, cdata, clen, 0644, err);
    }
  if (kdata)
    explicit_bzero (kdata, klen);
  BIO_free (kb);
  BIO_free (cb);
  X509_free (x);
  EVP_PKEY_free (key);
  return ret;
}

int
rt_egress_ca_ensure (rt_context *ctx, char **pem, rt_error **err)
{
  cleanup_free char *dir = rt_strdup_printf ("%s/ca", ctx->data_dir);
  cleanup_free char *cert_path = ca_path (ctx, "egress-ca.pem"), *lock_path = ca_path (ctx, "lock");
  cleanup_close int lock = -1;
  int ret;

  if (dir == NULL || cert_path == NULL || lock_path == NULL)
    return rt_error_oom (err);
  if (access (cert_path, R_OK) < 0)
    {
      ret = rt_mkdir_p (dir, 0700, err);
      if (ret == 0)
        ret = rt_lock_file (lock_path, &lock, err);
      /* Another creator may have made it while we waited.  */
      if (ret == 0 && access (cert_path, R_OK) < 0)
        ret = ca_make (ctx, err);
      if (ret < 0)
        return ret;
    }
  return pem ? rt_read_file (cert_path, pem, NULL, err) : 0;
}

static int
alpn_select (SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in, unsigned inlen,
             void *arg)
{
  (void) ssl;
  (void) arg;
  /* HTTP/1.1 only: the rewriter frames HTTP/1.x requests.  */
  for (unsigned i = 0; i < inlen && i + 1 + in[i] <= inlen; i += 1 + in[i])
    if (in[i] == 8 && memcmp (in + i + 1, "http/1.1", 8) == 0)
      {
        *out = in + i + 1;
        *outlen = 8;
        return SSL_TLSEXT_ERR_OK;
      }
  return SSL_TLSEXT_ERR_NOACK;
}

struct rt_intercept *
rt_intercept_new (rt_context *ctx, char *const *given, rt_error **err)
{
  cleanup_free char *cert_path = ca_path (ctx, "egress-ca.pem"), *key_path = ca_path (ctx, "egress-ca.key");
  struct rt_intercept *ic = calloc (1, sizeof *ic);
  FILE *f;

  if (ic == NULL || cert_path == NULL || key_path == NULL)
    {
      free (ic);
      rt_error_oom (err);
      return NULL;
    }
  ic->ctx = ctx;
  ic->given = given;
  if ((f = fopen (cert_path, "re")))
    {
      ic->ca = PEM_read_X509 (f, NULL, NULL, NULL);
      fclose (f);
    }
  if ((f = fopen (key_path, "re")))
    {
      ic->ca_key = PEM_read_PrivateKey (f, NULL, NULL, NULL);
      fclose (f);
    }
  if (ic->ca == NULL || ic->ca_key == NULL || !X509_check_private_key (ic->ca, ic->ca_key))
    {
      rt_error_set (err, EINVAL, "startup_failed", "the egress CA in '%s/ca' is missing or broken", ctx->data_dir);
      rt_error_hint (err, "remove that directory: the next sandbox makes a new one");
      rt_intercept_free (ic);
      return NULL;
    }
  ic->leaf_key = EVP_EC_gen ("P-256");
  ic->guest_ctx = SSL_CTX_new (TLS_server_method ());
  ic->server_ctx = SSL_CTX_new (TLS_client_method ());
  if (ic->leaf_key == NULL || ic->guest_ctx == NULL || ic->server_ctx == NULL
      || !SSL_CTX_set_min_proto_version (ic->guest_ctx, TLS1_2_VERSION)
      || !SSL_CTX_set_min_proto_version (ic->server_ctx, TLS1_2_VERSION)
      || !SSL_CTX_set_default_verify_paths (ic->server_ctx)
      || SSL_CTX_set_alpn_protos (ic->server_ctx, (const unsigned char *) "\x08http/1.1", 9) != 0)
    {
      ssl_error (err, "cannot set up TLS for secrets");
      rt_intercept_free (ic);
      return NULL;
    }
  SSL_CTX_set_alpn_select_cb (ic->guest_ctx, alpn_select, NULL);
  SSL_CTX_set_verify (ic->server_ctx, SSL_VERIFY_PEER, NULL);
  /* No session tickets toward the guest: nothing to resume across
     sandboxes, and no key to keep.  */
  SSL_CTX_set_num_tickets (ic->guest_ctx, 0);
  return ic;
}

void
rt_intercept_free (struct rt_intercept *ic)
{
  if (ic == NULL)
    return;
  for (size_t i = 0; i < LEAF_CACHE; i++)
    {
      free (ic->leaves[i].host);
      X509_free (ic->leaves[i].cert);
    }
  SSL_CTX_free (ic->guest_ctx);
  SSL_CTX_free (ic->server_ctx);
  EVP_PKEY_free (ic->leaf_key);
  EVP_PKEY_free (ic->ca_key);
  X509_free (ic->ca);
  free (ic);
}

int
rt_intercept_bindings (struct rt_intercept *ic, const char *host, struct rt_secret_binding **b, size_t *n,
                       rt_error **err)
{
  return rt_secret_bindings (ic->ctx, ic->given, host, b, n, err);
}

static X509 *
leaf_for (struct rt_intercept *ic, const char *host)
{
  cleanup_free char *san = rt_strdup_printf ("DNS:%s", host);
  struct leaf *l;
  X509 *x;

  /* Reused while more than a day of its validity is left.  */
  for (size_t i = 0; i < LEAF_CACHE; i++)
    if (ic->leaves[i].host && strcasecmp (ic->leaves[i].host, host) == 0
        && time (NULL) - ic->leaves[i].made < (LEAF_DAYS - 1) * 86400L)
      return ic->leaves[i].cert;
  x = san ? cert_new (ic->leaf_key, host, LEAF_DAYS) : NULL;
  if (x == NULL || !X509_set_issuer_name (x, X509_get_subject_name (ic->ca))
      || !add_ext (x, ic->ca, NID_basic_constraints, "critical,CA:FALSE")
      || !add_ext (x, ic->ca, NID_key_usage, "critical,digitalSignature")
      || !add_ext (x, ic->ca, NID_ext_key_usage, "serverAuth") || !add_ext (x, ic->ca, NID_subject_alt_name, san)
      || !add_ext (x, ic->ca, NID_subject_key_identifier, "hash")
      || !add_ext (x, ic->ca, NID_authority_key_identifier, "keyid:always") || !X509_sign (x, ic->ca_key, EVP_sha256 ()))
    {
      X509_free (x);
      ERR_clear_error ();
      return NULL;
    }
  l = &ic->leaves[ic->next_leaf++ % LEAF_CACHE];
  free (l->host);
  X509_free (l->cert);
  l->host = strdup (host);
  l->cert = x;
  l->made = time (NULL);
  return x;
}

SSL *
rt_intercept_guest_ssl (struct rt_intercept *ic, const char *host)
{
  X509 *leaf = leaf_for (ic, host);
  SSL *ssl = leaf ? SSL_new (ic->guest_ctx) : NULL;

  if (ssl && (!SSL_use_certificate (ssl, leaf) || !SSL_use_PrivateKey (ssl, ic->leaf_key)))
    {
      SSL_free (ssl);
      ssl = NULL;
    }
  ERR_clear_error ();
  return ssl;
}

SSL *
rt_intercept_server_ssl (struct rt_intercept *ic, const char *host)
{
  SSL *ssl = SSL_new (ic->server_ctx);

  if (ssl && (!SSL_set_tlsext_host_name (ssl, host) || !SSL_set1_host (ssl, host)))
    {
      SSL_free (ssl);
      ssl = NULL;
    }
  if (ssl)
    SSL_set_hostflags (ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  ERR_clear_error ();
  return ssl;
}
