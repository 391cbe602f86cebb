/* test-image-scope.c - a tenant's images (image/scope.h) from a store
   written by hand: a tenant lists and gets its own and the default image,
   by name or id, never another tenant's or the host's; it may not remove
   or take the default image's name; the host sees them all.  */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/context.h"
#include "image/scope.h"
#include "image/store.h"
#include "tap.h"

static char dir[] = "/tmp/test-image-scope-XXXXXX";

#define ID_DEFAULT "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define ID_TA "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define ID_TB "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define ID_HOST "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"

static void
put (const char *rel, const char *text)
{
  char path[600];
  FILE *f;

  snprintf (path, sizeof path, "%s/data/images/%s", dir, rel);
  f = fopen (path, "w");
  if (f)
    {
      fputs (text, f);
      fclose (f);
      chmod (path, 0600);
    }
}

static void
manifest (const char *id, const char *name)
{
  char rel[128], text[256];

  snprintf (rel, sizeof rel, "manifests/%s.json", id);
  snprintf (text, sizeof text, "{\"id\":\"%s\",\"name\":\"%s\",\"version\":1,\"layers\":[]}", id, name);
  put (rel, text);
}

/* The code of what @ctx's get of @ref answers, "ok" or the error's.  */
static const char *
get (rt_context *ctx, const char *ref, char *buf)
{
  char *json = NULL;
  rt_error *err = NULL;
  int ret = rt_image_get_json (ctx, ref, &json, &err);

  snprintf (buf, 64, "%s", ret == 0 ? "ok" : err->code);
  free (json);
  rt_error_free (err);
  return buf;
}

static char *
list (rt_context *ctx)
{
  char *json = NULL;
  rt_error *err = NULL;

  if (rt_image_list_json (ctx, &json, &err) < 0)
    {
      rt_error_free (err);
      return strdup ("");
    }
  return json;
}

int
main (void)
{
  rt_context *ta = NULL, *tb = NULL, *host = NULL;
  rt_error *err = NULL;
  char c[64], sub[600], *json, *scoped = NULL;

  if (mkdtemp (dir) == NULL)
    return 1;
  snprintf (sub, sizeof sub, "%s/data", dir);
  setenv ("RUNTIME_DATA_DIR", sub, 1);
  snprintf (sub, sizeof sub, "%s/state", dir);
  setenv ("RUNTIME_STATE_DIR", sub, 1);
  snprintf (sub, sizeof sub, "%s/cache", dir);
  setenv ("RUNTIME_CACHE_DIR", sub, 1);
  if (rt_context_new (&ta, &err) < 0 || rt_context_new (&tb, &err) < 0 || rt_context_new (&host, &err) < 0
      || rt_context_set_tenant (ta, "ta", &err) < 0 || rt_context_set_tenant (tb, "tb", &err) < 0)
    return 1;
  free (list (host)); /* makes the store */
  put ("index.json", "{\"names\":{"
                     "\"runtime\":{\"versions\":{\"1\":\"" ID_DEFAULT "\"},\"tags\":{\"latest\":\"" ID_DEFAULT "\"}},"
                     "\"ta/app\":{\"versions\":{\"1\":\"" ID_TA "\"},\"tags\":{\"latest\":\"" ID_TA "\"}},"
                     "\"tb/app\":{\"versions\":{\"1\":\"" ID_TB "\"},\"tags\":{\"latest\":\"" ID_TB "\"}},"
                     "\"hostimg\":{\"versions\":{\"1\":\"" ID_HOST "\"},\"tags\":{\"latest\":\"" ID_HOST "\"}}}}");
  manifest (ID_DEFAULT, "runtime");
  manifest (ID_TA, "ta/app");
  manifest (ID_TB, "tb/app");
  manifest (ID_HOST, "hostimg");

  json = list (ta);
  ok (strstr (json, ID_DEFAULT) && strstr (json, ID_TA) && !strstr (json, ID_TB) && !strstr (json, ID_HOST),
      "ta lists its own and the default image only");
  ok (strstr (json, "\"name\":\"app\"") && !strstr (json, "ta/"), "its own by the name it gave");
  free (json);
  json = list (host);
  ok (strstr (json, ID_TA) && strstr (json, ID_TB) && strstr (json, ID_HOST) && strstr (json, "\"name\":\"ta/app\""),
      "the host lists all, a tenant's as TENANT/NAME");
  free (json);

  ok (strcmp (get (ta, "app", c), "ok") == 0 && strcmp (get (tb, "app", c), "ok") == 0,
      "each tenant's 'app' is its own");
  ok (strcmp (get (ta, "app:latest", c), "ok") == 0 && strcmp (get (ta, "app@1", c), "ok") == 0, "by tag and version");
  ok (strcmp (get (ta, ID_TA, c), "ok") == 0 && strcmp (get (ta, "bbbbbbbbbbbb", c), "ok") == 0, "by id and id prefix");
  ok (strcmp (get (ta, "bbbb", c), "ok") == 0 && strcmp (get (host, "dddd", c), "ok") == 0,
      "any 4 hex digits of an id's start");
  ok (strcmp (get (host, "ddd", c), "image_not_found") == 0, "3 are too few: image_not_found");
  ok (strcmp (get (ta, "runtime", c), "ok") == 0 && strcmp (get (ta, "", c), "ok") == 0, "the default image");
  ok (strcmp (get (ta, ID_TB, c), "image_not_found") == 0, "tb's by id: image_not_found (%s)", c);
  ok (strcmp (get (ta, "cccccccccccc", c), "image_not_found") == 0, "tb's by id prefix: image_not_found");
  ok (strcmp (get (ta, "tb/app", c), "image_not_found") == 0, "tb's by its stored name: image_not_found");
  ok (strcmp (get (ta, "ta/app", c), "image_not_found") == 0, "no '/' in a tenant's ref, even its own");
  ok (strcmp (get (ta, "hostimg", c), "image_not_found") == 0 && strcmp (get (ta, ID_HOST, c), "image_not_found") == 0,
      "the host's own: image_not_found");
  ok (strcmp (get (host, "tb/app", c), "ok") == 0 && strcmp (get (host, ID_TB, c), "ok") == 0,
      "the host gets a tenant's by TENANT/NAME and id");

  ok (rt_image_remove (ta, "runtime", &err) < 0 && strcmp (err->code, "permission_denied") == 0,
      "ta may not remove the default image");
  rt_error_free (err);
  err = NULL;
  ok (rt_image_remove (ta, ID_TB, &err) < 0 && strcmp (err->code, "image_not_found") == 0, "nor tb's: image_not_found");
  rt_error_free (err);
  err = NULL;
  ok (strcmp (get (tb, "app", c), "ok") == 0, "tb's is still there");
  ok (rt_image_scoped_name (ta, "runtime", &scoped, &err) < 0 && strcmp (err->code, "permission_denied") == 0,
      "a tenant cannot take the default image's name");
  rt_error_free (err);
  err = NULL;
  ok (rt_image_scoped_name (ta, "web", &scoped, &err) == 0 && strcmp (scoped, "ta/web") == 0
          && strcmp (rt_image_shown_name (ta, scoped), "web") == 0,
      "a tenant's name is stored as TENANT/NAME, shown as NAME");
  free (scoped);
  ok (rt_image_name_visible (ta, "runtime") && !rt_image_name_visible (ta, "tab/x") && !rt_image_name_visible (ta, "ta")
          && rt_image_name_visible (host, "tb/app"),
      "visibility: the default, its own prefix exactly, the host all");

  {
    /* Two ids that start alike, ta's and tb's: the prefix names neither
       for the host, and ta's for ta (tb's is not counted).  */
    json_object *two = json_tokener_parse ("{\"names\":{\"ta/a\":{\"versions\":{\"1\":\"" ID_TA "\"}},"
                                           "\"tb/b\":{\"versions\":{\"1\":\"bbbbcccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc\"}},"
                                           "\"ta/c\":{\"versions\":{\"1\":\"" ID_TA "\"}}}}");
    ok (two && rt_image_index_prefix (two, "bbbb", NULL, NULL, NULL) == 2 && rt_image_index_resolve (two, "bbbb") == NULL,
        "a prefix of two ids resolves to none (an id under two names counts once)");
    ok (rt_image_index_prefix (two, "bbbbc", NULL, NULL, NULL) == 1 && rt_image_index_resolve (two, "bbbbc") != NULL,
        "one more digit tells them apart");
    ok (rt_image_unresolved (host, two, "bbbb", &err) < 0 && strcmp (err->code, "ambiguous") == 0,
        "the host is told: ambiguous");
    rt_error_free (err);
    err = NULL;
    ok (rt_image_resolve_in (ta, two, "bbbb") && strcmp (rt_image_resolve_in (ta, two, "bbbb"), ID_TA) == 0,
        "for ta the prefix is its own image's: tb's that starts alike neither hides it nor counts");
    ok (rt_image_resolve_in (tb, two, "bbbbb") == NULL && rt_image_unresolved (tb, two, "bbbbb", &err) < 0
            && strcmp (err->code, "image_not_found") == 0,
        "tb is not told of ta's: image_not_found, not ambiguous");
    rt_error_free (err);
    err = NULL;
    json_object_put (two);
  }

  rt_context_free (ta);
  rt_context_free (tb);
  rt_context_free (host);
  snprintf (sub, sizeof sub, "rm -rf '%s'", dir);
  if (system (sub) != 0)
    ok (0, "cleanup");
  return tap_done ();
}
