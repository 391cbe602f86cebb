/* catalog.h - what every serve replica must agree on when many hosts
 * serve one API: which host holds each sandbox, its tenant,
 * the idempotency keys, in a JetStream key-value bucket replicated over
 * the NATS servers.  Changes are compare-and-set: a key is created only
 * if absent (two replicas creating the same sandbox or answering the same
 * Idempotency-Key: one wins, the other gets "conflict"), and updated only
 * from the revision read (a stale update gets "conflict").
 *
 * A read may come from a replica a moment behind the last write (the
 * bucket's direct gets): every decision is a compare-and-set, never a
 * read alone.
 *
 * Keys are dot-separated words of [A-Za-z0-9_-]: "sb.<id>", "idem.<tenant>.<sha256>", "node.<name>".
 */
#ifndef RT_CLUSTER_CATALOG_H
#define RT_CLUSTER_CATALOG_H

#include <stddef.h>
#include <stdint.h>

#include "cluster/bus.h"

#define RT_CATALOG_BUCKET "runtime-catalog"

typedef struct rt_catalog rt_catalog;

/* Opens (or makes, with @replicas copies: 1, 3 or 5) the bucket.  An
   existing bucket with another number of replicas is refused ("usage",
   with a hint), never used as it is: the operator planned for that many
   servers lost.  A conflict is known by JetStream's error code (10071,
   wrong last sequence), not its text.  */
int rt_catalog_open (rt_bus *bus, unsigned replicas, rt_catalog **out, rt_error **err);
void rt_catalog_free (rt_catalog *c);

/* Whether @key is a key of the catalog's scheme.  */
bool rt_catalog_key_valid (const char *key);

/* @value under @key if it has none.  *rev (or NULL) gets its revision.
   @err: "conflict" (the key exists), "usage" (a bad key),
   "cluster_unavailable".  */
int rt_catalog_create (rt_catalog *c, const char *key, const char *value, uint64_t *rev, rt_error **err);
/* *value (free it) and *rev of @key.  @err: "not_found".  */
int rt_catalog_get (rt_catalog *c, const char *key, char **value, uint64_t *rev, rt_error **err);
/* @value under @key if its revision is still @rev (a deleted or missing
   key has none: "conflict").  @err: "conflict", "usage" (@rev 0).  */
int rt_catalog_update (rt_catalog *c, const char *key, const char *value, uint64_t rev, uint64_t *new_rev,
                       rt_error **err);
/* Removes @key (absent is fine).  */
int rt_catalog_delete (rt_catalog *c, const char *key, rt_error **err);
/* Every key starting with @prefix ("" for all): *keys (free each and the
   array), *n of them.  */
int rt_catalog_keys (rt_catalog *c, const char *prefix, char ***keys, size_t *n, rt_error **err);

#endif
