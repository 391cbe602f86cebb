/* step.c - a build's steps run in its sandbox: each in a fresh overlay
   over the base and the steps before it, chrooted, its upper dir tarred
   out as its layer; its network rules replaced for what it needs; its
   output kept for the error; its layer cached under its key.  */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "sandbox/copy.h"
#include "image/base.h"
#include "build/step.h"
#include "image/store.h"
#include "image/tar.h"

#define TAIL_MAX 4096
#define STEP_TIMEOUT_MS (30ULL * 60 * 1000)
/* npm 10 runs on Debian 12's Node.js 18 (npm 11 needs 20); its tarball
   bundles its dependencies.  */
#define NPM_TARBALL "https://registry.npmjs.org/npm/-/npm-10.9.2.tgz"

void
rt_build_say (struct build *b, const char *fmt, ...)
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
  uint64_t written; /* to fd: at most RT_LAYER_MAX_BYTES */
  bool failed;
  bool too_big;
};

static int
on_step_output (void *data, int stream, const char *buf, size_t len)
{
  struct tail *t = data;

  if (t->fd >= 0 && stream == 1)
    {
      /* The guest is root and picks what it sends: past the cap the
         command is stopped (a negative return).  */
      if (len > RT_LAYER_MAX_BYTES - t->written)
        {
          t->too_big = true;
          return -1;
        }
      t->written += len;
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
  const char *argv[64];
  rt_exec_opts opts = { .user = "root", .timeout_ms = STEP_TIMEOUT_MS,
                        .cancel_fd = b->o->cancel_fd > 0 ? b->o->cancel_fd : -1, .on_output = on_step_output,
                        .data = t };
  int ret;

  argv[n++] = (char *) "sh";
  argv[n++] = (char *) "-c";
  argv[n++] = (char *) script;
  argv[n++] = (char *) "sh";
  for (; args && *args && n < 62; args++)
    argv[n++] = *args;
  argv[n] = NULL;
  memset (res, 0, sizeof *res);
  ret = rt_local_sandbox_exec (b->sb, argv, &opts, res, err);
  if (ret == 0 && res->interrupted)
    return rt_build_interrupted (b, err);
  return ret;
}

int
rt_build_interrupted (struct build *b, rt_error **err)
{
  if (b->at < b->n)
    return rt_error_set (err, EINTR, "interrupted", "the build stopped at step %zu/%zu (%s); it left no sandbox and "
                                                    "no partial layer", b->at + 1, b->n, b->steps[b->at].text);
  return rt_error_set (err, EINTR, "interrupted", "the build stopped before its steps ran; it left no sandbox");
}

int
rt_build_check_cancel (struct build *b, rt_error **err)
{
  struct pollfd p = { .fd = b->o->cancel_fd, .events = POLLIN };

  if (b->o->cancel_fd > 0 && poll (&p, 1, 0) > 0)
    return rt_build_interrupted (b, err);
  return 0;
}

int
rt_build_guest_must (struct build *b, const char *what, const char *script, char *const *args, rt_error **err)
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
int
rt_build_step_key (struct build *b, const char *parent, struct step *s, char out[65], rt_error **err)
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

/* <data>/images/cache, a tenant's own under it: a step's layer is made by
   a guest its builder controls, so one tenant's must never stand for the
   same step of another's (or of the host's) build.  */
static char *
cache_dir (struct build *b)
{
  if (b->ctx->tenant)
    return rt_strdup_printf ("%s/images/cache/tenant-%s", b->ctx->data_dir, b->ctx->tenant);
  return rt_strdup_printf ("%s/images/cache", b->ctx->data_dir);
}

static char *
cache_path (struct build *b, const char *key)
{
  cleanup_free char *dir = cache_dir (b);
  return dir ? rt_strdup_printf ("%s/%s", dir, key) : NULL;
}

bool
rt_build_cache_lookup (struct build *b, struct step *s)
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
  cleanup_free char *dir = cache_dir (b);

  if (path && dir && rt_image_private_dir (dir, NULL) == 0)
    rt_write_file_atomic (path, s->layer, 64, 0600, NULL);
}

/* What a step's network may reach.  */
static int
step_network (struct build *b, struct step *s, char **apt_hosts, rt_error **err)
{
  static const char *const pypi[] = { "pypi.org", "files.pythonhosted.org", NULL };
  static const char *const npm[] = { "registry.npmjs.org", NULL };

  switch (s->kind)
    {
    case STEP_APT:
      return rt_local_sandbox_set_network (b->sb, true, (const char *const *) apt_hosts, NULL, NULL, err);
    case STEP_PIP:
      return rt_local_sandbox_set_network (b->sb, true, pypi, NULL, NULL, err);
    case STEP_NPM:
      return rt_local_sandbox_set_network (b->sb, true, npm, NULL, NULL, err);
    case STEP_FILE:
    case STEP_RUN:
    default:
      return rt_local_sandbox_set_network (b->sb, false, NULL, NULL, NULL, err);
    }
}

/* The host of an --apt-mirror URL, checked: it goes to the rules as a
   host name and to the guest's apt as one word of a sources line.  */
static int
mirror_host (const char *url, char **host, rt_error **err)
{
  static const char name_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-";
  static const char url_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_~:/%+@";
  const char *h = strncmp (url, "http://", 7) == 0 ? url + 7 : strncmp (url, "https://", 8) == 0 ? url + 8 : NULL;
  size_t len = h ? strcspn (h, ":/") : 0;

  if (h == NULL || len == 0 || len > 253 || strspn (h, name_chars) < len || strlen (url) > 1024
      || strspn (url, url_chars) != strlen (url))
    {
      rt_error_set (err, EINVAL, "invalid_request", "'%.100s' is not a Debian mirror URL", url);
      return rt_error_hint (err, "give http://HOST/PATH or https://HOST/PATH, e.g. http://deb.debian.org/debian");
    }
  *host = strndup (h, len);
  return *host ? 0 : rt_error_oom (err);
}

/* The --apt-mirror's host, else the hosts of the base this host built;
   never of the image's own sources: those are the guest's files, and it
   may have written any host there.  */
int
rt_build_apt_hosts (struct build *b, char ***out, rt_error **err)
{
  char **hosts;
  int ret;

  if (b->o->apt_mirror == NULL)
    return rt_image_base_apt_hosts (b->ctx, out, err);
  hosts = strv_new (1);
  if (hosts == NULL)
    return rt_error_oom (err);
  ret = mirror_host (b->o->apt_mirror, &hosts[0], err);
  if (ret < 0)
    {
      free (hosts);
      return ret;
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

/* What a package or command step runs in its chroot, on its words (a
   command step: on its workdir and its command).  */
static const char *const inner[] = {
  /* $1 an --apt-mirror or "": its sources list in /run, never in a layer;
     $2 "u" when the lists (in /run/rtb-lists, never in a layer: see
     lists_path) must be fetched.  A name the lists lack fails the
     install before it fetches anything: said on a line of its own, exit
     42 (missing_package), when there are lists at all (sources that could
     not be reached are a failed step).  An install on cached lists that fails
     otherwise (a version the mirror has replaced since) fetches them and
     tries once more.  */
  [STEP_APT] = "export DEBIAN_FRONTEND=noninteractive; m=$1; u=$2; shift 2; l=/run/rtb-lists; "
               "o=\"-o Dir::State::Lists=$l -o Acquire::Languages=none\"; "
               "if [ -n \"$m\" ]; then [ -r /etc/os-release ] && . /etc/os-release; "
               "echo \"deb $m ${VERSION_CODENAME:-bookworm} main\" >/run/rtb-apt.list; "
               "o=\"$o -o Dir::Etc::SourceList=/run/rtb-apt.list -o Dir::Etc::SourceParts=/nonexistent\"; fi; "
               "up() { apt-get $o update -q && touch $l/.rtb-fresh; }; "
               "ins() { { apt-get $o install -y -q --no-install-recommends \"$@\" 2>&1; echo $? >/tmp/rtb-rc; } "
               "| tee /tmp/rtb-out; return $(cat /tmp/rtb-rc); }; "
               "miss() { ls $l/*_Packages* >/dev/null 2>&1 || return 1; k=; for p; do n=${p%%=*}; if grep -qxF -e \"E: Unable to locate package $n\" "
               "-e \"E: Version '${p#*=}' for '$n' was not found\" -e \"E: Package '$n' has no installation candidate\" "
               "/tmp/rtb-out; then echo \"rtb: no package $p\"; k=1; fi; done; [ -n \"$k\" ]; }; "
               "if [ -n \"$u\" ]; then up || exit; fi; "
               "ins \"$@\" || { miss \"$@\" && exit 42; [ -z \"$u\" ] || exit 1; "
               "echo 'runtime: the install failed on the cached apt lists: fetching them'; "
               "up && ins \"$@\" || { miss \"$@\" && exit 42; exit 1; }; }; "
               "apt-get $o clean && rm -rf /var/lib/apt/lists/*",
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

/* Runs @script with its stdout into the new file @path (a mkostemp
   template; the caller unlinks it): the guest picks what it sends, so the
   file is O_EXCL and stops at RT_LAYER_MAX_BYTES (t->too_big).  */
static int
guest_to_file (struct build *b, const char *script, char *const *args, char *path, struct tail *t,
               rt_exec_result *res, rt_error **err)
{
  int fd = mkostemp (path, O_CLOEXEC), ret;

  if (fd < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", path, strerror (errno));
  *t = (struct tail){ .b = b, .fd = fd };
  ret = guest_sh (b, script, args, t, res, err);
  close (fd);
  return ret;
}

/* Step @i's changes: the upper dir, tarred by the guest, stored by the
   host as its layer, and cached.  The tar is the guest's to fake: it
   lands in a file of the private store (guest_to_file).  */
static int
capture_layer (struct build *b, size_t i, char *const *margs, rt_error **err)
{
  static const char capture_script[] = "tar --xattrs --xattrs-include='*' --numeric-owner -C " WORK "/u$1 -cf - .";
  struct step *s = &b->steps[i];
  cleanup_free char *raw = NULL;
  cleanup_error rt_error *e = NULL;
  struct tail t = { .b = b, .fd = -1 };
  rt_exec_result res;
  int ret;

  raw = rt_strdup_printf ("%s/images/layers/raw.tmp.XXXXXX", b->ctx->data_dir);
  if (raw == NULL)
    return rt_error_oom (err);
  ret = guest_to_file (b, capture_script, margs, raw, &t, &res, &e);
  if (t.too_big)
    {
      rt_error_set (err, EFBIG, "build_failed", "step %zu/%zu (%s) changed more than %llu MiB", i + 1, b->n, s->text,
                    (unsigned long long) (RT_LAYER_MAX_BYTES >> 20));
      ret = rt_error_hint (err, "a step's layer may hold at most 4 times the image's %d MiB disk", RT_MIN_DISK_MIB);
    }
  else if (ret < 0 && err && *err == NULL)
    *err = steal_pointer (&e);
  else if (ret == 0 && (res.exit_code != 0 || t.failed))
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

/* apt's package lists, kept from one build to the next (24-28 s of
   apt-get update each): <cache>/apt-lists/<key>.tar.gz, the key the SHA-256
   of the apt step's parent (the base image's id, or the --file steps' key
   over it: those may change the sources) and the --apt-mirror.  They are
   a guest's tar, as a layer is: the host only keeps it, in the builder's
   own cache (cache_dir), and copies it into that builder's next build
   sandbox, whose tar unpacks it.  Older than a day, or with --no-cache,
   they are fetched again.  */
#define LISTS_MAX_AGE_S (24 * 3600)

static char *
lists_path (struct build *b, const char *parent)
{
  cleanup_free char *dir = cache_dir (b);
  const char *mirror = b->o->apt_mirror ? b->o->apt_mirror : "";
  size_t plen = strlen (parent), mlen = strlen (mirror);
  cleanup_free char *key = malloc (plen + mlen + 2);
  char hex[65];

  if (dir == NULL || key == NULL)
    return NULL;
  /* Both with their NUL: no parent and mirror can be read as another pair.  */
  memcpy (key, parent, plen + 1);
  memcpy (key + plen + 1, mirror, mlen + 1);
  rt_sha256_hex (key, plen + mlen + 2, hex);
  return rt_strdup_printf ("%s/apt-lists/%s.tar.gz", dir, hex);
}

/* Into the guest's WORK/lists (bound at the step's /run/rtb-lists): the
   cached lists at @path when fresh (*fetch false), else nothing (*fetch
   true).  */
static int
lists_load (struct build *b, const char *path, char *const *margs, bool *fetch, rt_error **err)
{
  static const char lists_script[] =
      "set -e; r=" WORK "/r$1; mkdir -p " WORK "/lists $r/run/rtb-lists; if [ -f /tmp/rtb-lists.tar ]; then "
      "tar -xzf /tmp/rtb-lists.tar -C " WORK "/lists; rm -f /tmp/rtb-lists.tar; fi; "
      "mount --bind " WORK "/lists $r/run/rtb-lists";
  rt_copy_opts copy = { .follow = true, .cancel_fd = b->o->cancel_fd > 0 ? b->o->cancel_fd : -1 };
  time_t now = time (NULL);
  struct stat st;
  int ret;

  *fetch = b->o->no_cache || path == NULL || stat (path, &st) < 0 || st.st_mtime > now + 60
           || now - st.st_mtime > LISTS_MAX_AGE_S;
  if (!*fetch)
    {
      cleanup_error rt_error *e = NULL;
      ret = rt_local_sandbox_copy_in (b->sb, path, "/tmp/rtb-lists.tar", &copy, NULL, &e);
      if (ret < 0 && strcmp (e->code, "interrupted") == 0)
        return rt_build_interrupted (b, err);
      *fetch = ret < 0;
    }
  if (!*fetch)
    {
      char when[32];
      struct tm tm;
      gmtime_r (&st.st_mtime, &tm);
      strftime (when, sizeof when, "%Y-%m-%d %H:%M UTC", &tm);
      rt_build_say (b, "runtime: apt lists of %s reused (--no-cache fetches them again)", when);
    }
  return rt_build_guest_must (b, "preparing the apt lists", lists_script, margs, err);
}

/* The guest's lists, when its step fetched them, into the cache at @path.
   Best effort: a build without them only takes longer.  */
static int
lists_store (struct build *b, const char *path, rt_error **err)
{
  static const char store_script[] = "[ -f " WORK "/lists/.rtb-fresh ] || exit 3; rm -f " WORK "/lists/.rtb-fresh; "
                                     "exec tar --numeric-owner -C " WORK "/lists --exclude=./lock --exclude=./partial -czf - .";
  cleanup_free char *dir = path ? strndup (path, strrchr (path, '/') - path) : NULL;
  cleanup_free char *tmp = dir ? rt_strdup_printf ("%s/.tmp.XXXXXX", dir) : NULL;
  cleanup_free char *top = cache_dir (b);
  cleanup_error rt_error *e = NULL;
  struct tail t = { .b = b, .fd = -1 };
  rt_exec_result res;
  int ret;

  if (tmp == NULL || top == NULL || rt_image_private_dir (top, NULL) < 0 || rt_image_private_dir (dir, NULL) < 0)
    return 0;
  ret = guest_to_file (b, store_script, NULL, tmp, &t, &res, &e);
  if (ret == 0 && res.exit_code == 0 && !res.signal && !t.failed && !t.too_big && rename (tmp, path) == 0)
    return 0;
  unlink (tmp);
  if (ret < 0 && strcmp (e->code, "interrupted") == 0)
    {
      *err = steal_pointer (&e);
      return ret;
    }
  return 0;
}

/* The package of @s the guest said its lists lack (exit 42, "rtb: no
   package NAME"), when it is one of the step's: never the guest's text.  */
static const char *
missing_package (struct tail *t, struct step *s)
{
  t->buf[t->len < TAIL_MAX ? t->len : TAIL_MAX - 1] = '\0';
  for (char **w = s->words; *w; w++)
    {
      char needle[320];
      snprintf (needle, sizeof needle, "rtb: no package %s\n", *w);
      if (strstr (t->buf, needle))
        return *w;
    }
  return NULL;
}

int
rt_build_run_step (struct build *b, size_t first, size_t i, char **apt, rt_error **err)
{
  static const char mount_script[] =
      "set -e; i=$1; r=" WORK "/r$i; mkdir -p " WORK "/u$i " WORK "/w$i $r; "
      "mount -t overlay rtb -o lowerdir=$2,upperdir=" WORK "/u$i,workdir=" WORK "/w$i $r; "
      "for d in dev proc sys; do mount --rbind /$d $r/$d; done; "
      "mount -t tmpfs tmpfs $r/tmp; mount -t tmpfs tmpfs $r/run";
  static const char umount_script[] = "umount -R " WORK "/r$1 && rm -rf " WORK "/w$1";
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
  struct step *s = &b->steps[i];
  cleanup_free char *low = lowers (first, i);
  cleanup_free char *lists = s->kind == STEP_APT ? lists_path (b, i ? b->steps[i - 1].key : b->base_id) : NULL;
  bool fetch = true;
  const char *missing;
  char idx[24];
  char *margs[] = { idx, low, NULL };
  char *args[64];
  size_t n = 0;
  struct tail t = { .b = b, .fd = -1 };
  rt_exec_result res;
  int ret;

  if (low == NULL)
    return rt_error_oom (err);
  snprintf (idx, sizeof idx, "%zu", i);
  ret = rt_build_guest_must (b, "preparing the step's overlay", mount_script, margs, err);
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
      ret = rt_local_sandbox_copy_in (b->sb, s->words[0], "/tmp/rtb-in", &(rt_copy_opts){ .follow = true }, NULL, err);
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
    {
      if (s->kind == STEP_APT)
        {
          if ((ret = lists_load (b, lists, margs, &fetch, err)) < 0)
            return ret;
          args[n++] = (char *) (b->o->apt_mirror ? b->o->apt_mirror : "");
          args[n++] = (char *) (fetch ? "u" : "");
        }
      for (char **w = s->words; *w && n < 62; w++)
        args[n++] = *w;
    }
  args[n] = NULL;
  ret = guest_sh (b, s->kind == STEP_FILE ? file_script : chroot_script, args, &t, &res, err);
  if (ret == 0 && s->kind == STEP_APT)
    ret = lists_store (b, lists, err);
  if (ret < 0)
    return ret;
  if (s->kind == STEP_APT && res.exit_code == 42 && (missing = missing_package (&t, s)))
    {
      rt_error_set (err, EINVAL, "invalid_request", "no package '%s' in %s", missing,
                    b->o->apt_mirror ? b->o->apt_mirror : "the image's apt sources");
      return rt_error_hint (err, fetch ? "apt-cache search WORD in a sandbox after apt-get update lists the names"
                                       : "its apt lists were cached; --no-cache fetches them again");
    }
  if (res.exit_code != 0 || res.signal || res.timed_out)
    {
      rt_error_set (err, EIO, "build_failed", "step %zu/%zu (%s) failed with exit code %d", i + 1, b->n, s->text,
                    res.signal ? 128 + res.signal : res.exit_code);
      return rt_error_hint (err, "its last output: %s", last_lines (&t, 8));
    }
  ret = rt_build_guest_must (b, "unmounting the step's overlay", umount_script, margs, err);
  if (ret < 0)
    return ret;
  return capture_layer (b, i, margs, err);
}
