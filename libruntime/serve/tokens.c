/* tokens.c - API tokens (tokens.h): the store, the public verbs
   (rt_token_create, _list_json, _remove) and the server's check.  */
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "billing/ledger.h"
#include "records/handle.h"
#include "records/list.h"
#include "common/jsonstore.h"
#include "serve/tokens.h"

#define TOKEN_CHARS 40 /* after "rt_": 5 bits each, 200 bits */

struct entry
{
  struct rt_token_info info;
  unsigned char hash[32];
};

struct rt_tokens
{
  char *path;
  struct stat st; /* of the file loaded; st_ino 0: none yet */
  struct entry *v;
  size_t n;
};

static char *
store_path (rt_context *ctx)
{
  return rt_strdup_printf ("%s/tokens.json", ctx->data_dir);
}

/* The store at @path into *out ({"tokens": []} when there is none), and
   what it was when read into *st (zeroed when none).  Refused when others
   could read it, as the secrets store.  */
static int
load (const char *path, json_object **out, struct stat *st, rt_error **err)
{
  json_object *arr;
  int ret = rt_json_store_load (path, "token store", "runtime token rm and create every token again", out, st, err);

  if (ret < 0)
    return ret;
  if (st->st_ino == 0)
    json_object_object_add (*out, "tokens", json_object_new_array ());
  if (!json_object_object_get_ex (*out, "tokens", &arr) || !json_object_is_type (arr, json_type_array))
    {
      json_object_put (*out);
      *out = NULL;
      return rt_error_set (err, EINVAL, "internal", "'%s' is not a token store", path);
    }
  return 0;
}

static json_object *
tokens_of (json_object *store)
{
  return json_object_object_get (store, "tokens");
}

/* The entry named @name in @arr, its index in *at; NULL when none.  */
static json_object *
find (json_object *arr, const char *name, size_t *at)
{
  if (arr == NULL || !json_object_is_type (arr, json_type_array))
    return NULL;
  for (size_t i = 0; i < json_object_array_length (arr); i++)
    {
      json_object *o = json_object_array_get_idx (arr, i);
      const char *n = rt_json_str (o, "name");
      if (n && strcmp (n, name) == 0)
        {
          if (at)
            *at = i;
          return o;
        }
    }
  return NULL;
}

static int
save (rt_context *ctx, json_object *store, rt_error **err)
{
  cleanup_free char *path = store_path (ctx);

  return path ? rt_json_store_save (path, store, err) : rt_error_oom (err);
}

/* Holds <data>/tokens.lock: a change reads, edits and writes under it.  */
static int
lock (rt_context *ctx, int *fd, rt_error **err)
{
  return rt_json_store_lock (ctx->data_dir, "tokens.lock", 0755, fd, err);
}

void
rt_token_hash (const char *s, unsigned char out[32])
{
  unsigned len = 32;
  EVP_Digest (s, strlen (s), out, &len, EVP_sha256 (), NULL);
}

static bool
unhex (const char *s, unsigned char *out, size_t n)
{
  if (s == NULL || strlen (s) != 2 * n || strspn (s, "0123456789abcdef") != 2 * n)
    return false;
  for (size_t i = 0; i < n; i++)
    sscanf (s + 2 * i, "%2hhx", &out[i]);
  return true;
}

int
rt_token_random (char *out, size_t nchars)
{
  static const char b32[] = "abcdefghijklmnopqrstuvwxyz234567";
  unsigned char rnd[64];
  size_t nbytes = (nchars * 5 + 7) / 8;

  if (nbytes > sizeof rnd || getrandom (rnd, nbytes, 0) != (ssize_t) nbytes)
    return -1;
  for (size_t i = 0; i < nchars; i++)
    {
      size_t bit = i * 5;
      unsigned v = (rnd[bit / 8] << 8 | (bit / 8 + 1 < nbytes ? rnd[bit / 8 + 1] : 0)) >> (11 - bit % 8);
      out[i] = b32[v & 31];
    }
  out[nchars] = '\0';
  explicit_bzero (rnd, sizeof rnd);
  return 0;
}

/* "rt_" and TOKEN_CHARS base32 characters from getrandom.  */
static int
new_token (char out[3 + TOKEN_CHARS + 1], rt_error **err)
{
  memcpy (out, "rt_", 3);
  if (rt_token_random (out + 3, TOKEN_CHARS) < 0)
    return rt_error_set (err, errno, "internal", "getrandom: %s", strerror (errno));
  return 0;
}

static json_object *
new_entry (const char *name, const rt_token_limits *l, const char *token)
{
  json_object *o = json_object_new_object ();
  unsigned char h[32];
  char h_hex[65], prefix[RT_TOKEN_PREFIX_LEN + 1], now[32];

  rt_token_hash (token, h);
  rt_hex (h, sizeof h, h_hex);
  snprintf (prefix, sizeof prefix, "%s", token);
  rt_format_time (rt_epoch_ms (), now);
  json_object_object_add (o, "name", json_object_new_string (name));
  json_object_object_add (o, "sha256", json_object_new_string (h_hex));
  json_object_object_add (o, "prefix", json_object_new_string (prefix));
  json_object_object_add (o, "createdAt", json_object_new_string (now));
  json_object_object_add (o, "maxSandboxes", json_object_new_int64 (l->max_sandboxes));
  json_object_object_add (o, "maxVcpu", json_object_new_int64 (l->max_vcpu));
  json_object_object_add (o, "maxCostMicros", json_object_new_int64 (l->max_cost_micros));
  json_object_object_add (o, "rate", json_object_new_int64 (l->rate));
  json_object_object_add (o, "maxSnapshots", json_object_new_int64 (l->max_snapshots));
  return o;
}

int
rt_token_create (rt_context *ctx, const char *name, const rt_token_limits *limits, char **token, rt_error **err)
{
  static const rt_token_limits none = { 0 };
  cleanup_free char *path = store_path (ctx);
  cleanup_json json_object *store = NULL;
  cleanup_close int lockfd = -1;
  char tok[3 + TOKEN_CHARS + 1];
  struct stat st;
  int ret = rt_tenant_refuse (ctx, "managing tokens", err);

  if (ret < 0)
    return ret;
  if (!rt_tenant_name_ok (name))
    return rt_error_set (err, EINVAL, "invalid_request",
                         "a token's name is 1 to 32 of a-z, 0-9, '_' and '-', starting with a letter or digit");
  if (limits == NULL)
    limits = &none;
  if (limits->max_cost_micros < 0)
    return rt_error_set (err, EINVAL, "invalid_request", "a cost limit is not negative");
  if (path == NULL)
    return rt_error_oom (err);
  ret = lock (ctx, &lockfd, err);
  if (ret == 0)
    ret = load (path, &store, &st, err);
  if (ret < 0)
    return ret;
  if (find (tokens_of (store), name, NULL))
    {
      rt_error_set (err, EEXIST, "name_taken", "a token is already named '%s'", name);
      return rt_error_hint (err, "runtime token rm %s first, or pick another name", name);
    }
  /* A name is its tenant: a removed token's snapshots, images, records and
     usage stay under it, and must not pass to whoever gets it next.  */
  if (find (json_object_object_get (store, "removed"), name, NULL))
    {
      rt_error_set (err, EEXIST, "name_taken", "a removed token was named '%s'", name);
      return rt_error_hint (err, "what that tenant made is still under its name: pick another name");
    }
  ret = new_token (tok, err);
  if (ret == 0)
    {
      json_object_array_add (tokens_of (store), new_entry (name, limits, tok));
      ret = save (ctx, store, err);
    }
  if (ret == 0 && (*token = strdup (tok)) == NULL)
    ret = rt_error_oom (err);
  explicit_bzero (tok, sizeof tok);
  return ret;
}

int
rt_token_list_json (rt_context *ctx, char **json, rt_error **err)
{
  cleanup_free char *path = store_path (ctx);
  cleanup_json json_object *store = NULL, *out = json_object_new_array ();
  static const char *const shown[]
      = { "name", "createdAt", "maxSandboxes", "maxVcpu", "maxCostMicros", "rate", "maxSnapshots", "prefix", NULL };
  struct stat st;
  int ret = rt_tenant_refuse (ctx, "managing tokens", err);

  if (ret < 0)
    return ret;
  if (path == NULL || out == NULL)
    return rt_error_oom (err);
  ret = load (path, &store, &st, err);
  if (ret < 0)
    return ret;
  for (size_t i = 0; i < json_object_array_length (tokens_of (store)); i++)
    {
      json_object *e = json_object_array_get_idx (tokens_of (store), i), *o = json_object_new_object (), *v;
      /* Never the hash: what is shown is copied key by key.  */
      for (const char *const *k = shown; *k; k++)
        json_object_object_add (o, *k, json_object_object_get_ex (e, *k, &v) ? json_object_get (v) : NULL);
      json_object_array_add (out, o);
    }
  *json = strdup (json_object_to_json_string_ext (out, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}

/* Stops every live sandbox (paused ones too) of @tenant, as
   rt_sandbox_stop: each writes its record.  */
static int
stop_tenant (rt_context *ctx, const char *tenant, rt_error **err)
{
  cleanup_json json_object *live = NULL;
  int ret = rt_store_list_unscoped (ctx, false, &live, err);

  for (size_t i = 0; ret == 0 && i < json_object_array_length (live); i++)
    {
      json_object *o = json_object_array_get_idx (live, i);
      const char *t = rt_json_str (o, "tenant");
      cleanup_sandbox rt_sandbox *sb = NULL;
      if (t == NULL || strcmp (t, tenant) != 0 || rt_json_str (o, "id") == NULL)
        continue;
      sb = rt_sandbox_handle_new (ctx, rt_json_str (o, "id"));
      ret = sb ? rt_sandbox_stop (sb, err) : rt_error_oom (err);
    }
  return ret;
}

int
rt_token_remove (rt_context *ctx, const char *name, rt_error **err)
{
  cleanup_free char *path = store_path (ctx);
  cleanup_free char *secrets = NULL;
  cleanup_json json_object *store = NULL;
  cleanup_close int lockfd = -1;
  struct stat st;
  size_t at = 0;
  int ret = rt_tenant_refuse (ctx, "managing tokens", err);

  if (ret < 0)
    return ret;
  if (path == NULL)
    return rt_error_oom (err);
  ret = load (path, &store, &st, err);
  if (ret < 0)
    return ret;
  if (name == NULL || !rt_tenant_name_ok (name) || find (tokens_of (store), name, NULL) == NULL)
    {
      rt_error_set (err, ENOENT, "not_found", "no token '%s'", name ? name : "");
      return rt_error_hint (err, "runtime token ls lists them");
    }
  json_object_put (steal_pointer (&store));
  /* Its sandboxes first, so that a failure leaves the token to retry
     with; then again once it is gone, for one its holder made meanwhile.  */
  ret = stop_tenant (ctx, name, err);
  if (ret == 0)
    ret = lock (ctx, &lockfd, err);
  if (ret == 0)
    ret = load (path, &store, &st, err);
  if (ret < 0)
    return ret;
  if (find (tokens_of (store), name, &at))
    {
      json_object *removed = json_object_object_get (store, "removed"), *e = json_object_new_object ();

      if (removed == NULL || !json_object_is_type (removed, json_type_array))
        json_object_object_add (store, "removed", removed = json_object_new_array ());
      json_object_object_add (e, "name", json_object_new_string (name));
      json_object_array_add (removed, e);
      json_object_array_del_idx (tokens_of (store), at, 1);
      ret = save (ctx, store, err);
      if (ret < 0)
        return ret;
    }
  close (steal_fd (&lockfd));
  /* Its secrets' values go now: nobody can use them any more.  */
  secrets = rt_strdup_printf ("%s/tenants/%s/secrets.json", ctx->data_dir, name);
  if (secrets)
    unlink (secrets);
  return stop_tenant (ctx, name, err);
}

void
rt_tokens_free (struct rt_tokens *t)
{
  if (t == NULL)
    return;
  if (t->v)
    explicit_bzero (t->v, t->n * sizeof *t->v);
  free (t->v);
  free (t->path);
  free (t);
}

/* The entries of @store into @t (replacing what it held); malformed ones
   are skipped: they match no token.  */
static int
take_entries (struct rt_tokens *t, json_object *store)
{
  json_object *arr = tokens_of (store);
  size_t n = json_object_array_length (arr), k = 0;
  struct entry *v = calloc (n ? n : 1, sizeof *v);

  if (v == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < n; i++)
    {
      json_object *o = json_object_array_get_idx (arr, i);
      const char *name = rt_json_str (o, "name");
      if (!rt_tenant_name_ok (name) || !unhex (rt_json_str (o, "sha256"), v[k].hash, sizeof v[k].hash))
        continue;
      snprintf (v[k].info.name, sizeof v[k].info.name, "%s", name);
      v[k].info.max_sandboxes = (unsigned) rt_json_i64 (o, "maxSandboxes");
      v[k].info.max_vcpu = (unsigned) rt_json_i64 (o, "maxVcpu");
      v[k].info.max_cost_micros = rt_json_i64 (o, "maxCostMicros");
      v[k].info.rate = (unsigned) rt_json_i64 (o, "rate");
      v[k].info.max_snapshots = (unsigned) rt_json_i64 (o, "maxSnapshots");
      k++;
    }
  free (t->v);
  t->v = v;
  t->n = k;
  return 0;
}

/* Reads the file again when it is another (inode), or changed (size,
   mtime, ctime: a chmod too); one that cannot be read holds no valid
   token.  */
static void
reload (struct rt_tokens *t)
{
  cleanup_json json_object *store = NULL;
  struct stat now;

  if (stat (t->path, &now) < 0)
    memset (&now, 0, sizeof now);
  if (now.st_ino == t->st.st_ino && now.st_size == t->st.st_size && now.st_mtim.tv_sec == t->st.st_mtim.tv_sec
      && now.st_mtim.tv_nsec == t->st.st_mtim.tv_nsec && now.st_dev == t->st.st_dev
      && now.st_ctim.tv_sec == t->st.st_ctim.tv_sec && now.st_ctim.tv_nsec == t->st.st_ctim.tv_nsec)
    return;
  if (load (t->path, &store, &t->st, NULL) < 0 || take_entries (t, store) < 0)
    t->n = 0;
}

int
rt_tokens_open (rt_context *ctx, struct rt_tokens **out, rt_error **err)
{
  struct rt_tokens *t = calloc (1, sizeof *t);
  cleanup_json json_object *store = NULL;
  int ret;

  if (t == NULL || (t->path = store_path (ctx)) == NULL)
    {
      rt_tokens_free (t);
      return rt_error_oom (err);
    }
  ret = load (t->path, &store, &t->st, err);
  if (ret == 0 && take_entries (t, store) < 0)
    ret = rt_error_oom (err);
  if (ret < 0)
    {
      rt_tokens_free (t);
      return ret;
    }
  *out = t;
  return 0;
}

int
rt_tokens_check (struct rt_tokens *t, const char *bearer, struct rt_token_info *info)
{
  unsigned char h[32];
  size_t found = SIZE_MAX;

  if (bearer == NULL || strlen (bearer) != 3 + TOKEN_CHARS)
    return 0;
  reload (t);
  rt_token_hash (bearer, h);
  /* Every entry compared, each in constant time: how long a check takes
     says nothing of which hash came close.  */
  for (size_t i = 0; i < t->n; i++)
    if (CRYPTO_memcmp (h, t->v[i].hash, sizeof h) == 0)
      found = i;
  if (found == SIZE_MAX)
    return 0;
  *info = t->v[found].info;
  return 1;
}

const struct rt_token_info *
rt_tokens_at (const struct rt_tokens *t, size_t i)
{
  return i < t->n ? &t->v[i].info : NULL;
}

int
rt_tokens_named (struct rt_tokens *t, const char *name, struct rt_token_info *info)
{
  if (name == NULL || *name == '\0')
    return 0;
  reload (t);
  for (size_t i = 0; i < t->n; i++)
    if (strcmp (t->v[i].info.name, name) == 0)
      {
        *info = t->v[i].info;
        return 1;
      }
  return 0;
}

int
rt_tenant_usage_get (rt_context *ctx, const char *tenant, struct rt_tenant_usage *u, rt_error **err)
{
  cleanup_json json_object *live = NULL, *rows = NULL;
  int ret = rt_store_list_unscoped (ctx, false, &live, err);

  if (ret == 0)
    ret = rt_ledger_fold (ctx, &rows, err);
  if (ret < 0)
    return ret;
  memset (u, 0, sizeof *u);
  for (size_t i = 0; i < json_object_array_length (live); i++)
    {
      json_object *o = json_object_array_get_idx (live, i);
      const char *t = rt_json_str (o, "tenant");
      if (t == NULL || strcmp (t, tenant) != 0)
        continue;
      u->sandboxes++;
      u->vcpu += (unsigned) rt_json_i64 (o, "vcpu");
    }
  rt_ledger_keep_tenant (rows, tenant);
  for (size_t i = 0; i < json_object_array_length (rows); i++)
    u->charged_micros += rt_json_i64 (json_object_array_get_idx (rows, i), "micros");
  return 0;
}
