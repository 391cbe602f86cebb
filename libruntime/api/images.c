/* images.c - image builds from recipes, their logs, listing, removal
   (docs/API.md).  A build is answered at once (state queued) and runs on
   a thread of its own; one build at a time on the machine, in turns
   between tenants (build/queue.h), and under a flock against builds of
   other processes.  Its
   record and log are the server's, per tenant:
   <data>/serve/builds/<tenant>/<id>.json {id, kind, name, state,
   createdAt, startedAt, endedAt, imageId, error, pid} and <id>.log.  The
   image it makes is the library's, stamped with the tenant, so the
   library's lists show it only to its tenant (and the base images to all).
   (no header of its own: handlers.h declares its routes).  */
#include <dirent.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/util.h"
#include "api/body.h"
#include "build/queue.h"
#include "image/store.h"
#include "api/handlers.h"
#include "api/text.h"

/* recipe.files: {"/abs/path": "content"}, inline and bounded.  */
#define MAX_RECIPE_FILES 64
#define MAX_RECIPE_FILE_BYTES (256u << 10) /* all of them together */
#define LOG_EVENT_BYTES (16u << 10)

struct build
{
  char *data_dir, *tenant, *dir, *id;
  rt_context *ctx; /* the request's tenant's (srv_ctx_new), the thread's */
  rt_build_opts o;
  char **apt, **pip, **npm, **run, **files, **env;
  char *from, *name, *workdir;
  uint64_t ticket; /* its place in the queue */
};

static void
build_free (struct build *b)
{
  char **vs[] = { b->apt, b->pip, b->npm, b->run, b->files, b->env };

  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++)
    cleanup_strvp (&vs[i]);
  rt_context_free (b->ctx);
  free (b->data_dir);
  free (b->tenant);
  free (b->dir);
  free (b->id);
  free (b->from);
  free (b->name);
  free (b->workdir);
  free (b);
}

static char *
builds_dir (rt_context *ctx, const char *tenant)
{
  return rt_strdup_printf ("%s/serve/builds/%s", ctx->data_dir, tenant ? tenant : "_host");
}

/* Builds of one token queued or running at once.  */

static char *
path_of (const char *dir, const char *id, const char *ext)
{
  return rt_strdup_printf ("%s/%s%s", dir, id, ext);
}

/* The record with @state and what else is given, written atomically.  */
static void
record_set (const char *dir, const char *id, json_object *rec, const char *state)
{
  cleanup_free char *path = path_of (dir, id, ".json");
  char now[32];
  const char *text;

  rt_format_time (rt_epoch_ms (), now);
  json_object_object_add (rec, "state", json_object_new_string (state));
  if (strcmp (state, "building") == 0)
    json_object_object_add (rec, "startedAt", json_object_new_string (now));
  if (strcmp (state, "ready") == 0 || strcmp (state, "failed") == 0)
    json_object_object_add (rec, "endedAt", json_object_new_string (now));
  text = json_object_to_json_string_ext (rec, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
  if (path)
    rt_write_file_atomic (path, text, strlen (text), 0600, NULL);
}

/* A build's record; one whose server went away while it was queued or
   building shows as failed.  */
static json_object *
record_get (const char *dir, const char *id)
{
  cleanup_free char *path = NULL, *text = NULL;
  json_object *rec;
  const char *st;
  size_t len;

  if (strncmp (id, "bld-", 4) != 0 || strspn (id + 4, "0123456789abcdef") != strlen (id + 4) || strlen (id) != 20)
    return NULL;
  path = path_of (dir, id, ".json");
  if (path == NULL || rt_read_file (path, &text, &len, NULL) < 0 || (rec = json_tokener_parse (text)) == NULL)
    return NULL;
  st = rt_json_str (rec, "state");
  if (st && (strcmp (st, "queued") == 0 || strcmp (st, "building") == 0) && rt_json_i64 (rec, "pid") != getpid ())
    {
      json_object *e = json_object_new_object ();
      json_object_object_add (e, "code", json_object_new_string ("build_failed"));
      json_object_object_add (e, "message", json_object_new_string ("the server stopped during the build"));
      json_object_object_add (rec, "state", json_object_new_string ("failed"));
      json_object_object_add (rec, "error", e);
    }
  json_object_object_del (rec, "pid");
  return rec;
}

/* The machine's builds in turn (build/queue.h).  A build's thread waits
   for its ticket's turn, then for the flock (a `runtime image build` or
   another server may hold it).  */
static struct
{
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct rt_build_queue q;
  uint64_t serial, turn; /* turn: the ticket that runs now, 0 for none */
} builds = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

/* Under builds.mu: with none running, the next build's turn.  */
static void
next_turn (void)
{
  uint64_t id;

  if (builds.turn == 0 && rt_build_queue_pop (&builds.q, &id, NULL))
    {
      builds.turn = id;
      pthread_cond_broadcast (&builds.cv);
    }
}

/* 0 and @b queued; -EBUSY when its tenant has its share queued or
   running.  */
static int
take_ticket (struct build *b)
{
  int ret;

  pthread_mutex_lock (&builds.mu);
  b->ticket = ++builds.serial;
  ret = rt_build_queue_push (&builds.q, b->tenant, b->ticket);
  pthread_mutex_unlock (&builds.mu);
  return ret;
}

/* @b's turn is over, or it leaves the queue before it (no thread for it):
   the next one goes.  */
static void
end_turn (struct build *b)
{
  pthread_mutex_lock (&builds.mu);
  if (builds.turn == b->ticket)
    {
      builds.turn = 0;
      rt_build_queue_done (&builds.q, b->tenant);
    }
  else
    rt_build_queue_cancel (&builds.q, b->tenant, b->ticket);
  next_turn ();
  pthread_mutex_unlock (&builds.mu);
}

static void
wait_turn (struct build *b)
{
  pthread_mutex_lock (&builds.mu);
  next_turn ();
  while (builds.turn != b->ticket)
    pthread_cond_wait (&builds.cv, &builds.mu);
  pthread_mutex_unlock (&builds.mu);
}

static void *
build_main (void *arg)
{
  struct build *b = arg;
  cleanup_free char *lock = rt_strdup_printf ("%s/serve/builds/lock", b->data_dir);
  cleanup_free char *log = path_of (b->dir, b->id, ".log"), *fdir = path_of (b->dir, b->id, ".files");
  cleanup_free char *text = NULL, *image = NULL, *rpath = path_of (b->dir, b->id, ".json");
  cleanup_json json_object *rec = NULL;
  cleanup_close int lockfd = -1, logfd = -1;
  rt_error *err = NULL;
  size_t len;
  int ret;

  if (rpath && rt_read_file (rpath, &text, &len, NULL) == 0)
    rec = json_tokener_parse (text);
  if (rec == NULL)
    rec = json_object_new_object ();
  /* One build at a time on the machine: each boots a VM.  */
  wait_turn (b);
  lockfd = lock ? open (lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600) : -1;
  if (lockfd >= 0)
    flock (lockfd, LOCK_EX);
  record_set (b->dir, b->id, rec, "building");
  logfd = log ? open (log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600) : -1;
  b->o.log_fd = logfd;
  ret = rt_image_build (b->ctx, &b->o, &image, &err);
  if (ret == 0)
    json_object_object_add (rec, "imageId", json_object_new_string (image));
  else
    {
      json_object *e = json_object_new_object ();
      json_object_object_add (e, "code", json_object_new_string (err ? err->code : "internal"));
      json_object_object_add (e, "message", json_object_new_string (err ? err->msg : "out of memory"));
      json_object_object_add (rec, "error", e);
      if (logfd >= 0 && err)
        dprintf (logfd, "Error [%s]: %s\n", err->code, err->msg);
    }
  rt_error_free (err);
  record_set (b->dir, b->id, rec, ret == 0 ? "ready" : "failed");
  if (fdir)
    rt_rm_rf (fdir, NULL);
  if (lockfd >= 0)
    close (steal_fd (&lockfd));
  end_turn (b);
  build_free (b);
  return NULL;
}

const struct srv_field srv_fields_build[] = {
  { "name", json_type_string },
  { "recipe", json_type_object },
  { NULL, 0 },
};

const struct srv_field srv_fields_recipe[] = {
  { "base", json_type_string },  { "apt", json_type_array },      { "pip", json_type_array },
  { "npm", json_type_array },    { "commands", json_type_array }, { "env", json_type_object },
  { "files", json_type_object }, { "workdir", json_type_string }, { NULL, 0 },
};

static void
recipe_check (json_object *recipe, json_object *issues)
{
  json_object_object_foreach (recipe, key, val)
  {
    const struct srv_field *f;
    cleanup_free char *path = rt_strdup_printf ("recipe.%s", key);
    for (f = srv_fields_recipe; f->name && strcmp (f->name, key) != 0; f++)
      ;
    if (f->name == NULL)
      srv_issue (issues, path ? path : key, "unknown field");
    else if (val && !json_object_is_type (val, f->type))
      srv_issue (issues, path ? path : key,
                 f->type == json_type_string  ? "must be a string"
                 : f->type == json_type_array ? "must be an array of strings"
                                              : "must be an object of strings");
  }
}

/* An absolute path with no ':' (the library splits SRC:DST there), no
   empty, "." or ".." part.  */
static bool
dst_ok (const char *dst)
{
  if (dst[0] != '/' || dst[1] == '\0' || strchr (dst, ':') || strlen (dst) > 1024)
    return false;
  for (const char *p = dst; p; p = strchr (p + 1, '/'))
    {
      size_t n = strcspn (p + 1, "/");
      if (n == 0 || (n == 1 && p[1] == '.') || (n == 2 && p[1] == '.' && p[2] == '.'))
        return false;
    }
  return true;
}

/* recipe.files written into <id>.files/ as the library's "SRC:DST".  */
static char **
recipe_files (json_object *files, const char *fdir, json_object *issues)
{
  size_t n = files ? json_object_object_length (files) : 0, i = 0, total = 0;
  char **v = calloc (n + 1, sizeof (*v));

  if (v == NULL || n == 0)
    return v;
  if (n > MAX_RECIPE_FILES)
    srv_issue (issues, "recipe.files", "at most 64 files");
  else if (rt_mkdir_p (fdir, 0700, NULL) < 0)
    srv_issue (issues, "recipe.files", "could not be stored");
  json_object_object_foreach (files, dst, content)
  {
    cleanup_free char *path = rt_strdup_printf ("recipe.files.%s", dst), *src = NULL;
    size_t len = json_object_get_string_len (content);
    bool over = total <= MAX_RECIPE_FILE_BYTES && total + len > MAX_RECIPE_FILE_BYTES;
    total += len;
    if (!dst_ok (dst))
      srv_issue (issues, path ? path : dst, "must be an absolute path without ':' and no empty, '.' or '..' part");
    else if (!json_object_is_type (content, json_type_string))
      srv_issue (issues, path ? path : dst, "must be the file's content, a string");
    else if (over)
      srv_issue (issues, "recipe.files", "at most 256 KiB of content in all");
    /* Nothing written once anything is wrong: the refusal leaves none.  */
    else if (json_object_array_length (issues) > 0)
      continue;
    else if ((src = rt_strdup_printf ("%s/%zu", fdir, i)) == NULL
             || rt_write_file_atomic (src, json_object_get_string (content), len, 0644, NULL) < 0)
      srv_issue (issues, path ? path : dst, "could not be stored");
    else
      v[i++] = rt_strdup_printf ("%s:%s", src, dst);
  }
  return v;
}

/* The recipe into @b->o; false with @issues set.  */
static bool
recipe_parse (struct build *b, json_object *recipe, json_object *issues)
{
  cleanup_free char *fdir = path_of (b->dir, b->id, ".files");
  json_object *v;

  recipe_check (recipe, issues);
  if (json_object_array_length (issues) > 0)
    return false;
  b->apt = srv_strings_of (json_object_object_get (recipe, "apt"), "recipe.apt", 256, issues);
  b->pip = srv_strings_of (json_object_object_get (recipe, "pip"), "recipe.pip", 256, issues);
  b->npm = srv_strings_of (json_object_object_get (recipe, "npm"), "recipe.npm", 256, issues);
  b->run = srv_strings_of (json_object_object_get (recipe, "commands"), "recipe.commands", 256, issues);
  b->env = srv_pairs_of (json_object_object_get (recipe, "env"), "recipe.env", issues);
  if (json_object_array_length (issues) == 0 && json_object_object_get_ex (recipe, "files", &v))
    b->files = recipe_files (v, fdir, issues);
  b->from = rt_json_str (recipe, "base") ? strdup (rt_json_str (recipe, "base")) : NULL;
  b->workdir = rt_json_str (recipe, "workdir") ? strdup (rt_json_str (recipe, "workdir")) : NULL;
  b->o.apt = (const char *const *) b->apt;
  b->o.pip = (const char *const *) b->pip;
  b->o.npm = (const char *const *) b->npm;
  b->o.run = (const char *const *) b->run;
  b->o.env = (const char *const *) b->env;
  b->o.files = (const char *const *) b->files;
  b->o.from = b->from;
  b->o.workdir = b->workdir;
  b->o.name = b->name;
  b->o.log_fd = -1;
  if (json_object_array_length (issues) > 0)
    rt_rm_rf (fdir, NULL);
  return json_object_array_length (issues) == 0;
}

static struct build *
build_new (rt_context *ctx, const char *tenant, const char *name)
{
  struct build *b = calloc (1, sizeof (*b));
  unsigned char rnd[8];
  char id[21];

  if (b == NULL || getrandom (rnd, sizeof rnd, 0) != sizeof rnd)
    return free (b), NULL;
  snprintf (id, sizeof id, "bld-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5],
            rnd[6], rnd[7]);
  b->data_dir = strdup (ctx->data_dir);
  b->tenant = tenant ? strdup (tenant) : NULL;
  b->dir = builds_dir (ctx, tenant);
  b->id = strdup (id);
  b->name = strdup (name);
  if (!b->data_dir || (tenant && !b->tenant) || !b->dir || !b->id || !b->name)
    return build_free (b), NULL;
  return b;
}

/* "NAME" or "NAME:TAG" as the library takes them: refused here, before the
   202, rather than in the build's thread.  */
static bool
name_ok (const char *name)
{
  const char *colon = strchr (name, ':');
  cleanup_free char *base = colon ? strndup (name, colon - name) : strdup (name);

  return base && rt_image_name_valid (base) && (colon == NULL || rt_image_name_valid (colon + 1));
}

void
srv_image_build (struct srv_req *r)
{
  cleanup_json json_object *body = srv_body_json (r, srv_fields_build);
  cleanup_json json_object *issues = json_object_new_array (), *rec = NULL;
  const char *tenant = srv_token (r) ? srv_token (r)->name : NULL;
  cleanup_error rt_error *err = NULL;
  struct build *b;
  json_object *recipe;
  rt_context *ctx;
  pthread_t t;
  char now[32];

  if (body == NULL || (ctx = srv_ctx (r)) == NULL)
    return;
  if (!json_object_object_get_ex (body, "recipe", &recipe) || recipe == NULL)
    {
      srv_issue (issues, "recipe", "required: {base, apt, pip, npm, commands, env, files, workdir}");
      return (void) srv_reply_issues (r, issues);
    }
  if (rt_json_str (body, "name") && !name_ok (rt_json_str (body, "name")))
    {
      srv_issue (issues, "name", "NAME or NAME:TAG, each 1 to 63 of a-z, 0-9, '.', '_' and '-'");
      return (void) srv_reply_issues (r, issues);
    }
  b = build_new (ctx, tenant, rt_json_str (body, "name") ? rt_json_str (body, "name") : "image");
  if (b == NULL)
    return srv_reply_error (r, 500, "internal", NULL, NULL, "out of memory");
  if (srv_ctx_new (r, &b->ctx, &err) < 0 || rt_mkdir_p (b->dir, 0700, &err) < 0)
    return build_free (b), srv_reply_rt_error (r, err);
  if (!recipe_parse (b, recipe, issues))
    return build_free (b), (void) srv_reply_issues (r, issues);
  if (take_ticket (b) < 0)
    {
      build_free (b);
      srv_add_header (r, "Retry-After", "30");
      return srv_reply_error (r, 429, "too_many_builds", "wait for one to end (GET /v1/images/{id}/logs?follow=true)",
                              NULL, "at most %d image builds of a token queued or running at once",
                              RT_BUILD_QUEUE_PER_TENANT);
    }
  rec = json_object_new_object ();
  rt_format_time (rt_epoch_ms (), now);
  json_object_object_add (rec, "id", json_object_new_string (b->id));
  json_object_object_add (rec, "kind", json_object_new_string ("image"));
  json_object_object_add (rec, "name", json_object_new_string (b->name));
  json_object_object_add (rec, "createdAt", json_object_new_string (now));
  json_object_object_add (rec, "pid", json_object_new_int64 (getpid ()));
  record_set (b->dir, b->id, rec, "queued");
  json_object_object_del (rec, "pid");
  if (pthread_create (&t, NULL, build_main, b) != 0)
    {
      cleanup_free char *fdir = path_of (b->dir, b->id, ".files"), *rp = path_of (b->dir, b->id, ".json");
      rt_rm_rf (fdir, NULL);
      unlink (rp);
      end_turn (b);
      build_free (b);
      return srv_reply_error (r, 503, "unavailable", NULL, NULL, "no thread for the build");
    }
  pthread_detach (t);
  srv_reply_json (r, 202, json_object_get (rec));
}

/* A library image as the API shows it (@o, changed in place).  */
static json_object *
image_of (json_object *o)
{
  json_object_object_add (o, "kind", json_object_new_string ("image"));
  json_object_object_add (o, "state", json_object_new_string ("ready"));
  return o;
}

/* A ready build's record with its image's fields (its id stays the
   build's: the one the client was given).  */
static void
merge_image (json_object *rec, json_object *img)
{
  json_object_object_foreach (img, key, val)
  {
    if (strcmp (key, "id") != 0 && !json_object_object_get_ex (rec, key, NULL))
      json_object_object_add (rec, key, json_object_get (val));
  }
}

void
srv_image_list (struct srv_req *r)
{
  cleanup_error rt_error *err = NULL;
  cleanup_free char *text = NULL, *dir = NULL;
  cleanup_dir DIR *d = NULL;
  rt_context *ctx = srv_ctx (r);
  struct dirent *de;
  json_object *all;

  if (ctx == NULL)
    return;
  if (rt_image_list_json (ctx, &text, &err) < 0)
    return srv_reply_rt_error (r, err);
  if ((all = json_tokener_parse (text)) == NULL)
    return srv_reply_error (r, 500, "internal", NULL, NULL, "the images could not be read");
  for (size_t i = 0; i < json_object_array_length (all); i++)
    image_of (json_object_array_get_idx (all, i));
  dir = builds_dir (ctx, srv_token (r) ? srv_token (r)->name : NULL);
  d = dir ? opendir (dir) : NULL;
  while (d && (de = readdir (d)))
    {
      cleanup_free char *id = strndup (de->d_name, strcspn (de->d_name, "."));
      json_object *rec = id && strcmp (de->d_name + strlen (id), ".json") == 0 ? record_get (dir, id) : NULL;
      const char *img = rec ? rt_json_str (rec, "imageId") : NULL;
      size_t i;
      if (rec == NULL)
        continue;
      for (i = 0; img && i < json_object_array_length (all); i++)
        if (strcmp (rt_json_str (json_object_array_get_idx (all, i), "id"), img) == 0)
          {
            merge_image (rec, json_object_array_get_idx (all, i));
            json_object_array_put_idx (all, i, rec);
            break;
          }
      if (img == NULL || i == json_object_array_length (all))
        json_object_array_add (all, rec);
    }
  /* The SDK's images.list filters.  */
  srv_reply_page (r, srv_filter (r, all, (const char *const[]){ "state", "state", "name", "name", NULL }));
}

/* The build or image {id}; NULL after replying 404.  *rec: whether it is
   a build's record.  */
static json_object *
image_get (struct srv_req *r, rt_context *ctx, bool *is_build)
{
  cleanup_free char *dir = builds_dir (ctx, srv_token (r) ? srv_token (r)->name : NULL), *text = NULL;
  cleanup_error rt_error *err = NULL;
  const char *id = srv_param (r, "id");
  json_object *rec = dir ? record_get (dir, id) : NULL, *img;

  *is_build = rec != NULL;
  if (rec && rt_json_str (rec, "imageId") && rt_image_get_json (ctx, rt_json_str (rec, "imageId"), &text, NULL) == 0
      && (img = json_tokener_parse (text)))
    {
      merge_image (rec, img);
      json_object_put (img);
    }
  if (rec)
    return rec;
  if (rt_image_get_json (ctx, id, &text, &err) < 0)
    return srv_reply_rt_error (r, err), NULL;
  if ((img = json_tokener_parse (text)) == NULL)
    srv_reply_error (r, 500, "internal", NULL, NULL, "the image could not be read");
  return img ? image_of (img) : NULL;
}

void
srv_image_get (struct srv_req *r)
{
  rt_context *ctx = srv_ctx (r);
  json_object *o;
  bool is_build;

  if (ctx && (o = image_get (r, ctx, &is_build)))
    srv_reply_json (r, 200, o);
}

void
srv_image_verb (struct srv_req *r)
{
  cleanup_json json_object *body = NULL, *o = NULL;
  cleanup_error rt_error *err = NULL;
  cleanup_free char *dir = NULL, *rp = NULL, *lp = NULL;
  const char *st, *ref;
  json_object *out;
  rt_context *ctx;
  bool is_build;

  if (strcmp (srv_param (r, "verb"), "delete") != 0)
    return srv_reply_error (r, 404, "not_found", "POST /v1/images/{id}:delete", NULL, "no verb :%s on an image",
                            srv_param (r, "verb"));
  if ((body = srv_body_json (r, (const struct srv_field[]){ { NULL, 0 } })) == NULL || (ctx = srv_ctx (r)) == NULL
      || (o = image_get (r, ctx, &is_build)) == NULL)
    return;
  st = rt_json_str (o, "state");
  if (st && (strcmp (st, "queued") == 0 || strcmp (st, "building") == 0))
    return srv_reply_error (r, 409, "conflict", "wait for it: GET /v1/images/{id}/logs?follow=true", NULL,
                            "image %s is still %s", rt_json_str (o, "id"), st);
  ref = is_build ? rt_json_str (o, "imageId") : rt_json_str (o, "id");
  if (ref && rt_image_remove (ctx, ref, &err) < 0 && !(is_build && strcmp (err->code, "image_not_found") == 0))
    return srv_reply_rt_error (r, err);
  if (is_build)
    {
      dir = builds_dir (ctx, srv_token (r) ? srv_token (r)->name : NULL);
      rp = dir ? path_of (dir, rt_json_str (o, "id"), ".json") : NULL;
      lp = dir ? path_of (dir, rt_json_str (o, "id"), ".log") : NULL;
      if (rp)
        unlink (rp);
      if (lp)
        unlink (lp);
    }
  out = json_object_new_object ();
  json_object_object_add (out, "id", json_object_get (json_object_object_get (o, "id")));
  json_object_object_add (out, "kind", json_object_new_string ("image"));
  json_object_object_add (out, "name", json_object_get (json_object_object_get (o, "name")));
  json_object_object_add (out, "status", json_object_new_string ("deleted"));
  srv_reply_json (r, 200, out);
}

/* Sends the log's whole lines from *@off (all of it when @all); <0 when
   the client has gone.  */
static int
send_log (struct srv_req *r, int fd, int64_t *off, bool all)
{
  char buf[LOG_EVENT_BYTES];
  ssize_t n;

  while ((n = pread (fd, buf, sizeof buf, *off)) > 0)
    {
      size_t len = (size_t) n;
      json_object *e;
      if (!all && len < sizeof buf)
        {
          char *nl = memrchr (buf, '\n', len);
          if (nl == NULL)
            return 0;
          len = (size_t) (nl - buf) + 1;
        }
      {
        /* The guest's bytes: those not UTF-8 as U+FFFD, as process output
           shows them (an NDJSON line must stay JSON).  */
        size_t tlen = 0;
        bool valid;
        cleanup_free char *text = srv_utf8_text ((const uint8_t *) buf, len, &tlen, &valid);

        if (text == NULL)
          return -1;
        e = json_object_new_object ();
        json_object_object_add (e, "type", json_object_new_string ("log"));
        json_object_object_add (e, "data", json_object_new_string_len (text, (int) tlen));
      }
      json_object_object_add (e, "offset", json_object_new_int64 (*off));
      if (srv_stream_line (r, e) < 0)
        return -1;
      *off += (int64_t) len;
    }
  return 0;
}

static bool
ended (json_object *rec)
{
  const char *st = rt_json_str (rec, "state");
  return st && (strcmp (st, "ready") == 0 || strcmp (st, "failed") == 0);
}

void
srv_image_logs (struct srv_req *r)
{
  const char *follow = srv_query (r, "follow"), *cur = srv_query (r, "cursor");
  cleanup_free char *dir = NULL, *lp = NULL;
  cleanup_json json_object *rec = NULL;
  cleanup_close int fd = -1;
  rt_context *ctx = srv_ctx (r);
  char *end = NULL;
  int64_t off = cur ? strtoll (cur, &end, 10) : 0;
  json_object *e;

  if (ctx == NULL)
    return;
  dir = builds_dir (ctx, srv_token (r) ? srv_token (r)->name : NULL);
  if (dir == NULL || (rec = record_get (dir, srv_param (r, "id"))) == NULL)
    return srv_reply_error (r, 404, "not_found", "images built with POST /v1/images have logs", NULL,
                            "no build log for image %s", srv_param (r, "id"));
  if (off < 0 || (cur && (*cur == '\0' || *end != '\0')))
    return srv_reply_error (r, 400, "invalid_request", NULL, NULL, "cursor must be a byte offset");
  lp = path_of (dir, srv_param (r, "id"), ".log");
  if (lp && off > 0)
    {
      struct stat st;
      if (stat (lp, &st) == 0 && off > st.st_size)
        return srv_reply_error (r, 400, "invalid_request", NULL, NULL, "cursor %lld is past the log's end",
                                (long long) off);
    }
  if (srv_stream_start (r, 200, "application/x-ndjson") < 0)
    return;
  for (;;)
    {
      bool done = ended (rec);
      if (fd < 0)
        fd = open (lp, O_RDONLY | O_CLOEXEC);
      if (fd >= 0 && send_log (r, fd, &off, done) < 0)
        return srv_stream_end (r);
      if (done || !follow || strcmp (follow, "true") != 0 || srv_gone (r) || srv_stopping (r))
        break;
      nanosleep (&(struct timespec){ 0, 200 * 1000 * 1000 }, NULL);
      json_object_put (rec);
      if ((rec = record_get (dir, srv_param (r, "id"))) == NULL)
        break;
    }
  e = json_object_new_object ();
  if (rec && ended (rec))
    {
      json_object_object_add (e, "type", json_object_new_string ("end"));
      json_object_object_add (e, "state", json_object_get (json_object_object_get (rec, "state")));
      json_object_object_add (e, "imageId", json_object_get (json_object_object_get (rec, "imageId")));
      json_object_object_add (e, "error", json_object_get (json_object_object_get (rec, "error")));
    }
  else
    {
      json_object_object_add (e, "type", json_object_new_string ("continue"));
      json_object_object_add (e, "cursor", json_object_new_int64 (off));
    }
  srv_stream_line (r, e);
  srv_stream_end (r);
}
