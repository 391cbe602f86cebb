/* list.c - every sandbox a context sees, and one by id or name.  */
#include <string.h>

#include "core/state.h"
#include "records/list.h"
#include "records/reap.h"
#include "records/store.h"

static int
by_created (const void *a, const void *b)
{
  json_object *x = *(json_object *const *) a, *y = *(json_object *const *) b;
  const char *cx = rt_json_str (x, "createdAt"), *cy = rt_json_str (y, "createdAt");
  int c = strcmp (cx ? cx : "", cy ? cy : "");
  if (c)
    return c;
  return strcmp (rt_json_str (x, "id") ? rt_json_str (x, "id") : "", rt_json_str (y, "id") ? rt_json_str (y, "id") : "");
}

static bool
array_has_id (json_object *arr, const char *id)
{
  size_t n = json_object_array_length (arr);
  for (size_t i = 0; i < n; i++)
    {
      const char *other = rt_json_str (json_object_array_get_idx (arr, i), "id");
      if (other && strcmp (other, id) == 0)
        return true;
    }
  return false;
}

/* A tenant context sees only its own sandboxes (core/context.h).  */
static bool
visible (rt_context *ctx, bool scoped, json_object *sb)
{
  return !scoped || rt_tenant_sees (ctx, rt_json_str (sb, "tenant"));
}

static int
store_list (rt_context *ctx, bool all, bool scoped, json_object **out, rt_error **err)
{
  json_object *arr = json_object_new_array ();
  cleanup_free char *records = rt_strdup_printf ("%s/sandboxes", ctx->data_dir);
  DIR *d;
  struct dirent *de;

  if (arr == NULL || records == NULL)
    {
      json_object_put (arr);
      return rt_error_oom (err);
    }
  rt_store_reap (ctx);
  d = opendir (ctx->state_dir);
  while (d && (de = readdir (d)))
    {
      cleanup_free char *path = NULL;
      json_object *state;
      if (strncmp (de->d_name, "sb-", 3) != 0)
        continue;
      path = rt_strdup_printf ("%s/%s/state.json", ctx->state_dir, de->d_name);
      state = path ? rt_record_read (path) : NULL;
      if (state == NULL)
        continue;
      /* A stopping monitor wrote its record already: the record wins.
         Spares are no one's sandboxes yet (monitor/spare.h).  */
      if (!visible (ctx, scoped, state)
          || (rt_json_str (state, "state")
              && (rt_state_is (rt_json_str (state, "state"), RT_SANDBOX_STOPPED)
                  || json_object_get_boolean (json_object_object_get (state, "spare")))))
        {
          json_object_put (state);
          continue;
        }
      json_object_array_add (arr, state);
    }
  if (d)
    closedir (d);
  d = all ? opendir (records) : NULL;
  while (d && (de = readdir (d)))
    {
      cleanup_free char *path = NULL;
      json_object *rec;
      size_t len = strlen (de->d_name);
      if (strncmp (de->d_name, "sb-", 3) != 0 || len < 6 || strcmp (de->d_name + len - 5, ".json") != 0)
        continue;
      path = rt_strdup_printf ("%s/%s", records, de->d_name);
      rec = path ? rt_record_read (path) : NULL;
      if (rec == NULL)
        continue;
      if (!visible (ctx, scoped, rec) || array_has_id (arr, rt_json_str (rec, "id") ? rt_json_str (rec, "id") : ""))
        json_object_put (rec);
      else
        json_object_array_add (arr, rec);
    }
  if (d)
    closedir (d);
  json_object_array_sort (arr, by_created);
  *out = arr;
  return 0;
}

int
rt_store_list (rt_context *ctx, bool all, json_object **out, rt_error **err)
{
  return store_list (ctx, all, true, out, err);
}

int
rt_store_list_unscoped (rt_context *ctx, bool all, json_object **out, rt_error **err)
{
  return store_list (ctx, all, false, out, err);
}

/* The entries of @arr with id @ref (then *n = 1), else those named @ref
   (counted in *n, the last in *found); with @stopped, only ended ones;
   with @own, only those of the context's own owner.  */
static void
match_owned (rt_context *ctx, json_object *arr, const char *ref, bool stopped, bool own, json_object **found, int *n)
{
  *n = 0;
  for (size_t i = 0; i < json_object_array_length (arr); i++)
    {
      json_object *o = json_object_array_get_idx (arr, i);
      const char *id = rt_json_str (o, "id"), *name = rt_json_str (o, "name"), *st = rt_json_str (o, "state");
      if ((stopped && (st == NULL || !rt_state_is (st, RT_SANDBOX_STOPPED)))
          || (own && !rt_tenant_same (ctx, rt_json_str (o, "tenant"))))
        continue;
      if (id && strcmp (id, ref) == 0)
        {
          *found = o;
          *n = 1;
          return;
        }
      if (name && strcmp (name, ref) == 0)
        {
          *found = o;
          (*n)++;
        }
    }
}

/* match_owned of every owner the context sees; a name several share is
   the host's own sandbox's when the host (untenanted) has one by it, so
   a tenant's "dev" never makes the host's "dev" ambiguous.  */
static void
match_ref (rt_context *ctx, json_object *arr, const char *ref, bool stopped, json_object **found, int *n)
{
  json_object *own = NULL;
  int n_own = 0;

  match_owned (ctx, arr, ref, stopped, false, found, n);
  if (*n <= 1 || ctx->tenant)
    return;
  match_owned (ctx, arr, ref, stopped, true, &own, &n_own);
  if (n_own == 1)
    {
      *found = own;
      *n = 1;
    }
}

int
rt_store_resolve (rt_context *ctx, const char *ref, json_object **out, rt_error **err)
{
  cleanup_json json_object *arr = NULL;
  cleanup_free char *record = NULL;
  json_object *found = NULL;
  int n = 0, ret;

  if (ref == NULL || *ref == '\0' || strchr (ref, '/'))
    return rt_error_set (err, EINVAL, "usage", "a sandbox id or name is needed");
  /* Live sandboxes first: few, and what scripts name.  Records of ended
     ones grow with every run, so they are read only when needed.  */
  ret = rt_store_list (ctx, false, &arr, err);
  if (ret < 0)
    return ret;
  match_ref (ctx, arr, ref, false, &found, &n);
  if (n == 0)
    {
      record = rt_record_path (ctx, ref);
      if (record && strncmp (ref, "sb-", 3) == 0 && (found = rt_record_read (record)) != NULL)
        {
          if (rt_tenant_sees (ctx, rt_json_str (found, "tenant")))
            {
              *out = found;
              return 0;
            }
          json_object_put (found);
          found = NULL;
        }
      json_object_put (steal_pointer (&arr));
      ret = rt_store_list (ctx, true, &arr, err);
      if (ret < 0)
        return ret;
      match_ref (ctx, arr, ref, true, &found, &n);
    }
  if (n == 1)
    {
      *out = json_object_get (found);
      return 0;
    }
  if (n > 1)
    {
      rt_error_set (err, EINVAL, "invalid_request", "more than one sandbox is named '%s'", ref);
      return rt_error_hint (err, "use its id (runtime sandbox ls --all)");
    }
  rt_error_set (err, ENOENT, "not_found", "no sandbox '%s'", ref);
  return rt_error_hint (err, "runtime sandbox ls --all lists them");
}
