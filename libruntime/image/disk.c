/* disk.c - the ext4 boot disks derived from images: the image's layers
   extracted in order (image/extract.c) and given to mkfs.ext4 -d.

   <cache>/disks/<id>.ext4   boot disks, by image id, shared read-only by
                             the image's sandboxes (0600)
   <cache>/disks/.tmp-XXXXXX/root
                             the tree being made into a disk, in a 0700
                             directory (image/extract.c)
   disks/ (0700) has a .lock held around the slow step; a disk appears by
   rename only, so a name that exists is complete.  */
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "image/base.h"
#include "image/disk.h"
#include "image/extract.h"
#include "image/store.h"
#include "image/tar.h"

/* The size of every boot disk: the smallest a sandbox's disk can be.  */
#define DISK_MIB RT_MIN_DISK_MIB

void
rt_image_disk_clear (struct rt_image_disk *d)
{
  if (d == NULL)
    return;
  free (d->id);
  free (d->disk);
  free (d->workdir);
  if (d->env)
    {
      for (char **p = d->env; *p; p++)
        free (*p);
      free (d->env);
    }
  d->id = d->disk = d->workdir = NULL;
  d->env = NULL;
}

static int
get_strv (json_object *m, const char *key, char ***out, rt_error **err)
{
  json_object *a;
  size_t n;
  char **v;

  if (!json_object_object_get_ex (m, key, &a) || !json_object_is_type (a, json_type_array))
    n = 0;
  else
    n = json_object_array_length (a);
  v = calloc (n + 1, sizeof (char *));
  if (v == NULL)
    return rt_error_oom (err);
  for (size_t i = 0; i < n; i++)
    {
      json_object *s = json_object_array_get_idx (a, i);
      v[i] = strdup (json_object_is_type (s, json_type_string) ? json_object_get_string (s) : "");
      if (v[i] == NULL)
        {
          cleanup_strvp (&v);
          return rt_error_oom (err);
        }
    }
  *out = v;
  return 0;
}

/* Extracts @layers, in order, over @root: together they unpack to at
   most RT_LAYER_MAX_BYTES.  */
static int
extract_layers (rt_context *ctx, const char *id, char **layers, const char *root, rt_error **err)
{
  struct rt_layer_budget budget = { .limit = RT_LAYER_MAX_BYTES };
  int ret = 0;

  for (size_t i = 0; ret == 0 && layers[i]; i++)
    {
      cleanup_free char *prefix = rt_strdup_printf ("%s/images/layers/", ctx->data_dir);
      cleanup_free char *path = NULL;
      if (prefix == NULL)
        ret = rt_error_oom (err);
      else if (!rt_image_is_sha256 (layers[i]) || (path = rt_image_find_tar (prefix, layers[i])) == NULL)
        ret = rt_error_set (err, ENOENT, "internal", "layer %s of image %s is missing from the store", layers[i], id);
      else
        ret = rt_image_extract_layer (root, path, i > 0, &budget, err);
    }
  return ret;
}

/* mkfs.ext4 -d @root into the new file @tmpdisk.  */
static int
run_mkfs (const char *mkfs, const char *id, const char *root, const char *tmpdisk, rt_error **err)
{
  cleanup_free char *output = NULL;
  char size[24];
  /* A sparse file reads zeros where the journal would be zeroed:
     lazy_journal_init saves writing (and storing) 64 MiB of them.  */
  char *argv[] = { (char *) mkfs, (char *) "-q", (char *) "-F", (char *) "-L", (char *) "runtime", (char *) "-E",
                   (char *) "root_owner=0:0,lazy_journal_init=1", (char *) "-d", (char *) root, (char *) tmpdisk,
                   size, NULL };
  int status;

  snprintf (size, sizeof size, "%dM", DISK_MIB);
  status = rt_run_capture (argv, &output, err);
  if (status < 0)
    return status;
  if (status != 0)
    return rt_error_set (err, EIO, "internal", "mkfs.ext4 failed for image %s: %s", id, output ? output : "");
  return 0;
}

/* Makes <cache>/disks/<id>.ext4 from the image's layers: they are
   extracted in a private work dir, the disk made under a temporary name
   (0600, O_EXCL) and renamed; on failure neither is left.  */
static int
make_disk (rt_context *ctx, const char *id, json_object *manifest, const char *disk, rt_error **err)
{
  cleanup_free char *disks = rt_strdup_printf ("%s/disks", ctx->cache_dir);
  cleanup_free char *mkfs = NULL;
  cleanup_free char *work = NULL;
  cleanup_free char *root = NULL;
  cleanup_free char *tmpdisk = NULL;
  cleanup_strv char **layers = NULL;
  cleanup_close int lockfd = -1;
  cleanup_close int fd = -1;
  cleanup_error rt_error *ignored = NULL;
  const char *name = rt_json_str (manifest, "name");
  struct stat st;
  int ret;

  if (disks == NULL)
    return rt_error_oom (err);
  mkfs = rt_find_program ("mkfs.ext4");
  if (mkfs == NULL)
    {
      rt_error_set (err, ENOENT, "internal", "mkfs.ext4 not found");
      return rt_error_hint (err, "apt-get install e2fsprogs");
    }
  ret = get_strv (manifest, "layers", &layers, err);
  if (ret < 0)
    return ret;
  ret = rt_image_lock_dir (disks, &lockfd, err);
  if (ret < 0)
    return ret;
  if (stat (disk, &st) == 0)
    return 0;
  rt_remove_matching (disks, ".tmp-*");
  rt_remove_matching (disks, "*.tmp.*");

  rt_progress (ctx, "Making the boot disk of image %s…", name ? name : id);
  tmpdisk = rt_strdup_printf ("%s.tmp.XXXXXX", disk);
  if (tmpdisk == NULL)
    return rt_error_oom (err);
  ret = rt_image_work_dir (disks, &work, &root, err);
  if (ret < 0)
    return ret;
  if ((fd = mkostemp (tmpdisk, O_CLOEXEC)) < 0)
    {
      ret = rt_error_set (err, errno, "internal", "cannot create a file in '%s': %s", disks, strerror (errno));
      *tmpdisk = '\0';
    }
  if (ret == 0)
    ret = extract_layers (ctx, id, layers, root, err);
  if (ret == 0)
    ret = run_mkfs (mkfs, id, root, tmpdisk, err);
  if (ret == 0 && rename (tmpdisk, disk) < 0)
    ret = rt_error_set (err, errno, "internal", "cannot rename '%s': %s", tmpdisk, strerror (errno));
  if (ret < 0 && *tmpdisk)
    unlink (tmpdisk);
  if (ret == 0)
    ret = rt_rm_rf (work, err);
  else
    rt_rm_rf (work, &ignored);
  return ret;
}

int
rt_image_ensure_disk (rt_context *ctx, const char *ref, struct rt_image_disk *out, rt_error **err)
{
  cleanup_free char *id = NULL;
  cleanup_free char *manifest_path = NULL;
  cleanup_free char *disk = NULL;
  cleanup_free char *workdir = NULL;
  cleanup_strv char **env = NULL;
  cleanup_json json_object *manifest = NULL;
  const char *w;
  struct stat st;
  int ret;

  ret = rt_image_resolve (ctx, ref, &id, err);
  if (ret < 0)
    return ret;
  manifest_path = rt_strdup_printf ("%s/images/manifests/%s.json", ctx->data_dir, id);
  disk = rt_strdup_printf ("%s/disks/%s.ext4", ctx->cache_dir, id);
  if (manifest_path == NULL || disk == NULL)
    return rt_error_oom (err);
  ret = rt_image_read_json (manifest_path, false, &manifest, err);
  if (ret < 0)
    return ret;
  if (stat (disk, &st) < 0)
    {
      ret = make_disk (ctx, id, manifest, disk, err);
      if (ret < 0)
        return ret;
    }
  ret = get_strv (manifest, "env", &env, err);
  if (ret < 0)
    return ret;
  w = rt_json_str (manifest, "workdir");
  workdir = strdup (w && *w == '/' ? w : "/");
  if (workdir == NULL)
    return rt_error_oom (err);

  out->id = steal_pointer (&id);
  out->disk = steal_pointer (&disk);
  out->env = steal_pointer (&env);
  out->workdir = steal_pointer (&workdir);
  return 0;
}

int
rt_image_disk_for_layers (rt_context *ctx, json_object *layers, const char *name, const char *disk, rt_error **err)
{
  cleanup_json json_object *m = json_object_new_object ();

  json_object_object_add (m, "name", json_object_new_string (name));
  json_object_object_add (m, "layers", json_object_get (layers));
  return make_disk (ctx, "build", m, disk, err);
}
