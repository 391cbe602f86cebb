/* transfer.c - images moved between stores: export writes a portable
   tar (manifest.json, layers/<sha256>.tar.zst), import takes one in after
   checking every byte of it.  */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <string.h>
#include <sys/stat.h>

#include "image/transfer.h"
#include "image/layer.h"
#include "image/store.h"
#include "image/tar.h"

/* Adds the file @name (@size bytes read from @fd) to @a.  */
static int
add_file (struct archive *a, const char *name, int fd, const void *data, int64_t size, const char *path,
          rt_error **err)
{
  struct archive_entry *e = archive_entry_new ();
  int ret = 0;

  if (e == NULL)
    return rt_error_oom (err);
  archive_entry_set_pathname (e, name);
  archive_entry_set_filetype (e, AE_IFREG);
  archive_entry_set_perm (e, 0600);
  archive_entry_set_size (e, size);
  if (archive_write_header (a, e) != ARCHIVE_OK)
    ret = rt_archive_fail (err, a, "cannot write", path);
  else if (data && archive_write_data (a, data, size) != (la_ssize_t) size)
    ret = rt_archive_fail (err, a, "cannot write", path);
  while (ret == 0 && data == NULL)
    {
      char buf[1 << 16];
      ssize_t n = read (fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      if (archive_write_data (a, buf, n) != n)
        ret = rt_archive_fail (err, a, "cannot write", path);
    }
  archive_entry_free (e);
  return ret;
}

/* Adds layer @digest to the export @a (of @path).  */
static int
export_layer (rt_context *ctx, struct archive *a, const char *digest, const char *path, rt_error **err)
{
  cleanup_free char *lp = rt_image_layer_path (ctx, digest);
  cleanup_free char *name = NULL;
  cleanup_close int fd = -1;
  struct stat st;

  if (lp == NULL)
    return rt_error_set (err, ENOENT, "internal", "layer %s is missing from the store", digest);
  name = rt_strdup_printf ("layers/%s", strrchr (lp, '/') + 1);
  fd = open (lp, O_RDONLY | O_CLOEXEC);
  if (name == NULL || fd < 0 || fstat (fd, &st) < 0)
    return rt_error_set (err, errno, "internal", "cannot read '%s': %s", lp, strerror (errno));
  return add_file (a, name, fd, NULL, st.st_size, path, err);
}

int
rt_local_image_export (rt_context *ctx, const char *ref, const char *path, rt_error **err)
{
  cleanup_json json_object *m = NULL;
  cleanup_free char *mpath = NULL, *tmp = rt_strdup_printf ("%s.tmp.XXXXXX", path);
  cleanup_free char *mtext = NULL;
  cleanup_close int fd = -1;
  struct archive *a = NULL;
  json_object *layers;
  size_t mlen = 0;
  int ret;

  if (tmp == NULL)
    return rt_error_oom (err);
  ret = rt_image_manifest (ctx, ref, &m, err);
  if (ret < 0)
    return ret;
  mpath = rt_strdup_printf ("%s/images/manifests/%s.json", ctx->data_dir, rt_json_str (m, "id"));
  if (mpath == NULL)
    return rt_error_oom (err);
  ret = rt_read_file (mpath, &mtext, &mlen, err);
  if (ret < 0)
    return ret;
  a = archive_write_new ();
  if (a == NULL)
    return rt_error_oom (err);
  /* The manifest holds the image's --env values: the archive is the
     caller's alone (0600), under a name no one else made.  */
  fd = mkostemp (tmp, O_CLOEXEC);
  if (fd < 0)
    {
      archive_write_free (a);
      return rt_error_set (err, errno, "internal", "cannot write '%s': %s", path, strerror (errno));
    }
  archive_write_set_format_pax_restricted (a);
  if (archive_write_open_fd (a, fd) != ARCHIVE_OK)
    ret = rt_archive_fail (err, a, "cannot write", path);
  if (ret == 0)
    ret = add_file (a, "manifest.json", -1, mtext, mlen, path, err);
  if (ret == 0 && json_object_object_get_ex (m, "layers", &layers))
    for (size_t i = 0; ret == 0 && i < json_object_array_length (layers); i++)
      ret = export_layer (ctx, a, json_object_get_string (json_object_array_get_idx (layers, i)), path, err);
  if (archive_write_close (a) != ARCHIVE_OK && ret == 0)
    ret = rt_archive_fail (err, a, "cannot write", path);
  archive_write_free (a);
  if (ret == 0 && fsync (fd) < 0)
    ret = rt_error_set (err, errno, "internal", "cannot write '%s': %s", path, strerror (errno));
  if (ret == 0 && rename (tmp, path) < 0)
    ret = rt_error_set (err, errno, "internal", "cannot write '%s': %s", path, strerror (errno));
  if (ret < 0)
    unlink (tmp);
  return ret;
}

/* A layer file's name in an archive: layers/<sha256>.tar.zst|.tar.gz.  */
static bool
layer_entry (const char *name, char digest[65], const char **ext)
{
  if (strncmp (name, "layers/", 7) != 0 || strlen (name) < 7 + 64)
    return false;
  memcpy (digest, name + 7, 64);
  digest[64] = '\0';
  *ext = name + 7 + 64;
  return rt_image_is_sha256 (digest) && (strcmp (*ext, ".tar.zst") == 0 || strcmp (*ext, ".tar.gz") == 0);
}

static int
refuse (rt_error **err, const char *archive, const char *why)
{
  rt_error_set (err, EPERM, "invalid_request", "'%s' is refused: a layer %s", archive, why ? why : "is unsafe");
  return rt_error_hint (err, "import only archives made by runtime image export");
}

static int
too_big (const struct rt_layer_budget *budget, const char *archive, rt_error **err)
{
  cleanup_free char *why = rt_strdup_printf ("unpacks past %llu MiB, 4 times the image's %d MiB disk",
                                             (unsigned long long) (budget->limit >> 20), RT_MIN_DISK_MIB);

  return why ? refuse (err, archive, why) : rt_error_oom (err);
}

/* The refusal of an entry the check (image/layer.h) did not pass.  */
static int
refuse_entry (enum rt_layer_verdict v, const struct rt_layer_entry *e, const struct rt_layer_check *c,
              const char *archive, rt_error **err)
{
  cleanup_free char *why = NULL;

  switch (v)
    {
    case RT_LAYER_BAD_PATH:
      why = rt_strdup_printf ("holds the unsafe path '%s'", e->name);
      break;
    case RT_LAYER_BAD_LINK:
      why = rt_strdup_printf ("holds the unsafe path '%s'", e->hardlink);
      break;
    case RT_LAYER_DEVICE:
      why = rt_strdup_printf ("holds the device node '%s'", c->path);
      break;
    case RT_LAYER_VIA_LINK:
      why = rt_strdup_printf ("writes '%s' through the symlink '%.*s'", c->via_what, (int) c->via, c->via_what);
      break;
    case RT_LAYER_NO_MEMORY:
      return rt_error_oom (err);
    case RT_LAYER_WRITE:
    case RT_LAYER_ROOT:
    case RT_LAYER_WHITEOUT:
    default:
      return 0;
    }
  return refuse (err, archive, why);
}

/* Every entry of an untrusted layer, checked before anything is stored
   (rt_layer_check_entry): a relative name without ".." (hard link
   targets too), no device node (but overlayfs's 0:0 whiteouts, and the
   /dev of a first layer, which extraction drops anyway: bases made by
   debootstrap hold one), nothing written through a symlink that this or
   an earlier layer of the image (@links) made; and all the image's
   layers together unpack to at most @budget's limit, which an entry's
   header says before its data is read (a bomb is refused unread).  */
static int
check_layer (json_object *links, struct rt_layer_budget *budget, const char *layer, bool first, const char *archive,
             rt_error **err)
{
  struct archive *a = archive_read_new ();
  struct archive_entry *e;
  int ret = 0, r;

  if (a == NULL)
    return rt_error_oom (err);
  archive_read_support_format_tar (a);
  archive_read_support_filter_all (a);
  if (archive_read_open_filename (a, layer, 1 << 16) != ARCHIVE_OK)
    ret = rt_error_set (err, EINVAL, "invalid_request", "'%s': a layer is not a tar archive", archive);
  while (ret == 0 && (r = archive_read_next_header (a, &e)) != ARCHIVE_EOF)
    {
      struct rt_layer_entry le = { 0 };
      struct rt_layer_check c;

      if (r >= ARCHIVE_WARN)
        rt_layer_entry_of (e, &le);
      if (le.name == NULL)
        {
          ret = rt_error_set (err, EINVAL, "invalid_request", "'%s': a layer is not a readable tar archive: %s",
                              archive, archive_error_string (a));
          break;
        }
      if (!rt_layer_within (budget, archive_filter_bytes (a, 0), archive_entry_size (e)))
        {
          ret = too_big (budget, archive, err);
          break;
        }
      ret = refuse_entry (rt_layer_check_entry (links, first, &le, &c), &le, &c, archive, err);
      rt_layer_check_clear (&c);
    }
  if (ret == 0 && !rt_layer_within (budget, archive_filter_bytes (a, 0), 0))
    ret = too_big (budget, archive, err);
  if (ret == 0)
    budget->used += archive_filter_bytes (a, 0);
  archive_read_free (a);
  return ret;
}

/* Refuses a manifest whose fields the store could not use as they are:
   the id the digest of the rest, a valid name, layers as sha256 digests,
   env as K=V strings, an absolute workdir.  */
static int
check_manifest (json_object *m, const char *archive, rt_error **err)
{
  const char *bad = NULL;
  json_object *v;
  char id[65];
  int ret;

  if (m == NULL || !json_object_is_type (m, json_type_object) || !rt_image_is_sha256 (rt_json_str (m, "id")))
    bad = "id";
  else if (!rt_json_str (m, "name") || !rt_image_name_valid (rt_json_str (m, "name")))
    bad = "name";
  else if (!json_object_object_get_ex (m, "layers", &v) || !json_object_is_type (v, json_type_array)
           || json_object_array_length (v) == 0)
    bad = "layers";
  for (size_t i = 0; !bad && i < json_object_array_length (v); i++)
    if (!rt_image_is_sha256 (json_object_get_string (json_object_array_get_idx (v, i)))
        || !json_object_is_type (json_object_array_get_idx (v, i), json_type_string))
      bad = "layers";
  if (!bad && json_object_object_get_ex (m, "env", &v)
      && (v == NULL || !json_object_is_type (v, json_type_array)))
    bad = "env";
  for (size_t i = 0; !bad && v && json_object_is_type (v, json_type_array) && i < json_object_array_length (v); i++)
    {
      json_object *kv = json_object_array_get_idx (v, i);
      const char *s = json_object_is_type (kv, json_type_string) ? json_object_get_string (kv) : NULL;
      if (s == NULL || strchr (s, '=') == NULL || !rt_env_name_valid (s, strchr (s, '=') - s))
        bad = "env";
    }
  if (!bad && json_object_object_get_ex (m, "workdir", &v)
      && (!json_object_is_type (v, json_type_string) || json_object_get_string (v)[0] != '/'))
    bad = "workdir";
  if (!bad && json_object_object_get_ex (m, "created", &v) && !json_object_is_type (v, json_type_string))
    bad = "created";
  if (bad)
    return rt_error_set (err, EINVAL, "invalid_request", "'%s' is not an image archive: its manifest's \"%s\" is "
                                                         "missing or malformed", archive, bad);
  ret = rt_image_manifest_id (m, id, err);
  if (ret == 0 && strcmp (id, rt_json_str (m, "id")) != 0)
    ret = rt_error_set (err, EINVAL, "invalid_request",
                        "'%s' is damaged or was tampered with: the manifest does not match its id", archive);
  return ret;
}

/* Whether @m is newer than what @name's latest tag points at (or the
   name has none): only then does an import take latest, so that
   importing an old export never moves latest back to old content.  */
static bool
takes_latest (const char *imgdir, json_object *index, const char *name, json_object *m)
{
  cleanup_free char *path = NULL;
  cleanup_json json_object *latest = NULL;
  cleanup_error rt_error *ignored = NULL;
  json_object *names, *img, *tags, *id;
  const char *mine, *theirs;

  if (!json_object_object_get_ex (index, "names", &names) || !json_object_object_get_ex (names, name, &img)
      || !json_object_object_get_ex (img, "tags", &tags) || !json_object_object_get_ex (tags, "latest", &id))
    return true;
  path = rt_strdup_printf ("%s/manifests/%s.json", imgdir, json_object_get_string (id));
  if (path == NULL || rt_image_read_json (path, false, &latest, &ignored) < 0)
    return true;
  mine = rt_json_str (m, "created");
  theirs = rt_json_str (latest, "created");
  return mine && (theirs == NULL || strcmp (mine, theirs) > 0);
}

#define IMPORT_MAX_LAYERS 256

/* An archive being imported: its layers wait in temporary files of the
   store until all of it is checked.  */
struct import
{
  const char *path; /* the archive */
  const char *ldir; /* <data>/images/layers */
  char *mtext;      /* its manifest.json */
  size_t n;
  char *tmps[IMPORT_MAX_LAYERS], *finals[IMPORT_MAX_LAYERS], digests[IMPORT_MAX_LAYERS][65];
};

static void
import_clear (struct import *im)
{
  for (size_t i = 0; i < im->n; i++)
    {
      unlink (im->tmps[i]);
      free (im->tmps[i]);
      free (im->finals[i]);
    }
  free (im->mtext);
}

/* Entry @e, @name, of the archive: a layer, written to a temporary file
   and checked against its name.  */
static int
take_layer (struct import *im, struct archive *a, struct archive_entry *e, const char *name, rt_error **err)
{
  const char *ext;
  char digest[65], got[65];
  int ret = 0, fd;

  if (!layer_entry (name, digest, &ext) || archive_entry_filetype (e) != AE_IFREG || im->n >= IMPORT_MAX_LAYERS)
    return rt_error_set (err, EINVAL, "invalid_request", "'%s' is not an image archive: unexpected entry '%s'",
                         im->path, name);
  for (size_t j = 0; j < im->n; j++)
    if (strcmp (im->digests[j], digest) == 0)
      return rt_error_set (err, EINVAL, "invalid_request", "'%s' is not an image archive: it holds layer %.12s "
                                                           "twice", im->path, digest);
  memcpy (im->digests[im->n], digest, sizeof digest);
  im->tmps[im->n] = rt_strdup_printf ("%s/%s%s.tmp.XXXXXX", im->ldir, digest, ext);
  im->finals[im->n] = rt_strdup_printf ("%s/%s%s", im->ldir, digest, ext);
  if (im->tmps[im->n] == NULL || im->finals[im->n] == NULL)
    {
      free (im->tmps[im->n]);
      free (im->finals[im->n]);
      return rt_error_oom (err);
    }
  fd = mkostemp (im->tmps[im->n], O_CLOEXEC);
  if (fd < 0)
    {
      ret = rt_error_set (err, errno, "internal", "cannot create '%s': %s", im->tmps[im->n], strerror (errno));
      free (im->tmps[im->n]);
      free (im->finals[im->n]);
      return ret;
    }
  im->n++;
  if (archive_read_data_into_fd (a, fd) != ARCHIVE_OK)
    ret = rt_error_set (err, EIO, "invalid_request", "'%s': cannot read layer %s", im->path, digest);
  close (fd);
  /* Every layer is checked against its name: a changed byte anywhere
     refuses the whole archive.  */
  if (ret == 0 && (ret = rt_sha256_file (im->tmps[im->n - 1], got, err)) == 0 && strcmp (got, digest) != 0)
    ret = rt_error_set (err, EINVAL, "invalid_request",
                        "'%s' is damaged or was tampered with: layer %.12s does not match its digest", im->path,
                        digest);
  return ret;
}

/* Reads the archive: its manifest's text and its layers, each to a
   temporary file.  */
static int
read_archive (struct import *im, rt_error **err)
{
  struct archive *a = archive_read_new ();
  struct archive_entry *e;
  int ret = 0, r;

  if (a == NULL)
    return rt_error_oom (err);
  archive_read_support_format_tar (a);
  if (archive_read_open_filename (a, im->path, 1 << 16) != ARCHIVE_OK)
    {
      ret = rt_error_set (err, ENOENT, archive_errno (a) == ENOENT ? "file_not_found" : "invalid_request",
                          "cannot read '%s': %s", im->path, archive_error_string (a));
      archive_read_free (a);
      return ret;
    }
  while (ret == 0 && (r = archive_read_next_header (a, &e)) != ARCHIVE_EOF)
    {
      const char *name = r < ARCHIVE_WARN ? NULL : archive_entry_pathname (e);
      if (name == NULL)
        ret = rt_error_set (err, EINVAL, "invalid_request", "'%s' is not an image archive: %s", im->path,
                            archive_error_string (a));
      else if (strcmp (name, "manifest.json") == 0 && archive_entry_size (e) < (1 << 20) && im->mtext == NULL)
        {
          size_t mlen = archive_entry_size (e);
          im->mtext = calloc (1, mlen + 1);
          if (im->mtext == NULL || archive_read_data (a, im->mtext, mlen) != (la_ssize_t) mlen)
            ret = rt_error_set (err, EINVAL, "invalid_request", "'%s': cannot read its manifest", im->path);
        }
      else
        ret = take_layer (im, a, e, name, err);
    }
  archive_read_free (a);
  if (ret == 0 && im->mtext == NULL)
    ret = rt_error_set (err, EINVAL, "invalid_request", "'%s' is not an image archive: no manifest.json", im->path);
  return ret;
}

/* The manifest (parsed into *m) and the layers: the manifest's layers
   are exactly the archive's, and each is checked in the order the disk
   will stack them.  */
static int
check_archive (struct import *im, json_object **m, rt_error **err)
{
  cleanup_json json_object *links = json_object_new_object ();
  struct rt_layer_budget budget = { .limit = RT_LAYER_MAX_BYTES };
  bool named[IMPORT_MAX_LAYERS] = { false };
  json_object *layers = NULL;
  int ret;

  if (links == NULL)
    return rt_error_oom (err);
  ret = check_manifest (*m = json_tokener_parse (im->mtext), im->path, err);
  if (ret == 0)
    json_object_object_get_ex (*m, "layers", &layers);
  for (size_t i = 0; ret == 0 && i < json_object_array_length (layers); i++)
    {
      const char *d = json_object_get_string (json_object_array_get_idx (layers, i));
      size_t j = 0;
      while (j < im->n && strcmp (im->digests[j], d) != 0)
        j++;
      if (j == im->n)
        ret = rt_error_set (err, EINVAL, "invalid_request", "'%s' lacks layer %.12s of its manifest", im->path, d);
      else
        {
          named[j] = true;
          ret = check_layer (links, &budget, im->tmps[j], i == 0, im->path, err);
        }
    }
  for (size_t j = 0; ret == 0 && j < im->n; j++)
    if (!named[j])
      ret = rt_error_set (err, EINVAL, "invalid_request", "'%s' is not an image archive: layer %.12s is not in its "
                                                          "manifest", im->path, im->digests[j]);
  return ret;
}

/* Puts the checked image into the store.  Return: 1 when the store has
   it already (it stays as it is: its versions and tags are this
   store's).  */
static int
store_import (rt_context *ctx, struct import *im, json_object *m, rt_error **err)
{
  cleanup_free char *imgdir = rt_strdup_printf ("%s/images", ctx->data_dir);
  cleanup_free char *index_path = rt_strdup_printf ("%s/images/index.json", ctx->data_dir);
  cleanup_json json_object *index = NULL;
  cleanup_close int lockfd = -1;
  const char *id = rt_json_str (m, "id"), *name = rt_json_str (m, "name"), *version;
  json_object *img;
  int ret;

  if (imgdir == NULL || index_path == NULL)
    return rt_error_oom (err);
  ret = rt_image_lock_dir (imgdir, &lockfd, err);
  if (ret == 0)
    ret = rt_image_read_json (index_path, true, &index, err);
  if (ret == 0 && rt_image_index_find (index, id, &img, &version))
    ret = 1;
  for (size_t i = 0; ret == 0 && i < im->n; i++)
    if (rename (im->tmps[i], im->finals[i]) < 0)
      ret = rt_error_set (err, errno, "internal", "cannot store '%s': %s", im->finals[i], strerror (errno));
  if (ret == 0)
    ret = rt_image_manifest_write (imgdir, m, id, err);
  if (ret == 0)
    {
      rt_image_index_add (index, name, id, NULL, takes_latest (imgdir, index, name, m));
      ret = rt_image_write_json (index_path, index, err);
    }
  return ret;
}

int
rt_local_image_import (rt_context *ctx, const char *path, char **id_out, rt_error **err)
{
  cleanup_free char *ldir = rt_strdup_printf ("%s/images/layers", ctx->data_dir);
  cleanup_json json_object *m = NULL;
  struct import im = { .path = path, .ldir = ldir };
  int ret;

  if (ldir == NULL)
    return rt_error_oom (err);
  ret = rt_tenant_refuse (ctx, "importing an image", err);
  if (ret == 0)
    ret = rt_image_store_open (ctx, err);
  if (ret == 0)
    ret = read_archive (&im, err);
  if (ret == 0)
    ret = check_archive (&im, &m, err);
  if (ret == 0)
    ret = store_import (ctx, &im, m, err);
  import_clear (&im);
  if (ret < 0)
    return ret;
  *id_out = strdup (rt_json_str (m, "id"));
  return *id_out ? ret : rt_error_oom (err);
}
