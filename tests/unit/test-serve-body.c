/* test-serve-body.c - a JSON body's lists and maps as the library's strings
   (api/body.h): every wrong entry named by its path, a list cut at its
   limit with the rest named, absent fields NULL.  */
#include <string.h>

#include "common/util.h"
#include "api/body.h"
#include "serve/server.h"
#include "tap.h"

static const char *
issue_path (json_object *issues, size_t i)
{
  return rt_json_str (json_object_array_get_idx (issues, i), "path");
}

int
main (void)
{
  json_object *issues = json_object_new_array ();
  json_object *arr = json_tokener_parse ("[\"a.example.com\", 3, \"b.example.com\", null]");
  json_object *obj = json_tokener_parse ("{\"K\": \"v\", \"N\": 1, \"E\": \"\"}");
  char **v;

  v = srv_strings_of (arr, "hosts", 0, issues);
  ok (v && strcmp (v[0], "a.example.com") == 0 && strcmp (v[1], "b.example.com") == 0 && v[2] == NULL,
      "the strings of a list, in order");
  ok (json_object_array_length (issues) == 2 && strcmp (issue_path (issues, 0), "hosts[1]") == 0
          && strcmp (issue_path (issues, 1), "hosts[3]") == 0,
      "a number and a null named by their index");
  cleanup_strvp (&v);
  json_object_put (issues);

  issues = json_object_new_array ();
  v = srv_strings_of (arr, "hosts", 1, issues);
  ok (v && v[0] && v[1] == NULL, "cut at its limit");
  ok (json_object_array_length (issues) == 3 && strcmp (issue_path (issues, 1), "hosts[2]") == 0
          && strcmp (rt_json_str (json_object_array_get_idx (issues, 1), "message"), "one too many") == 0,
      "what is past the limit is one too many");
  cleanup_strvp (&v);
  json_object_put (issues);

  issues = json_object_new_array ();
  v = srv_pairs_of (obj, "env", issues);
  ok (v && strcmp (v[0], "K=v") == 0 && strcmp (v[1], "E=") == 0 && v[2] == NULL, "a map as K=V, empty values too");
  ok (json_object_array_length (issues) == 1 && strcmp (issue_path (issues, 0), "env.N") == 0,
      "a value that is no string named by its key");
  cleanup_strvp (&v);
  ok (srv_pairs_of (NULL, "env", issues) == NULL && srv_strings_of (NULL, "x", 0, issues) == NULL,
      "an absent field is NULL");
  {
    static const struct srv_field f[] = { { "cols", json_type_int }, { "rows", json_type_int }, { NULL, 0 } };
    cleanup_json json_object *pty = json_tokener_parse ("{\"cols\": 80, \"rows\": \"24\", \"x\": 1, \"y\": null}");
    cleanup_json json_object *nested = json_object_new_array (), *top = json_object_new_array ();
    srv_fields_check (pty, f, "pty", nested);
    ok (json_object_array_length (nested) == 3 && strcmp (issue_path (nested, 0), "pty.rows") == 0
            && strcmp (issue_path (nested, 1), "pty.x") == 0 && strcmp (issue_path (nested, 2), "pty.y") == 0
            && strcmp (rt_json_str (json_object_array_get_idx (nested, 1), "message"), "unknown field") == 0,
        "srv_fields_check: a wrong type and unknown fields named under the prefix");
    srv_fields_check (pty, f, NULL, top);
    ok (json_object_array_length (top) == 3 && strcmp (issue_path (top, 1), "x") == 0,
        "… by name alone without one, as in a body");
  }
  json_object_put (issues);
  json_object_put (arr);
  json_object_put (obj);
  return tap_done ();
}
