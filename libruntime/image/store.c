/* store.c - the image store: the index and the manifests.

   <data>/images/
     layers/<sha256>.tar.zst  a layer: pax tar, zstd (.tar.gz where
                              libarchive lacks zstd), named by the SHA-256
                              of the compressed file (image/tar.c)
     manifests/<id>.json      {id, name, version, tags, layers, env,
                              workdir, created}; id = SHA-256 of the
                              manifest's plain JSON without "id"
     index.json               {"names": {NAME: {"versions": {"1": ID},
                                                "tags": {"latest": ID}}}}
     .lock                    held while the store changes
     cache/<step key>         a build step's layer digest (build/step.c)
   Files appear by rename only, so a name that exists is complete.  The
   default image is made in image/base.c, boot disks in image/disk.c.

   Nothing of an image is for other users: manifests hold --env values,
   layers and disks setuid files.  The store's directories (and the
   cache's disks/ and base/) are 0700, its files 0600, all the caller's
   (root's).  A store an older version left open is closed whenever it is
   opened (rt_image_store_open).  */
#include <fcntl.h>
#include <fnmatch.h>
#include <json-c/json.h>
#include <openssl/evp.h>
#include <string.h>
#include <sys/stat.h>

#include "image/scope.h"
#include "image/store.h"
#include "image/tar.h"

bool
rt_image_is_sha256 (const char *s)
{
  return s && strlen (s) == 64 && strspn (s, "0123456789abcdef") == 64;
}

bool
rt_image_name_valid (const char *name)
{
  size_t len = strlen (name);

  return len > 0 && len <= 63 && strspn (name, "abcdefghijklmnopqrstuvwxyz0123456789._-") == len;
}

static int
sha256_hex (const void *data, size_t len, char out[65], rt_error **err)
{
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;

  if (EVP_Digest (data, len, md, &mdlen, EVP_sha256 (), NULL) != 1 || mdlen != 32)
    return rt_error_set (err, EIO, "internal", "cannot compute SHA-256");
  for (unsigned int i = 0; i < mdlen; i++)
    sprintf (out + 2 * i, "%02x", md[i]);
  out[64] = '\0';
  return 0;
}

/* Closes the files directly in the directory @fd (@dir) to everyone but
   their owner: an older version (or another tool) may have left them
   open, and a listing and a stat each cost little.  Subdirectories are
   left alone: the store's own are closed when they are opened, and a
   leftover extraction tree (image/extract.c) keeps its modes until it is
   removed.  */
static int
close_files (int fd, const char *dir, rt_error **err)
{
  cleanup_dir DIR *d = rt_opendir_at (fd);
  struct dirent *de;
  struct stat st;

  if (d == NULL)
    return rt_error_set (err, errno, "internal", "cannot list '%s': %s", dir, strerror (errno));
  while ((de = readdir (d)))
    if (fstatat (dirfd (d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG (st.st_mode) && (st.st_mode & 077)
        && fchmodat (dirfd (d), de->d_name, 0600, 0) < 0 && errno != ENOENT)
      return rt_error_set (err, errno, "internal", "cannot make '%s/%s' private: %s", dir, de->d_name,
                           strerror (errno));
  return 0;
}

int
rt_image_private_dir (const char *dir, rt_error **err)
{
  cleanup_free char *parent = strdup (dir);
  cleanup_close int fd = -1;
  char *slash = parent ? strrchr (parent, '/') : NULL;
  struct stat st;
  int ret;

  if (parent == NULL)
    return rt_error_oom (err);
  if (mkdir (dir, 0700) < 0 && errno == ENOENT && slash && slash > parent)
    {
      *slash = '\0';
      ret = rt_mkdir_p (parent, 0755, err);
      if (ret < 0)
        return ret;
      mkdir (dir, 0700);
    }
  fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || fstat (fd, &st) < 0)
    return rt_error_set (err, errno, "internal", "cannot create directory '%s': %s", dir, strerror (errno));
  if (st.st_uid != geteuid ())
    {
      rt_error_set (err, EPERM, "internal", "'%s' belongs to uid %u: images are kept only in the caller's own dirs",
                    dir, (unsigned) st.st_uid);
      return rt_error_hint (err, "remove it, or set RUNTIME_DATA_DIR and RUNTIME_CACHE_DIR to your own directories");
    }
  if ((st.st_mode & 07777) != 0700 && fchmod (fd, 0700) < 0)
    return rt_error_set (err, errno, "internal", "cannot make '%s' private: %s", dir, strerror (errno));
  return close_files (fd, dir, err);
}

int
rt_image_lock_dir (const char *dir, int *lockfd, rt_error **err)
{
  int ret = rt_image_private_dir (dir, err);

  if (ret == 0)
    ret = rt_lock_dir (dir, lockfd, err);
  if (ret == 0 && fchmod (*lockfd, 0600) < 0)
    ret = rt_error_set (err, errno, "internal", "cannot make '%s/.lock' private: %s", dir, strerror (errno));
  return ret;
}

int
rt_image_store_open (rt_context *ctx, rt_error **err)
{
  static const char *const data_dirs[] = { "images", "images/layers", "images/manifests", "images/cache", NULL };
  static const char *const cache_dirs[] = { "disks", "base", NULL };
  int ret = 0;

  for (const char *const *d = data_dirs; ret == 0 && *d; d++)
    {
      cleanup_free char *p = rt_strdup_printf ("%s/%s", ctx->data_dir, *d);
      ret = p ? rt_image_private_dir (p, err) : rt_error_oom (err);
    }
  for (const char *const *d = cache_dirs; ret == 0 && *d; d++)
    {
      cleanup_free char *p = rt_strdup_printf ("%s/%s", ctx->cache_dir, *d);
      ret = p ? rt_image_private_dir (p, err) : rt_error_oom (err);
    }
  return ret;
}

int
rt_image_read_json (const char *path, bool missing_ok, json_object **out, rt_error **err)
{
  cleanup_free char *data = NULL;
  cleanup_error rt_error *e = NULL;
  enum json_tokener_error jerr = json_tokener_success;
  json_object *o;

  if (rt_read_file (path, &data, NULL, &e) < 0)
    {
      if (missing_ok && e->status == ENOENT)
        {
          *out = json_object_new_object ();
          return *out ? 0 : rt_error_oom (err);
        }
      return rt_error_set (err, e->status, "internal", "%s", e->msg);
    }
  o = json_tokener_parse_verbose (data, &jerr);
  if (o == NULL || !json_object_is_type (o, json_type_object))
    {
      json_object_put (o);
      return rt_error_set (err, EINVAL, "internal", "'%s' is not a JSON object: %s", path,
                           jerr != json_tokener_success ? json_tokener_error_desc (jerr) : "wrong type");
    }
  *out = o;
  return 0;
}

int
rt_image_write_json (const char *path, json_object *o, rt_error **err)
{
  const char *s = json_object_to_json_string_ext (o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
  cleanup_free char *text = s ? rt_strdup_printf ("%s\n", s) : NULL;

  if (text == NULL)
    return rt_error_oom (err);
  return rt_write_file_atomic (path, text, strlen (text), 0600, err);
}

/* The id for a version key of @img: an explicit one, or the highest.  */
static const char *
version_id (json_object *img, const char *version)
{
  json_object *versions;
  const char *best = NULL;
  long best_n = -1;

  if (!json_object_object_get_ex (img, "versions", &versions) || !json_object_is_type (versions, json_type_object))
    return NULL;
  if (version)
    return rt_json_str (versions, version);
  json_object_object_foreach (versions, k, v)
  {
    long n = strtol (k, NULL, 10);
    if (n > best_n && json_object_is_type (v, json_type_string))
      {
        best_n = n;
        best = json_object_get_string (v);
      }
  }
  return best;
}

int
rt_image_read_index (rt_context *ctx, json_object **index, rt_error **err)
{
  cleanup_free char *path = rt_strdup_printf ("%s/images/index.json", ctx->data_dir);
  int ret;

  if (path == NULL)
    return rt_error_oom (err);
  ret = rt_image_store_open (ctx, err);
  if (ret < 0)
    return ret;
  return rt_image_read_json (path, true, index, err);
}

int
rt_image_not_found (rt_error **err, const char *ref)
{
  rt_error_set (err, ENOENT, "image_not_found", "image '%s' not found", ref);
  return rt_error_hint (err, "runtime image ls lists the images you have");
}

const char *
rt_image_index_resolve (json_object *index, const char *ref)
{
  cleanup_free char *name = NULL;
  json_object *names, *img, *tags;
  const char *sep, *id = NULL;
  size_t n;

  if (ref == NULL || *ref == '\0')
    ref = RT_IMAGE_DEFAULT;
  if (!json_object_object_get_ex (index, "names", &names) || !json_object_is_type (names, json_type_object))
    return NULL;
  n = strcspn (ref, ":@");
  sep = ref + n;
  name = strndup (ref, n);
  if (name && json_object_object_get_ex (names, name, &img))
    {
      if (*sep == '@')
        id = version_id (img, sep + 1);
      else if (json_object_object_get_ex (img, "tags", &tags))
        id = rt_json_str (tags, *sep == ':' ? sep + 1 : "latest");
      if (id == NULL && *sep == '\0')
        id = version_id (img, NULL);
      if (rt_image_is_sha256 (id))
        return id;
    }

  return rt_image_index_prefix (index, ref, &id, NULL, NULL) == 1 ? id : NULL;
}

int
rt_image_index_prefix (json_object *index, const char *ref, const char **id, bool (*keep) (const char *name, void *arg),
                       void *arg)
{
  json_object *names;
  const char *first = NULL;
  int n = 0;

  /* As docker: any 4 or more hex digits of an id's start, if only one
     image's id starts so (an id under several names counts once).  */
  if (ref == NULL || strlen (ref) < RT_IMAGE_MIN_PREFIX || strspn (ref, "0123456789abcdef") != strlen (ref)
      || !json_object_object_get_ex (index, "names", &names) || !json_object_is_type (names, json_type_object))
    return 0;
  json_object_object_foreach (names, k, v)
  {
    json_object *versions;
    if (!json_object_object_get_ex (v, "versions", &versions) || !json_object_is_type (versions, json_type_object)
        || (keep && !keep (k, arg)))
      continue;
    json_object_object_foreach (versions, vk, vid)
    {
      const char *s = json_object_get_string (vid);
      (void) vk;
      if (!rt_image_is_sha256 (s) || strncmp (s, ref, strlen (ref)) != 0 || (first && strcmp (first, s) == 0))
        continue;
      if (first == NULL)
        first = s;
      n++;
    }
  }
  if (id)
    *id = first;
  return n;
}

int
rt_image_unresolved (rt_context *ctx, json_object *index, const char *ref, rt_error **err)
{
  int n;

  /* A tenant counts only the images it sees (rt_image_visible_name).  */
  if ((n = rt_image_index_prefix (index, ref, NULL, rt_image_visible_name, ctx)) > 1)
    {
      rt_error_set (err, EINVAL, "ambiguous", "the id prefix '%s' is the start of %d images' ids", ref, n);
      return rt_error_hint (err, "give more of the id (runtime image ls --json shows them whole)");
    }
  return rt_image_not_found (err, ref ? ref : RT_IMAGE_DEFAULT);
}

int
rt_image_manifest (rt_context *ctx, const char *ref, json_object **manifest, rt_error **err)
{
  cleanup_free char *path = NULL;
  cleanup_json json_object *index = NULL;
  const char *id;
  int ret;

  ret = rt_image_read_index (ctx, &index, err);
  if (ret < 0)
    return ret;
  id = rt_image_resolve_in (ctx, index, ref);
  if (id == NULL)
    return rt_image_unresolved (ctx, index, ref, err);
  path = rt_strdup_printf ("%s/images/manifests/%s.json", ctx->data_dir, id);
  if (path == NULL)
    return rt_error_oom (err);
  return rt_image_read_json (path, false, manifest, err);
}

/* The tags of @id in @img's entry of the index.  */
static json_object *
tags_of (json_object *img, const char *id)
{
  json_object *tags, *out = json_object_new_array ();

  if (json_object_object_get_ex (img, "tags", &tags))
    {
      json_object_object_foreach (tags, k, v)
      {
        if (strcmp (json_object_get_string (v), id) == 0)
          json_object_array_add (out, json_object_new_string (k));
      }
    }
  return out;
}

long
rt_image_index_next (json_object *index, const char *name)
{
  json_object *names, *img, *versions;
  long version = 0;

  if (json_object_object_get_ex (index, "names", &names) && json_object_object_get_ex (names, name, &img)
      && json_object_object_get_ex (img, "versions", &versions))
    {
      json_object_object_foreach (versions, k, v)
      {
        long n = strtol (k, NULL, 10);
        (void) v;
        if (n > version)
          version = n;
      }
    }
  return version + 1;
}

long
rt_image_index_add (json_object *index, const char *name, const char *id, const char *tag, bool latest)
{
  json_object *names, *img, *versions, *tags;
  long version;
  char vkey[24];

  if (!json_object_object_get_ex (index, "names", &names))
    json_object_object_add (index, "names", names = json_object_new_object ());
  if (!json_object_object_get_ex (names, name, &img))
    json_object_object_add (names, name, img = json_object_new_object ());
  if (!json_object_object_get_ex (img, "versions", &versions))
    json_object_object_add (img, "versions", versions = json_object_new_object ());
  if (!json_object_object_get_ex (img, "tags", &tags))
    json_object_object_add (img, "tags", tags = json_object_new_object ());
  version = rt_image_index_next (index, name);
  snprintf (vkey, sizeof vkey, "%ld", version);
  json_object_object_add (versions, vkey, json_object_new_string (id));
  if (latest)
    json_object_object_add (tags, "latest", json_object_new_string (id));
  if (tag && strcmp (tag, "latest") != 0)
    json_object_object_add (tags, tag, json_object_new_string (id));
  return version;
}

int
rt_image_manifest_id (json_object *m, char id[65], rt_error **err)
{
  cleanup_json json_object *copy = json_object_new_object ();
  const char *plain;

  json_object_object_foreach (m, k, v)
  {
    if (strcmp (k, "id") != 0)
      json_object_object_add (copy, k, json_object_get (v));
  }
  plain = json_object_to_json_string_ext (copy, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  if (plain == NULL)
    return rt_error_oom (err);
  return sha256_hex (plain, strlen (plain), id, err);
}

int
rt_image_manifest_write (const char *imgdir, json_object *m, const char *id, rt_error **err)
{
  cleanup_json json_object *full = json_object_new_object ();
  cleanup_free char *path = rt_strdup_printf ("%s/manifests/%s.json", imgdir, id);
  cleanup_free char *manifests = rt_strdup_printf ("%s/manifests", imgdir);
  int ret;

  if (path == NULL || manifests == NULL)
    return rt_error_oom (err);
  ret = rt_image_private_dir (manifests, err);
  if (ret < 0)
    return ret;
  json_object_object_add (full, "id", json_object_new_string (id));
  json_object_object_foreach (m, k, v)
  {
    if (strcmp (k, "id") != 0)
      json_object_object_add (full, k, json_object_get (v));
  }
  return rt_image_write_json (path, full, err);
}

/* Locks the store at @imgdir (made if missing; the lock in *lockfd) and
   reads its index.  */
static int
lock_index (const char *imgdir, const char *index_path, int *lockfd, json_object **index, rt_error **err)
{
  int ret = rt_image_lock_dir (imgdir, lockfd, err);

  if (ret == 0)
    ret = rt_image_read_json (index_path, true, index, err);
  return ret;
}

int
rt_image_add (rt_context *ctx, const char *name, const char *tag, json_object *fields, char **id_out,
              rt_error **err)
{
  cleanup_free char *imgdir = rt_strdup_printf ("%s/images", ctx->data_dir);
  cleanup_free char *index_path = NULL, *scoped = NULL;
  cleanup_json json_object *index = NULL, *m = json_object_new_object ();
  cleanup_close int lockfd = -1;
  char id[65], now[32];
  int ret;

  if (imgdir == NULL || m == NULL || (index_path = rt_strdup_printf ("%s/index.json", imgdir)) == NULL)
    return rt_error_oom (err);
  /* A tenant's names are its own (image/scope.h).  */
  ret = rt_image_scoped_name (ctx, name, &scoped, err);
  if (ret < 0)
    return ret;
  name = scoped;
  ret = lock_index (imgdir, index_path, &lockfd, &index, err);
  if (ret < 0)
    return ret;
  rt_format_time (rt_epoch_ms (), now);
  json_object_object_add (m, "name", json_object_new_string (name));
  /* The version goes into the manifest (and so into the id).  */
  json_object_object_add (m, "version", json_object_new_int64 (rt_image_index_next (index, name)));
  json_object_object_add (m, "created", json_object_new_string (now));
  {
    json_object_object_foreach (fields, k, v)
    {
      json_object_object_add (m, k, json_object_get (v));
    }
  }
  ret = rt_image_manifest_id (m, id, err);
  if (ret == 0)
    ret = rt_image_manifest_write (imgdir, m, id, err);
  if (ret < 0)
    return ret;
  rt_image_index_add (index, name, id, tag, true);
  ret = rt_image_write_json (index_path, index, err);
  if (ret < 0)
    return ret;
  *id_out = strdup (id);
  return *id_out ? 0 : rt_error_oom (err);
}

static int64_t
layers_size (rt_context *ctx, json_object *m)
{
  json_object *layers;
  int64_t total = 0;

  if (!json_object_object_get_ex (m, "layers", &layers))
    return 0;
  for (size_t i = 0; i < json_object_array_length (layers); i++)
    {
      cleanup_free char *p = rt_image_layer_path (ctx, json_object_get_string (json_object_array_get_idx (layers, i)));
      struct stat st;
      if (p && stat (p, &st) == 0)
        total += st.st_size;
    }
  return total;
}

/* One image version as `image ls` and `image get` show it.  */
static json_object *
image_object (rt_context *ctx, json_object *img, const char *version, const char *id)
{
  cleanup_free char *path = rt_strdup_printf ("%s/images/manifests/%s.json", ctx->data_dir, id);
  cleanup_json json_object *m = NULL;
  cleanup_error rt_error *ignored = NULL;
  json_object *o = json_object_new_object ();

  json_object_object_add (o, "id", json_object_new_string (id));
  if (path && rt_image_read_json (path, false, &m, &ignored) == 0)
    {
      const char *name = rt_json_str (m, "name");
      json_object_object_add (o, "name", name ? json_object_new_string (rt_image_shown_name (ctx, name)) : NULL);
      json_object_object_add (o, "version", json_object_new_int64 (strtol (version, NULL, 10)));
      json_object_object_add (o, "tags", tags_of (img, id));
      json_object_object_foreach (m, k, val)
      {
        if (strcmp (k, "id") != 0 && strcmp (k, "name") != 0 && strcmp (k, "version") != 0
            && strcmp (k, "tags") != 0)
          json_object_object_add (o, k, json_object_get (val));
      }
      json_object_object_add (o, "sizeBytes", json_object_new_int64 (layers_size (ctx, m)));
    }
  return o;
}

int
rt_local_image_list_json (rt_context *ctx, char **json, rt_error **err)
{
  cleanup_json json_object *index = NULL, *out = json_object_new_array ();
  json_object *names;
  int ret;

  if (out == NULL)
    return rt_error_oom (err);
  ret = rt_image_read_index (ctx, &index, err);
  if (ret < 0)
    return ret;
  if (json_object_object_get_ex (index, "names", &names))
    {
      json_object_object_foreach (names, name, img)
      {
        json_object *versions;
        if (!rt_image_name_visible (ctx, name) || !json_object_object_get_ex (img, "versions", &versions))
          continue;
        json_object_object_foreach (versions, vk, vid)
        {
          if (rt_image_is_sha256 (json_object_get_string (vid)))
            json_object_array_add (out, image_object (ctx, img, vk, json_object_get_string (vid)));
        }
      }
    }
  *json = strdup (json_object_to_json_string_ext (out, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}

const char *
rt_image_index_find (json_object *index, const char *id, json_object **img_out, const char **version)
{
  json_object *names;

  if (!json_object_object_get_ex (index, "names", &names))
    return NULL;
  json_object_object_foreach (names, name, img)
  {
    json_object *versions;
    if (!json_object_object_get_ex (img, "versions", &versions))
      continue;
    json_object_object_foreach (versions, vk, vid)
    {
      if (strcmp (json_object_get_string (vid), id) == 0)
        {
          *img_out = img;
          *version = vk;
          return name;
        }
    }
  }
  return NULL;
}

int
rt_local_image_get_json (rt_context *ctx, const char *ref, char **json, rt_error **err)
{
  cleanup_json json_object *index = NULL, *o = NULL;
  json_object *img = NULL;
  const char *id, *version = NULL;
  int ret;

  ret = rt_image_read_index (ctx, &index, err);
  if (ret < 0)
    return ret;
  id = rt_image_resolve_in (ctx, index, ref);
  if (id == NULL || rt_image_index_find (index, id, &img, &version) == NULL)
    return rt_image_unresolved (ctx, index, ref, err);
  o = image_object (ctx, img, version, id);
  *json = strdup (json_object_to_json_string_ext (o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}

/* Layers no manifest names any more go.  */
static void
collect_layers (const char *imgdir)
{
  cleanup_free char *mdir = rt_strdup_printf ("%s/manifests", imgdir);
  cleanup_free char *ldir = rt_strdup_printf ("%s/layers", imgdir);
  cleanup_json json_object *used = json_object_new_object ();
  cleanup_dir DIR *d = NULL;
  struct dirent *de;

  if (mdir == NULL || ldir == NULL || used == NULL || (d = opendir (mdir)) == NULL)
    return;
  while ((de = readdir (d)))
    {
      cleanup_free char *p = rt_strdup_printf ("%s/%s", mdir, de->d_name);
      cleanup_json json_object *m = NULL;
      cleanup_error rt_error *ignored = NULL;
      json_object *layers;
      if (fnmatch ("*.json", de->d_name, 0) != 0 || p == NULL || rt_image_read_json (p, false, &m, &ignored) < 0)
        continue;
      if (json_object_object_get_ex (m, "layers", &layers))
        for (size_t i = 0; i < json_object_array_length (layers); i++)
          json_object_object_add (used, json_object_get_string (json_object_array_get_idx (layers, i)),
                                  json_object_new_boolean (1));
    }
  closedir (steal_pointer (&d));
  d = opendir (ldir);
  while (d && (de = readdir (d)))
    {
      char digest[65];
      if (strlen (de->d_name) < 64 || strstr (de->d_name, ".tmp."))
        continue;
      memcpy (digest, de->d_name, 64);
      digest[64] = '\0';
      if (rt_image_is_sha256 (digest) && !json_object_object_get_ex (used, digest, NULL))
        unlinkat (dirfd (d), de->d_name, 0);
    }
}

/* The keys of @o whose value is the string @id go.  */
static void
drop_values (json_object *o, const char *id)
{
  const char *gone[64];
  size_t n = 0;

  json_object_object_foreach (o, k, v)
  {
    if (strcmp (json_object_get_string (v), id) == 0 && n < 64)
      gone[n++] = k;
  }
  for (size_t i = 0; i < n; i++)
    json_object_object_del (o, gone[i]);
}

/* Every version and tag of @id leaves the index.  */
static void
index_forget (json_object *index, const char *id)
{
  json_object *names;

  if (!json_object_object_get_ex (index, "names", &names))
    return;
  json_object_object_foreach (names, name, img)
  {
    json_object *versions, *tags;
    if (json_object_object_get_ex (img, "versions", &versions))
      drop_values (versions, id);
    if (json_object_object_get_ex (img, "tags", &tags))
      {
        drop_values (tags, id);
        /* "latest" moves to the newest version left.  */
        if (!json_object_object_get_ex (tags, "latest", NULL) && versions && version_id (img, NULL))
          json_object_object_add (tags, "latest", json_object_new_string (version_id (img, NULL)));
      }
    (void) name;
  }
}

/* A tenant uses the default image but does not remove it.  */
static int
refuse_shared (rt_context *ctx, json_object *index, const char *id, rt_error **err)
{
  json_object *img = NULL;
  const char *version = NULL, *name = rt_image_index_find (index, id, &img, &version);

  if (ctx->tenant == NULL || name == NULL || strcmp (name, RT_IMAGE_DEFAULT) != 0)
    return 0;
  rt_error_set (err, EPERM, "permission_denied", "the image '%s' is the host's: every token uses it", name);
  return rt_error_hint (err, "runtime image rm removes only images this token built");
}

int
rt_image_removable (rt_context *ctx, const char *ref, char id[65], int *lockfd_out, rt_error **err)
{
  cleanup_free char *imgdir = rt_strdup_printf ("%s/images", ctx->data_dir);
  cleanup_free char *index_path = NULL;
  cleanup_json json_object *index = NULL;
  cleanup_close int lockfd = -1;
  const char *found;
  int ret;

  if (imgdir == NULL || (index_path = rt_strdup_printf ("%s/index.json", imgdir)) == NULL)
    return rt_error_oom (err);
  ret = lock_index (imgdir, index_path, &lockfd, &index, err);
  if (ret < 0)
    return ret;
  found = rt_image_resolve_in (ctx, index, ref);
  if (found == NULL)
    return rt_image_unresolved (ctx, index, ref, err);
  snprintf (id, 65, "%s", found);
  ret = refuse_shared (ctx, index, id, err);
  if (ret == 0)
    *lockfd_out = steal_fd (&lockfd);
  return ret;
}

int
rt_image_forget (rt_context *ctx, const char *id, rt_error **err)
{
  cleanup_free char *imgdir = rt_strdup_printf ("%s/images", ctx->data_dir);
  cleanup_free char *index_path = NULL, *manifest = NULL, *disk = NULL;
  cleanup_json json_object *index = NULL;
  int ret;

  if (imgdir == NULL || (index_path = rt_strdup_printf ("%s/index.json", imgdir)) == NULL)
    return rt_error_oom (err);
  /* Under rt_image_removable's lock, still held.  */
  ret = rt_image_read_json (index_path, true, &index, err);
  if (ret < 0)
    return ret;
  index_forget (index, id);
  ret = rt_image_write_json (index_path, index, err);
  if (ret < 0)
    return ret;
  manifest = rt_strdup_printf ("%s/manifests/%s.json", imgdir, id);
  disk = rt_strdup_printf ("%s/disks/%s.ext4", ctx->cache_dir, id);
  if (manifest)
    unlink (manifest);
  if (disk)
    unlink (disk);
  collect_layers (imgdir);
  return 0;
}
