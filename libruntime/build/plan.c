/* plan.c - a build's plan: the recipe (runtime.json) and the flags
   turned into steps, package names checked, and the build's environment.  */
#include <fcntl.h>
#include <regex.h>
#include <string.h>
#include <sys/stat.h>

#include "common/beneath.h"
#include "build/plan.h"

#define RECIPE_MAX (1 << 20)

static const char *const kind_names[] = { "file", "apt", "pip", "npm", "run" };

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
add_packages (struct build *b, enum step_kind kind, json_object *from_recipe, const char *const *from_flags,
              rt_error **err)
{
  size_t n = 0, i = 0;
  char **words;

  n += from_recipe ? json_object_array_length (from_recipe) : 0;
  for (const char *const *p = from_flags; p && *p; p++)
    n++;
  if (n == 0)
    return 0;
  words = strv_new (n);
  if (words == NULL)
    return rt_error_oom (err);
  for (size_t k = 0; from_recipe && k < json_object_array_length (from_recipe); k++)
    words[i++] = strdup (json_object_get_string (json_object_array_get_idx (from_recipe, k)));
  for (const char *const *p = from_flags; p && *p; p++)
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

/* @spec is SRC:DST with DST absolute: *src is SRC.  */
static int
split_spec (const char *spec, char **src, rt_error **err)
{
  const char *colon = strrchr (spec, ':');

  if (colon == NULL || colon == spec || colon[1] != '/')
    {
      rt_error_set (err, EINVAL, "invalid_request", "a file is SRC:DST with DST absolute, not '%s'", spec);
      return rt_error_hint (err, "for example: --file ./app:/opt/app");
    }
  *src = strndup (spec, colon - spec);
  return *src ? 0 : rt_error_oom (err);
}

/* A file of the command line (--file): the user's own choice, any path.  */
static int
add_file (struct build *b, const char *spec, rt_error **err)
{
  cleanup_free char *src = NULL;
  char **words;
  struct stat st;
  int ret = split_spec (spec, &src, err);

  if (ret < 0)
    return ret;
  if (stat (src, &st) < 0)
    return rt_error_set (err, errno, "file_not_found", "cannot add '%s' to the image: %s", src, strerror (errno));
  words = strv_new (2);
  if (words == NULL || (words[0] = realpath (src, NULL)) == NULL
      || (words[1] = strdup (strrchr (spec, ':') + 1)) == NULL)
    {
      cleanup_strvp (&words);
      return rt_error_oom (err);
    }
  return add_step (b, STEP_FILE, words, err);
}

/* Why the recipe's entry @spec could not be opened (-@ret).  */
static int
refuse_entry (const char *spec, const char *src, const char *dir, int ret, rt_error **err)
{
  if (ret == -EXDEV || ret == -ELOOP)
    {
      rt_error_set (err, EINVAL, "invalid_request", "runtime.json: \"files\" entry '%s' %s", spec,
                    src[0] == '/'   ? "is an absolute path"
                    : ret == -ELOOP ? "follows too many symlinks, or a /proc link"
                                    : "leaves the recipe's folder (by '..' or a symlink)");
      return rt_error_hint (err,
                            "a recipe reads only files beneath its folder (%s); --file SRC:DST on the command "
                            "line takes any file",
                            dir);
    }
  return rt_error_set (err, -ret, "file_not_found", "runtime.json: \"files\" entry '%s': %s in %s", spec,
                       strerror (-ret), dir);
}

/* The build's private copy of its recipe's files: a 0700 directory
   under the data dir, removed with the build (build/build.c).  */
static int
stage_dir (struct build *b, rt_error **err)
{
  cleanup_free char *images = rt_strdup_printf ("%s/images", b->ctx->data_dir);
  int ret;

  if (b->stage)
    return 0;
  if (images == NULL)
    return rt_error_oom (err);
  ret = rt_mkdir_p (images, 0700, err);
  if (ret < 0)
    return ret;
  b->stage = rt_strdup_printf ("%s/.stage-XXXXXX", images);
  if (b->stage == NULL)
    return rt_error_oom (err);
  if (mkdtemp (b->stage) == NULL)
    {
      ret = rt_error_set (err, errno, "internal", "cannot create '%s': %s", b->stage, strerror (errno));
      free (steal_pointer (&b->stage));
    }
  return ret;
}

/* A file the recipe names: opened beneath its folder (@dirfd), then
   copied by that descriptor into the stage, which the step reads; nothing
   is looked up by its path again.  Its step is shown (and hashed) with the
   file's real path.  */
static int
add_recipe_file (struct build *b, const char *spec, int dirfd, rt_error **err)
{
  cleanup_free char *src = NULL, *shown = NULL, *name = NULL, *staged = NULL;
  cleanup_close int fd = -1, stage = -1, into = -1;
  const char *base;
  char **words;
  int ret = split_spec (spec, &src, err);

  if (ret < 0)
    return ret;
  fd = rt_open_beneath (dirfd, src, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return refuse_entry (spec, src, b->o->dir, fd, err);
  shown = rt_fd_path (fd);
  if (shown == NULL)
    shown = rt_strdup_printf ("%s/%s", b->o->dir, src);
  if (shown == NULL)
    return rt_error_oom (err);
  ret = stage_dir (b, err);
  if (ret < 0)
    return ret;
  /* Under its own name: a DST ending in '/' takes it (build/step.c).  */
  base = strrchr (shown, '/') ? strrchr (shown, '/') + 1 : shown;
  name = rt_strdup_printf ("%zu", b->n);
  staged = rt_strdup_printf ("%s/%zu/%s", b->stage, b->n, *base ? base : "root");
  if (name == NULL || staged == NULL)
    return rt_error_oom (err);
  stage = open (b->stage, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (stage < 0 || mkdirat (stage, name, 0700) < 0
      || (into = openat (stage, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
    return rt_error_set (err, errno, "internal", "cannot create '%s': %s", staged, strerror (errno));
  ret = rt_copy_fd_tree (fd, into, *base ? base : "root", shown, err);
  if (ret < 0)
    return ret;
  words = strv_new (2);
  if (words == NULL || (words[0] = steal_pointer (&shown)) == NULL
      || (words[1] = strdup (strrchr (spec, ':') + 1)) == NULL)
    {
      cleanup_strvp (&words);
      return rt_error_oom (err);
    }
  ret = add_step (b, STEP_FILE, words, err);
  if (ret < 0)
    return ret;
  free (words[0]);
  words[0] = steal_pointer (&staged);
  return 0;
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

int
rt_build_plan (struct build *b, json_object *recipe, rt_error **err)
{
  const rt_build_opts *o = b->o;
  json_object *files = recipe_array (recipe, "files", err), *cmds;
  cleanup_close int dirfd = -1;
  int ret;

  if (*err)
    return -EINVAL;
  if (files && json_object_array_length (files) > 0)
    {
      dirfd = open (o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dirfd < 0)
        return rt_error_set (err, errno, "file_not_found", "cannot open '%s': %s", o->dir, strerror (errno));
    }
  for (size_t i = 0; files && i < json_object_array_length (files); i++)
    if ((ret = add_recipe_file (b, json_object_get_string (json_object_array_get_idx (files, i)), dirfd, err)) < 0)
      return ret;
  for (const char *const *f = o->files; f && *f; f++)
    if ((ret = add_file (b, *f, err)) < 0)
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
  for (const char *const *r = o->run; r && *r; r++)
    if ((ret = add_run (b, *r, err)) < 0)
      return ret;
  return 0;
}

int
rt_build_read_recipe (const char *dir, json_object **out, rt_error **err)
{
  cleanup_free char *path = rt_strdup_printf ("%s/runtime.json", dir);
  cleanup_free char *text = NULL;
  cleanup_close int dirfd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd = -1;
  enum json_tokener_error jerr = json_tokener_success;
  size_t len = 0;
  int ret;

  if (path == NULL)
    return rt_error_oom (err);
  /* The recipe itself stays in its folder too.  */
  fd = dirfd < 0 ? -errno : rt_open_beneath (dirfd, "runtime.json", O_RDONLY | O_NONBLOCK | O_NOCTTY);
  if (fd == -EXDEV || fd == -ELOOP)
    return rt_error_set (err, EINVAL, "invalid_request", "'%s' leads out of its folder", path);
  if (fd < 0)
    return rt_error_set (err, -fd, "file_not_found", "cannot read '%s': %s", path, strerror (-fd));
  ret = rt_read_all (fd, RECIPE_MAX, &text, &len);
  if (ret < 0)
    return rt_error_set (err, -ret, "invalid_request", "cannot read '%s': %s", path,
                         ret == -EFBIG ? "larger than 1 MiB" : strerror (-ret));
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

int
rt_build_merge_env (struct build *b, json_object *base, json_object *recipe, const char *const *flags,
                    rt_error **err)
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
  for (const char *const *f = flags; f && *f; f++)
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
