/* images.c - images in client mode.  A build sends its recipe (the
   folder's runtime.json, then the flags' lists, as rt_image_build reads
   them) and follows the build's log to opts->log_fd until it is ready or
   failed.  Host files cannot reach the server: a recipe with files is
   refused.  */
#include <string.h>

#include "image/plan.h"
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

static int
recipe_of (const rt_build_opts *o, json_object **out, rt_error **err)
{
  cleanup_json json_object *recipe = NULL;
  json_object *env, *files, *flags_env;
  int ret;

  if (o->dir && (ret = rt_build_read_recipe (o->dir, &recipe, err)) < 0)
    return ret;
  if (recipe == NULL)
    recipe = json_object_new_object ();
  if ((o->files && *o->files)
      || (json_object_object_get_ex (recipe, "files", &files) && json_object_array_length (files) > 0))
    return rt_remote_unsupported (err, "an image build with host files (--file, \"files\")");
  if (o->apt_mirror || o->no_cache)
    return rt_remote_unsupported (err, o->apt_mirror ? "--apt-mirror" : "--no-cache");
  json_object_object_del (recipe, "files");
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

/* The build log's NDJSON: each line's text goes to the log fd (@data).  */
static void
log_line (void *data, char *line)
{
  int *fd = data;
  cleanup_json json_object *ev = json_tokener_parse (line);
  const char *text = NULL;

  for (const char *const *k = (const char *const[]){ "line", "data", "text", "message", NULL }; ev && *k && !text; k++)
    text = rt_json_str (ev, *k);
  if (text == NULL || *fd < 0)
    return;
  if (write (*fd, text, strlen (text)) < 0 || (*text && text[strlen (text) - 1] != '\n' && write (*fd, "\n", 1) < 0))
    *fd = -1;
}

static int
on_log (void *data, const char *buf, size_t n)
{
  return rt_ndjson_feed (data, buf, n);
}

/* Follows the log to its end, then asks how the build ended.  */
static int
await_build (rt_context *ctx, const char *id, int log_fd, rt_error **err)
{
  cleanup_free char *logs = image_path (id, "/logs?follow=true"), *path = image_path (id, NULL);
  struct rt_ndjson l = { .on_line = log_line, .data = &log_fd };
  const char *state = NULL;
  int ret = 0;

  if (logs == NULL || path == NULL)
    return rt_error_oom (err);
  for (int round = 0; round < 1000 && ret == 0; round++)
    {
      cleanup_json json_object *img = NULL;
      struct rt_remote_req req = { .method = "GET", .path = logs, .accept = "application/x-ndjson",
                                   .on_data = on_log, .data = &l };
      struct rt_remote_answer ans = { 0 };

      ret = rt_remote_send (ctx, &req, &ans, err);
      rt_remote_answer_clear (&ans);
      if (ret < 0 || (ret = rt_remote_json (ctx, "GET", path, NULL, NULL, &img, err)) < 0)
        break;
      state = rt_json_str (img, "state");
      if (state && strcmp (state, "failed") == 0)
        {
          json_object *e;
          const char *msg = json_object_object_get_ex (img, "error", &e) && json_object_is_type (e, json_type_object)
                                ? rt_json_str (e, "message")
                                : rt_json_str (img, "error");
          ret = rt_error_set (err, EIO, "build_failed", "%s", msg ? msg : "the image build failed");
        }
      if (state && (strcmp (state, "ready") == 0 || strcmp (state, "failed") == 0))
        break;
    }
  free (l.buf);
  return ret;
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
  ret = await_build (ctx, got, opts->log_fd, err);
  if (ret < 0)
    return ret;
  *id = strdup (got);
  return *id ? 0 : rt_error_oom (err);
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
