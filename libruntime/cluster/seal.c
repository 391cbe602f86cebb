/* seal.c - sealed NATS frames of the cluster and the nonces seen (see
   seal.h), on OpenSSL.  */
#include <errno.h>
#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster/seal.h"
#include "common/cleanup.h"
#include "common/util.h"

#define MAGIC "RTS1"
#define HEAD (4 + 8 + RT_SEAL_NONCE_LEN)
#define TAG 16
#define MAC 32
#define IV 12

void
rt_seal_key_derive (const unsigned char raw[RT_SEAL_KEY_LEN], struct rt_seal_key *k)
{
  static const char mac_label[] = "runtime cluster mac", enc_label[] = "runtime cluster seal";
  unsigned int n = 32;

  HMAC (EVP_sha256 (), raw, RT_SEAL_KEY_LEN, (const unsigned char *) mac_label, sizeof mac_label - 1, k->mac, &n);
  n = 32;
  HMAC (EVP_sha256 (), raw, RT_SEAL_KEY_LEN, (const unsigned char *) enc_label, sizeof enc_label - 1, k->enc, &n);
}

int
rt_seal_key_load (const char *path, struct rt_seal_key *k, rt_error **err)
{
  unsigned char raw[RT_SEAL_KEY_LEN + 1];
  cleanup_close int fd = path ? open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
  struct stat st;
  ssize_t got;

  if (path == NULL || *path == '\0')
    return rt_error_set (err, EINVAL, "usage", "no cluster key given");
  if (fd < 0)
    return rt_error_set (err, errno, "usage", "cannot open the cluster key '%s': %s", path, strerror (errno));
  if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode))
    return rt_error_set (err, EINVAL, "usage", "the cluster key '%s' is not a regular file", path);
  if (st.st_mode & 077)
    {
      rt_error_set (err, EPERM, "usage", "the cluster key '%s' is readable by others (mode %03o)", path,
                    (unsigned) (st.st_mode & 0777));
      return rt_error_hint (err, "chmod 600 %s", path);
    }
  got = read (fd, raw, sizeof raw);
  if (got != RT_SEAL_KEY_LEN)
    {
      rt_error_set (err, EINVAL, "usage", "the cluster key '%s' is not %d bytes", path, RT_SEAL_KEY_LEN);
      return rt_error_hint (err, "make one: (umask 077; head -c 32 /dev/urandom > FILE)");
    }
  rt_seal_key_derive (raw, k);
  OPENSSL_cleanse (raw, sizeof raw);
  return 0;
}

/* "RTS1" | subject | deadline | nonce: the GCM's associated data and the
   start of the HMAC's input.  */
static unsigned char *
aad_of (const char *subject, const unsigned char *head, size_t *len)
{
  size_t s = strlen (subject);
  unsigned char *a = malloc (4 + s + 1 + HEAD - 4);

  if (a == NULL)
    return NULL;
  memcpy (a, MAGIC, 4);
  memcpy (a + 4, subject, s + 1);
  memcpy (a + 4 + s + 1, head + 4, HEAD - 4);
  *len = 4 + s + 1 + HEAD - 4;
  return a;
}

/* HMAC-SHA256 of @aad then @body.  */
static bool
mac_of (const struct rt_seal_key *k, const unsigned char *aad, size_t aad_len, const unsigned char *body, size_t len,
        unsigned char out[MAC])
{
  EVP_MAC *mac = EVP_MAC_fetch (NULL, "HMAC", NULL);
  EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new (mac) : NULL;
  OSSL_PARAM params[]
      = { OSSL_PARAM_construct_utf8_string (OSSL_MAC_PARAM_DIGEST, (char *) "SHA256", 0), OSSL_PARAM_construct_end () };
  size_t n = 0;
  bool ok = ctx && EVP_MAC_init (ctx, k->mac, sizeof k->mac, params) == 1 && EVP_MAC_update (ctx, aad, aad_len) == 1
            && EVP_MAC_update (ctx, body, len) == 1 && EVP_MAC_final (ctx, out, &n, MAC) == 1 && n == MAC;

  EVP_MAC_CTX_free (ctx);
  EVP_MAC_free (mac);
  return ok;
}

/* AES-256-GCM of @in into @out (same length) with @tag; @enc or not.  */
static bool
gcm (const struct rt_seal_key *k, bool enc, const unsigned char *iv, const unsigned char *aad, size_t aad_len,
     const unsigned char *in, size_t len, unsigned char *out, unsigned char *tag)
{
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new ();
  int n = 0, ok;

  ok = c && EVP_CipherInit_ex (c, EVP_aes_256_gcm (), NULL, k->enc, iv, enc) == 1
       && EVP_CipherUpdate (c, NULL, &n, aad, (int) aad_len) == 1
       && (len == 0 || EVP_CipherUpdate (c, out, &n, in, (int) len) == 1)
       && (enc || EVP_CIPHER_CTX_ctrl (c, EVP_CTRL_GCM_SET_TAG, TAG, tag) == 1)
       && EVP_CipherFinal_ex (c, out + len, &n) == 1
       && (!enc || EVP_CIPHER_CTX_ctrl (c, EVP_CTRL_GCM_GET_TAG, TAG, tag) == 1);
  EVP_CIPHER_CTX_free (c);
  return ok;
}

int
rt_seal (const struct rt_seal_key *k, const char *subject, int64_t deadline_ms, const void *data, size_t len,
         unsigned char **out, size_t *out_len, rt_error **err)
{
  size_t total = len + RT_SEAL_OVERHEAD, aad_len = 0;
  cleanup_free unsigned char *f = len <= INT32_MAX - RT_SEAL_OVERHEAD ? malloc (total) : NULL, *aad = NULL;
  uint64_t d = (uint64_t) deadline_ms;

  if (f == NULL)
    return rt_error_oom (err);
  memcpy (f, MAGIC, 4);
  for (int i = 0; i < 8; i++)
    f[4 + i] = (unsigned char) (d >> (56 - 8 * i));
  if (getrandom (f + 12, RT_SEAL_NONCE_LEN, 0) != RT_SEAL_NONCE_LEN)
    return rt_error_set (err, errno, "internal", "getrandom: %s", strerror (errno));
  if ((aad = aad_of (subject, f, &aad_len)) == NULL)
    return rt_error_oom (err);
  if (!gcm (k, true, f + 12, aad, aad_len, data, len, f + HEAD, f + HEAD + len)
      || !mac_of (k, aad, aad_len, f + HEAD, len + TAG, f + HEAD + len + TAG))
    return rt_error_set (err, EIO, "internal", "cannot seal a message");
  *out = steal_pointer (&f);
  *out_len = total;
  return 0;
}

static int open_frame (const struct rt_seal_key *k, const char *subject, int64_t now_ms, bool at_rest,
                       const void *frame, size_t len, unsigned char **out, size_t *out_len,
                       unsigned char nonce[RT_SEAL_NONCE_LEN], int64_t *deadline, rt_error **err);

int
rt_unseal (const struct rt_seal_key *k, const char *subject, int64_t now_ms, const void *frame, size_t len,
           unsigned char **out, size_t *out_len, unsigned char nonce[RT_SEAL_NONCE_LEN], int64_t *deadline,
           rt_error **err)
{
  return open_frame (k, subject, now_ms, false, frame, len, out, out_len, nonce, deadline, err);
}

int
rt_unseal_value (const struct rt_seal_key *k, const char *label, const void *frame, size_t len, unsigned char **out,
                 size_t *out_len, rt_error **err)
{
  unsigned char nonce[RT_SEAL_NONCE_LEN];
  int64_t deadline;

  return open_frame (k, label, 0, true, frame, len, out, out_len, nonce, &deadline, err);
}

/* A frame opened; a message's deadline checked against @now_ms, a
   value's (@at_rest) must be 0: neither passes for the other.  */
static int
open_frame (const struct rt_seal_key *k, const char *subject, int64_t now_ms, bool at_rest, const void *frame,
            size_t len, unsigned char **out, size_t *out_len, unsigned char nonce[RT_SEAL_NONCE_LEN],
            int64_t *deadline, rt_error **err)
{
  const unsigned char *f = frame;
  cleanup_free unsigned char *aad = NULL, *plain = NULL;
  unsigned char mac[MAC];
  size_t aad_len = 0, n;
  uint64_t d = 0;

  if (f == NULL || len < RT_SEAL_OVERHEAD || len > INT32_MAX || memcmp (f, MAGIC, 4) != 0)
    return rt_error_set (err, EACCES, "unauthorized", "the message is not sealed with the cluster key");
  n = len - RT_SEAL_OVERHEAD;
  if ((aad = aad_of (subject, f, &aad_len)) == NULL || (plain = malloc (n + 1)) == NULL)
    return rt_error_oom (err);
  if (!mac_of (k, aad, aad_len, f + HEAD, n + TAG, mac) || CRYPTO_memcmp (mac, f + HEAD + n + TAG, MAC) != 0)
    return rt_error_set (err, EACCES, "unauthorized", "the message's MAC is not the cluster key's");
  if (!gcm (k, false, f + 12, aad, aad_len, f + HEAD, n, plain, (unsigned char *) f + HEAD + n))
    return rt_error_set (err, EACCES, "unauthorized", "the message does not decrypt with the cluster key");
  for (int i = 0; i < 8; i++)
    d = d << 8 | f[4 + i];
  if (at_rest != (d == 0))
    return rt_error_set (err, EACCES, "unauthorized", "the message is not sealed for this use");
  if (!at_rest && (int64_t) d < now_ms)
    return rt_error_set (err, EACCES, "unauthorized", "the message's deadline is past");
  if (!at_rest && (int64_t) d > now_ms + RT_SEAL_MAX_AHEAD_MS)
    return rt_error_set (err, EACCES, "unauthorized", "the message's deadline is too far ahead (clocks apart?)");
  plain[n] = '\0';
  memcpy (nonce, f + 12, RT_SEAL_NONCE_LEN);
  *deadline = (int64_t) d;
  *out = steal_pointer (&plain);
  *out_len = n;
  return 0;
}

int
rt_seal_value (const struct rt_seal_key *k, const char *label, const void *data, size_t len, unsigned char **out,
               size_t *out_len, rt_error **err)
{
  return rt_seal (k, label, 0, data, len, out, out_len, err);
}

int
rt_nonce_cache_init (struct rt_nonce_cache *c, rt_error **err)
{
  c->slots = calloc (RT_NONCE_SLOTS, sizeof *c->slots);
  if (c->slots == NULL)
    return rt_error_oom (err);
  pthread_mutex_init (&c->mu, NULL);
  return 0;
}

void
rt_nonce_cache_fini (struct rt_nonce_cache *c)
{
  if (c->slots == NULL)
    return;
  free (c->slots);
  c->slots = NULL;
  pthread_mutex_destroy (&c->mu);
}

/* A nonce is found within RT_NONCE_PROBES slots of its home, since it is
   only ever put there; a slot whose deadline is past is free again.  */
int
rt_nonce_seen (struct rt_nonce_cache *c, const unsigned char nonce[RT_SEAL_NONCE_LEN], int64_t deadline, int64_t now_ms)
{
  uint32_t home;
  long free_slot = -1;
  int ret = 0;

  /* The nonce is random: its bytes are its hash.  */
  memcpy (&home, nonce, sizeof home);
  pthread_mutex_lock (&c->mu);
  for (uint32_t i = 0; i < RT_NONCE_PROBES; i++)
    {
      uint32_t s = (home + i) % RT_NONCE_SLOTS;
      bool live = c->slots[s].deadline >= now_ms;
      if (live && memcmp (c->slots[s].nonce, nonce, RT_SEAL_NONCE_LEN) == 0)
        {
          ret = 1;
          break;
        }
      if (!live && free_slot < 0)
        free_slot = s;
    }
  if (ret == 0 && free_slot < 0)
    ret = -1;
  else if (ret == 0)
    {
      memcpy (c->slots[free_slot].nonce, nonce, RT_SEAL_NONCE_LEN);
      c->slots[free_slot].deadline = deadline;
    }
  pthread_mutex_unlock (&c->mu);
  return ret;
}
