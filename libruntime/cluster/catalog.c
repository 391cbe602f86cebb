/* catalog.c - the replicated catalog (see catalog.h), a JetStream
   key-value bucket of nats.c.  */
#include <errno.h>
#include <nats/nats.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/catalog.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "core/context.h"

#define KEY_MAX 200
/* The bucket's stream, and the subject of a key in it (nats.c's own
   scheme, no JetStream domain).  */
#define STREAM "KV_" RT_CATALOG_BUCKET
#define SUBJECT_PREFIX "$KV." RT_CATALOG_BUCKET "."

struct rt_catalog
{
  kvStore *kv;
  jsCtx *js;
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

/* An existing bucket is taken only with the replicas asked: fewer
   copies than the operator wanted would lose the catalog with fewer
   servers than they planned for.  */
static int
check_replicas (kvStore *kv, unsigned replicas, rt_error **err)
{
  kvStatus *st = NULL;
  natsStatus s = kvStore_Status (&st, kv);
  int have;

  if (s != NATS_OK)
    return kv_error (err, s, "cannot read the catalog's configuration");
  have = (int) kvStatus_Replicas (st);
  kvStatus_Destroy (st);
  if (have != (int) replicas)
    {
      rt_error_set (err, EINVAL, "usage", "the catalog (bucket '%s') has %d replica%s, not the %u asked",
                    RT_CATALOG_BUCKET, have, have == 1 ? "" : "s", replicas);
      return rt_error_hint (err, "ask for %d, or remove the stream '%s' to make it again (its entries are lost)",
                            have, STREAM);
    }
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
  c->js = js;
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
  if (check_replicas (c->kv, replicas, err) < 0)
    {
      rt_catalog_free (c);
      return -EINVAL;
    }
  *out = c;
  return 0;
}

/* A JetStream that cannot answer now (its stream's leader being elected
   after a server was lost, seconds) rather than one that said no: asked
   again, for up to PATIENCE_MS in all, so that one server lost of three
   costs a wait, not an error.  */
#define PATIENCE_MS 10000

static bool
transient (natsStatus s)
{
  return s == NATS_TIMEOUT || s == NATS_NO_RESPONDERS || s == NATS_CONNECTION_DISCONNECTED
         || s == NATS_CONNECTION_CLOSED;
}

/* Whether to ask again after @s, sleeping a little first; *until set on
   the first call.  */
static bool
again (natsStatus s, uint64_t *until)
{
  if (!transient (s))
    return false;
  if (*until == 0)
    *until = rt_now_ms () + PATIENCE_MS;
  if (rt_now_ms () >= *until)
    return false;
  usleep (250 * 1000);
  return true;
}

void
rt_catalog_free (rt_catalog *c)
{
  if (c == NULL)
    return;
  kvStore_Destroy (c->kv);
  free (c);
}

/* @value under @key if the key's last revision is @last (0: it has
   none), as kvStore_Update does, but through js_Publish, which hands back
   JetStream's error code: kvStore_Update and kvStore_Create keep it to
   themselves.  Return: 0, 1 when JetStream refused (the revision was not
   @last: error 10071, the only sign of a lost compare-and-set), or <0
   with @err set.  */
static int
put_if (rt_catalog *c, const char *key, const char *value, uint64_t last, uint64_t *rev, rt_error **err)
{
  char subject[sizeof SUBJECT_PREFIX + KEY_MAX];
  jsPubAck *pa = NULL;
  jsErrCode code = 0;
  jsPubOptions po;
  natsStatus s;

  snprintf (subject, sizeof subject, SUBJECT_PREFIX "%s", key);
  jsPubOptions_Init (&po);
  if (last == 0)
    po.ExpectNoMessage = true;
  else
    po.ExpectLastSubjectSeq = last;
  for (uint64_t until = 0;;)
    {
      s = js_Publish (&pa, c->js, subject, value, (int) strlen (value), &po, &code);
      if (s == NATS_OK || code == JSStreamWrongLastSequenceErr || !again (s, &until))
        break;
      jsPubAck_Destroy (pa);
      pa = NULL;
    }
  if (s == NATS_OK && rev)
    *rev = pa->Sequence;
  jsPubAck_Destroy (pa);
  if (s == NATS_OK)
    return 0;
  if (code == JSStreamWrongLastSequenceErr)
    return 1;
  return kv_error (err, s, "cannot write the catalog");
}

/* The revision of @key's delete or purge marker in *rev (0 when its last
   message is a value, or it has none).  */
static int
tombstone (rt_catalog *c, const char *key, uint64_t *rev, rt_error **err)
{
  char subject[sizeof SUBJECT_PREFIX + KEY_MAX];
  const char *op = NULL;
  jsErrCode code = 0;
  natsMsg *m = NULL;
  natsStatus s;

  *rev = 0;
  snprintf (subject, sizeof subject, SUBJECT_PREFIX "%s", key);
  for (uint64_t until = 0;;)
    {
      s = js_GetLastMsg (&m, c->js, STREAM, subject, NULL, &code);
      if (s == NATS_OK || code == JSNoMessageFoundErr || !again (s, &until))
        break;
    }
  if (s == NATS_NOT_FOUND || code == JSNoMessageFoundErr)
    return 0;
  if (s != NATS_OK)
    return kv_error (err, s, "cannot read the catalog");
  if (natsMsgHeader_Get (m, "KV-Operation", &op) == NATS_OK && op
      && (strcmp (op, "DEL") == 0 || strcmp (op, "PURGE") == 0))
    *rev = natsMsg_GetSequence (m);
  natsMsg_Destroy (m);
  return 0;
}

int
rt_catalog_create (rt_catalog *c, const char *key, const char *value, uint64_t *rev, rt_error **err)
{
  uint64_t r = 0, dead = 0;
  int ret;

  if (check_key (key, err) < 0)
    return -EINVAL;
  ret = put_if (c, key, value, 0, &r, err);
  /* A deleted key keeps its marker: absent all the same, so written from
     the marker's revision (still compare-and-set: a create racing ours
     moves it).  */
  if (ret == 1 && tombstone (c, key, &dead, err) < 0)
    return -EIO;
  if (ret == 1 && dead > 0)
    ret = put_if (c, key, value, dead, &r, err);
  if (ret == 1)
    return rt_error_set (err, EEXIST, "conflict", "'%s' is already in the catalog", key);
  if (ret < 0)
    return ret;
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
  for (uint64_t until = 0; (s = kvStore_Get (&e, c->kv, key)) != NATS_OK && again (s, &until);)
    ;
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
  int ret;

  if (check_key (key, err) < 0)
    return -EINVAL;
  if (rev == 0)
    return rt_error_set (err, EINVAL, "usage", "an update of '%s' needs the revision read", key);
  ret = put_if (c, key, value, rev, &r, err);
  if (ret == 1)
    return rt_error_set (err, EAGAIN, "conflict", "'%s' changed since revision %llu", key, (unsigned long long) rev);
  if (ret < 0)
    return ret;
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
  for (uint64_t until = 0; (s = kvStore_Purge (c->kv, key, NULL)) != NATS_OK && again (s, &until);)
    ;
  if (s != NATS_OK && s != NATS_NOT_FOUND)
    return kv_error (err, s, "cannot write the catalog");
  return 0;
}

int
rt_catalog_keys (rt_catalog *c, const char *prefix, char ***keys, size_t *n, rt_error **err)
{
  kvKeysList list = { 0 };
  size_t plen = strlen (prefix), k = 0;
  natsStatus s;

  for (uint64_t until = 0; (s = kvStore_Keys (&list, c->kv, NULL)) != NATS_OK && again (s, &until);)
    ;

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
    if (strncmp (list.Keys[i], prefix, plen) == 0 && ((*keys)[k++] = strdup (list.Keys[i])) == NULL)
      {
        for (size_t j = 0; j + 1 < k; j++)
          free ((*keys)[j]);
        free (*keys);
        *keys = NULL;
        kvKeysList_Destroy (&list);
        return rt_error_oom (err);
      }
  *n = k;
  kvKeysList_Destroy (&list);
  return 0;
}
