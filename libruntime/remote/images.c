/* images.c - images in client mode.  A build sends its recipe (the
   folder's runtime.json, then the flags' lists, as rt_image_build reads
   them) and follows the build's log to opts->log_fd until it is ready or
   failed.  Its host files travel inline (recipe.files {DST: text}, as
   docs/API.md allows): text files only; a folder or a binary file is
   refused.  */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "common/beneath.h"
#include "build/plan.h"
#include "remote/http.h"
#include "remote/images.h"
#include "remote/sandboxes.h"

static char *
image_path (const char *ref, const char *suffix)
{
  cleanup_free char *esc = rt_remote_escape (ref);
  return esc ? rt_strdup_printf ("/v1/images/%s%s", esc, suffix ? suffix : "") : NULL;
}

/* The recipe's list @key with @flags appended.  */
static void
append_list (json_object *recipe, const char *key, const char *const *flags)
{
  json_object *list;

  if (!json_object_object_get_ex (recipe, key, &list) || !json_object_is_type (list, json_type_array))
    {
      list = json_object_new_array ();
      json_object_object_add (recipe, key, list);
    }
  for (const char *const *p = flags; p && *p; p++)
    json_object_array_add (list, json_object_new_string (*p));
}

/* The most of the files of one build inline (docs/API.md).  */
#define INLINE_MAX (256 * 1024)

static bool
utf8_text (const unsigned char *p, size_t n)
{
  for (size_t i = 0; i < n;)
    {
      unsigned c = p[i], more = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 9;
      if (c == 0 || more == 9 || (more == 1 && c < 0xc2) || i + more >= n + (more == 0))
        return more == 0 && c != 0;
      for (unsigned k = 1; k <= more; k++)
        if ((p[i + k] & 0xc0) != 0x80)
          return false;
      i += more + 1;
    }
  return true;
}

/* "SRC:DST" as files[DST] = SRC's text.  @dirfd: the recipe's folder,
   its entries opened beneath it; -1 for --file (any path).  */
static int
inline_file (json_object *files, int dirfd, const char *spec, size_t *total, rt_error **err)
{
  const char *colon = strrchr (spec, ':');
  cleanup_free char *src = colon && colon != spec ? strndup (spec, colon - spec) : NULL, *text = NULL;
  cleanup_close int fd = -1;
  struct stat st;
  size_t len = 0;

  if (colon == NULL || colon == spec || colon[1] != '/')
    {
      rt_error_set (err, EINVAL, "invalid_request", "a file is SRC:DST with DST absolute, not '%s'", spec);
      return rt_error_hint (err, "for example: --file ./app:/opt/app");
    }
  if (src == NULL)
    return rt_error_oom (err);
  fd = dirfd >= 0 ? rt_open_beneath (dirfd, src, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
                  : open (src, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return rt_error_set (err, dirfd >= 0 ? -fd : errno, "file_not_found", "cannot add '%s' to the image: %s", src,
                         strerror (dirfd >= 0 ? -fd : errno));
  if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode))
    return rt_remote_unsupported (err, "an image build with a folder or special file in it");
  if (rt_read_all (fd, INLINE_MAX - *total, &text, &len) < 0 || !utf8_text ((unsigned char *) text, len))
    return rt_remote_unsupported (err, "an image build with binary files or over 256 KiB of files");
  *total += len;
  json_object_object_add (files, colon + 1, json_object_new_string_len (text, (int) len));
  return 0;
}

/* recipe.files: the recipe's own entries, then --file's.  */
static int
inline_files (json_object *recipe, const rt_build_opts *o, rt_error **err)
{
  json_object *listed = NULL, *files = json_object_new_object ();
  cleanup_close int dirfd = o->dir ? open (o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  size_t total = 0;
  int ret = 0;

  if (json_object_object_get_ex (recipe, "files", &listed))
    for (size_t i = 0; ret == 0 && i < json_object_array_length (listed); i++)
      ret = inline_file (files, dirfd, json_object_get_string (json_object_array_get_idx (listed, i)), &total, err);
  for (const char *const *f = o->files; ret == 0 && f && *f; f++)
    ret = inline_file (files, -1, *f, &total, err);
  if (ret < 0 || json_object_object_length (files) == 0)
    {
      json_object_put (files);
      json_object_object_del (recipe, "files");
      return ret;
    }
  json_object_object_add (recipe, "files", files);
  return 0;
}

static int
recipe_of (const rt_build_opts *o, json_object **out, rt_error **err)
{
  cleanup_json json_object *recipe = NULL;
  json_object *env, *flags_env;
  int ret;

  if (o->dir && (ret = rt_build_read_recipe (o->dir, &recipe, err)) < 0)
    return ret;
  if (recipe == NULL)
    recipe = json_object_new_object ();
  if (o->apt_mirror || o->no_cache)
    return rt_remote_unsupported (err, o->apt_mirror ? "--apt-mirror" : "--no-cache");
  if ((ret = inline_files (recipe, o, err)) < 0)
    return ret;
  if (o->from)
    json_object_object_add (recipe, "base", json_object_new_string (o->from));
  if (o->workdir)
    json_object_object_add (recipe, "workdir", json_object_new_string (o->workdir));
  append_list (recipe, "apt", o->apt);
  append_list (recipe, "pip", o->pip);
  append_list (recipe, "npm", o->npm);
  append_list (recipe, "commands", o->run);
  /* The flags' variables win over the recipe's, as locally.  */
  if ((flags_env = rt_remote_pairs (o->env, true, err)) == NULL)
    return -EINVAL;
  if (!json_object_object_get_ex (recipe, "env", &env) || !json_object_is_type (env, json_type_object))
    json_object_object_add (recipe, "env", json_object_get (flags_env));
  else
    {
      json_object_object_foreach (flags_env, k, v)
      json_object_object_add (env, k, json_object_get (v));
    }
  json_object_put (flags_env);
  *out = steal_pointer (&recipe);
  return 0;
}

/* A build's log as it is followed: its lines go to the log fd; its end
   says how the build ended.  */
struct build_log
{
  int fd;
  uint64_t cursor;    /* log bytes seen: where a resume starts */
  bool ended;
  json_object *end;   /* the end event */
};

static void
log_line (void *data, char *line)
{
  struct build_log *l = data;
  cleanup_json json_object *ev = json_tokener_parse (line);
  const char *type = rt_json_str (ev, "type"), *text = rt_json_str (ev, "data");
  size_t n = text ? strlen (text) : 0;

  if (type && strcmp (type, "log") == 0 && text)
    {
      l->cursor = rt_json_i64 (ev, "offset") + n;
      if (l->fd >= 0 && (write (l->fd, text, n) < 0 || (n && text[n - 1] != '\n' && write (l->fd, "\n", 1) < 0)))
        l->fd = -1;
    }
  else if (type && strcmp (type, "continue") == 0)
    l->cursor = rt_json_i64 (ev, "cursor");
  else if (type && strcmp (type, "end") == 0)
    {
      l->ended = true;
      l->end = json_object_get (ev);
    }
}

static int
on_log (void *data, const char *buf, size_t n)
{
  return rt_ndjson_feed (data, buf, n);
}

/* Follows the log from its cursor until the end event, and takes the
   image's id from it.  */
static int
await_build (rt_context *ctx, const char *build, const rt_build_opts *o, char **id, rt_error **err)
{
  int log_fd = o->log_fd;
  struct build_log l = { .fd = log_fd };
  struct rt_ndjson lines = { .on_line = log_line, .data = &l };
  const char *state = NULL;
  int ret = 0, quiet = 0;

  while (ret >= 0 && !l.ended && quiet <= RT_REMOTE_RECONNECTS)
    {
      char suffix[64];
      cleanup_free char *path = NULL;
      struct rt_remote_req req = { .method = "GET", .accept = "application/x-ndjson", .on_data = on_log,
                                   .data = &lines, .watch_fd = o->cancel_fd > 0 ? o->cancel_fd : -1,
                                   .abort_on_watch = true };
      struct rt_remote_answer ans = { 0 };
      uint64_t before = l.cursor;

      snprintf (suffix, sizeof (suffix), "/logs?follow=true&cursor=%llu", (unsigned long long) l.cursor);
      if ((path = image_path (build, suffix)) == NULL)
        ret = rt_error_oom (err);
      else
        {
          req.path = path;
          ret = rt_remote_send (ctx, &req, &ans, err);
        }
      /* The API has no way to stop a build: say that it goes on.  */
      if (ans.interrupted)
        {
          rt_remote_answer_clear (&ans);
          free (lines.buf);
          json_object_put (l.end);
          rt_error_set (err, EINTR, "interrupted", "stopped following build %s; %s goes on with it", build, ctx->api_url);
          return rt_error_hint (err, "runtime image get %s shows how it ends", build);
        }
      rt_remote_answer_clear (&ans);
      lines.len = 0;
      quiet = l.cursor > before ? 0 : quiet + 1;
    }
  free (lines.buf);
  if (ret >= 0 && !l.ended)
    ret = rt_error_set (err, EIO, "internal", "lost the log of build %s before it ended", build);
  state = rt_json_str (l.end, "state");
  if (ret >= 0 && (state == NULL || strcmp (state, "ready") != 0))
    {
      json_object *e = NULL;
      json_object_object_get_ex (l.end, "error", &e);
      ret = rt_error_set (err, EIO, rt_json_str (e, "code") ? rt_json_str (e, "code") : "build_failed", "%s",
                          rt_json_str (e, "message") ? rt_json_str (e, "message") : "the image build failed");
    }
  if (ret >= 0 && (*id = strdup (rt_json_str (l.end, "imageId") ? rt_json_str (l.end, "imageId") : build)) == NULL)
    ret = rt_error_oom (err);
  json_object_put (l.end);
  return ret < 0 ? ret : 0;
}

int
rt_remote_image_build (rt_context *ctx, const rt_build_opts *opts, char **id, rt_error **err)
{
  cleanup_json json_object *recipe = NULL, *body = json_object_new_object (), *img = NULL;
  int ret = recipe_of (opts, &recipe, err);
  const char *got;

  if (ret < 0)
    return ret;
  if (opts->name)
    json_object_object_add (body, "name", json_object_new_string (opts->name));
  json_object_object_add (body, "recipe", json_object_get (recipe));
  ret = rt_remote_json (ctx, "POST", "/v1/images", body, NULL, &img, err);
  if (ret < 0)
    return ret;
  got = rt_json_str (img, "id");
  if (got == NULL)
    return rt_error_set (err, EIO, "internal", "%s answered without an image id", ctx->api_url);
  return await_build (ctx, got, opts, id, err);
}

int
rt_remote_image_list_json (rt_context *ctx, char **json, rt_error **err)
{
  return rt_remote_list_text (ctx, "/v1/images?limit=100", NULL, json, err);
}

int
rt_remote_image_get_json (rt_context *ctx, const char *ref, char **json, rt_error **err)
{
  cleanup_free char *path = image_path (ref, NULL);

  return path ? rt_remote_get_text (ctx, path, json, err) : rt_error_oom (err);
}

int
rt_remote_image_remove (rt_context *ctx, const char *ref, rt_error **err)
{
  cleanup_free char *path = image_path (ref, ":delete");

  if (path == NULL)
    return rt_error_oom (err);
  return rt_remote_json (ctx, "POST", path, NULL, NULL, NULL, err);
}
