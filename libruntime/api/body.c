/* body.c - a JSON body's lists and maps as the library's strings (see
   body.h).  */
#include <string.h>

#include "common/util.h"
#include "api/body.h"

void
srv_issue (json_object *issues, const char *path, const char *msg)
{
  json_object *o = json_object_new_object ();

  json_object_object_add (o, "path", json_object_new_string (path));
  json_object_object_add (o, "message", json_object_new_string (msg));
  json_object_array_add (issues, o);
}

char **
srv_pairs_of (json_object *obj, const char *field, json_object *issues)
{
  size_t n, i = 0;
  char **v;

  /* Not an object: its type is the caller's issue already.  */
  if (obj == NULL || !json_object_is_type (obj, json_type_object))
    return NULL;
  n = json_object_object_length (obj);
  v = calloc (n + 1, sizeof (*v));
  if (v == NULL)
    return NULL;
  json_object_object_foreach (obj, key, val)
  {
    if (!json_object_is_type (val, json_type_string))
      {
        cleanup_free char *path = rt_strdup_printf ("%s.%s", field, key);
        srv_issue (issues, path ? path : field, "must be a string");
        continue;
      }
    v[i++] = rt_strdup_printf ("%s=%s", key, json_object_get_string (val));
  }
  return v;
}

char **
srv_strings_of (json_object *arr, const char *field, size_t max, json_object *issues)
{
  size_t n, k = 0;
  char **v;

  /* Not an array: its type is the caller's issue already.  */
  if (arr == NULL || !json_object_is_type (arr, json_type_array))
    return NULL;
  n = json_object_array_length (arr);
  v = calloc (n + 1, sizeof (*v));
  for (size_t i = 0; v && i < n; i++)
    {
      json_object *e = json_object_array_get_idx (arr, i);
      if (!json_object_is_type (e, json_type_string) || (max && i >= max))
        {
          cleanup_free char *path = rt_strdup_printf ("%s[%zu]", field, i);
          srv_issue (issues, path ? path : field, max && i >= max ? "one too many" : "must be a string");
          continue;
        }
      v[k++] = strdup (json_object_get_string (e));
    }
  return v;
}

bool
srv_reply_issues (struct srv_req *r, json_object *issues)
{
  json_object *details;

  if (json_object_array_length (issues) == 0)
    return false;
  details = json_object_new_object ();
  json_object_object_add (details, "issues", json_object_get (issues));
  srv_reply_error (r, 400, "invalid_request", "see details.issues", details, "wrong fields: %s",
                   rt_json_str (json_object_array_get_idx (issues, 0), "path"));
  return true;
}

json_object *
srv_filter (struct srv_req *r, json_object *all, const char *const pairs[])
{
  json_object *out = json_object_new_array ();

  for (size_t i = 0; i < json_object_array_length (all); i++)
    {
      json_object *o = json_object_array_get_idx (all, i);
      bool keep = true;

      for (size_t k = 0; keep && pairs[k]; k += 2)
        {
          const char *want = srv_query (r, pairs[k]), *v = rt_json_str (o, pairs[k + 1]);
          keep = want == NULL || (v && strcmp (v, want) == 0);
        }
      if (keep)
        json_object_array_add (out, json_object_get (o));
    }
  json_object_put (all);
  return out;
}
