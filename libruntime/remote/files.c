/* files.c - files in client mode.  A copy out is the server's tar of the
   item, extracted by the same guarded extractor as a local copy
   (sandbox/copy.h, sandbox/unpack.h: the server relays what a hostile
   guest wrote); a copy in is one PUT for a small file, a chunked upload
   checked by size and SHA-256 for a large one, a tar made by the local
   archiver for a directory.  */
#include <fcntl.h>
#include <libgen.h>
#include <string.h>
#include <sys/stat.h>

#include "core/checks.h"
#include "remote/files.h"
#include "remote/http.h"
#include "remote/sandboxes.h"
#include "sandbox/copy.h"
#include "sandbox/files.h"
#include "sandbox/handle.h"

/* The largest chunk sent in one PUT, whatever the server offers.  */
#define CHUNK_MAX (8 * 1024 * 1024)

/* "/v1/sandboxes/{id}/@what?path=@path" and @extra.  */
static char *
files_path (rt_sandbox *sb, const char *what, const char *path, const char *extra)
{
  cleanup_free char *esc = rt_remote_escape (path);
  cleanup_free char *suffix = esc ? rt_strdup_printf ("/%s?path=%s%s", what, esc, extra ? extra : "") : NULL;
  return suffix ? rt_remote_sandbox_path (sb->id, suffix) : NULL;
}

static int
to_output (void *data, const char *buf, size_t len)
{
  const rt_exec_opts *o = data;
  return o->on_output ? o->on_output (o->data, 1, buf, len) : 0;
}

int
rt_remote_sandbox_cat (rt_sandbox *sb, const char *path, const rt_exec_opts *opts, rt_error **err)
{
  cleanup_free char *url = NULL;
  struct rt_remote_req req = { .method = "GET", .accept = "application/octet-stream", .on_data = to_output,
                               .abort_on_watch = true };
  struct rt_remote_answer ans = { 0 };
  int ret;

  opts = opts ? opts : &rt_no_exec_opts;
  if ((url = files_path (sb, "files/content", path, NULL)) == NULL)
    return rt_error_oom (err);
  req.path = url;
  req.data = (void *) opts;
  req.watch_fd = opts->cancel_fd > 0 ? opts->cancel_fd : -1;
  ret = rt_remote_send (sb->ctx, &req, &ans, err);
  if (ret == 1)
    ret = rt_error_set (err, EIO, "internal", "the server cut %s short", path);
  else if (ret == 0 && ans.stopped)
    ret = rt_error_set (err, EPIPE, "internal", "the file's bytes could not be written");
  else if (ret == 0 && ans.interrupted)
    ret = rt_error_set (err, EINTR, "interrupted", "reading %s was interrupted", path);
  rt_remote_answer_clear (&ans);
  return ret;
}

int
rt_remote_sandbox_files_json (rt_sandbox *sb, const char *path, unsigned depth, char **json, rt_error **err)
{
  char extra[32];
  cleanup_free char *url = NULL;
  cleanup_json json_object *list = NULL, *out = json_object_new_array ();
  int ret;

  snprintf (extra, sizeof (extra), "&depth=%u", depth ? depth : 1);
  if ((url = files_path (sb, "files/list", path, extra)) == NULL)
    return rt_error_oom (err);
  ret = rt_remote_list (sb->ctx, url, NULL, &list, err);
  if (ret < 0)
    return ret;
  /* FileEntry into the local {type ("d"|"l"|"-"), size, path}.  */
  for (size_t i = 0; i < json_object_array_length (list); i++)
    {
      json_object *f = json_object_array_get_idx (list, i), *o = json_object_new_object ();
      const char *type = rt_json_str (f, "type") ? rt_json_str (f, "type") : "";
      const char *p = rt_json_str (f, "path");

      json_object_object_add (o, "type", json_object_new_string (strcmp (type, "directory") == 0 ? "d"
                                                                 : strcmp (type, "symlink") == 0 ? "l"
                                                                                                 : "-"));
      json_object_object_add (o, "size", json_object_new_int64 (rt_json_i64 (f, "size")));
      json_object_object_add (o, "path", json_object_new_string (p ? p : ""));
      json_object_array_add (out, o);
    }
  json_object_array_sort (out, rt_entry_by_path);
  return rt_remote_text (out, json, err);
}

/* A copy's Ctrl-C fd as a request watches it: 0 means none here.  */
static int
cancel_fd (const rt_copy_opts *opts)
{
  return opts && opts->cancel_fd > 0 ? opts->cancel_fd : -1;
}

static int
to_sink (void *data, const char *buf, size_t len)
{
  return rt_copy_out_feed (data, 1, buf, len);
}

int
rt_remote_copy_out (rt_sandbox *sb, const char *src, const char *dst, const rt_copy_opts *opts, rt_copy_result *result,
                    rt_error **err)
{
  cleanup_free char *url = NULL;
  struct rt_copy_sink *k = NULL;
  struct rt_remote_req req = { .method = "GET", .accept = "application/x-tar", .on_data = to_sink,
                               .abort_on_watch = true, .watch_fd = cancel_fd (opts) };
  struct rt_remote_answer ans = { 0 };
  rt_exec_result res = { 0 };
  int ret;

  /* named: entries from the source's own name, as the local copy-out
     lays them down (the SDK's download takes them relative).  */
  if ((url = files_path (sb, "files/archive", src, "&named=true")) == NULL)
    return rt_error_oom (err);
  ret = rt_copy_out_start (src, dst, opts, &k, err);
  if (ret < 0)
    return ret;
  req.path = url;
  req.data = k;
  ret = rt_remote_send (sb->ctx, &req, &ans, err);
  /* The extractor's verdict on a stream it stopped comes from it.  */
  if (ret == 1)
    ret = rt_error_set (err, EIO, "download_incomplete", "the copy of %s was cut short", src);
  else if (ret == 0 && ans.stopped)
    ret = -EIO;
  res.interrupted = ans.interrupted;
  rt_remote_answer_clear (&ans);
  return rt_copy_out_finish (k, ret, &res, src, result, err);
}

/* GET …/files/stat: whether @path exists, and is a directory.  */
static int
guest_stat (rt_sandbox *sb, const char *path, bool *exists, bool *is_dir, rt_error **err)
{
  cleanup_free char *url = files_path (sb, "files/stat", path, NULL);
  cleanup_json json_object *st = NULL;
  json_object *v;
  int ret;

  if (url == NULL)
    return rt_error_oom (err);
  ret = rt_remote_json (sb->ctx, "GET", url, NULL, NULL, &st, err);
  if (ret < 0)
    return ret;
  *exists = !json_object_object_get_ex (st, "exists", &v) || json_object_get_boolean (v);
  *is_dir = *exists && rt_json_str (st, "type") && strcmp (rt_json_str (st, "type"), "directory") == 0;
  return 0;
}

/* Where a copy of @name to @dst lands: in @dst when it is a directory,
   else at @dst, whose parent must be one.  */
static int
in_target (rt_sandbox *sb, const char *dst, const char *name, char **target, rt_error **err)
{
  cleanup_free char *copy = strdup (dst);
  bool exists = false, is_dir = false;
  int ret = guest_stat (sb, dst, &exists, &is_dir, err);

  if (ret < 0)
    return ret;
  if (is_dir)
    *target = rt_strdup_printf ("%s%s%s", dst, dst[strlen (dst) - 1] == '/' ? "" : "/", name);
  else
    {
      if (copy == NULL)
        return rt_error_oom (err);
      ret = guest_stat (sb, dirname (copy), &exists, &is_dir, err);
      if (ret < 0)
        return ret;
      if (!is_dir)
        return rt_error_set (err, ENOENT, "file_not_found", "no such directory in the sandbox for %s", dst);
      *target = strdup (dst);
    }
  return *target ? 0 : rt_error_oom (err);
}

static int
upload_fd (rt_sandbox *sb, const char *method, const char *url, int fd, off_t off, size_t len, const char *type,
           const rt_copy_opts *opts, const char *dst, rt_error **err)
{
  struct rt_remote_req req = { .method = method, .path = url, .body_fd = fd, .body_off = off, .body_len = len,
                               .content_type = type, .abort_on_watch = true,
                               .watch_fd = cancel_fd (opts) };
  struct rt_remote_answer ans = { 0 };
  int ret = rt_remote_send (sb->ctx, &req, &ans, err);

  if (ret == 0 && ans.interrupted)
    ret = rt_error_set (err, EINTR, "interrupted", "the copy to %s was interrupted; nothing was written", dst);
  rt_remote_answer_clear (&ans);
  return ret;
}

/* A large file: POST …/uploads, its chunks, :commit (:abort on failure).  */
static int
upload_chunks (rt_sandbox *sb, int fd, const char *abs, const struct stat *st, const char *target,
               const rt_copy_opts *opts, rt_error **err)
{
  cleanup_json json_object *body = json_object_new_object (), *up = NULL;
  cleanup_free char *base = rt_remote_sandbox_path (sb->id, "/uploads"), *id = NULL, *verb = NULL;
  char sha[65], mode[8];
  int64_t chunk;
  int ret = rt_sha256_file (abs, sha, err);

  if (ret < 0)
    return ret;
  if (base == NULL)
    return rt_error_oom (err);
  snprintf (mode, sizeof (mode), "%03o", (unsigned) (st->st_mode & 0777));
  json_object_object_add (body, "path", json_object_new_string (target));
  json_object_object_add (body, "size", json_object_new_int64 (st->st_size));
  json_object_object_add (body, "sha256", json_object_new_string (sha));
  json_object_object_add (body, "mode", json_object_new_string (mode));
  ret = rt_remote_json (sb->ctx, "POST", base, body, NULL, &up, err);
  if (ret < 0)
    return ret;
  id = rt_remote_escape (rt_json_str (up, "uploadId") ? rt_json_str (up, "uploadId") : "");
  chunk = rt_json_i64 (up, "chunkBytes");
  if (chunk <= 0 || chunk > CHUNK_MAX)
    chunk = chunk <= 0 ? RT_REMOTE_PUT_MAX : CHUNK_MAX;
  for (off_t off = 0; id && ret == 0 && off < st->st_size; off += chunk)
    {
      cleanup_free char *url = rt_strdup_printf ("%s/%s?offset=%lld", base, id, (long long) off);
      size_t n = st->st_size - off < chunk ? (size_t) (st->st_size - off) : (size_t) chunk;
      ret = url ? upload_fd (sb, "PUT", url, fd, off, n, "application/octet-stream", opts, target, err)
                : rt_error_oom (err);
    }
  verb = id ? rt_strdup_printf ("%s/%s:%s", base, id, ret == 0 ? "commit" : "abort") : NULL;
  if (verb == NULL)
    return rt_error_oom (err);
  if (ret == 0)
    return rt_remote_json (sb->ctx, "POST", verb, NULL, NULL, NULL, err);
  rt_remote_json (sb->ctx, "POST", verb, NULL, NULL, NULL, NULL);
  return ret;
}

/* A regular file: one PUT up to RT_REMOTE_PUT_MAX, else an upload.  */
static int
copy_file_in (rt_sandbox *sb, const char *abs, const char *target, const rt_copy_opts *opts, rt_error **err)
{
  cleanup_close int fd = open (abs, O_RDONLY | O_CLOEXEC);
  cleanup_free char *url = NULL;
  struct stat st;
  char extra[16];

  if (fd < 0 || fstat (fd, &st) < 0)
    return rt_error_set (err, errno, "internal", "cannot read '%s': %s", abs, strerror (errno));
  if (st.st_size > RT_REMOTE_PUT_MAX)
    return upload_chunks (sb, fd, abs, &st, target, opts, err);
  snprintf (extra, sizeof (extra), "&mode=%03o", (unsigned) (st.st_mode & 0777));
  if ((url = files_path (sb, "files/content", target, extra)) == NULL)
    return rt_error_oom (err);
  return upload_fd (sb, "PUT", url, fd, 0, st.st_size, "application/octet-stream", opts, target, err);
}

/* A directory: its tar, names starting at the target's own name, made
   by the local archiver into a temp file, PUT into the target's parent.  */
static int
copy_tree_in (rt_sandbox *sb, const char *abs, const char *src, const char *target, const rt_copy_opts *opts,
              rt_error **err)
{
  const char *tmpdir = getenv ("TMPDIR");
  cleanup_free char *tmp = rt_strdup_printf ("%s/rt-cp-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
  cleanup_free char *copy = strdup (target), *copy2 = strdup (target), *url = NULL;
  cleanup_close int fd = -1;
  cleanup_close int errfd = -1;
  char why[512] = "";
  struct stat st;
  pid_t pid;
  ssize_t n;
  int ret;

  if (tmp == NULL || copy == NULL || copy2 == NULL)
    return rt_error_oom (err);
  if ((fd = mkostemp (tmp, O_CLOEXEC)) < 0)
    return rt_error_set (err, errno, "internal", "cannot make '%s': %s", tmp, strerror (errno));
  ret = rt_copy_in_archiver (tmp, abs, basename (copy), &errfd, &pid, err);
  if (ret < 0)
    return ret;
  ret = rt_copy_wait_child (pid);
  n = read (errfd, why, sizeof (why) - 1);
  why[n > 0 ? n : 0] = '\0';
  unlink (tmp);
  if (ret != 0)
    return rt_error_set (err, EIO, "internal", "cannot read '%s': %s", src, *why ? why : "archiving failed");
  if (fstat (fd, &st) < 0)
    return rt_error_set (err, errno, "internal", "cannot read the archive of '%s': %s", src, strerror (errno));
  if ((url = files_path (sb, "files/archive", dirname (copy2), NULL)) == NULL)
    return rt_error_oom (err);
  return upload_fd (sb, "PUT", url, fd, 0, st.st_size, "application/x-tar", opts, target, err);
}

int
rt_remote_copy_in (rt_sandbox *sb, const char *src, const char *dst, const rt_copy_opts *opts, const char *user,
                   rt_error **err)
{
  cleanup_free char *abs = NULL, *name = NULL, *target = NULL;
  struct stat st;
  int ret = rt_copy_in_source (src, opts && opts->follow, &abs, &name, err);
  /* The archive route writes as the sandbox's user: no other.  */
  if (ret == 0 && user && strcmp (user, "runtime") != 0)
    return rt_remote_unsupported (err, "cp --user");
  if (ret == 0 && stat (abs, &st) < 0)
    ret = rt_error_set (err, errno, "file_not_found", "cannot copy '%s': %s", src, strerror (errno));
  if (ret == 0 && !S_ISREG (st.st_mode) && !S_ISDIR (st.st_mode))
    ret = rt_error_set (err, EINVAL, "invalid_request", "'%s' is neither a file nor a directory", src);
  if (ret == 0)
    ret = in_target (sb, dst, name, &target, err);
  if (ret < 0)
    return ret;
  return S_ISDIR (st.st_mode) ? copy_tree_in (sb, abs, src, target, opts, err)
                              : copy_file_in (sb, abs, target, opts, err);
}
