/* catalog.c - the replicated catalog (see catalog.h), a JetStream
   key-value bucket of nats.c.  */
#include <errno.h>
#include <nats/nats.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/catalog.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "core/context.h"

#define KEY_MAX 200

struct rt_catalog
{
  kvStore *kv;
};

static int
kv_error (rt_error **err, natsStatus s, const char *what)
{
  const char *detail = nats_GetLastError (NULL);
  return rt_error_set (err, EIO, "cluster_unavailable", "%s: %s", what,
                       detail && *detail ? detail : natsStatus_GetText (s));
}

bool
rt_catalog_key_valid (const char *key)
{
  size_t len = key ? strlen (key) : 0;

  if (len == 0 || len > KEY_MAX || key[0] == '.' || key[len - 1] == '.')
    return false;
  for (size_t i = 0; i < len; i++)
    {
      char ch = key[i];
      bool word = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_'
                  || ch == '-';
      if (!word && !(ch == '.' && key[i + 1] != '.'))
        return false;
    }
  return true;
}

static int
check_key (const char *key, rt_error **err)
{
  if (!rt_catalog_key_valid (key))
    return rt_error_set (err, EINVAL, "usage", "'%.64s' is not a catalog key", key ? key : "");
  return 0;
}

int
rt_catalog_open (rt_bus *bus, unsigned replicas, rt_catalog **out, rt_error **err)
{
  jsCtx *js = rt_bus_jetstream (bus);
  rt_catalog *c;
  kvConfig cfg;
  natsStatus s;

  if (replicas != 1 && replicas != 3 && replicas != 5)
    return rt_error_set (err, EINVAL, "usage", "the catalog's replicas are 1, 3 or 5, not %u", replicas);
  if ((c = calloc (1, sizeof *c)) == NULL)
    return rt_error_oom (err);
  s = js_KeyValue (&c->kv, js, RT_CATALOG_BUCKET);
  if (s == NATS_NOT_FOUND)
    {
      kvConfig_Init (&cfg);
      cfg.Bucket = RT_CATALOG_BUCKET;
      cfg.Replicas = (int) replicas;
      cfg.History = 1;
      s = js_CreateKeyValue (&c->kv, js, &cfg);
      /* Another replica made it meanwhile: use theirs.  */
      if (s != NATS_OK)
        s = js_KeyValue (&c->kv, js, RT_CATALOG_BUCKET);
    }
  if (s != NATS_OK)
    {
      free (c);
      return kv_error (err, s, "cannot open the catalog");
    }
  *out = c;
  return 0;
}

void
rt_catalog_free (rt_catalog *c)
{
  if (c == NULL)
    return;
  kvStore_Destroy (c->kv);
  free (c);
}

/* A refused compare-and-set: the key's revision was not the one asked
   for (or, for a create, it exists).  */
static bool
is_conflict (natsStatus s)
{
  /* JetStream says so in text only (its code 10071 is not passed on by
     the key-value calls).  */
  const char *detail = nats_GetLastError (NULL);
  return s == NATS_ERR && detail && strstr (detail, "wrong last sequence") != NULL;
}

int
rt_catalog_create (rt_catalog *c, const char *key, const char *value, uint64_t *rev, rt_error **err)
{
  uint64_t r = 0;
  natsStatus s;

  if (check_key (key, err) < 0)
    return -EINVAL;
  s = kvStore_Create (&r, c->kv, key, value, (int) strlen (value));
  if (s != NATS_OK && is_conflict (s))
    return rt_error_set (err, EEXIST, "conflict", "'%s' is already in the catalog", key);
  if (s != NATS_OK)
    return kv_error (err, s, "cannot write the catalog");
  if (rev)
    *rev = r;
  return 0;
}

int
rt_catalog_get (rt_catalog *c, const char *key, char **value, uint64_t *rev, rt_error **err)
{
  kvEntry *e = NULL;
  natsStatus s;
  int len;

  if (check_key (key, err) < 0)
    return -EINVAL;
  s = kvStore_Get (&e, c->kv, key);
  if (s == NATS_NOT_FOUND)
    return rt_error_set (err, ENOENT, "not_found", "'%s' is not in the catalog", key);
  if (s != NATS_OK)
    return kv_error (err, s, "cannot read the catalog");
  len = kvEntry_ValueLen (e);
  *value = malloc (len + 1);
  if (*value == NULL)
    {
      kvEntry_Destroy (e);
      return rt_error_oom (err);
    }
  memcpy (*value, kvEntry_Value (e), len);
  (*value)[len] = '\0';
  if (rev)
    *rev = kvEntry_Revision (e);
  kvEntry_Destroy (e);
  return 0;
}

int
rt_catalog_update (rt_catalog *c, const char *key, const char *value, uint64_t rev, uint64_t *new_rev,
                   rt_error **err)
{
  uint64_t r = 0;
  natsStatus s;

  if (check_key (key, err) < 0)
    return -EINVAL;
  s = kvStore_Update (&r, c->kv, key, value, (int) strlen (value), rev);
  if (s != NATS_OK && is_conflict (s))
    return rt_error_set (err, EAGAIN, "conflict", "'%s' changed since revision %llu", key, (unsigned long long) rev);
  if (s != NATS_OK)
    return kv_error (err, s, "cannot write the catalog");
  if (new_rev)
    *new_rev = r;
  return 0;
}

int
rt_catalog_delete (rt_catalog *c, const char *key, rt_error **err)
{
  natsStatus s;

  if (check_key (key, err) < 0)
    return -EINVAL;
  s = kvStore_Purge (c->kv, key, NULL);
  if (s != NATS_OK && s != NATS_NOT_FOUND)
    return kv_error (err, s, "cannot write the catalog");
  return 0;
}

int
rt_catalog_keys (rt_catalog *c, const char *prefix, char ***keys, size_t *n, rt_error **err)
{
  kvKeysList list = { 0 };
  size_t plen = strlen (prefix), k = 0;
  natsStatus s = kvStore_Keys (&list, c->kv, NULL);

  *keys = NULL;
  *n = 0;
  if (s == NATS_NOT_FOUND)
    return 0;
  if (s != NATS_OK)
    return kv_error (err, s, "cannot list the catalog");
  *keys = calloc (list.Count + 1, sizeof **keys);
  if (*keys == NULL)
    {
      kvKeysList_Destroy (&list);
      return rt_error_oom (err);
    }
  for (int i = 0; i < list.Count; i++)
    if (strncmp (list.Keys[i], prefix, plen) == 0)
      (*keys)[k++] = strdup (list.Keys[i]);
  *n = k;
  kvKeysList_Destroy (&list);
  return 0;
}
