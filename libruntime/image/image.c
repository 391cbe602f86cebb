/* image.c - the image store, the default image "runtime" (built on first
   use from the base recipe) and the ext4 boot disks derived from images.

   <data>/images/
     layers/<sha256>.tar.zst  a layer: pax tar, zstd (.tar.gz where
                              libarchive lacks zstd), named by the SHA-256
                              of the compressed file
     manifests/<id>.json      {id, name, version, tags, layers, env,
                              workdir, created}; id = SHA-256 of the
                              manifest's plain JSON without "id"
     index.json               {"names": {NAME: {"versions": {"1": ID},
                                                "tags": {"latest": ID}}}}
     .lock                    held while the store changes
   <cache>/base/rootfs-<recipe sha256>.tar.zst   the debootstrap tree
   <cache>/disks/<id>.ext4                       boot disks, by image id
   Each of base/ and disks/ has a .lock held around its slow step.  Files
   appear by rename only, so a name that exists is complete.  */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <json-c/json.h>
#include <limits.h>
#include <openssl/evp.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "core/context.h"
#include "image/image.h"
#include "sandbox/store.h"

#define DEFAULT_IMAGE "runtime"
#define DISK_SIZE "4096M"
#define RECIPE "runtime-base-rootfs"

static const char *const default_env[] = {
  "PIP_BREAK_SYSTEM_PACKAGES=1",
  "PATH=/workspace/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  NULL,
};

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

static bool
is_sha256 (const char *s)
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

static int
archive_fail (rt_error **err, struct archive *a, const char *what, const char *path)
{
  int e = archive_errno (a);
  return rt_error_set (err, e > 0 ? e : EIO, "internal", "%s '%s': %s", what, path,
                       archive_error_string (a) ? archive_error_string (a) : "unknown libarchive error");
}

enum
{
  COPY_OK = 0,
  COPY_READ_FAILED = -1,  /* @in's error says why */
  COPY_WRITE_FAILED = -2, /* @out's */
};

/* Entry @e (its header, then its data) from @in to @out: block by block
   with offsets to a disk writer (@to_disk: holes stay holes), as a stream
   to an archive writer.  */
static int
copy_entry (struct archive *in, struct archive *out, struct archive_entry *e, bool to_disk)
{
  const void *buf;
  size_t size;
  la_int64_t off;
  int r;

  if (archive_write_header (out, e) < ARCHIVE_WARN)
    return COPY_WRITE_FAILED;
  if (archive_entry_size (e) <= 0)
    return COPY_OK;
  while ((r = archive_read_data_block (in, &buf, &size, &off)) == ARCHIVE_OK)
    if (to_disk ? archive_write_data_block (out, buf, size, off) < ARCHIVE_WARN
                : archive_write_data (out, buf, size) < 0)
      return COPY_WRITE_FAILED;
  return r == ARCHIVE_EOF ? COPY_OK : COPY_READ_FAILED;
}


/* The existing file <prefix><sha>.tar.zst or .tar.gz, or NULL.  */
static char *
find_tar (const char *prefix, const char *name)
{
  static const char *const exts[] = { ".tar.zst", ".tar.gz", NULL };
  struct stat st;

  for (const char *const *e = exts; *e; e++)
    {
      char *p = rt_strdup_printf ("%s%s%s", prefix, name, *e);
      if (p == NULL || (stat (p, &st) == 0 && S_ISREG (st.st_mode)))
        return p;
      free (p);
    }
  return NULL;
}

static int
read_json (const char *path, bool missing_ok, json_object **out, rt_error **err)
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

static int
write_json (const char *path, json_object *o, rt_error **err)
{
  const char *s = json_object_to_json_string_ext (o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
  cleanup_free char *text = s ? rt_strdup_printf ("%s\n", s) : NULL;

  if (text == NULL)
    return rt_error_oom (err);
  return rt_write_file_atomic (path, text, strlen (text), 0644, err);
}

static const char *
get_string (json_object *o, const char *key)
{
  json_object *v;
  return json_object_object_get_ex (o, key, &v) && json_object_is_type (v, json_type_string)
             ? json_object_get_string (v)
             : NULL;
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
    return get_string (versions, version);
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

/* Resolves an image reference: "name", "name:tag", "name@version", or an
   id or id prefix of at least 12 hex digits.  NULL or "" is the default.
   Return: the id (owned by @index), or NULL.  */
static const char *
index_resolve (json_object *index, const char *ref)
{
  cleanup_free char *name = NULL;
  json_object *names, *img, *tags;
  const char *sep, *id = NULL;
  size_t n;

  if (ref == NULL || *ref == '\0')
    ref = DEFAULT_IMAGE;
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
        id = get_string (tags, *sep == ':' ? sep + 1 : "latest");
      if (id == NULL && *sep == '\0')
        id = version_id (img, NULL);
      if (is_sha256 (id))
        return id;
    }

  if (strlen (ref) < 12 || strspn (ref, "0123456789abcdef") != strlen (ref))
    return NULL;
  json_object_object_foreach (names, k, v)
  {
    json_object *versions;
    (void) k;
    if (!json_object_object_get_ex (v, "versions", &versions) || !json_object_is_type (versions, json_type_object))
      continue;
    json_object_object_foreach (versions, vk, vid)
    {
      const char *s = json_object_get_string (vid);
      (void) vk;
      if (is_sha256 (s) && strncmp (s, ref, strlen (ref)) == 0)
        return s;
    }
  }
  return NULL;
}

static bool
names_default (const char *ref)
{
  return ref == NULL || *ref == '\0'
         || (strncmp (ref, DEFAULT_IMAGE, strlen (DEFAULT_IMAGE)) == 0
             && strchr (":@", ref[strlen (DEFAULT_IMAGE)]) != NULL);
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
  int pipefd[2], status = 0, ret = 0;
  ssize_t n;
  pid_t pid;

  if (pipe2 (pipefd, O_CLOEXEC) < 0)
    return rt_error_set (err, errno, "internal", "pipe: %s", strerror (errno));
  pid = fork ();
  if (pid < 0)
    {
      close (pipefd[0]);
      close (pipefd[1]);
      return rt_error_set (err, errno, "internal", "fork: %s", strerror (errno));
    }
  if (pid == 0)
    {
      int devnull = open ("/dev/null", O_RDONLY);
      if (devnull >= 0)
        dup2 (devnull, 0);
      dup2 (pipefd[1], 1);
      dup2 (pipefd[1], 2);
      /* Through sh: the installed copy need not be executable.  */
      execl ("/bin/sh", "sh", recipe, dir, (char *) NULL);
      dprintf (2, "cannot run /bin/sh: %s\n", strerror (errno));
      _exit (127);
    }
  close (pipefd[1]);
  f = fdopen (pipefd[0], "r");
  if (f == NULL)
    close (pipefd[0]);
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

/* Tarring a tree in sorted order (the same tree gives the same tar),
   numeric owners only (the host's names mean nothing in the guest), one
   file system only.  */
struct tar_walk
{
  struct archive *disk;
  struct archive *out;
  struct archive_entry_linkresolver *links;
  dev_t dev;
  size_t root_len;
  char path[PATH_MAX];
  char buf[1 << 16];
};

static int
by_name (const struct dirent **a, const struct dirent **b)
{
  return strcmp ((*a)->d_name, (*b)->d_name);
}

static int
not_dots (const struct dirent *d)
{
  return strcmp (d->d_name, ".") != 0 && strcmp (d->d_name, "..") != 0;
}

static int
tar_add (struct tar_walk *w, const struct stat *st, rt_error **err)
{
  struct archive_entry *e = archive_entry_new ();
  struct archive_entry *spare = NULL;
  cleanup_close int fd = -1;
  int ret = 0;

  if (e == NULL)
    return rt_error_oom (err);
  if (S_ISREG (st->st_mode))
    {
      fd = open (w->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0)
        {
          archive_entry_free (e);
          return rt_error_set (err, errno, "internal", "cannot open '%s': %s", w->path, strerror (errno));
        }
    }
  archive_entry_copy_sourcepath (e, w->path);
  archive_entry_copy_pathname (e, w->path + w->root_len + 1);
  if (archive_read_disk_entry_from_file (w->disk, e, fd, st) < ARCHIVE_WARN)
    ret = archive_fail (err, w->disk, "cannot read", w->path);
  /* Times other than mtime would only make the tar differ run to run.  */
  archive_entry_unset_atime (e);
  archive_entry_unset_ctime (e);
  archive_entry_unset_birthtime (e);
  if (ret == 0)
    archive_entry_linkify (w->links, &e, &spare);
  if (ret == 0 && archive_write_header (w->out, e) < ARCHIVE_WARN)
    ret = archive_fail (err, w->out, "cannot write", w->path);
  /* After linkify a later hard link has size 0: only its first name
     carries the data.  */
  if (ret == 0 && fd >= 0 && archive_entry_size (e) > 0)
    {
      int64_t left = archive_entry_size (e);
      while (ret == 0 && left > 0)
        {
          ssize_t n = read (fd, w->buf, left < (int64_t) sizeof (w->buf) ? (size_t) left : sizeof (w->buf));
          if (n < 0 && errno == EINTR)
            continue;
          if (n <= 0)
            ret = rt_error_set (err, n < 0 ? errno : EIO, "internal", "cannot read '%s' (did it change?)", w->path);
          else if (archive_write_data (w->out, w->buf, n) != n)
            ret = archive_fail (err, w->out, "cannot write", w->path);
          else
            left -= n;
        }
    }
  archive_entry_free (e);
  archive_entry_free (spare);
  return ret;
}

static int
tar_dir (struct tar_walk *w, rt_error **err)
{
  struct dirent **names = NULL;
  size_t len = strlen (w->path);
  int n, ret = 0;

  n = scandir (w->path, &names, not_dots, by_name);
  if (n < 0)
    return rt_error_set (err, errno, "internal", "cannot list '%s': %s", w->path, strerror (errno));
  for (int i = 0; i < n; i++)
    {
      struct stat st;
      if (ret == 0)
        {
          if (len + 1 + strlen (names[i]->d_name) >= sizeof (w->path))
            ret = rt_error_set (err, ENAMETOOLONG, "internal", "path too long under '%s'", w->path);
          else
            {
              w->path[len] = '/';
              strcpy (w->path + len + 1, names[i]->d_name);
              if (lstat (w->path, &st) < 0)
                ret = rt_error_set (err, errno, "internal", "cannot stat '%s': %s", w->path, strerror (errno));
              if (ret == 0)
                ret = tar_add (w, &st, err);
              /* A mount point's contents are not the tree's.  */
              if (ret == 0 && S_ISDIR (st.st_mode) && st.st_dev == w->dev)
                ret = tar_dir (w, err);
              w->path[len] = '\0';
            }
        }
      free (names[i]);
    }
  free (names);
  return ret;
}

/* A layer writer: pax tar through zstd, or gzip where libarchive was built
   without zstd.  *ext names the result.  */
static int
layer_writer (int fd, const char *where, struct archive **out, const char **ext, rt_error **err)
{
  struct archive *a = archive_write_new ();

  if (a == NULL)
    return rt_error_oom (err);
  if (archive_write_add_filter_zstd (a) == ARCHIVE_OK)
    *ext = ".tar.zst";
  else
    {
      /* The failed attempt may leave state behind; start clean.  */
      archive_write_free (a);
      a = archive_write_new ();
      if (a == NULL)
        return rt_error_oom (err);
      if (archive_write_add_filter_gzip (a) != ARCHIVE_OK)
        {
          archive_fail (err, a, "cannot compress", where);
          archive_write_free (a);
          return -EIO;
        }
      *ext = ".tar.gz";
    }
  if (archive_write_set_format_pax_restricted (a) != ARCHIVE_OK || archive_write_open_fd (a, fd) != ARCHIVE_OK)
    {
      int ret = archive_fail (err, a, "cannot write", where);
      archive_write_free (a);
      return ret;
    }
  *out = a;
  return 0;
}

/* Tars @root into @dest_prefix<ext> (through a temp name).  */
static int
tar_tree (const char *root, const char *dest_prefix, rt_error **err)
{
  cleanup_free char *tmp = rt_strdup_printf ("%s.tmp.%d", dest_prefix, (int) getpid ());
  cleanup_free char *dest = NULL;
  cleanup_free struct tar_walk *w = calloc (1, sizeof (*w));
  cleanup_close int fd = -1;
  const char *ext = NULL;
  struct stat st;
  int ret = 0;

  if (tmp == NULL || w == NULL)
    return rt_error_oom (err);
  if (lstat (root, &st) < 0 || strlen (root) >= sizeof (w->path))
    return rt_error_set (err, errno ? errno : ENAMETOOLONG, "internal", "cannot stat '%s'", root);
  fd = open (tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", tmp, strerror (errno));
  ret = layer_writer (fd, tmp, &w->out, &ext, err);
  if (ret < 0)
    {
      unlink (tmp);
      return ret;
    }
  w->disk = archive_read_disk_new ();
  w->links = archive_entry_linkresolver_new ();
  if (w->disk == NULL || w->links == NULL)
    ret = rt_error_oom (err);
  else
    {
      /* xattrs stay (file capabilities); ACLs, chattr flags and holes are
         not worth their trouble here.  */
      archive_read_disk_set_behavior (w->disk, ARCHIVE_READDISK_NO_ACL | ARCHIVE_READDISK_NO_FFLAGS
                                                   | ARCHIVE_READDISK_NO_SPARSE);
      archive_entry_linkresolver_set_strategy (w->links, archive_format (w->out));
      w->dev = st.st_dev;
      w->root_len = strlen (root);
      strcpy (w->path, root);
      ret = tar_dir (w, err);
    }
  if (ret == 0 && archive_write_close (w->out) != ARCHIVE_OK)
    ret = archive_fail (err, w->out, "cannot write", tmp);
  archive_write_free (w->out);
  archive_read_free (w->disk);
  archive_entry_linkresolver_free (w->links);
  if (ret == 0 && fsync (fd) < 0)
    ret = rt_error_set (err, errno, "internal", "cannot write '%s': %s", tmp, strerror (errno));
  if (ret == 0)
    {
      dest = rt_strdup_printf ("%s%s", dest_prefix, ext);
      if (dest == NULL)
        ret = rt_error_oom (err);
      else if (rename (tmp, dest) < 0)
        ret = rt_error_set (err, errno, "internal", "cannot rename '%s': %s", tmp, strerror (errno));
    }
  if (ret < 0)
    unlink (tmp);
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
  const char *found = index_resolve (index, DEFAULT_IMAGE), *made_by;
  cleanup_free char *path = NULL;
  cleanup_json json_object *m = NULL;

  if (found == NULL)
    return NULL;
  path = rt_strdup_printf ("%s/images/manifests/%s.json", ctx->data_dir, found);
  if (path == NULL || read_json (path, false, &m, NULL) < 0)
    return NULL;
  made_by = get_string (m, "recipe");
  return made_by && strcmp (made_by, key) == 0 ? found : NULL;
}

/* The cached tar of the base rootfs, built with the recipe when missing.  */
static int
ensure_base (rt_context *ctx, char **out, rt_error **err)
{
  cleanup_free char *recipe = rt_strdup_printf ("%s/%s", ctx->libexec_dir, RECIPE);
  cleanup_free char *basedir = rt_strdup_printf ("%s/base", ctx->cache_dir);
  cleanup_free char *prefix = NULL;
  cleanup_free char *keep = NULL;
  cleanup_free char *tmpdir = NULL;
  cleanup_free char *rootfs = NULL;
  cleanup_free char *debootstrap = NULL;
  cleanup_free char *tar = NULL;
  cleanup_close int lockfd = -1;
  cleanup_error rt_error *ignored = NULL;
  char key[65];
  uint64_t t0;
  int ret;

  if (recipe == NULL || basedir == NULL)
    return rt_error_oom (err);
  if (access (recipe, R_OK) < 0)
    {
      rt_error_set (err, errno, "internal", "the default image's recipe '%s' is missing: %s", recipe,
                    strerror (errno));
      return rt_error_hint (err, "reinstall runtime");
    }
  ret = rt_sha256_file (recipe, key, err);
  if (ret < 0)
    return ret;
  prefix = rt_strdup_printf ("%s/rootfs-%s", basedir, key);
  keep = rt_strdup_printf ("rootfs-%s.tar.*", key);
  if (prefix == NULL || keep == NULL)
    return rt_error_oom (err);
  tar = find_tar (prefix, "");
  if (tar)
    {
      *out = steal_pointer (&tar);
      return 0;
    }

  ret = rt_lock_dir (basedir, &lockfd, err);
  if (ret < 0)
    return ret;
  tar = find_tar (prefix, "");
  if (tar)
    {
      *out = steal_pointer (&tar);
      return 0;
    }
  rt_remove_matching (basedir, ".build-*");
  rt_remove_matching (basedir, "*.tmp.*");

  debootstrap = rt_find_program ("debootstrap");
  if (debootstrap == NULL)
    {
      rt_error_set (err, ENOENT, "internal", "debootstrap not found");
      return rt_error_hint (err, "apt-get install debootstrap");
    }
  if (geteuid () != 0)
    {
      rt_error_set (err, EPERM, "internal", "building the default image needs root (debootstrap)");
      return rt_error_hint (err, "run it once as root, or set RUNTIME_CACHE_DIR to a cache that root prepared");
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
      ret = tar_tree (rootfs, prefix, err);
    }
  /* The tree is big and the tar has it all.  */
  if (ret == 0)
    ret = rt_rm_rf (tmpdir, err);
  else
    rt_rm_rf (tmpdir, &ignored);
  if (ret < 0)
    return ret;

  /* Bases of older recipes are dead weight (stores that use them hold
     their own copy or hard link).  */
  {
    cleanup_dir DIR *d = opendir (basedir);
    struct dirent *de;
    while (d && (de = readdir (d)))
      if (fnmatch ("rootfs-*.tar.*", de->d_name, 0) == 0 && fnmatch (keep, de->d_name, 0) != 0)
        unlinkat (dirfd (d), de->d_name, 0);
  }
  rt_progress (ctx, "Default image built in %llu s", (unsigned long long) (rt_now_ms () - t0 + 500) / 1000);
  tar = find_tar (prefix, "");
  if (tar == NULL)
    return rt_error_set (err, ENOENT, "internal", "the base tar under '%s' vanished", basedir);
  *out = steal_pointer (&tar);
  return 0;
}

static int
copy_file (const char *src, const char *dst, rt_error **err)
{
  cleanup_close int in = open (src, O_RDONLY | O_CLOEXEC);
  cleanup_close int out = -1;
  cleanup_free char *buf = malloc (1 << 20);
  ssize_t n;

  if (buf == NULL)
    return rt_error_oom (err);
  if (in < 0)
    return rt_error_set (err, errno, "internal", "cannot open '%s': %s", src, strerror (errno));
  out = open (dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", dst, strerror (errno));
  while ((n = read (in, buf, 1 << 20)) != 0)
    {
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0 || rt_write_all (out, buf, n) < 0)
        return rt_error_set (err, errno, "internal", "cannot copy '%s' to '%s': %s", src, dst, strerror (errno));
    }
  if (fsync (out) < 0)
    return rt_error_set (err, errno, "internal", "cannot write '%s': %s", dst, strerror (errno));
  return 0;
}

/* Puts a layer file into the store under its digest: a hard link when the
   cache shares the file system, else a copy.  */
static int
store_layer (const char *imgdir, const char *src, char digest[65], rt_error **err)
{
  const char *ext = strstr (src, ".tar.");
  cleanup_free char *dest = NULL;
  cleanup_free char *tmp = NULL;
  struct stat st;
  int ret;

  ret = rt_sha256_file (src, digest, err);
  if (ret < 0)
    return ret;
  dest = rt_strdup_printf ("%s/layers/%s%s", imgdir, digest, ext ? ext : ".tar");
  tmp = rt_strdup_printf ("%s.tmp.%d", dest ? dest : "", (int) getpid ());
  if (dest == NULL || tmp == NULL)
    return rt_error_oom (err);
  if (stat (dest, &st) == 0)
    return 0;
  unlink (tmp);
  if (link (src, tmp) < 0)
    {
      ret = copy_file (src, tmp, err);
      if (ret < 0)
        {
          unlink (tmp);
          return ret;
        }
    }
  if (rename (tmp, dest) < 0)
    {
      ret = rt_error_set (err, errno, "internal", "cannot rename '%s': %s", tmp, strerror (errno));
      unlink (tmp);
      return ret;
    }
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

/* Adds the default image to the store, from the cached base tar.  The
   manifest is deterministic (created = the base tar's mtime), so every
   store gets the same id and so shares one cached boot disk.  */
static int
import_default (rt_context *ctx, const char *base_tar, const char *key, char **id_out, rt_error **err)
{
  cleanup_free char *imgdir = rt_strdup_printf ("%s/images", ctx->data_dir);
  cleanup_free char *index_path = NULL;
  cleanup_free char *manifest_path = NULL;
  cleanup_free char *layers_dir = NULL;
  cleanup_free char *manifests_dir = NULL;
  cleanup_json json_object *index = NULL;
  cleanup_json json_object *m = NULL;
  cleanup_json json_object *full = NULL;
  cleanup_close int lockfd = -1;
  json_object *names, *img, *versions, *tags;
  const char *found;
  char digest[65], id[65], created[32], vkey[24];
  const char *plain;
  long version = 0;
  struct stat st;
  struct tm tm;
  int ret;

  if (imgdir == NULL)
    return rt_error_oom (err);
  index_path = rt_strdup_printf ("%s/index.json", imgdir);
  layers_dir = rt_strdup_printf ("%s/layers", imgdir);
  manifests_dir = rt_strdup_printf ("%s/manifests", imgdir);
  if (index_path == NULL || layers_dir == NULL || manifests_dir == NULL)
    return rt_error_oom (err);
  ret = rt_lock_dir (imgdir, &lockfd, err);
  if (ret == 0)
    ret = rt_mkdir_p (layers_dir, 0755, err);
  if (ret == 0)
    ret = rt_mkdir_p (manifests_dir, 0755, err);
  if (ret == 0)
    ret = read_json (index_path, true, &index, err);
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

  ret = store_layer (imgdir, base_tar, digest, err);
  if (ret < 0)
    return ret;
  if (stat (base_tar, &st) < 0)
    return rt_error_set (err, errno, "internal", "cannot stat '%s': %s", base_tar, strerror (errno));
  gmtime_r (&st.st_mtime, &tm);
  strftime (created, sizeof (created), "%Y-%m-%dT%H:%M:%SZ", &tm);

  if (!json_object_object_get_ex (index, "names", &names))
    {
      names = json_object_new_object ();
      if (names == NULL || json_object_object_add (index, "names", names) < 0)
        return rt_error_oom (err);
    }
  if (!json_object_object_get_ex (names, DEFAULT_IMAGE, &img))
    {
      img = json_object_new_object ();
      if (img == NULL || json_object_object_add (names, DEFAULT_IMAGE, img) < 0)
        return rt_error_oom (err);
    }
  if (!json_object_object_get_ex (img, "versions", &versions))
    {
      versions = json_object_new_object ();
      if (versions == NULL || json_object_object_add (img, "versions", versions) < 0)
        return rt_error_oom (err);
    }
  if (!json_object_object_get_ex (img, "tags", &tags))
    {
      tags = json_object_new_object ();
      if (tags == NULL || json_object_object_add (img, "tags", tags) < 0)
        return rt_error_oom (err);
    }
  {
    json_object_object_foreach (versions, k, v)
    {
      long n = strtol (k, NULL, 10);
      (void) v;
      if (n > version)
        version = n;
    }
  }
  version++;

  m = json_object_new_object ();
  if (m == NULL)
    return rt_error_oom (err);
  json_object_object_add (m, "name", json_object_new_string (DEFAULT_IMAGE));
  json_object_object_add (m, "version", json_object_new_int64 (version));
  json_object_object_add (m, "tags", strv_json ((const char *const[]){ "latest", NULL }));
  json_object_object_add (m, "layers", strv_json ((const char *const[]){ digest, NULL }));
  json_object_object_add (m, "env", strv_json (default_env));
  json_object_object_add (m, "workdir", json_object_new_string ("/workspace"));
  json_object_object_add (m, "recipe", json_object_new_string (key));
  json_object_object_add (m, "created", json_object_new_string (created));
  plain = json_object_to_json_string_ext (m, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  if (plain == NULL)
    return rt_error_oom (err);
  ret = sha256_hex (plain, strlen (plain), id, err);
  if (ret < 0)
    return ret;

  /* The stored manifest: the same fields with the id first.  */
  full = json_object_new_object ();
  if (full == NULL)
    return rt_error_oom (err);
  json_object_object_add (full, "id", json_object_new_string (id));
  json_object_object_foreach (m, k, v)
  {
    json_object_object_add (full, k, json_object_get (v));
  }
  manifest_path = rt_strdup_printf ("%s/%s.json", manifests_dir, id);
  if (manifest_path == NULL)
    return rt_error_oom (err);
  ret = write_json (manifest_path, full, err);
  if (ret < 0)
    return ret;

  snprintf (vkey, sizeof (vkey), "%ld", version);
  json_object_object_add (versions, vkey, json_object_new_string (id));
  json_object_object_add (tags, "latest", json_object_new_string (id));
  ret = write_json (index_path, index, err);
  if (ret < 0)
    return ret;
  *id_out = strdup (id);
  return *id_out ? 0 : rt_error_oom (err);
}

static bool
safe_relative (const char *p)
{
  if (*p == '/')
    return false;
  for (const char *c = p; *c;)
    {
      size_t n = strcspn (c, "/");
      if (n == 2 && c[0] == '.' && c[1] == '.')
        return false;
      c += n;
      c += strspn (c, "/");
    }
  return true;
}

/* Strips leading "./" so that "./usr" and "usr" are the same entry.  */
static const char *
skip_dot (const char *p)
{
  while (p[0] == '.' && p[1] == '/')
    p += 2 + strspn (p + 2, "/");
  return p;
}

/* For layers above the first, overlayfs's markers: a 0:0 character device
   deletes the path below it, a directory with trusted.overlay.opaque=y
   hides everything below it.  Both act on @root/@rel only after checking
   that no symlink leads out of @root.  */
static int
clear_below (const char *root, const char *rel, bool keep_dir, rt_error **err)
{
  cleanup_free char *parent_rel = strdup (rel);
  cleanup_free char *parent = NULL;
  cleanup_free char *real = NULL;
  cleanup_free char *path = NULL;
  char *slash;
  struct stat st;
  size_t rlen = strlen (root);

  if (parent_rel == NULL)
    return rt_error_oom (err);
  slash = strrchr (parent_rel, '/');
  if (slash)
    *slash = '\0';
  parent = rt_strdup_printf ("%s/%s", root, slash ? parent_rel : "");
  if (parent == NULL)
    return rt_error_oom (err);
  real = realpath (parent, NULL);
  if (real == NULL)
    return 0; /* nothing there to hide */
  if (strncmp (real, root, rlen) != 0 || (real[rlen] != '\0' && real[rlen] != '/'))
    return rt_error_set (err, EPERM, "internal", "a layer's whiteout '%s' points outside the image", rel);
  path = rt_strdup_printf ("%s/%s", real, slash ? slash + 1 : rel);
  if (path == NULL)
    return rt_error_oom (err);
  if (lstat (path, &st) < 0)
    return 0;
  if (keep_dir && S_ISDIR (st.st_mode))
    {
      cleanup_dir DIR *d = opendir (path);
      struct dirent *de;
      while (d && (de = readdir (d)))
        if (not_dots (de))
          {
            cleanup_free char *child = rt_strdup_printf ("%s/%s", path, de->d_name);
            if (child == NULL || rt_rm_rf (child, err) < 0)
              return child ? -EIO : rt_error_oom (err);
          }
      return 0;
    }
  return rt_rm_rf (path, err);
}

static bool
is_opaque (struct archive_entry *e)
{
  const char *name;
  const void *value;
  size_t size;

  if (archive_entry_filetype (e) != AE_IFDIR)
    return false;
  archive_entry_xattr_reset (e);
  while (archive_entry_xattr_next (e, &name, &value, &size) == ARCHIVE_OK)
    if (strcmp (name, "trusted.overlay.opaque") == 0 && size == 1 && *(const char *) value == 'y')
      return true;
  return false;
}

/* Extracts one layer over @root (a realpath, so it holds no symlink).
   Entry names are checked here for absolute paths and "..", then
   prefixed with @root; libarchive refuses the rest (symlinks on the way,
   ".." in link targets).  */
static int
extract_layer (const char *root, const char *layer, bool upper, rt_error **err)
{
  struct archive *in = archive_read_new ();
  struct archive *out = archive_write_disk_new ();
  struct archive_entry *e;
  int ret = 0, r;

  if (in == NULL || out == NULL)
    ret = rt_error_oom (err);
  if (ret == 0)
    {
      archive_read_support_format_tar (in);
      archive_read_support_filter_all (in);
      archive_write_disk_set_options (out, ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_TIME
                                               | ARCHIVE_EXTRACT_XATTR | ARCHIVE_EXTRACT_SECURE_NODOTDOT
                                               | ARCHIVE_EXTRACT_SECURE_SYMLINKS);
      if (archive_read_open_filename (in, layer, 1 << 16) != ARCHIVE_OK)
        ret = archive_fail (err, in, "cannot open", layer);
    }
  while (ret == 0 && (r = archive_read_next_header (in, &e)) != ARCHIVE_EOF)
    {
      cleanup_free char *full = NULL;
      const char *name, *link;

      if (r < ARCHIVE_WARN)
        {
          ret = archive_fail (err, in, "cannot read", layer);
          break;
        }
      name = archive_entry_pathname (e);
      if (name == NULL || !safe_relative (name))
        {
          ret = rt_error_set (err, EPERM, "internal", "layer '%s' holds an unsafe path '%s'", layer,
                              name ? name : "(none)");
          break;
        }
      name = skip_dot (name);
      if (*name == '\0' || strcmp (name, ".") == 0)
        continue;
      if (archive_entry_filetype (e) == AE_IFCHR && archive_entry_rdev (e) == 0)
        {
          if (upper)
            ret = clear_below (root, name, false, err);
          continue;
        }
      /* No device nodes from a layer: the guest's /dev is a devtmpfs.  */
      if (archive_entry_filetype (e) == AE_IFCHR || archive_entry_filetype (e) == AE_IFBLK)
        continue;
      if (upper && is_opaque (e))
        {
          ret = clear_below (root, name, true, err);
          if (ret < 0)
            break;
        }
      full = rt_strdup_printf ("%s/%s", root, name);
      if (full == NULL)
        {
          ret = rt_error_oom (err);
          break;
        }
      archive_entry_copy_pathname (e, full);
      link = archive_entry_hardlink (e);
      if (link)
        {
          cleanup_free char *full_link = NULL;
          if (!safe_relative (link))
            {
              ret = rt_error_set (err, EPERM, "internal", "layer '%s' holds an unsafe link '%s'", layer, link);
              break;
            }
          full_link = rt_strdup_printf ("%s/%s", root, skip_dot (link));
          if (full_link == NULL)
            {
              ret = rt_error_oom (err);
              break;
            }
          archive_entry_copy_hardlink (e, full_link);
        }
      switch (copy_entry (in, out, e, true))
        {
        case COPY_WRITE_FAILED:
          ret = archive_fail (err, out, "cannot extract", full);
          break;
        case COPY_READ_FAILED:
          ret = archive_fail (err, in, "cannot read", layer);
          break;
        }
      if (ret == 0 && archive_write_finish_entry (out) < ARCHIVE_WARN)
        ret = archive_fail (err, out, "cannot extract", full);
    }
  /* Directory modes and times are applied here, last.  */
  if (ret == 0 && archive_write_close (out) != ARCHIVE_OK)
    ret = archive_fail (err, out, "cannot finish extracting", layer);
  archive_read_free (in);
  archive_write_free (out);
  return ret;
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

/* Makes <cache>/disks/<id>.ext4 from the image's layers.  */
static int
make_disk (rt_context *ctx, const char *id, json_object *manifest, const char *disk, rt_error **err)
{
  cleanup_free char *disks = rt_strdup_printf ("%s/disks", ctx->cache_dir);
  cleanup_free char *mkfs = NULL;
  cleanup_free char *tmpdir = NULL;
  cleanup_free char *root = NULL;
  cleanup_free char *tmpdisk = NULL;
  cleanup_free char *output = NULL;
  cleanup_strv char **layers = NULL;
  cleanup_close int lockfd = -1;
  cleanup_error rt_error *ignored = NULL;
  const char *name = get_string (manifest, "name");
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
  ret = rt_lock_dir (disks, &lockfd, err);
  if (ret < 0)
    return ret;
  if (stat (disk, &st) == 0)
    return 0;
  rt_remove_matching (disks, ".tmp-*");
  rt_remove_matching (disks, "*.tmp.*");

  rt_progress (ctx, "Making the boot disk of image %s…", name ? name : id);
  tmpdir = rt_strdup_printf ("%s/.tmp-XXXXXX", disks);
  tmpdisk = rt_strdup_printf ("%s.tmp.%d", disk, (int) getpid ());
  if (tmpdir == NULL || tmpdisk == NULL)
    return rt_error_oom (err);
  if (mkdtemp (tmpdir) == NULL)
    return rt_error_set (err, errno, "internal", "cannot create a directory in '%s': %s", disks, strerror (errno));
  /* mkfs -d copies the source root's mode to the disk's root.  */
  if (chmod (tmpdir, 0755) < 0 || (root = realpath (tmpdir, NULL)) == NULL)
    ret = rt_error_set (err, errno, "internal", "cannot prepare '%s': %s", tmpdir, strerror (errno));

  for (size_t i = 0; ret == 0 && layers[i]; i++)
    {
      cleanup_free char *prefix = rt_strdup_printf ("%s/images/layers/", ctx->data_dir);
      cleanup_free char *path = NULL;
      if (prefix == NULL)
        ret = rt_error_oom (err);
      else if (!is_sha256 (layers[i]) || (path = find_tar (prefix, layers[i])) == NULL)
        ret = rt_error_set (err, ENOENT, "internal", "layer %s of image %s is missing from the store", layers[i], id);
      else
        ret = extract_layer (root, path, i > 0, err);
    }
  if (ret == 0)
    {
      /* A sparse file reads zeros where the journal would be zeroed:
         lazy_journal_init saves writing (and storing) 64 MiB of them.  */
      char *argv[] = { mkfs,          (char *) "-q", (char *) "-F", (char *) "-L", (char *) "runtime", (char *) "-E",
                       (char *) "root_owner=0:0,lazy_journal_init=1", (char *) "-d", root, tmpdisk, (char *) DISK_SIZE,
                       NULL };
      int status = rt_run_capture (argv, &output, err);
      if (status < 0)
        ret = status;
      else if (status != 0)
        ret = rt_error_set (err, EIO, "internal", "mkfs.ext4 failed for image %s: %s", id, output ? output : "");
    }
  if (ret == 0 && rename (tmpdisk, disk) < 0)
    ret = rt_error_set (err, errno, "internal", "cannot rename '%s': %s", tmpdisk, strerror (errno));
  if (ret < 0)
    unlink (tmpdisk);
  if (ret == 0)
    ret = rt_rm_rf (tmpdir, err);
  else
    rt_rm_rf (tmpdir, &ignored);
  return ret;
}

int
rt_image_ensure_disk (rt_context *ctx, const char *ref, struct rt_image_disk *out, rt_error **err)
{
  cleanup_free char *index_path = rt_strdup_printf ("%s/images/index.json", ctx->data_dir);
  cleanup_free char *id = NULL;
  cleanup_free char *manifest_path = NULL;
  cleanup_free char *disk = NULL;
  cleanup_free char *workdir = NULL;
  cleanup_strv char **env = NULL;
  cleanup_json json_object *index = NULL;
  cleanup_json json_object *manifest = NULL;
  const char *found, *w;
  char key[65];
  struct stat st;
  int ret;

  if (index_path == NULL)
    return rt_error_oom (err);
  ret = read_json (index_path, true, &index, err);
  if (ret < 0)
    return ret;
  found = index_resolve (index, ref);
  if (found && names_default (ref) && (ref == NULL || strchr (ref, '@') == NULL)
      && (ref == NULL || strchr (ref, ':') == NULL || strcmp (strchr (ref, ':'), ":latest") == 0))
    {
      ret = recipe_key (ctx, key, err);
      if (ret < 0)
        return ret;
      if (current_default (ctx, index, key) == NULL)
        found = NULL;
    }
  if (found)
    id = strdup (found);
  else if (names_default (ref))
    {
      cleanup_free char *base = NULL;
      ret = recipe_key (ctx, key, err);
      if (ret == 0)
        ret = ensure_base (ctx, &base, err);
      if (ret == 0)
        ret = import_default (ctx, base, key, &id, err);
      if (ret < 0)
        return ret;
      /* "runtime@2" or "runtime:beta" still need to exist.  */
      json_object_put (index);
      index = NULL;
      ret = read_json (index_path, true, &index, err);
      if (ret < 0)
        return ret;
      free (id);
      id = NULL;
      found = index_resolve (index, ref);
      if (found)
        id = strdup (found);
    }
  if (found == NULL)
    {
      rt_error_set (err, ENOENT, "image_not_found", "image '%s' not found", ref ? ref : DEFAULT_IMAGE);
      return rt_error_hint (err, "runtime image ls lists the images you have");
    }
  if (id == NULL)
    return rt_error_oom (err);

  manifest_path = rt_strdup_printf ("%s/images/manifests/%s.json", ctx->data_dir, id);
  disk = rt_strdup_printf ("%s/disks/%s.ext4", ctx->cache_dir, id);
  if (manifest_path == NULL || disk == NULL)
    return rt_error_oom (err);
  ret = read_json (manifest_path, false, &manifest, err);
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
  w = get_string (manifest, "workdir");
  workdir = strdup (w && *w == '/' ? w : "/");
  if (workdir == NULL)
    return rt_error_oom (err);

  out->id = steal_pointer (&id);
  out->disk = steal_pointer (&disk);
  out->env = steal_pointer (&env);
  out->workdir = steal_pointer (&workdir);
  return 0;
}

/* ---- the store seen from outside: add, list, get, remove, export, import ---- */

char *
rt_image_layer_path (rt_context *ctx, const char *digest)
{
  cleanup_free char *prefix = rt_strdup_printf ("%s/images/layers/", ctx->data_dir);

  if (prefix == NULL || !is_sha256 (digest))
    return NULL;
  return find_tar (prefix, digest);
}

int
rt_image_manifest (rt_context *ctx, const char *ref, json_object **manifest, rt_error **err)
{
  cleanup_free char *index_path = rt_strdup_printf ("%s/images/index.json", ctx->data_dir);
  cleanup_free char *path = NULL;
  cleanup_json json_object *index = NULL;
  const char *id;
  int ret;

  if (index_path == NULL)
    return rt_error_oom (err);
  ret = read_json (index_path, true, &index, err);
  if (ret < 0)
    return ret;
  id = index_resolve (index, ref);
  if (id == NULL)
    {
      rt_error_set (err, ENOENT, "image_not_found", "image '%s' not found", ref ? ref : DEFAULT_IMAGE);
      return rt_error_hint (err, "runtime image ls lists the images you have");
    }
  path = rt_strdup_printf ("%s/images/manifests/%s.json", ctx->data_dir, id);
  if (path == NULL)
    return rt_error_oom (err);
  return read_json (path, false, manifest, err);
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

/* Adds one version to the index: @name's next, tagged @tag, and latest
   when @latest.  */
static long
index_add (json_object *index, const char *name, const char *id, const char *tag, bool latest)
{
  json_object *names, *img, *versions, *tags;
  long version = 0;
  char vkey[24];

  if (!json_object_object_get_ex (index, "names", &names))
    json_object_object_add (index, "names", names = json_object_new_object ());
  if (!json_object_object_get_ex (names, name, &img))
    json_object_object_add (names, name, img = json_object_new_object ());
  if (!json_object_object_get_ex (img, "versions", &versions))
    json_object_object_add (img, "versions", versions = json_object_new_object ());
  if (!json_object_object_get_ex (img, "tags", &tags))
    json_object_object_add (img, "tags", tags = json_object_new_object ());
  {
    json_object_object_foreach (versions, k, v)
    {
      long n = strtol (k, NULL, 10);
      (void) v;
      if (n > version)
        version = n;
    }
  }
  version++;
  snprintf (vkey, sizeof vkey, "%ld", version);
  json_object_object_add (versions, vkey, json_object_new_string (id));
  if (latest)
    json_object_object_add (tags, "latest", json_object_new_string (id));
  if (tag && strcmp (tag, "latest") != 0)
    json_object_object_add (tags, tag, json_object_new_string (id));
  return version;
}

/* The id of a manifest: SHA-256 of its plain JSON without "id".  */
static int
manifest_id (json_object *m, char id[65], rt_error **err)
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

static int
write_manifest (const char *imgdir, json_object *m, const char *id, rt_error **err)
{
  cleanup_json json_object *full = json_object_new_object ();
  cleanup_free char *path = rt_strdup_printf ("%s/manifests/%s.json", imgdir, id);
  cleanup_free char *manifests = rt_strdup_printf ("%s/manifests", imgdir);
  int ret;

  if (path == NULL || manifests == NULL)
    return rt_error_oom (err);
  ret = rt_mkdir_p (manifests, 0755, err);
  if (ret < 0)
    return ret;
  json_object_object_add (full, "id", json_object_new_string (id));
  json_object_object_foreach (m, k, v)
  {
    if (strcmp (k, "id") != 0)
      json_object_object_add (full, k, json_object_get (v));
  }
  return write_json (path, full, err);
}

int
rt_image_add (rt_context *ctx, const char *name, const char *tag, json_object *fields, char **id_out,
              rt_error **err)
{
  cleanup_free char *imgdir = rt_strdup_printf ("%s/images", ctx->data_dir);
  cleanup_free char *index_path = NULL;
  cleanup_json json_object *index = NULL, *m = json_object_new_object ();
  cleanup_close int lockfd = -1;
  json_object *names, *img, *versions;
  char id[65], now[32];
  long version = 0;
  int ret;

  if (imgdir == NULL || m == NULL || (index_path = rt_strdup_printf ("%s/index.json", imgdir)) == NULL)
    return rt_error_oom (err);
  ret = rt_mkdir_p (imgdir, 0755, err);
  if (ret == 0)
    ret = rt_lock_dir (imgdir, &lockfd, err);
  if (ret == 0)
    ret = read_json (index_path, true, &index, err);
  if (ret < 0)
    return ret;
  /* The version goes into the manifest (and so into the id).  */
  if (json_object_object_get_ex (index, "names", &names) && json_object_object_get_ex (names, name, &img)
      && json_object_object_get_ex (img, "versions", &versions))
    {
      json_object_object_foreach (versions, k, v)
      {
        (void) v;
        if (strtol (k, NULL, 10) > version)
          version = strtol (k, NULL, 10);
      }
    }
  rt_format_time (rt_epoch_ms (), now);
  json_object_object_add (m, "name", json_object_new_string (name));
  json_object_object_add (m, "version", json_object_new_int64 (version + 1));
  json_object_object_add (m, "created", json_object_new_string (now));
  {
    json_object_object_foreach (fields, k, v)
    {
      json_object_object_add (m, k, json_object_get (v));
    }
  }
  ret = manifest_id (m, id, err);
  if (ret == 0)
    ret = write_manifest (imgdir, m, id, err);
  if (ret < 0)
    return ret;
  index_add (index, name, id, tag, true);
  ret = write_json (index_path, index, err);
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
  json_object *o = json_object_new_object (), *v;

  json_object_object_add (o, "id", json_object_new_string (id));
  if (path && read_json (path, false, &m, &ignored) == 0)
    {
      json_object_object_add (o, "name", json_object_object_get_ex (m, "name", &v) ? json_object_get (v) : NULL);
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
rt_image_list_json (rt_context *ctx, char **json, rt_error **err)
{
  cleanup_free char *index_path = rt_strdup_printf ("%s/images/index.json", ctx->data_dir);
  cleanup_json json_object *index = NULL, *out = json_object_new_array ();
  json_object *names;
  int ret;

  if (index_path == NULL || out == NULL)
    return rt_error_oom (err);
  ret = read_json (index_path, true, &index, err);
  if (ret < 0)
    return ret;
  if (json_object_object_get_ex (index, "names", &names))
    {
      json_object_object_foreach (names, name, img)
      {
        json_object *versions;
        (void) name;
        if (!json_object_object_get_ex (img, "versions", &versions))
          continue;
        json_object_object_foreach (versions, vk, vid)
        {
          if (is_sha256 (json_object_get_string (vid)))
            json_object_array_add (out, image_object (ctx, img, vk, json_object_get_string (vid)));
        }
      }
    }
  *json = strdup (json_object_to_json_string_ext (out, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}

/* @ref's name entry and version key in the index, for its id.  */
static const char *
find_version (json_object *index, const char *id, json_object **img_out, const char **version)
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
rt_image_get_json (rt_context *ctx, const char *ref, char **json, rt_error **err)
{
  cleanup_free char *index_path = rt_strdup_printf ("%s/images/index.json", ctx->data_dir);
  cleanup_json json_object *index = NULL, *o = NULL;
  json_object *img = NULL;
  const char *id, *version = NULL;
  int ret;

  if (index_path == NULL)
    return rt_error_oom (err);
  ret = read_json (index_path, true, &index, err);
  if (ret < 0)
    return ret;
  id = index_resolve (index, ref);
  if (id == NULL || find_version (index, id, &img, &version) == NULL)
    {
      rt_error_set (err, ENOENT, "image_not_found", "image '%s' not found", ref);
      return rt_error_hint (err, "runtime image ls lists the images you have");
    }
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
      if (fnmatch ("*.json", de->d_name, 0) != 0 || p == NULL || read_json (p, false, &m, &ignored) < 0)
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
      if (is_sha256 (digest) && !json_object_object_get_ex (used, digest, NULL))
        unlinkat (dirfd (d), de->d_name, 0);
    }
}

int
rt_image_remove (rt_context *ctx, const char *ref, rt_error **err)
{
  cleanup_free char *imgdir = rt_strdup_printf ("%s/images", ctx->data_dir);
  cleanup_free char *index_path = NULL, *manifest = NULL, *disk = NULL;
  cleanup_json json_object *index = NULL, *live = NULL;
  cleanup_close int lockfd = -1;
  json_object *names;
  char id[65];
  const char *found;
  int ret;

  if (imgdir == NULL || (index_path = rt_strdup_printf ("%s/index.json", imgdir)) == NULL)
    return rt_error_oom (err);
  ret = rt_store_list (ctx, false, &live, err);
  if (ret < 0)
    return ret;
  ret = rt_mkdir_p (imgdir, 0755, err);
  if (ret == 0)
    ret = rt_lock_dir (imgdir, &lockfd, err);
  if (ret == 0)
    ret = read_json (index_path, true, &index, err);
  if (ret < 0)
    return ret;
  found = index_resolve (index, ref);
  if (found == NULL)
    {
      rt_error_set (err, ENOENT, "image_not_found", "image '%s' not found", ref);
      return rt_error_hint (err, "runtime image ls lists the images you have");
    }
  snprintf (id, sizeof id, "%s", found);
  for (size_t i = 0; i < json_object_array_length (live); i++)
    {
      json_object *sb = json_object_array_get_idx (live, i);
      const char *uses = rt_json_str (sb, "imageId");
      if (uses && strcmp (uses, id) == 0)
        {
          rt_error_set (err, EBUSY, "invalid_request", "image '%s' is in use by sandbox %s", ref,
                        rt_json_str (sb, "id"));
          return rt_error_hint (err, "stop the sandboxes that use it first (runtime sandbox stop ID)");
        }
    }
  if (json_object_object_get_ex (index, "names", &names))
    {
      json_object_object_foreach (names, name, img)
      {
        json_object *versions, *tags;
        const char *gone[64];
        size_t n = 0;
        if (json_object_object_get_ex (img, "versions", &versions))
          {
            json_object_object_foreach (versions, vk, vid)
            {
              if (strcmp (json_object_get_string (vid), id) == 0 && n < 64)
                gone[n++] = vk;
            }
            for (size_t i = 0; i < n; i++)
              json_object_object_del (versions, gone[i]);
          }
        n = 0;
        if (json_object_object_get_ex (img, "tags", &tags))
          {
            json_object_object_foreach (tags, tk, tid)
            {
              if (strcmp (json_object_get_string (tid), id) == 0 && n < 64)
                gone[n++] = tk;
            }
            for (size_t i = 0; i < n; i++)
              json_object_object_del (tags, gone[i]);
            /* "latest" moves to the newest version left.  */
            if (!json_object_object_get_ex (tags, "latest", NULL) && versions && version_id (img, NULL))
              json_object_object_add (tags, "latest", json_object_new_string (version_id (img, NULL)));
          }
        (void) name;
      }
    }
  ret = write_json (index_path, index, err);
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

int
rt_image_export (rt_context *ctx, const char *ref, const char *path, rt_error **err)
{
  cleanup_json json_object *m = NULL;
  cleanup_free char *mpath = NULL, *tmp = rt_strdup_printf ("%s.tmp.%d", path, (int) getpid ());
  cleanup_free char *mtext = NULL;
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
  archive_write_set_format_pax_restricted (a);
  if (archive_write_open_filename (a, tmp) != ARCHIVE_OK)
    {
      ret = archive_fail (err, a, "cannot write", path);
      archive_write_free (a);
      return ret;
    }
  {
    struct archive_entry *e = archive_entry_new ();
    archive_entry_set_pathname (e, "manifest.json");
    archive_entry_set_filetype (e, AE_IFREG);
    archive_entry_set_perm (e, 0644);
    archive_entry_set_size (e, mlen);
    if (archive_write_header (a, e) != ARCHIVE_OK || archive_write_data (a, mtext, mlen) != (la_ssize_t) mlen)
      ret = archive_fail (err, a, "cannot write", path);
    archive_entry_free (e);
  }
  if (ret == 0 && json_object_object_get_ex (m, "layers", &layers))
    for (size_t i = 0; ret == 0 && i < json_object_array_length (layers); i++)
      {
        const char *digest = json_object_get_string (json_object_array_get_idx (layers, i));
        cleanup_free char *lp = rt_image_layer_path (ctx, digest);
        cleanup_free char *name = NULL;
        struct archive_entry *e;
        struct stat st;
        int fd;
        if (lp == NULL)
          {
            ret = rt_error_set (err, ENOENT, "internal", "layer %s is missing from the store", digest);
            break;
          }
        name = rt_strdup_printf ("layers/%s", strrchr (lp, '/') + 1);
        fd = open (lp, O_RDONLY | O_CLOEXEC);
        if (name == NULL || fd < 0 || fstat (fd, &st) < 0)
          {
            ret = rt_error_set (err, errno, "internal", "cannot read '%s': %s", lp, strerror (errno));
            if (fd >= 0)
              close (fd);
            break;
          }
        e = archive_entry_new ();
        archive_entry_set_pathname (e, name);
        archive_entry_set_filetype (e, AE_IFREG);
        archive_entry_set_perm (e, 0644);
        archive_entry_set_size (e, st.st_size);
        if (archive_write_header (a, e) != ARCHIVE_OK)
          ret = archive_fail (err, a, "cannot write", path);
        while (ret == 0)
          {
            char buf[1 << 16];
            ssize_t n = read (fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR)
              continue;
            if (n <= 0)
              break;
            if (archive_write_data (a, buf, n) != n)
              ret = archive_fail (err, a, "cannot write", path);
          }
        close (fd);
        archive_entry_free (e);
      }
  if (archive_write_close (a) != ARCHIVE_OK && ret == 0)
    ret = archive_fail (err, a, "cannot write", path);
  archive_write_free (a);
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
  return is_sha256 (digest) && (strcmp (*ext, ".tar.zst") == 0 || strcmp (*ext, ".tar.gz") == 0);
}

/* @p without "./", empty components and a trailing "/": "./usr//bin/"
   and "usr/bin" are the same path.  */
static char *
normalize (const char *p)
{
  char *out = malloc (strlen (p) + 1), *o = out;

  if (out == NULL)
    return NULL;
  while (*p)
    {
      size_t n = strcspn (p, "/");
      if (n > 0 && !(n == 1 && p[0] == '.'))
        {
          if (o > out)
            *o++ = '/';
          memcpy (o, p, n);
          o += n;
        }
      p += n;
      p += strspn (p, "/");
    }
  *o = '\0';
  return out;
}

/* The length of the leading part of @path (normalized) that an earlier
   entry made a symlink, or 0.  */
static size_t
through_link (json_object *links, char *path)
{
  for (char *slash = strchr (path, '/'); slash; slash = strchr (slash + 1, '/'))
    {
      bool found;
      *slash = '\0';
      found = json_object_object_get_ex (links, path, NULL);
      *slash = '/';
      if (found)
        return slash - path;
    }
  return 0;
}

/* @path and everything below it are no longer what they were.  */
static void
forget_below (json_object *links, const char *path)
{
  size_t len = strlen (path), n = 0;
  char **gone = calloc (json_object_object_length (links) + 1, sizeof (char *));

  if (gone == NULL)
    return;
  json_object_object_foreach (links, k, v)
  {
    (void) v;
    if (strncmp (k, path, len) == 0 && (k[len] == '\0' || k[len] == '/'))
      gone[n++] = strdup (k);
  }
  for (size_t i = 0; i < n; i++)
    if (gone[i])
      json_object_object_del (links, gone[i]);
  cleanup_strvp (&gone);
}

static int
refuse (rt_error **err, const char *archive, const char *why)
{
  rt_error_set (err, EPERM, "invalid_request", "'%s' is refused: a layer %s", archive, why ? why : "is unsafe");
  return rt_error_hint (err, "import only archives made by runtime image export");
}

/* Every entry of an untrusted layer, checked before anything is stored:
   a relative name without ".." (hard link targets too), no device node
   (but overlayfs's 0:0 whiteouts, and the /dev of a first layer, which
   extraction drops anyway: bases made by debootstrap hold one), nothing
   written through a symlink that this or an earlier layer of the image
   (@links) made.  */
static int
check_layer (json_object *links, const char *layer, bool first, const char *archive, rt_error **err)
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
      const char *name = r < ARCHIVE_WARN ? NULL : archive_entry_pathname (e);
      const char *link = name ? archive_entry_hardlink (e) : NULL;
      cleanup_free char *path = NULL, *target = NULL, *why = NULL;
      const char *via_what = NULL;
      mode_t type;
      size_t via = 0;

      if (name == NULL)
        {
          ret = rt_error_set (err, EINVAL, "invalid_request", "'%s': a layer is not a readable tar archive: %s",
                              archive, archive_error_string (a));
          break;
        }
      if (!safe_relative (name) || (link && !safe_relative (link)))
        {
          why = rt_strdup_printf ("holds the unsafe path '%s'", link && safe_relative (name) ? link : name);
          ret = refuse (err, archive, why);
          break;
        }
      path = normalize (name);
      target = link ? normalize (link) : NULL;
      if (path == NULL || (link && target == NULL))
        {
          ret = rt_error_oom (err);
          break;
        }
      type = archive_entry_filetype (e);
      if ((type == AE_IFBLK || (type == AE_IFCHR && archive_entry_rdev (e) != 0))
          && !(first && strncmp (path, "dev/", 4) == 0))
        {
          why = rt_strdup_printf ("holds the device node '%s'", path);
          ret = refuse (err, archive, why);
          break;
        }
      if ((via = through_link (links, path)) > 0)
        via_what = path;
      else if (target && (via = through_link (links, target)) > 0)
        via_what = target;
      if (via_what)
        {
          why = rt_strdup_printf ("writes '%s' through the symlink '%.*s'", via_what, (int) via, via_what);
          ret = refuse (err, archive, why);
          break;
        }
      /* A plain directory merges with what is below; anything else
         replaces it, and a whiteout or an opaque directory hides it.  */
      if (type == AE_IFDIR && !is_opaque (e))
        json_object_object_del (links, path);
      else
        forget_below (links, path);
      /* A hard link to a symlink is a symlink too.  */
      if (type == AE_IFLNK || (target && json_object_object_get_ex (links, target, NULL)))
        json_object_object_add (links, path, NULL);
    }
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

  if (m == NULL || !json_object_is_type (m, json_type_object) || !is_sha256 (rt_json_str (m, "id")))
    bad = "id";
  else if (!rt_json_str (m, "name") || !rt_image_name_valid (rt_json_str (m, "name")))
    bad = "name";
  else if (!json_object_object_get_ex (m, "layers", &v) || !json_object_is_type (v, json_type_array)
           || json_object_array_length (v) == 0)
    bad = "layers";
  for (size_t i = 0; !bad && i < json_object_array_length (v); i++)
    if (!is_sha256 (json_object_get_string (json_object_array_get_idx (v, i)))
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
  ret = manifest_id (m, id, err);
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
  if (path == NULL || read_json (path, false, &latest, &ignored) < 0)
    return true;
  mine = rt_json_str (m, "created");
  theirs = rt_json_str (latest, "created");
  return mine && (theirs == NULL || strcmp (mine, theirs) > 0);
}

#define IMPORT_MAX_LAYERS 256

int
rt_image_import (rt_context *ctx, const char *path, char **id_out, rt_error **err)
{
  cleanup_free char *imgdir = rt_strdup_printf ("%s/images", ctx->data_dir);
  cleanup_free char *ldir = NULL, *index_path = NULL;
  cleanup_free char *mtext = NULL;
  cleanup_json json_object *m = NULL, *index = NULL, *links = json_object_new_object ();
  cleanup_close int lockfd = -1;
  struct archive *a = archive_read_new ();
  struct archive_entry *e;
  char *tmps[IMPORT_MAX_LAYERS], *finals[IMPORT_MAX_LAYERS], digests[IMPORT_MAX_LAYERS][65];
  bool named[IMPORT_MAX_LAYERS] = { false };
  size_t ntmp = 0, mlen = 0;
  json_object *layers = NULL, *img;
  const char *version;
  int ret = 0, r;

  if (imgdir == NULL || a == NULL || links == NULL || (ldir = rt_strdup_printf ("%s/layers", imgdir)) == NULL
      || (index_path = rt_strdup_printf ("%s/index.json", imgdir)) == NULL)
    {
      if (a)
        archive_read_free (a);
      return rt_error_oom (err);
    }
  ret = rt_mkdir_p (ldir, 0755, err);
  if (ret < 0)
    {
      archive_read_free (a);
      return ret;
    }
  archive_read_support_format_tar (a);
  if (archive_read_open_filename (a, path, 1 << 16) != ARCHIVE_OK)
    {
      ret = rt_error_set (err, ENOENT, archive_errno (a) == ENOENT ? "file_not_found" : "invalid_request",
                          "cannot read '%s': %s", path, archive_error_string (a));
      archive_read_free (a);
      return ret;
    }
  while (ret == 0 && (r = archive_read_next_header (a, &e)) != ARCHIVE_EOF)
    {
      const char *name = r < ARCHIVE_WARN ? NULL : archive_entry_pathname (e), *ext;
      char digest[65], got[65];
      if (name == NULL)
        {
          ret = rt_error_set (err, EINVAL, "invalid_request", "'%s' is not an image archive: %s", path,
                              archive_error_string (a));
          break;
        }
      if (strcmp (name, "manifest.json") == 0 && archive_entry_size (e) < (1 << 20) && mtext == NULL)
        {
          mlen = archive_entry_size (e);
          mtext = calloc (1, mlen + 1);
          if (mtext == NULL || archive_read_data (a, mtext, mlen) != (la_ssize_t) mlen)
            ret = rt_error_set (err, EINVAL, "invalid_request", "'%s': cannot read its manifest", path);
          continue;
        }
      if (!layer_entry (name, digest, &ext) || archive_entry_filetype (e) != AE_IFREG || ntmp >= IMPORT_MAX_LAYERS)
        {
          ret = rt_error_set (err, EINVAL, "invalid_request", "'%s' is not an image archive: unexpected entry '%s'",
                              path, name);
          break;
        }
      for (size_t j = 0; j < ntmp && ret == 0; j++)
        if (strcmp (digests[j], digest) == 0)
          ret = rt_error_set (err, EINVAL, "invalid_request", "'%s' is not an image archive: it holds layer %.12s "
                                                              "twice", path, digest);
      if (ret < 0)
        break;
      memcpy (digests[ntmp], digest, sizeof digest);
      tmps[ntmp] = rt_strdup_printf ("%s/%s%s.tmp.%d", ldir, digest, ext, (int) getpid ());
      finals[ntmp] = rt_strdup_printf ("%s/%s%s", ldir, digest, ext);
      if (tmps[ntmp] == NULL || finals[ntmp] == NULL)
        {
          free (tmps[ntmp]);
          free (finals[ntmp]);
          ret = rt_error_oom (err);
          break;
        }
      ntmp++;
      {
        int fd = open (tmps[ntmp - 1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || archive_read_data_into_fd (a, fd) != ARCHIVE_OK)
          ret = rt_error_set (err, EIO, "invalid_request", "'%s': cannot read layer %s", path, digest);
        if (fd >= 0)
          close (fd);
      }
      /* Every layer is checked against its name: a changed byte anywhere
         refuses the whole archive.  */
      if (ret == 0 && (ret = rt_sha256_file (tmps[ntmp - 1], got, err)) == 0 && strcmp (got, digest) != 0)
        ret = rt_error_set (err, EINVAL, "invalid_request",
                            "'%s' is damaged or was tampered with: layer %.12s does not match its digest", path, digest);
    }
  archive_read_free (a);
  if (ret == 0 && mtext == NULL)
    ret = rt_error_set (err, EINVAL, "invalid_request", "'%s' is not an image archive: no manifest.json", path);
  if (ret == 0)
    ret = check_manifest (m = json_tokener_parse (mtext), path, err);
  if (ret == 0)
    json_object_object_get_ex (m, "layers", &layers);
  /* The manifest's layers are exactly the archive's, and each is checked
     in the order the disk will stack them.  */
  for (size_t i = 0; ret == 0 && i < json_object_array_length (layers); i++)
    {
      const char *d = json_object_get_string (json_object_array_get_idx (layers, i));
      size_t j = 0;
      while (j < ntmp && strcmp (digests[j], d) != 0)
        j++;
      if (j == ntmp)
        ret = rt_error_set (err, EINVAL, "invalid_request", "'%s' lacks layer %.12s of its manifest", path, d);
      else
        {
          named[j] = true;
          ret = check_layer (links, tmps[j], i == 0, path, err);
        }
    }
  for (size_t j = 0; ret == 0 && j < ntmp; j++)
    if (!named[j])
      ret = rt_error_set (err, EINVAL, "invalid_request", "'%s' is not an image archive: layer %.12s is not in its "
                                                          "manifest", path, digests[j]);
  if (ret == 0)
    ret = rt_lock_dir (imgdir, &lockfd, err);
  if (ret == 0)
    ret = read_json (index_path, true, &index, err);
  /* An image already in the store stays as it is: its versions and tags
     are this store's.  */
  if (ret == 0 && find_version (index, rt_json_str (m, "id"), &img, &version))
    ret = 1;
  for (size_t i = 0; ret == 0 && i < ntmp; i++)
    if (rename (tmps[i], finals[i]) < 0)
      ret = rt_error_set (err, errno, "internal", "cannot store '%s': %s", finals[i], strerror (errno));
  if (ret == 0)
    ret = write_manifest (imgdir, m, rt_json_str (m, "id"), err);
  if (ret == 0)
    {
      const char *name = rt_json_str (m, "name");
      index_add (index, name, rt_json_str (m, "id"), NULL, takes_latest (imgdir, index, name, m));
      ret = write_json (index_path, index, err);
    }
  for (size_t i = 0; i < ntmp; i++)
    {
      unlink (tmps[i]);
      free (tmps[i]);
      free (finals[i]);
    }
  if (ret < 0)
    return ret;
  *id_out = strdup (rt_json_str (m, "id"));
  return *id_out ? ret : rt_error_oom (err);
}

int
rt_image_disk_for_layers (rt_context *ctx, json_object *layers, const char *disk, rt_error **err)
{
  cleanup_json json_object *m = json_object_new_object ();

  json_object_object_add (m, "name", json_object_new_string ("build"));
  json_object_object_add (m, "layers", json_object_get (layers));
  return make_disk (ctx, "build", m, disk, err);
}

int
rt_image_layer_from_tar (rt_context *ctx, const char *raw_tar, char digest[65], rt_error **err)
{
  cleanup_free char *imgdir = rt_strdup_printf ("%s/images", ctx->data_dir);
  cleanup_free char *ldir = NULL, *tmp = NULL, *dest = NULL;
  struct archive *in = archive_read_new (), *out = NULL;
  struct archive_entry *e;
  const char *ext = ".tar.zst";
  int ret = 0, r, fd = -1;

  if (imgdir == NULL || in == NULL || (ldir = rt_strdup_printf ("%s/layers", imgdir)) == NULL
      || (tmp = rt_strdup_printf ("%s/layer.tmp.%d", ldir, (int) getpid ())) == NULL)
    ret = rt_error_oom (err);
  if (ret == 0)
    ret = rt_mkdir_p (ldir, 0755, err);
  if (ret == 0 && (fd = open (tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
    ret = rt_error_set (err, errno, "internal", "cannot create '%s': %s", tmp, strerror (errno));
  if (ret == 0)
    ret = layer_writer (fd, tmp, &out, &ext, err);
  if (ret == 0)
    {
      archive_read_support_format_tar (in);
      if (archive_read_open_filename (in, raw_tar, 1 << 16) != ARCHIVE_OK)
        ret = archive_fail (err, in, "cannot open", raw_tar);
    }
  while (ret == 0 && (r = archive_read_next_header (in, &e)) != ARCHIVE_EOF)
    {
      const char *name = r < ARCHIVE_WARN ? NULL : archive_entry_pathname (e);
      if (name == NULL || !safe_relative (name)
          || (archive_entry_hardlink (e) && !safe_relative (archive_entry_hardlink (e))))
        {
          ret = rt_error_set (err, EPERM, "internal", "the build step's changes hold an unsafe path '%s'",
                              name ? name : "(unreadable)");
          break;
        }
      /* Whiteouts (0:0) stay; other device nodes never enter a layer.  */
      if ((archive_entry_filetype (e) == AE_IFCHR && archive_entry_rdev (e) != 0)
          || archive_entry_filetype (e) == AE_IFBLK || archive_entry_filetype (e) == AE_IFSOCK)
        continue;
      switch (copy_entry (in, out, e, false))
        {
        case COPY_WRITE_FAILED:
          ret = archive_fail (err, out, "cannot write", tmp);
          break;
        case COPY_READ_FAILED:
          ret = archive_fail (err, in, "cannot read", raw_tar);
          break;
        }
    }
  if (out && archive_write_close (out) != ARCHIVE_OK && ret == 0)
    ret = archive_fail (err, out, "cannot write", tmp);
  if (out)
    archive_write_free (out);
  archive_read_free (in);
  if (fd >= 0)
    close (fd);
  if (ret == 0)
    ret = rt_sha256_file (tmp, digest, err);
  if (ret == 0 && (dest = rt_strdup_printf ("%s/%s%s", ldir, digest, ext)) == NULL)
    ret = rt_error_oom (err);
  if (ret == 0 && rename (tmp, dest) < 0)
    ret = rt_error_set (err, errno, "internal", "cannot store '%s': %s", dest, strerror (errno));
  if (ret < 0 && tmp)
    unlink (tmp);
  return ret;
}
