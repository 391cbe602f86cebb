/* build.c - `runtime image build`: one build sandbox, one overlay per step,
   one layer per step.

   The build sandbox boots the parent image (or a disk of it plus the
   cached steps).  In the guest, as root, each step gets a fresh overlay
   whose lower dirs are the base (a bind of /) and the upper dirs of the
   steps before it; the step runs chrooted in it, and its upper dir (what
   it changed, with overlayfs's whiteouts) is tarred out as its layer.
   Between steps the host replaces the sandbox's network rules: each step
   reaches only what it needs.  A step's cache key is the SHA-256 of its
   parent's key, its text and its inputs' digests.  The plan is made in
   build/plan.c, the steps run in build/step.c.  */
#include <string.h>
#include <unistd.h>

#include "sandbox/copy.h"
#include "sandbox/list.h"
#include "build/build.h"
#include "image/scope.h"
#include "image/disk.h"
#include "build/plan.h"
#include "build/step.h"
#include "image/store.h"


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
  if (b->stage)
    rt_rm_rf (b->stage, NULL);
  free (b->stage);
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

  cfg.env = (const char *const *) b->env;
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
      cleanup_free char *what = rt_strdup_printf ("%s (its cached steps 1-%zu)", b->name, first);
      *tmpdisk = rt_strdup_printf ("%s/disks/build-%s.ext4", b->ctx->cache_dir, b->steps[first - 1].key);
      if (*tmpdisk == NULL || what == NULL)
        return rt_error_oom (err);
      ret = rt_image_disk_for_layers (b->ctx, layers, what, *tmpdisk, err);
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
    if (access (ca, R_OK) == 0 && (ret = rt_local_sandbox_copy_in (b->sb, ca, "/tmp/rtb-ca.pem", &(rt_copy_opts){ .follow = true }, NULL, err)) < 0)
      return ret;
  }
  return rt_build_guest_must (b, "preparing the build", "set -e; mkdir -p " WORK "/base; mount --bind / " WORK "/base", NULL,
                     err);
}

/* @full ("name" or "name:tag") checked: the name in *name, the tag (in
   @full) in *tag or NULL.  */
static int
parse_name (const char *full, char **name, const char **tag, rt_error **err)
{
  *name = strdup (full ? full : "image");
  if (*name == NULL)
    return rt_error_oom (err);
  if (strchr (*name, ':'))
    {
      *strchr (*name, ':') = '\0';
      *tag = full + strlen (*name) + 1;
    }
  if (!rt_image_name_valid (*name)
      || (*tag
          && (**tag == '\0'
              || strspn (*tag, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != strlen (*tag))))
    return rt_error_set (err, EINVAL, "invalid_request", "'%s' is not an image name (lower-case letters, digits, "
                                                         "'.', '_', '-'; then :TAG)", full);
  return 0;
}

/* The parent image @from (the default image is made on first use): its
   id, layers, workdir and env, then the recipe's and the flags'.  */
static int
load_base (struct build *b, const char *from, json_object *recipe, rt_error **err)
{
  cleanup_json json_object *base = NULL;
  struct rt_image_disk d = { 0 };
  const rt_build_opts *o = b->o;
  json_object *v;
  const char *w;
  int ret;

  ret = rt_image_ensure_disk (b->ctx, from, &d, err);
  rt_image_disk_clear (&d);
  if (ret < 0)
    return ret;
  if ((ret = rt_image_manifest (b->ctx, from, &base, err)) < 0)
    return ret;
  b->base_id = strdup (rt_json_str (base, "id"));
  b->base_layers = json_object_object_get_ex (base, "layers", &v) ? json_object_get (v) : json_object_new_array ();
  w = o->workdir ? o->workdir : recipe && json_object_object_get_ex (recipe, "workdir", &v) ? json_object_get_string (v)
                                                                                            : rt_json_str (base, "workdir");
  b->workdir = strdup (w && *w == '/' ? w : "/");
  if (b->base_id == NULL || b->workdir == NULL)
    return rt_error_oom (err);
  return rt_build_merge_env (b, json_object_object_get_ex (base, "env", &v) ? v : NULL, recipe, o->env, err);
}

/* Every step's layer: from the cache while the steps before it came from
   there too, the rest run in the build sandbox (its disk, when not the
   parent's, in *tmpdisk).  */
static int
run_steps (struct build *b, char **tmpdisk, rt_error **err)
{
  cleanup_strv char **apt = NULL;
  size_t first = b->n;
  int ret;

  for (size_t i = 0; i < b->n; i++)
    {
      if ((ret = rt_build_step_key (b, i ? b->steps[i - 1].key : b->base_id, &b->steps[i], b->steps[i].key, err)) < 0)
        return ret;
      b->steps[i].cached = !b->o->no_cache && first == b->n && rt_build_cache_lookup (b, &b->steps[i]);
      if (!b->steps[i].cached && first == b->n)
        first = i;
    }
  for (size_t i = 0; i < first; i++)
    rt_build_say (b, "runtime: step %zu/%zu: %s (cached)", i + 1, b->n, b->steps[i].text);
  if (first == b->n)
    return 0;
  /* Before anything boots: a bad --apt-mirror is refused at once.  */
  for (size_t i = first; i < b->n && apt == NULL; i++)
    if (b->steps[i].kind == STEP_APT && (ret = rt_build_apt_hosts (b, &apt, err)) < 0)
      return ret;
  if ((ret = rt_build_check_cancel (b, err)) < 0)
    return ret;
  rt_build_say (b, "runtime: starting the build sandbox…");
  if ((ret = start_sandbox (b, first, tmpdisk, err)) < 0)
    return ret;
  for (size_t i = first; i < b->n; i++)
    {
      if ((ret = rt_build_check_cancel (b, err)) < 0)
        return ret;
      b->at = i;
      rt_build_say (b, "runtime: step %zu/%zu: %s", i + 1, b->n, b->steps[i].text);
      if ((ret = rt_build_run_step (b, first, i, apt, err)) < 0)
        return ret;
    }
  return 0;
}

/* The new image's manifest fields: the base's layers, then one per step.  */
static json_object *
image_fields (struct build *b)
{
  json_object *fields = json_object_new_object ();
  cleanup_json json_object *layers = json_object_new_array ();
  cleanup_json json_object *steps = json_object_new_array ();
  json_object *env = json_object_new_array ();

  for (size_t i = 0; i < json_object_array_length (b->base_layers); i++)
    json_object_array_add (layers, json_object_get (json_object_array_get_idx (b->base_layers, i)));
  for (size_t i = 0; i < b->n; i++)
    {
      json_object_array_add (layers, json_object_new_string (b->steps[i].layer));
      json_object_array_add (steps, json_object_new_string (b->steps[i].text));
    }
  json_object_object_add (fields, "tags", json_object_new_array ());
  json_object_object_add (fields, "layers", json_object_get (layers));
  for (char **e = b->env; e && *e; e++)
    json_object_array_add (env, json_object_new_string (*e));
  json_object_object_add (fields, "env", env);
  json_object_object_add (fields, "workdir", json_object_new_string (b->workdir));
  json_object_object_add (fields, "base", json_object_new_string (b->base_id));
  json_object_object_add (fields, "steps", json_object_get (steps));
  return fields;
}

/* Whether @name's latest has the same layers, env and workdir as
   @fields: that one is this build already (its id in *id).  */
static bool
same_as_latest (rt_context *ctx, const char *name, json_object *fields, char **id)
{
  cleanup_json json_object *latest = NULL;
  cleanup_error rt_error *ignored = NULL;
  const char *keys[] = { "layers", "env", "workdir", NULL };
  json_object *a, *c;

  if (rt_image_manifest (ctx, name, &latest, &ignored) < 0)
    return false;
  for (const char **k = keys; *k; k++)
    if (!(json_object_object_get_ex (latest, *k, &a) && json_object_object_get_ex (fields, *k, &c)
          && json_object_equal (a, c)))
      return false;
  *id = strdup (rt_json_str (latest, "id"));
  return true;
}

/* Adds the built image as @name (tagged @tag), unless it is @name's
   latest already.  */
static int
add_image (struct build *b, const char *name, const char *tag, char **id_out, rt_error **err)
{
  cleanup_json json_object *fields = image_fields (b);
  int ret;

  if (tag == NULL && same_as_latest (b->ctx, name, fields, id_out))
    {
      if (*id_out == NULL)
        return rt_error_oom (err);
      rt_build_say (b, "runtime: %s:latest (%.12s) is this build already", name, *id_out);
      return 0;
    }
  ret = rt_image_add (b->ctx, name, tag, fields, id_out, err);
  if (ret == 0)
    rt_build_say (b, "runtime: built %s:%s (%.12s)", name, tag ? tag : "latest", *id_out);
  return ret;
}

/* A tenant's build may not take the default image's name: refused
   before anything is built (image/scope.h).  */
static int
refuse_default (rt_context *ctx, const char *name, rt_error **err)
{
  cleanup_free char *scoped = NULL;

  return rt_image_scoped_name (ctx, name, &scoped, err);
}

int
rt_local_image_build (rt_context *ctx, const rt_build_opts *o, char **id_out, rt_error **err)
{
  struct build b = { .ctx = ctx, .o = o, .log_fd = o->log_fd };
  cleanup_json json_object *recipe = NULL;
  cleanup_free char *tmpdisk = NULL, *name = NULL;
  const char *from = o->from, *tag = NULL;
  json_object *v;
  int ret;

  if (o->dir && (ret = rt_build_read_recipe (o->dir, &recipe, err)) < 0)
    goto out;
  if (from == NULL && recipe && json_object_object_get_ex (recipe, "base", &v))
    from = json_object_get_string (v);
  if ((ret = parse_name (o->name, &name, &tag, err)) < 0 || (ret = refuse_default (ctx, name, err)) < 0
      || (ret = rt_build_plan (&b, recipe, err)) < 0)
    goto out;
  if (b.n == 0)
    {
      ret = rt_error_set (err, EINVAL, "usage", "nothing to build: no --apt, --pip, --npm, --run or --file");
      goto out;
    }
  b.name = name;
  b.at = b.n;
  ret = load_base (&b, from, recipe, err);
  if (ret == 0)
    ret = run_steps (&b, &tmpdisk, err);
  if (ret == 0)
    ret = rt_build_check_cancel (&b, err);
  if (ret == 0)
    ret = add_image (&b, name, tag, id_out, err);
out:
  if (b.sb)
    {
      cleanup_error rt_error *ignored = NULL;
      cleanup_free char *sbid = strdup (rt_sandbox_id (b.sb));
      rt_local_sandbox_destroy (b.sb, &ignored);
      if (sbid)
        rt_local_sandbox_remove (ctx, sbid, NULL);
    }
  if (tmpdisk)
    unlink (tmpdisk);
  build_clear (&b);
  return ret;
}
