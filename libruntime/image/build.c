/* build.c - `runtime image build`: one build sandbox, one overlay per step,
   one layer per step.

   The build sandbox boots the parent image (or a disk of it plus the
   cached steps).  In the guest, as root, each step gets a fresh overlay
   whose lower dirs are the base (a bind of /) and the upper dirs of the
   steps before it; the step runs chrooted in it, and its upper dir (what
   it changed, with overlayfs's whiteouts) is tarred out as its layer.
   Between steps the host replaces the sandbox's network rules: each step
   reaches only what it needs.  A step's cache key is the SHA-256 of its
   parent's key, its text and its inputs' digests.  */
#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <regex.h>
#include <string.h>
#include <sys/stat.h>

#include "image/image.h"
#include "sandbox/create.h"
#include "sandbox/store.h"

#define TAIL_MAX 4096
#define STEP_TIMEOUT_MS (30ULL * 60 * 1000)
#define WORK "/run/rtb"
/* npm 10 runs on Debian 12's Node.js 18 (npm 11 needs 20); its tarball
   bundles its dependencies.  */
#define NPM_TARBALL "https://registry.npmjs.org/npm/-/npm-10.9.2.tgz"

enum step_kind
{
  STEP_FILE,
  STEP_APT,
  STEP_PIP,
  STEP_NPM,
  STEP_RUN,
};

static const char *const kind_names[] = { "file", "apt", "pip", "npm", "run" };

struct step
{
  enum step_kind kind;
  char **words;     /* packages; for run the command; for file SRC, DST */
  char *text;       /* shown and hashed */
  char key[65];
  char layer[65];   /* its layer once known */
  bool cached;
};

struct build
{
  rt_context *ctx;
  const rt_build_opts *o;
  struct step *steps;
  size_t n;
  char **env;       /* base env + build env */
  char *workdir;
  char *base_id;
  json_object *base_layers;
  int log_fd;
  rt_sandbox *sb;
};

/* ---- output ---------------------------------------------------------------- */

static void RT_PRINTF (2, 3)
say (struct build *b, const char *fmt, ...)
{
  va_list ap;

  if (b->log_fd < 0)
    return;
  va_start (ap, fmt);
  vdprintf (b->log_fd, fmt, ap);
  va_end (ap);
  dprintf (b->log_fd, "\n");
}

struct tail
{
  struct build *b;
  char buf[TAIL_MAX];
  size_t len;
  int fd;           /* >= 0: stdout goes here (layer capture) */
  bool failed;
};

static int
on_step_output (void *data, int stream, const char *buf, size_t len)
{
  struct tail *t = data;

  if (t->fd >= 0 && stream == 1)
    {
      if (rt_write_all (t->fd, buf, len) < 0)
        t->failed = true;
      return 0;
    }
  if (t->b->log_fd >= 0)
    rt_write_all (t->b->log_fd, buf, len);
  if (len >= TAIL_MAX)
    {
      memcpy (t->buf, buf + len - TAIL_MAX, TAIL_MAX);
      t->len = TAIL_MAX;
    }
  else
    {
      if (t->len + len > TAIL_MAX)
        {
          memmove (t->buf, t->buf + (t->len + len - TAIL_MAX), TAIL_MAX - len);
          t->len = TAIL_MAX - len;
        }
      memcpy (t->buf + t->len, buf, len);
      t->len += len;
    }
  return 0;
}

/* The last few lines of @t, for an error's hint.  */
static const char *
last_lines (struct tail *t, int lines)
{
  size_t i = t->len;

  if (t->len == TAIL_MAX)
    t->buf[TAIL_MAX - 1] = '\0';
  else
    t->buf[t->len] = '\0';
  while (i > 0 && (t->buf[i - 1] == '\n' || t->buf[i - 1] == '\0'))
    t->buf[--i] = '\0';
  while (i > 0 && lines > 0)
    if (t->buf[--i] == '\n')
      lines--;
  return t->buf + (t->buf[i] == '\n' ? i + 1 : i);
}

/* Runs @script under sh as root in the build sandbox.  */
static int
guest_sh (struct build *b, const char *script, char *const *args, struct tail *t, rt_exec_result *res,
          rt_error **err)
{
  size_t n = 0;
  char *argv[64];
  rt_exec_opts opts = { .user = "root", .timeout_ms = STEP_TIMEOUT_MS, .cancel_fd = -1,
                        .on_output = on_step_output, .data = t };

  argv[n++] = (char *) "sh";
  argv[n++] = (char *) "-c";
  argv[n++] = (char *) script;
  argv[n++] = (char *) "sh";
  for (; args && *args && n < 62; args++)
    argv[n++] = *args;
  argv[n] = NULL;
  memset (res, 0, sizeof *res);
  return rt_sandbox_exec (b->sb, argv, &opts, res, err);
}

/* A script that must work: failure is the build's error.  */
static int
guest_must (struct build *b, const char *what, const char *script, char *const *args, rt_error **err)
{
  struct tail t = { .b = b, .fd = -1 };
  rt_exec_result res;
  int ret = guest_sh (b, script, args, &t, &res, err);

  if (ret < 0)
    return ret;
  if (res.exit_code != 0 || res.signal)
    {
      rt_error_set (err, EIO, "build_failed", "%s failed (exit %d)", what, res.exit_code);
      return rt_error_hint (err, "%s", last_lines (&t, 5));
    }
  return 0;
}

/* ---- steps ------------------------------------------------------------------- */

static bool
matches (const char *pattern, const char *s)
{
  regex_t re;
  bool ok;

  if (regcomp (&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
    return false;
  ok = regexec (&re, s, 0, NULL, 0) == 0;
  regfree (&re);
  return ok;
}

static int
check_package (enum step_kind kind, const char *p, rt_error **err)
{
  static const char *const patterns[] = {
    [STEP_APT] = "^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+:~-]+)?$",
    [STEP_PIP] = "^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\\[[A-Za-z0-9,._-]+\\])?"
                 "((==|>=|<=|~=|!=|>|<)[A-Za-z0-9.*+!-]+)?$",
    [STEP_NPM] = "^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*(@[A-Za-z0-9.^~<>=*+-]+)?$",
  };

  if (strlen (p) > 200 || !matches (patterns[kind], p))
    {
      rt_error_set (err, EINVAL, "invalid_request", "'%s' is not a valid %s package name", p, kind_names[kind]);
      return rt_error_hint (err, "names only, optionally with a version (pkg=1.2 for apt, pkg==1.2 for pip, pkg@1.2 "
                                 "for npm)");
    }
  return 0;
}

static char **
strv_new (size_t n)
{
  return calloc (n + 1, sizeof (char *));
}

static int
add_step (struct build *b, enum step_kind kind, char **words, rt_error **err)
{
  struct step *s;
  size_t len = 0;
  FILE *f;

  s = realloc (b->steps, (b->n + 1) * sizeof *s);
  if (s == NULL)
    {
      cleanup_strvp (&words);
      return rt_error_oom (err);
    }
  b->steps = s;
  s = &b->steps[b->n++];
  memset (s, 0, sizeof *s);
  s->kind = kind;
  s->words = words;
  f = open_memstream (&s->text, &len);
  if (f == NULL)
    return rt_error_oom (err);
  fprintf (f, "%s", kind_names[kind]);
  for (char **w = words; *w; w++)
    fprintf (f, " %s", *w);
  return fclose (f) == 0 ? 0 : rt_error_oom (err);
}

/* One step per package list (if any), one per file and per command.  */
static int
add_packages (struct build *b, enum step_kind kind, json_object *from_recipe, char *const *from_flags,
              rt_error **err)
{
  size_t n = 0, i = 0;
  char **words;

  n += from_recipe ? json_object_array_length (from_recipe) : 0;
  for (char *const *p = from_flags; p && *p; p++)
    n++;
  if (n == 0)
    return 0;
  words = strv_new (n);
  if (words == NULL)
    return rt_error_oom (err);
  for (size_t k = 0; from_recipe && k < json_object_array_length (from_recipe); k++)
    words[i++] = strdup (json_object_get_string (json_object_array_get_idx (from_recipe, k)));
  for (char *const *p = from_flags; p && *p; p++)
    words[i++] = strdup (*p);
  for (size_t k = 0; k < n; k++)
    {
      int ret = words[k] ? check_package (kind, words[k], err) : rt_error_oom (err);
      if (ret < 0)
        {
          cleanup_strvp (&words);
          return ret;
        }
    }
  return add_step (b, kind, words, err);
}

static int
add_file (struct build *b, const char *spec, const char *dir, rt_error **err)
{
  const char *colon = strrchr (spec, ':');
  cleanup_free char *src = NULL;
  char **words;
  struct stat st;

  if (colon == NULL || colon == spec || colon[1] != '/')
    {
      rt_error_set (err, EINVAL, "invalid_request", "a file is SRC:DST with DST absolute, not '%s'", spec);
      return rt_error_hint (err, "for example: --file ./app:/opt/app");
    }
  src = spec[0] == '/' || dir == NULL ? strndup (spec, colon - spec)
                                      : rt_strdup_printf ("%s/%.*s", dir, (int) (colon - spec), spec);
  if (src == NULL)
    return rt_error_oom (err);
  if (stat (src, &st) < 0)
    return rt_error_set (err, errno, "file_not_found", "cannot add '%s' to the image: %s", src, strerror (errno));
  words = strv_new (2);
  if (words == NULL || (words[0] = realpath (src, NULL)) == NULL || (words[1] = strdup (colon + 1)) == NULL)
    {
      cleanup_strvp (&words);
      return rt_error_oom (err);
    }
  return add_step (b, STEP_FILE, words, err);
}

static int
add_run (struct build *b, const char *cmd, rt_error **err)
{
  char **words = strv_new (1);

  if (words == NULL || (words[0] = strdup (cmd)) == NULL)
    {
      cleanup_strvp (&words);
      return rt_error_oom (err);
    }
  return add_step (b, STEP_RUN, words, err);
}

static json_object *
recipe_array (json_object *r, const char *key, rt_error **err)
{
  json_object *a;

  if (r == NULL || !json_object_object_get_ex (r, key, &a) || a == NULL)
    return NULL;
  if (!json_object_is_type (a, json_type_array))
    {
      rt_error_set (err, EINVAL, "invalid_request", "runtime.json: \"%s\" must be a list", key);
      return NULL;
    }
  for (size_t i = 0; i < json_object_array_length (a); i++)
    if (!json_object_is_type (json_object_array_get_idx (a, i), json_type_string))
      {
        rt_error_set (err, EINVAL, "invalid_request", "runtime.json: \"%s\" must be a list of strings", key);
        return NULL;
      }
  return a;
}

/* Steps in their fixed order: files, apt, pip, npm, commands.  */
static int
plan (struct build *b, json_object *recipe, rt_error **err)
{
  const rt_build_opts *o = b->o;
  json_object *files = recipe_array (recipe, "files", err), *cmds;
  int ret;

  if (*err)
    return -EINVAL;
  for (size_t i = 0; files && i < json_object_array_length (files); i++)
    if ((ret = add_file (b, json_object_get_string (json_object_array_get_idx (files, i)), o->dir, err)) < 0)
      return ret;
  for (char *const *f = o->files; f && *f; f++)
    if ((ret = add_file (b, *f, NULL, err)) < 0)
      return ret;
  if ((ret = add_packages (b, STEP_APT, recipe_array (recipe, "apt", err), o->apt, err)) < 0 || *err)
    return ret < 0 ? ret : -EINVAL;
  if ((ret = add_packages (b, STEP_PIP, recipe_array (recipe, "pip", err), o->pip, err)) < 0 || *err)
    return ret < 0 ? ret : -EINVAL;
  if ((ret = add_packages (b, STEP_NPM, recipe_array (recipe, "npm", err), o->npm, err)) < 0 || *err)
    return ret < 0 ? ret : -EINVAL;
  cmds = recipe_array (recipe, "commands", err);
  if (*err)
    return -EINVAL;
  for (size_t i = 0; cmds && i < json_object_array_length (cmds); i++)
    if ((ret = add_run (b, json_object_get_string (json_object_array_get_idx (cmds, i)), err)) < 0)
      return ret;
  for (char *const *r = o->run; r && *r; r++)
    if ((ret = add_run (b, *r, err)) < 0)
      return ret;
  return 0;
}

/* ---- cache keys -------------------------------------------------------------- */

/* Paths, modes, link targets and contents of a file or tree, in order.  */
static int
hash_tree (EVP_MD_CTX *md, const char *path, const char *rel, rt_error **err)
{
  struct stat st;

  if (lstat (path, &st) < 0)
    return rt_error_set (err, errno, "file_not_found", "cannot read '%s': %s", path, strerror (errno));
  EVP_DigestUpdate (md, rel, strlen (rel) + 1);
  EVP_DigestUpdate (md, &st.st_mode, sizeof st.st_mode);
  if (S_ISLNK (st.st_mode))
    {
      char target[PATH_MAX];
      ssize_t n = readlink (path, target, sizeof target);
      if (n > 0)
        EVP_DigestUpdate (md, target, n);
    }
  else if (S_ISREG (st.st_mode))
    {
      char buf[1 << 16];
      ssize_t n;
      int fd = open (path, O_RDONLY | O_CLOEXEC);
      if (fd < 0)
        return rt_error_set (err, errno, "file_not_found", "cannot read '%s': %s", path, strerror (errno));
      while ((n = read (fd, buf, sizeof buf)) > 0)
        EVP_DigestUpdate (md, buf, n);
      close (fd);
    }
  else if (S_ISDIR (st.st_mode))
    {
      struct dirent **list = NULL;
      int n = scandir (path, &list, NULL, alphasort), ret = 0;
      for (int i = 0; i < n; i++)
        {
          if (ret == 0 && strcmp (list[i]->d_name, ".") != 0 && strcmp (list[i]->d_name, "..") != 0)
            {
              cleanup_free char *p = rt_strdup_printf ("%s/%s", path, list[i]->d_name);
              cleanup_free char *r = rt_strdup_printf ("%s/%s", rel, list[i]->d_name);
              ret = p && r ? hash_tree (md, p, r, err) : rt_error_oom (err);
            }
          free (list[i]);
        }
      free (list);
      return ret;
    }
  return 0;
}

/* Whatever the step's result depends on: its parent, its text, its input
   files, and for the steps that run in the guest the build's environment
   (PIP_INDEX_URL, a variable a command reads…), and a command's workdir.  */
static int
step_key (struct build *b, const char *parent, struct step *s, char out[65], rt_error **err)
{
  EVP_MD_CTX *md = EVP_MD_CTX_new ();
  unsigned char digest[32];
  unsigned int len = 0;
  int ret = 0;

  if (md == NULL || EVP_DigestInit_ex (md, EVP_sha256 (), NULL) != 1)
    {
      EVP_MD_CTX_free (md);
      return rt_error_oom (err);
    }
  EVP_DigestUpdate (md, parent, strlen (parent) + 1);
  EVP_DigestUpdate (md, s->text, strlen (s->text) + 1);
  if (s->kind == STEP_FILE)
    ret = hash_tree (md, s->words[0], ".", err);
  else
    for (char **e = b->env; e && *e; e++)
      EVP_DigestUpdate (md, *e, strlen (*e) + 1);
  /* An empty string ends the env: "A=1" then workdir "/x" must not
     collide with env "A=1", "/x".  */
  if (s->kind == STEP_RUN)
    {
      EVP_DigestUpdate (md, "", 1);
      EVP_DigestUpdate (md, b->workdir, strlen (b->workdir) + 1);
    }
  if (ret == 0)
    EVP_DigestFinal_ex (md, digest, &len);
  EVP_MD_CTX_free (md);
  for (unsigned i = 0; ret == 0 && i < 32; i++)
    sprintf (out + 2 * i, "%02x", digest[i]);
  return ret;
}

static char *
cache_path (struct build *b, const char *key)
{
  return rt_strdup_printf ("%s/images/cache/%s", b->ctx->data_dir, key);
}

/* The cached layer of @s, when it and its file are still there.  */
static bool
cache_lookup (struct build *b, struct step *s)
{
  cleanup_free char *path = cache_path (b, s->key), *data = NULL, *layer = NULL;
  cleanup_error rt_error *ignored = NULL;

  if (path == NULL || rt_read_file (path, &data, NULL, &ignored) < 0 || strlen (data) < 64)
    return false;
  memcpy (s->layer, data, 64);
  s->layer[64] = '\0';
  layer = rt_image_layer_path (b->ctx, s->layer);
  return layer != NULL;
}

static void
cache_store (struct build *b, struct step *s)
{
  cleanup_free char *path = cache_path (b, s->key);
  cleanup_free char *dir = rt_strdup_printf ("%s/images/cache", b->ctx->data_dir);

  if (path && dir && rt_mkdir_p (dir, 0755, NULL) == 0)
    rt_write_file_atomic (path, s->layer, 64, 0644, NULL);
}

/* ---- running a step ---------------------------------------------------------- */

/* What a step's network may reach.  */
static int
step_network (struct build *b, struct step *s, char **apt_hosts, rt_error **err)
{
  static char *const pypi[] = { (char *) "pypi.org", (char *) "files.pythonhosted.org", NULL };
  static char *const npm[] = { (char *) "registry.npmjs.org", NULL };

  switch (s->kind)
    {
    case STEP_APT:
      return rt_sandbox_set_network (b->sb, true, apt_hosts, NULL, NULL, err);
    case STEP_PIP:
      return rt_sandbox_set_network (b->sb, true, pypi, NULL, NULL, err);
    case STEP_NPM:
      return rt_sandbox_set_network (b->sb, true, npm, NULL, NULL, err);
    case STEP_FILE:
    case STEP_RUN:
    default:
      return rt_sandbox_set_network (b->sb, false, NULL, NULL, NULL, err);
    }
}

/* The hosts of the base's apt sources (the guest's own files, read by
   the host: no shell of the guest decides what the network allows).  */
static int
apt_hosts (struct build *b, char ***out, rt_error **err)
{
  static const char script[] = "cat " WORK "/base/etc/apt/sources.list " WORK
                               "/base/etc/apt/sources.list.d/*.list " WORK
                               "/base/etc/apt/sources.list.d/*.sources 2>/dev/null; true";
  struct tail t = { .b = b, .fd = -1 };
  rt_exec_result res;
  char **hosts = strv_new (16);
  size_t n = 0;
  int save = b->log_fd, ret;

  if (hosts == NULL)
    return rt_error_oom (err);
  b->log_fd = -1;
  ret = guest_sh (b, script, NULL, &t, &res, err);
  b->log_fd = save;
  if (ret < 0)
    {
      cleanup_strvp (&hosts);
      return ret;
    }
  last_lines (&t, 0);
  for (char *p = t.buf; (p = strstr (p, "://")) && n < 15;)
    {
      size_t len;
      p += 3;
      len = strcspn (p, "/: \t\n");
      if (len > 0 && len < 254)
        {
          cleanup_free char *h = strndup (p, len);
          bool seen = false;
          for (size_t i = 0; i < n && h; i++)
            seen |= strcmp (hosts[i], h) == 0;
          if (h && !seen)
            hosts[n++] = steal_pointer (&h);
        }
      p += len;
    }
  *out = hosts;
  return 0;
}

static char *
lowers (size_t first, size_t i)
{
  size_t len = 0;
  char *out = NULL;
  FILE *f = open_memstream (&out, &len);

  if (f == NULL)
    return NULL;
  for (size_t k = i; k > first; k--)
    fprintf (f, WORK "/u%zu:", k - 1);
  fprintf (f, WORK "/base");
  if (fclose (f) != 0)
    {
      free (out);
      return NULL;
    }
  return out;
}

static int
run_step (struct build *b, size_t first, size_t i, char **apt, rt_error **err)
{
  static const char mount_script[] =
      "set -e; i=$1; r=" WORK "/r$i; mkdir -p " WORK "/u$i " WORK "/w$i $r; "
      "mount -t overlay rtb -o lowerdir=$2,upperdir=" WORK "/u$i,workdir=" WORK "/w$i $r; "
      "for d in dev proc sys; do mount --rbind /$d $r/$d; done; "
      "mount -t tmpfs tmpfs $r/tmp; mount -t tmpfs tmpfs $r/run";
  static const char umount_script[] = "umount -R " WORK "/r$1 && rm -rf " WORK "/w$1";
  static const char capture_script[] = "tar --xattrs --xattrs-include='*' --numeric-owner -C " WORK "/u$1 -cf - .";
  /* File steps run outside the chroot (the file waits in the guest's
     /tmp); the others run their inner script chrooted: $1 the step's
     index, $2 the script, then its arguments.  */
  static const char file_script[] =
      "r=" WORK "/r$1; d=$3; case $d in */) d=$d$(basename \"$4\");; esac; "
      "mkdir -p \"$r$(dirname \"$d\")\" && cp -a --no-preserve=ownership -T /tmp/rtb-in \"$r$d\" "
      "&& rm -rf /tmp/rtb-in";
  /* The host's trust store (in the chroot's /run: never in a layer) for
     what the step did not set: registries behind the host's TLS-inspecting
     proxy then work as they do on the host.  requests prefers
     REQUESTS_CA_BUNDLE to pip's own --cert: it follows PIP_CERT.  */
  static const char chroot_script[] =
      "r=" WORK "/r$1; s=$2; shift 2; if [ -f /tmp/rtb-ca.pem ]; then c=/run/rtb-ca.pem; cp /tmp/rtb-ca.pem $r$c; "
      "export SSL_CERT_FILE=${SSL_CERT_FILE:-$c} CURL_CA_BUNDLE=${CURL_CA_BUNDLE:-$c} "
      "REQUESTS_CA_BUNDLE=${REQUESTS_CA_BUNDLE:-${PIP_CERT:-$c}} PIP_CERT=${PIP_CERT:-$c} "
      "NODE_EXTRA_CA_CERTS=${NODE_EXTRA_CA_CERTS:-$c} npm_config_cafile=${npm_config_cafile:-$c}; fi; "
      "exec chroot \"$r\" sh -c \"$s\" sh \"$@\"";
  static const char *const inner[] = {
    [STEP_APT] = "export DEBIAN_FRONTEND=noninteractive; apt-get update -q "
                 "&& apt-get install -y -q --no-install-recommends \"$@\" && apt-get clean "
                 "&& rm -rf /var/lib/apt/lists/*",
    [STEP_PIP] = "python3 -m pip install --no-cache-dir --break-system-packages --root-user-action=ignore "
                 "--progress-bar off \"$@\"",
    /* Debian's npm package pulls in ~500 packages (10 min under TCG):
       with only Node.js in the image, npm comes from the registry.  */
    [STEP_NPM] = "set -e; export npm_config_update_notifier=false; if ! command -v npm >/dev/null; then "
                 "command -v node >/dev/null || { echo 'this image has no Node.js: add --apt nodejs' >&2; exit 1; }; "
                 "d=$(mktemp -d); curl -fsS -o $d/npm.tgz " NPM_TARBALL "; tar -xzf $d/npm.tgz -C $d; "
                 "node $d/package/bin/npm-cli.js install -g --no-fund --no-audit --no-update-notifier $d/npm.tgz; "
                 "rm -rf $d; fi; "
                 "npm install -g --no-fund --no-audit --no-update-notifier \"$@\"; npm cache clean --force",
    [STEP_RUN] = "cd \"$1\" 2>/dev/null || cd /; eval \"$2\"",
  };
  struct step *s = &b->steps[i];
  cleanup_free char *low = lowers (first, i);
  cleanup_free char *raw = NULL;
  char idx[24];
  char *margs[] = { idx, low, NULL };
  char *args[64];
  size_t n = 0;
  struct tail t = { .b = b, .fd = -1 };
  rt_exec_result res;
  int ret, fd;

  if (low == NULL)
    return rt_error_oom (err);
  snprintf (idx, sizeof idx, "%zu", i);
  ret = guest_must (b, "preparing the step's overlay", mount_script, margs, err);
  if (ret < 0)
    return ret;
  ret = step_network (b, s, apt, err);
  if (ret < 0)
    return ret;
  args[n++] = idx;
  if (s->kind != STEP_FILE)
    args[n++] = (char *) inner[s->kind];
  if (s->kind == STEP_FILE)
    {
      ret = rt_sandbox_copy_in (b->sb, s->words[0], "/tmp/rtb-in", -1, err);
      if (ret < 0)
        return ret;
      args[n++] = (char *) "";
      args[n++] = s->words[1];
      args[n++] = s->words[0];
    }
  else if (s->kind == STEP_RUN)
    {
      args[n++] = b->workdir;
      args[n++] = s->words[0];
    }
  else
    for (char **w = s->words; *w && n < 62; w++)
      args[n++] = *w;
  args[n] = NULL;
  ret = guest_sh (b, s->kind == STEP_FILE ? file_script : chroot_script, args, &t, &res, err);
  if (ret < 0)
    return ret;
  if (res.exit_code != 0 || res.signal || res.timed_out)
    {
      rt_error_set (err, EIO, "build_failed", "step %zu/%zu (%s) failed with exit code %d", i + 1, b->n, s->text,
                    res.signal ? 128 + res.signal : res.exit_code);
      return rt_error_hint (err, "its last output:\n%s", last_lines (&t, 8));
    }
  ret = guest_must (b, "unmounting the step's overlay", umount_script, margs, err);
  if (ret < 0)
    return ret;

  /* Its changes: the upper dir, tarred by the guest, stored by the host.  */
  raw = rt_strdup_printf ("%s/images/layers/raw.tmp.%d", b->ctx->data_dir, (int) getpid ());
  if (raw == NULL)
    return rt_error_oom (err);
  fd = open (raw, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", raw, strerror (errno));
  t = (struct tail){ .b = b, .fd = fd };
  ret = guest_sh (b, capture_script, margs, &t, &res, err);
  close (fd);
  if (ret == 0 && (res.exit_code != 0 || t.failed))
    {
      rt_error_set (err, EIO, "build_failed", "cannot capture the changes of step %zu/%zu (%s)", i + 1, b->n, s->text);
      ret = rt_error_hint (err, "%s", last_lines (&t, 5));
    }
  if (ret == 0)
    ret = rt_image_layer_from_tar (b->ctx, raw, s->layer, err);
  unlink (raw);
  if (ret == 0)
    cache_store (b, s);
  return ret;
}

/* ---- the build ------------------------------------------------------------------ */

static int
read_recipe (const char *dir, json_object **out, rt_error **err)
{
  cleanup_free char *path = rt_strdup_printf ("%s/runtime.json", dir);
  cleanup_free char *text = NULL;
  enum json_tokener_error jerr = json_tokener_success;
  int ret;

  if (path == NULL)
    return rt_error_oom (err);
  ret = rt_read_file (path, &text, NULL, err);
  if (ret < 0)
    return ret;
  *out = json_tokener_parse_verbose (text, &jerr);
  if (*out == NULL || !json_object_is_type (*out, json_type_object))
    return rt_error_set (err, EINVAL, "invalid_request", "'%s' is not a JSON object: %s", path,
                         jerr != json_tokener_success ? json_tokener_error_desc (jerr) : "wrong type");
  {
    static const char *const known[] = { "base", "apt", "pip", "npm", "commands", "files", "env", "workdir", NULL };
    json_object_object_foreach (*out, k, v)
    {
      bool ok = false;
      (void) v;
      for (const char *const *q = known; *q; q++)
        ok |= strcmp (*q, k) == 0;
      if (!ok)
        return rt_error_set (err, EINVAL, "invalid_request", "'%s': unknown key \"%s\"", path, k);
    }
  }
  return 0;
}

/* base env, then the recipe's, then --env: later names win.  */
static int
merge_env (struct build *b, json_object *base, json_object *recipe, char *const *flags, rt_error **err)
{
  cleanup_json json_object *env = json_object_new_object ();
  json_object *r;
  size_t n = 0;

  for (size_t i = 0; base && i < json_object_array_length (base); i++)
    {
      const char *kv = json_object_get_string (json_object_array_get_idx (base, i));
      const char *eq = kv ? strchr (kv, '=') : NULL;
      if (eq)
        {
          cleanup_free char *k = strndup (kv, eq - kv);
          json_object_object_add (env, k, json_object_new_string (eq + 1));
        }
    }
  if (recipe && json_object_object_get_ex (recipe, "env", &r) && r)
    {
      if (!json_object_is_type (r, json_type_object))
        return rt_error_set (err, EINVAL, "invalid_request", "runtime.json: \"env\" must be an object");
      json_object_object_foreach (r, k, v)
      {
        if (!rt_env_name_valid (k, strlen (k)))
          return rt_error_set (err, EINVAL, "invalid_env", "bad environment variable '%s'", k);
        json_object_object_add (env, k, json_object_new_string (json_object_get_string (v)));
      }
    }
  for (char *const *f = flags; f && *f; f++)
    {
      const char *eq = strchr (*f, '=');
      cleanup_free char *k = eq ? strndup (*f, eq - *f) : NULL;
      if (eq == NULL || !rt_env_name_valid (*f, eq - *f))
        return rt_error_set (err, EINVAL, "invalid_env", "bad environment variable '%s'", *f);
      json_object_object_add (env, k, json_object_new_string (eq + 1));
    }
  b->env = strv_new (json_object_object_length (env));
  if (b->env == NULL)
    return rt_error_oom (err);
  json_object_object_foreach (env, k, v)
  {
    b->env[n] = rt_strdup_printf ("%s=%s", k, json_object_get_string (v));
    if (b->env[n++] == NULL)
      return rt_error_oom (err);
  }
  return 0;
}

static void
build_clear (struct build *b)
{
  for (size_t i = 0; i < b->n; i++)
    {
      cleanup_strvp (&b->steps[i].words);
      free (b->steps[i].text);
    }
  free (b->steps);
  cleanup_strvp (&b->env);
  free (b->workdir);
  free (b->base_id);
  json_object_put (b->base_layers);
}

/* Boots the build sandbox on the parent plus the cached steps before
   @first, and binds its root where the overlays find it.  */
static int
start_sandbox (struct build *b, size_t first, char **tmpdisk, rt_error **err)
{
  rt_sandbox_config cfg = { .vcpu = 2, .memory_mib = 4096, .timeout_s = 3600, .on_timeout = "stop",
                            .no_internet = true, .ephemeral = true, .funding = "paid" };
  struct rt_image_disk on = { 0 };
  cleanup_json json_object *layers = json_object_new_array ();
  int ret;

  cfg.env = b->env;
  for (size_t i = 0; i < json_object_array_length (b->base_layers); i++)
    json_object_array_add (layers, json_object_get (json_object_array_get_idx (b->base_layers, i)));
  for (size_t i = 0; i < first; i++)
    json_object_array_add (layers, json_object_new_string (b->steps[i].layer));
  if (first == 0)
    {
      struct rt_image_disk d = { 0 };
      ret = rt_image_ensure_disk (b->ctx, b->base_id, &d, err);
      if (ret == 0)
        ret = rt_sandbox_create_on (b->ctx, &cfg, &d, &b->sb, err);
      rt_image_disk_clear (&d);
    }
  else
    {
      *tmpdisk = rt_strdup_printf ("%s/disks/build-%s.ext4", b->ctx->cache_dir, b->steps[first - 1].key);
      if (*tmpdisk == NULL)
        return rt_error_oom (err);
      ret = rt_image_disk_for_layers (b->ctx, layers, *tmpdisk, err);
      on.id = (char *) "build";
      on.disk = *tmpdisk;
      on.workdir = (char *) "/";
      if (ret == 0)
        ret = rt_sandbox_create_on (b->ctx, &cfg, &on, &b->sb, err);
    }
  if (ret < 0)
    return ret;
  {
    const char *ca = getenv ("SSL_CERT_FILE");
    if (ca == NULL || access (ca, R_OK) < 0)
      ca = "/etc/ssl/certs/ca-certificates.crt";
    if (access (ca, R_OK) == 0 && (ret = rt_sandbox_copy_in (b->sb, ca, "/tmp/rtb-ca.pem", -1, err)) < 0)
      return ret;
  }
  return guest_must (b, "preparing the build", "set -e; mkdir -p " WORK "/base; mount --bind / " WORK "/base", NULL,
                     err);
}

int
rt_image_build (rt_context *ctx, const rt_build_opts *o, char **id_out, rt_error **err)
{
  struct build b = { .ctx = ctx, .o = o, .log_fd = o->log_fd };
  cleanup_json json_object *recipe = NULL, *base = NULL, *fields = NULL, *layers = NULL, *steps = NULL;
  cleanup_strv char **apt = NULL;
  cleanup_free char *tmpdisk = NULL, *name = NULL;
  const char *from = o->from, *tag = NULL, *w;
  json_object *v;
  size_t first;
  int ret;

  if (o->dir && (ret = read_recipe (o->dir, &recipe, err)) < 0)
    goto out;
  if (from == NULL && recipe && json_object_object_get_ex (recipe, "base", &v))
    from = json_object_get_string (v);
  name = strdup (o->name ? o->name : "image");
  if (name == NULL)
    {
      ret = rt_error_oom (err);
      goto out;
    }
  if (strchr (name, ':'))
    {
      *strchr (name, ':') = '\0';
      tag = o->name + strlen (name) + 1;
    }
  if (!rt_image_name_valid (name)
      || (tag && (*tag == '\0' || strspn (tag, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
                                      != strlen (tag))))
    {
      ret = rt_error_set (err, EINVAL, "invalid_request", "'%s' is not an image name (lower-case letters, digits, "
                                                          "'.', '_', '-'; then :TAG)", o->name);
      goto out;
    }
  if ((ret = plan (&b, recipe, err)) < 0)
    goto out;
  if (b.n == 0)
    {
      ret = rt_error_set (err, EINVAL, "usage", "nothing to build: no --apt, --pip, --npm, --run or --file");
      goto out;
    }
  /* The base: the default image is made on first use.  */
  {
    struct rt_image_disk d = { 0 };
    ret = rt_image_ensure_disk (ctx, from, &d, err);
    rt_image_disk_clear (&d);
    if (ret < 0)
      goto out;
  }
  if ((ret = rt_image_manifest (ctx, from, &base, err)) < 0)
    goto out;
  b.base_id = strdup (rt_json_str (base, "id"));
  b.base_layers = json_object_object_get_ex (base, "layers", &v) ? json_object_get (v) : json_object_new_array ();
  w = o->workdir ? o->workdir : recipe && json_object_object_get_ex (recipe, "workdir", &v) ? json_object_get_string (v)
                                                                                            : rt_json_str (base, "workdir");
  b.workdir = strdup (w && *w == '/' ? w : "/");
  if (b.base_id == NULL || b.workdir == NULL)
    {
      ret = rt_error_oom (err);
      goto out;
    }
  if ((ret = merge_env (&b, json_object_object_get_ex (base, "env", &v) ? v : NULL, recipe, o->env, err)) < 0)
    goto out;

  /* Which steps are known already.  */
  first = b.n;
  for (size_t i = 0; i < b.n; i++)
    {
      if ((ret = step_key (&b, i ? b.steps[i - 1].key : b.base_id, &b.steps[i], b.steps[i].key, err)) < 0)
        goto out;
      b.steps[i].cached = !o->no_cache && first == b.n && cache_lookup (&b, &b.steps[i]);
      if (!b.steps[i].cached && first == b.n)
        first = i;
    }
  for (size_t i = 0; i < first; i++)
    say (&b, "runtime: step %zu/%zu: %s (cached)", i + 1, b.n, b.steps[i].text);
  if (first < b.n)
    {
      say (&b, "runtime: starting the build sandbox…");
      if ((ret = start_sandbox (&b, first, &tmpdisk, err)) < 0)
        goto out;
      for (size_t i = first; i < b.n; i++)
        {
          if (b.steps[i].kind == STEP_APT && apt == NULL && (ret = apt_hosts (&b, &apt, err)) < 0)
            goto out;
          say (&b, "runtime: step %zu/%zu: %s", i + 1, b.n, b.steps[i].text);
          if ((ret = run_step (&b, first, i, apt, err)) < 0)
            goto out;
        }
    }

  /* The image: the base's layers, then one per step.  */
  fields = json_object_new_object ();
  layers = json_object_new_array ();
  steps = json_object_new_array ();
  for (size_t i = 0; i < json_object_array_length (b.base_layers); i++)
    json_object_array_add (layers, json_object_get (json_object_array_get_idx (b.base_layers, i)));
  for (size_t i = 0; i < b.n; i++)
    {
      json_object_array_add (layers, json_object_new_string (b.steps[i].layer));
      json_object_array_add (steps, json_object_new_string (b.steps[i].text));
    }
  json_object_object_add (fields, "tags", json_object_new_array ());
  json_object_object_add (fields, "layers", json_object_get (layers));
  {
    json_object *env = json_object_new_array ();
    for (char **e = b.env; e && *e; e++)
      json_object_array_add (env, json_object_new_string (*e));
    json_object_object_add (fields, "env", env);
  }
  json_object_object_add (fields, "workdir", json_object_new_string (b.workdir));
  json_object_object_add (fields, "base", json_object_new_string (b.base_id));
  json_object_object_add (fields, "steps", json_object_get (steps));
  /* The same layers, env and workdir as the name's latest: that one.  */
  {
    cleanup_json json_object *latest = NULL;
    cleanup_error rt_error *ignored = NULL;
    json_object *a, *c;
    bool same = tag == NULL && rt_image_manifest (ctx, name, &latest, &ignored) == 0;
    const char *keys[] = { "layers", "env", "workdir", NULL };
    for (const char **k = keys; same && *k; k++)
      same = json_object_object_get_ex (latest, *k, &a) && json_object_object_get_ex (fields, *k, &c)
             && json_object_equal (a, c);
    if (same)
      {
        *id_out = strdup (rt_json_str (latest, "id"));
        ret = *id_out ? 0 : rt_error_oom (err);
        if (ret == 0)
          say (&b, "runtime: %s:latest (%.12s) is this build already", name, *id_out);
        goto out;
      }
  }
  ret = rt_image_add (ctx, name, tag, fields, id_out, err);
  if (ret == 0)
    say (&b, "runtime: built %s:%s (%.12s)", name, tag ? tag : "latest", *id_out);
out:
  if (b.sb)
    {
      cleanup_error rt_error *ignored = NULL;
      cleanup_free char *sbid = strdup (rt_sandbox_id (b.sb));
      rt_sandbox_destroy (b.sb, &ignored);
      if (sbid)
        rt_sandbox_remove (ctx, sbid, NULL);
    }
  if (tmpdisk)
    unlink (tmpdisk);
  build_clear (&b);
  return ret;
}
