/* base.c - the default image "runtime": built on first use from the base
   recipe (debootstrap), and made again when an upgrade brings a new
   recipe.

   <cache>/base/rootfs-<recipe sha256>.tar.zst   the debootstrap tree (0600)
   <cache>/base/rootfs-<…>.tar.zst.apt-hosts     the hosts of its apt
                                                 sources, "http://HOST/"
                                                 a line
   base/ (0700) has a .lock held around the slow step; the tree is made
   in a 0700 .build-XXXXXX directory in it; files appear by rename only,
   so a name that exists is complete.  */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <json-c/json.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "image/base.h"
#include "image/scope.h"
#include "image/store.h"
#include "image/tar.h"

#define RECIPE "runtime-base-rootfs"
#define APT_HOSTS_MAX 15
/* More than any sources list; more is not read.  */
#define SOURCES_MAX (256 * 1024)

static const char *const default_env[] = {
  "PIP_BREAK_SYSTEM_PACKAGES=1",
  "PATH=/workspace/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  NULL,
};

static bool
names_default (const char *ref)
{
  return ref == NULL || *ref == '\0'
         || (strncmp (ref, RT_IMAGE_DEFAULT, strlen (RT_IMAGE_DEFAULT)) == 0
             && strchr (":@", ref[strlen (RT_IMAGE_DEFAULT)]) != NULL);
}

/* Runs the base recipe, passing its "runtime: " lines on as progress and
   keeping the last lines of its output for the error.  */
static int
run_recipe (rt_context *ctx, const char *recipe, const char *dir, rt_error **err)
{
  enum
  {
    TAIL = 12
  };
  char *tail[TAIL] = { NULL };
  cleanup_free char *line = NULL;
  cleanup_free char *msg = NULL;
  cleanup_file FILE *f = NULL;
  size_t cap = 0, seen = 0;
  int fd, status = 0, ret = 0;
  ssize_t n;
  pid_t pid;

  /* Through sh: the installed copy need not be executable.  */
  ret = rt_spawn_piped ((char *const[]){ (char *) "/bin/sh", (char *) recipe, (char *) dir, NULL }, &pid, &fd, err);
  if (ret < 0)
    return ret;
  f = fdopen (fd, "r");
  if (f == NULL)
    close (fd);
  while (f && (n = getline (&line, &cap, f)) >= 0)
    {
      while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
      if (strncmp (line, "runtime: ", 9) == 0)
        rt_progress (ctx, "%s", line + 9);
      free (tail[seen % TAIL]);
      tail[seen++ % TAIL] = strdup (line);
    }
  while (waitpid (pid, &status, 0) < 0)
    if (errno != EINTR)
      {
        ret = rt_error_set (err, errno, "internal", "waitpid: %s", strerror (errno));
        break;
      }
  if (ret == 0 && !(WIFEXITED (status) && WEXITSTATUS (status) == 0))
    {
      size_t len = 0;
      FILE *m = open_memstream (&msg, &len);
      for (size_t i = seen > TAIL ? seen - TAIL : 0; m && i < seen; i++)
        if (tail[i % TAIL])
          fprintf (m, "\n  %s", tail[i % TAIL]);
      if (m)
        fclose (m);
      rt_error_set (err, EIO, "internal", "building the default image failed (%s %d):%s",
                    WIFEXITED (status) ? "exit" : "signal", WIFEXITED (status) ? WEXITSTATUS (status) : WTERMSIG (status),
                    msg ? msg : "");
      ret = rt_error_hint (err, "check the network and apt's sources; RUNTIME_DEBIAN_MIRROR picks the mirror");
    }
  for (int i = 0; i < TAIL; i++)
    free (tail[i]);
  return ret;
}

/* The SHA-256 of the installed base recipe: a new one (runtime upgraded)
   makes a new version of the default image.  */
static int
recipe_key (rt_context *ctx, char key[65], rt_error **err)
{
  cleanup_free char *recipe = rt_strdup_printf ("%s/%s", ctx->libexec_dir, RECIPE);

  if (recipe == NULL)
    return rt_error_oom (err);
  if (access (recipe, R_OK) < 0)
    {
      rt_error_set (err, errno, "internal", "the default image's recipe '%s' is missing: %s", recipe,
                    strerror (errno));
      return rt_error_hint (err, "reinstall runtime");
    }
  return rt_sha256_file (recipe, key, err);
}

/* The default image's latest id, when the recipe @key made it.  */
static const char *
current_default (rt_context *ctx, json_object *index, const char *key)
{
  const char *found = rt_image_index_resolve (index, RT_IMAGE_DEFAULT), *made_by;
  cleanup_free char *path = NULL;
  cleanup_json json_object *m = NULL;

  if (found == NULL)
    return NULL;
  path = rt_strdup_printf ("%s/images/manifests/%s.json", ctx->data_dir, found);
  if (path == NULL || rt_image_read_json (path, false, &m, NULL) < 0)
    return NULL;
  made_by = rt_json_str (m, "recipe");
  return made_by && strcmp (made_by, key) == 0 ? found : NULL;
}

/* Bases of older recipes are dead weight (stores that use them hold their
   own copy or hard link).  */
static void
prune_bases (const char *basedir, const char *keep)
{
  cleanup_dir DIR *d = opendir (basedir);
  struct dirent *de;

  while (d && (de = readdir (d)))
    if (fnmatch ("rootfs-*.tar.*", de->d_name, 0) == 0 && fnmatch (keep, de->d_name, 0) != 0)
      unlinkat (dirfd (d), de->d_name, 0);
}

/* Runs @recipe into a tree under @basedir (locked), tars it into
   @prefix<ext> and removes the tree.  */
static int
build_base (rt_context *ctx, const char *recipe, const char *basedir, const char *prefix, const char *keep,
            rt_error **err)
{
  cleanup_free char *tmpdir = NULL;
  cleanup_free char *rootfs = NULL;
  cleanup_free char *debootstrap = rt_find_program ("debootstrap");
  cleanup_error rt_error *ignored = NULL;
  uint64_t t0;
  int ret = 0;

  if (debootstrap == NULL)
    {
      rt_error_set (err, ENOENT, "internal", "debootstrap not found");
      return rt_error_hint (err, "apt-get install debootstrap");
    }
  if (geteuid () != 0)
    {
      rt_error_set (err, EPERM, "internal", "building the default image needs root (debootstrap)");
      return rt_error_hint (err, "run runtime as root");
    }

  rt_progress (ctx, "Building the default image (debootstrap, about a minute)…");
  t0 = rt_now_ms ();
  tmpdir = rt_strdup_printf ("%s/.build-XXXXXX", basedir);
  if (tmpdir == NULL)
    return rt_error_oom (err);
  if (mkdtemp (tmpdir) == NULL)
    return rt_error_set (err, errno, "internal", "cannot create a directory in '%s': %s", basedir, strerror (errno));
  rootfs = rt_strdup_printf ("%s/rootfs", tmpdir);
  if (rootfs == NULL)
    ret = rt_error_oom (err);
  if (ret == 0)
    ret = run_recipe (ctx, recipe, rootfs, err);
  if (ret == 0)
    {
      rt_progress (ctx, "Packing the default image…");
      ret = rt_image_tar_tree (rootfs, prefix, err);
    }
  /* The tree is big and the tar has it all.  */
  if (ret == 0)
    ret = rt_rm_rf (tmpdir, err);
  else
    rt_rm_rf (tmpdir, &ignored);
  if (ret < 0)
    return ret;
  prune_bases (basedir, keep);
  rt_progress (ctx, "Default image built in %llu s", (unsigned long long) (rt_now_ms () - t0 + 500) / 1000);
  return 0;
}

/* Adds the hosts of the apt source URIs in @text to @hosts (*n so far,
   at most APT_HOSTS_MAX).  */
static void
apt_hosts_add (const char *text, char **hosts, size_t *n)
{
  for (const char *p = text; (p = strstr (p, "://")) && *n < APT_HOSTS_MAX;)
    {
      size_t len;
      p += 3;
      len = strcspn (p, "/: \t\r\n");
      if (len > 0 && len < 254)
        {
          cleanup_free char *h = strndup (p, len);
          bool seen = false;
          for (size_t i = 0; i < *n && h; i++)
            seen |= strcmp (hosts[i], h) == 0;
          if (h && !seen)
            hosts[(*n)++] = steal_pointer (&h);
        }
      p += len;
    }
}

/* etc/apt/sources.list, or a *.list or *.sources in sources.list.d.  */
static bool
is_apt_sources (const char *path)
{
  const char *d = "etc/apt/sources.list.d/";

  if (strncmp (path, "./", 2) == 0)
    path += 2;
  if (strcmp (path, "etc/apt/sources.list") == 0)
    return true;
  if (strncmp (path, d, strlen (d)) != 0 || strchr (path + strlen (d), '/'))
    return false;
  return fnmatch ("*.list", path + strlen (d), 0) == 0 || fnmatch ("*.sources", path + strlen (d), 0) == 0;
}

/* The apt sources in @tar, the base this host built, one after the other
   into @f.  */
static int
read_tar_sources (const char *tar, FILE *f, rt_error **err)
{
  struct archive *a = archive_read_new ();
  struct archive_entry *e;
  char buf[16384];
  size_t total = 0;
  ssize_t got;
  int ret = 0, r;

  if (a == NULL)
    return rt_error_oom (err);
  archive_read_support_format_tar (a);
  archive_read_support_filter_all (a);
  if (archive_read_open_filename (a, tar, 1 << 16) != ARCHIVE_OK)
    ret = rt_error_set (err, EIO, "internal", "cannot read '%s': %s", tar, archive_error_string (a));
  while (ret == 0 && (r = archive_read_next_header (a, &e)) != ARCHIVE_EOF)
    {
      if (r < ARCHIVE_WARN)
        ret = rt_error_set (err, EIO, "internal", "cannot read '%s': %s", tar, archive_error_string (a));
      else if (archive_entry_filetype (e) == AE_IFREG && is_apt_sources (archive_entry_pathname (e)))
        {
          while (total < SOURCES_MAX && (got = archive_read_data (a, buf, sizeof buf)) > 0)
            {
              total += (size_t) got;
              fwrite (buf, 1, (size_t) got, f);
            }
          fputc ('\n', f);
        }
    }
  archive_read_free (a);
  return ret;
}

/* The hosts of the apt sources of the base tar @tar, recorded beside it
   the first time (the tar is made by this host, from its mirror).  */
static int
base_apt_hosts (const char *tar, char ***out, rt_error **err)
{
  cleanup_free char *record = rt_strdup_printf ("%s.apt-hosts", tar);
  cleanup_free char *text = NULL;
  cleanup_strv char **hosts = calloc (APT_HOSTS_MAX + 1, sizeof (char *));
  size_t len = 0, n = 0;
  int ret;

  if (record == NULL || hosts == NULL)
    return rt_error_oom (err);
  if (rt_read_file (record, &text, &len, NULL) < 0)
    {
      cleanup_error rt_error *ignored = NULL;
      FILE *f = open_memstream (&text, &len);
      if (f == NULL)
        return rt_error_oom (err);
      ret = read_tar_sources (tar, f, err);
      if (fclose (f) != 0 && ret == 0)
        ret = rt_error_oom (err);
      if (ret < 0)
        return ret;
      apt_hosts_add (text, hosts, &n);
      free (text);
      text = NULL;
      f = open_memstream (&text, &len);
      for (size_t i = 0; f && i < n; i++)
        fprintf (f, "http://%s/\n", hosts[i]);
      if (f == NULL || fclose (f) != 0)
        return rt_error_oom (err);
      /* A cache this user cannot write: judged again next time.  */
      rt_write_file_atomic (record, text, len, 0600, &ignored);
    }
  else
    apt_hosts_add (text, hosts, &n);
  /* No host would mean no allow list: the whole internet.  */
  if (n == 0)
    {
      rt_error_set (err, ENOENT, "internal", "the default image's apt sources name no host (%s)", tar);
      return rt_error_hint (err, "remove '%s' and build the default image again", tar);
    }
  *out = steal_pointer (&hosts);
  return 0;
}

/* The cached tar of the base rootfs, built with the recipe when missing.  */
static int
ensure_base (rt_context *ctx, char **out, rt_error **err)
{
  cleanup_free char *recipe = rt_strdup_printf ("%s/%s", ctx->libexec_dir, RECIPE);
  cleanup_free char *basedir = rt_strdup_printf ("%s/base", ctx->cache_dir);
  cleanup_free char *prefix = NULL;
  cleanup_free char *keep = NULL;
  cleanup_free char *tar = NULL;
  cleanup_close int lockfd = -1;
  char key[65];
  int ret;

  if (recipe == NULL || basedir == NULL)
    return rt_error_oom (err);
  ret = recipe_key (ctx, key, err);
  if (ret < 0)
    return ret;
  prefix = rt_strdup_printf ("%s/rootfs-%s", basedir, key);
  keep = rt_strdup_printf ("rootfs-%s.tar.*", key);
  if (prefix == NULL || keep == NULL)
    return rt_error_oom (err);
  tar = rt_image_find_tar (prefix, "");
  if (tar)
    {
      *out = steal_pointer (&tar);
      return 0;
    }

  ret = rt_image_lock_dir (basedir, &lockfd, err);
  if (ret < 0)
    return ret;
  tar = rt_image_find_tar (prefix, "");
  if (tar)
    {
      *out = steal_pointer (&tar);
      return 0;
    }
  rt_remove_matching (basedir, ".build-*");
  rt_remove_matching (basedir, "*.tmp.*");
  ret = build_base (ctx, recipe, basedir, prefix, keep, err);
  if (ret < 0)
    return ret;
  tar = rt_image_find_tar (prefix, "");
  if (tar == NULL)
    return rt_error_set (err, ENOENT, "internal", "the base tar under '%s' vanished", basedir);
  /* Recorded now, while only this host has written the tree.  */
  {
    cleanup_strv char **hosts = NULL;
    ret = base_apt_hosts (tar, &hosts, err);
    if (ret < 0)
      return ret;
  }
  *out = steal_pointer (&tar);
  return 0;
}

static json_object *
strv_json (const char *const *v)
{
  json_object *a = json_object_new_array ();
  for (; a && *v; v++)
    json_object_array_add (a, json_object_new_string (*v));
  return a;
}

/* Writes the default image's manifest: version @version of one layer,
   @digest, made by recipe @key.  Its id in @id.  */
static int
write_default_manifest (const char *imgdir, const char *base_tar, const char *key, const char *digest, long version,
                        char id[65], rt_error **err)
{
  cleanup_json json_object *m = NULL;
  char created[32];
  struct stat st;
  struct tm tm;
  int ret;

  if (stat (base_tar, &st) < 0)
    return rt_error_set (err, errno, "internal", "cannot stat '%s': %s", base_tar, strerror (errno));
  gmtime_r (&st.st_mtime, &tm);
  strftime (created, sizeof (created), "%Y-%m-%dT%H:%M:%SZ", &tm);
  m = json_object_new_object ();
  if (m == NULL)
    return rt_error_oom (err);
  json_object_object_add (m, "name", json_object_new_string (RT_IMAGE_DEFAULT));
  json_object_object_add (m, "version", json_object_new_int64 (version));
  json_object_object_add (m, "tags", strv_json ((const char *const[]){ "latest", NULL }));
  json_object_object_add (m, "layers", strv_json ((const char *const[]){ digest, NULL }));
  json_object_object_add (m, "env", strv_json (default_env));
  json_object_object_add (m, "workdir", json_object_new_string ("/workspace"));
  json_object_object_add (m, "recipe", json_object_new_string (key));
  json_object_object_add (m, "created", json_object_new_string (created));
  ret = rt_image_manifest_id (m, id, err);
  if (ret < 0)
    return ret;
  return rt_image_manifest_write (imgdir, m, id, err);
}

/* Adds the default image to the store, from the cached base tar.  The
   manifest is deterministic (created = the base tar's mtime), so every
   store gets the same id and so shares one cached boot disk.  */
static int
import_default (rt_context *ctx, const char *base_tar, const char *key, char **id_out, rt_error **err)
{
  cleanup_free char *imgdir = rt_strdup_printf ("%s/images", ctx->data_dir);
  cleanup_free char *index_path = NULL;
  cleanup_free char *layers_dir = NULL;
  cleanup_free char *manifests_dir = NULL;
  cleanup_json json_object *index = NULL;
  cleanup_close int lockfd = -1;
  const char *found;
  char digest[65], id[65];
  int ret;

  if (imgdir == NULL)
    return rt_error_oom (err);
  index_path = rt_strdup_printf ("%s/index.json", imgdir);
  layers_dir = rt_strdup_printf ("%s/layers", imgdir);
  manifests_dir = rt_strdup_printf ("%s/manifests", imgdir);
  if (index_path == NULL || layers_dir == NULL || manifests_dir == NULL)
    return rt_error_oom (err);
  ret = rt_image_lock_dir (imgdir, &lockfd, err);
  if (ret == 0)
    ret = rt_image_private_dir (layers_dir, err);
  if (ret == 0)
    ret = rt_image_private_dir (manifests_dir, err);
  if (ret == 0)
    ret = rt_image_read_json (index_path, true, &index, err);
  if (ret < 0)
    return ret;
  /* Another process may have added it while we waited.  */
  found = current_default (ctx, index, key);
  if (found)
    {
      *id_out = strdup (found);
      return *id_out ? 0 : rt_error_oom (err);
    }
  rt_remove_matching (layers_dir, "*.tmp.*");
  rt_remove_matching (manifests_dir, "*.tmp.*");

  ret = rt_image_store_layer (imgdir, base_tar, digest, err);
  if (ret == 0)
    ret = write_default_manifest (imgdir, base_tar, key, digest, rt_image_index_next (index, RT_IMAGE_DEFAULT), id,
                                  err);
  if (ret < 0)
    return ret;
  rt_image_index_add (index, RT_IMAGE_DEFAULT, id, NULL, true);
  ret = rt_image_write_json (index_path, index, err);
  if (ret < 0)
    return ret;
  *id_out = strdup (id);
  return *id_out ? 0 : rt_error_oom (err);
}

/* Whether @ref names the default image's latest version, which the
   installed recipe remakes when it changed.  */
static bool
names_default_latest (const char *ref)
{
  return names_default (ref) && (ref == NULL || strchr (ref, '@') == NULL)
         && (ref == NULL || strchr (ref, ':') == NULL || strcmp (strchr (ref, ':'), ":latest") == 0);
}

/* Makes the default image of the installed recipe; its id in *id.  */
static int
make_default (rt_context *ctx, char **id, rt_error **err)
{
  cleanup_free char *base = NULL;
  char key[65];
  int ret;

  ret = recipe_key (ctx, key, err);
  if (ret == 0)
    ret = ensure_base (ctx, &base, err);
  if (ret == 0)
    ret = import_default (ctx, base, key, id, err);
  return ret;
}

int
rt_image_resolve (rt_context *ctx, const char *ref, char **id_out, rt_error **err)
{
  cleanup_json json_object *index = NULL;
  cleanup_free char *made = NULL;
  const char *found;
  char key[65];
  int ret;

  ret = rt_image_read_index (ctx, &index, err);
  if (ret < 0)
    return ret;
  found = rt_image_resolve_in (ctx, index, ref);
  if (found && names_default_latest (ref))
    {
      ret = recipe_key (ctx, key, err);
      if (ret < 0)
        return ret;
      if (current_default (ctx, index, key) == NULL)
        found = NULL;
    }
  if (found == NULL && names_default (ref))
    {
      ret = make_default (ctx, &made, err);
      if (ret < 0)
        return ret;
      /* "runtime@2" or "runtime:beta" still need to exist.  */
      json_object_put (steal_pointer (&index));
      ret = rt_image_read_index (ctx, &index, err);
      if (ret < 0)
        return ret;
      found = rt_image_resolve_in (ctx, index, ref);
    }
  if (found == NULL)
    return rt_image_unresolved (ctx, index, ref, err);
  *id_out = strdup (found);
  return *id_out ? 0 : rt_error_oom (err);
}

int
rt_image_base_apt_hosts (rt_context *ctx, char ***hosts, rt_error **err)
{
  cleanup_free char *tar = NULL;
  int ret = ensure_base (ctx, &tar, err);

  return ret < 0 ? ret : base_apt_hosts (tar, hosts, err);
}
