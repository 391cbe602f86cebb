/* seal.h - what proves that a NATS message of the cluster came from a
 * holder of the cluster key, and hides what it carries (docs/cluster.md,
 * "The cluster key").  Every node and replica reads the same key file:
 * 32 random bytes, mode 0600 (head -c 32 /dev/urandom > FILE).  A message
 * sealed for @subject is the frame
 *
 *   "RTS1" | deadline (epoch ms, 8 bytes big-endian) | nonce (16 random)
 *   | AES-256-GCM of the payload (its IV the nonce's first 12 bytes)
 *   | the GCM tag (16) | HMAC-SHA256 (32) of all that came before
 *
 * with "RTS1" | subject | deadline | nonce as the GCM's associated data
 * and in the HMAC: a frame is good only on the subject it was made for
 * (a node's name is in it, an answer's reply inbox is unique), only until
 * its deadline, and its payload (tenant, limits, method, path, body) is
 * neither read nor changed without the key.  The two keys (MAC, cipher)
 * are HMAC-SHA256 (cluster key, a label of each), never the file's bytes.
 * A receiver also refuses a nonce it has seen (rt_nonce_seen) until its
 * deadline: a frame replayed is refused.
 */
#ifndef RT_CLUSTER_SEAL_H
#define RT_CLUSTER_SEAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime.h"

#define RT_SEAL_KEY_LEN 32
#define RT_SEAL_NONCE_LEN 16
/* What a frame adds to its payload.  */
#define RT_SEAL_OVERHEAD (4 + 8 + RT_SEAL_NONCE_LEN + 16 + 32)
/* The farthest deadline taken: the nonce cache holds each that long at
   most (above SRV_NATS_MAX_DEADLINE_MS and clocks a little apart).  */
#define RT_SEAL_MAX_AHEAD_MS 300000

struct rt_seal_key
{
  unsigned char mac[32], enc[32];
};

/* The key of @path: exactly RT_SEAL_KEY_LEN bytes, a regular file no one
   but its owner may read or write (mode 0600 or 0400).  @err: "usage".  */
int rt_seal_key_load (const char *path, struct rt_seal_key *k, rt_error **err);
/* The two keys of the cluster key @raw.  */
void rt_seal_key_derive (const unsigned char raw[RT_SEAL_KEY_LEN], struct rt_seal_key *k);

/* @len bytes of @data sealed for @subject until @deadline_ms (epoch), a
   new nonce each call: *out (free it), *out_len.  */
int rt_seal (const struct rt_seal_key *k, const char *subject, int64_t deadline_ms, const void *data, size_t len,
             unsigned char **out, size_t *out_len, rt_error **err);
/* The payload of @frame if it is one sealed for @subject with @k and its
   deadline is neither past at @now_ms nor more than RT_SEAL_MAX_AHEAD_MS
   ahead: *out (free it; one spare NUL past *out_len), the frame's nonce
   and deadline.  @err: "unauthorized" with what was wrong.  */
int rt_unseal (const struct rt_seal_key *k, const char *subject, int64_t now_ms, const void *frame, size_t len,
               unsigned char **out, size_t *out_len, unsigned char nonce[RT_SEAL_NONCE_LEN], int64_t *deadline,
               rt_error **err);

/* A value kept at rest (a secret's in the catalog) sealed for @label
   with no deadline (0): it never passes for a message, nor one for it.
   rt_unseal_value's @err: "unauthorized".  */
int rt_seal_value (const struct rt_seal_key *k, const char *label, const void *data, size_t len, unsigned char **out,
                   size_t *out_len, rt_error **err);
int rt_unseal_value (const struct rt_seal_key *k, const char *label, const void *frame, size_t len,
                     unsigned char **out, size_t *out_len, rt_error **err);

/* The nonces seen, each kept until its deadline, in a bounded table.  */
#define RT_NONCE_SLOTS (1u << 18) /* 6 MiB: 2,500 messages a second kept 100 s */
#define RT_NONCE_PROBES 64
struct rt_nonce_cache
{
  pthread_mutex_t mu;
  struct
  {
    unsigned char nonce[RT_SEAL_NONCE_LEN];
    int64_t deadline; /* 0: never used */
  } * slots;
};
int rt_nonce_cache_init (struct rt_nonce_cache *c, rt_error **err);
void rt_nonce_cache_fini (struct rt_nonce_cache *c);
/* Whether @nonce was seen before its deadline (a replay: 1); else it is
   kept until @deadline (0).  -1 when the table has no room near it (so
   many frames in flight: refused rather than forgotten).  */
int rt_nonce_seen (struct rt_nonce_cache *c, const unsigned char nonce[RT_SEAL_NONCE_LEN], int64_t deadline,
                   int64_t now_ms);

#endif
