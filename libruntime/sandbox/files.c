/* files.c - reading files in a sandbox with the guest's own tools, as
   root; a two-line prelude turns "missing" and "a directory" into exit
   codes (files.h), not stderr to parse.  */
#include <string.h>

#include "sandbox/files.h"
#include "sandbox/fork.h"
#include "sandbox/handle.h"
#include "core/checks.h"


static int
file_error (int exit_code, const char *path, const char *stderr_text, rt_error **err)
{
  if (exit_code == EXIT_MISSING)
    return rt_error_set (err, ENOENT, "file_not_found", "no such file in the sandbox: %s", path);
  if (exit_code == EXIT_IS_DIR)
    {
      rt_error_set (err, EISDIR, "is_a_directory", "%s is a directory", path);
      return rt_error_hint (err, "runtime sandbox files lists it; runtime sandbox cp copies it whole");
    }
  return rt_error_set (err, EIO, "internal", "cannot read %s: %s", path,
                       stderr_text && *stderr_text ? stderr_text : "the guest's tool failed");
}

int
rt_local_sandbox_cat (rt_sandbox *sb, const char *path, const rt_exec_opts *opts, rt_error **err)
{
  const char *argv[] = { (char *) "sh", (char *) "-c",
                   (char *) "[ -d \"$1\" ] && exit 66; [ -e \"$1\" ] || exit 67; exec cat -- \"$1\"",
                   (char *) "sh", (char *) path, NULL };
  struct rt_captured c = { .pass = opts ? opts : &rt_no_exec_opts };
  rt_exec_opts o = { .user = "root", .cancel_fd = opts ? opts->cancel_fd : -1, .on_output = rt_capture_output, .data = &c };
  rt_exec_result res = { 0 };
  int ret = rt_sandbox_auto_wake (sb, err);

  if (ret < 0)
    return ret;
  ret = rt_local_sandbox_exec (sb, argv, &o, &res, err);
  if (ret == 0 && res.exit_code != 0)
    ret = file_error (res.exit_code, path, c.err, err);
  free (c.err);
  return ret;
}


int
rt_local_sandbox_files_json (rt_sandbox *sb, const char *path, unsigned depth, char **json, rt_error **err)
{
  char depth_s[16];
  const char *argv[] = { (char *) "sh", (char *) "-c",
                   (char *) "[ -e \"$1\" ] || [ -L \"$1\" ] || exit 67; "
                            "if [ -d \"$1\" ]; then exec find \"$1\" -mindepth 1 -maxdepth \"$2\" -printf '%y %s %p\\0'; "
                            "else exec find \"$1\" -maxdepth 0 -printf '%y %s %p\\0'; fi",
                   (char *) "sh", (char *) path, depth_s, NULL };
  struct rt_captured c = { 0 };
  cleanup_json json_object *arr = NULL;
  rt_exec_opts o = { .user = "root", .cancel_fd = -1, .on_output = rt_capture_output, .data = &c };
  rt_exec_result res = { 0 };
  int ret = rt_sandbox_auto_wake (sb, err);

  if (ret < 0)
    return ret;
  snprintf (depth_s, sizeof (depth_s), "%u", depth ? depth : 1);
  ret = rt_local_sandbox_exec (sb, argv, &o, &res, err);
  if (ret == 0 && res.exit_code != 0)
    ret = file_error (res.exit_code, path, c.err, err);
  if (ret < 0)
    {
      free (c.out);
      free (c.err);
      return ret;
    }
  arr = json_object_new_array ();
  /* Records: "TYPE SIZE PATH\0" (find -printf); paths may hold spaces.  */
  for (char *p = c.out, *end = c.out + c.out_len; p && p < end;)
    {
      char *nul = memchr (p, '\0', end - p), *sp1, *sp2;
      if (nul == NULL)
        break;
      sp1 = strchr (p, ' ');
      sp2 = sp1 ? strchr (sp1 + 1, ' ') : NULL;
      if (sp1 && sp2 && sp2 < nul)
        {
          char type = *p == 'd' ? 'd' : *p == 'l' ? 'l' : '-';
          json_object *e = json_object_new_object ();
          json_object_object_add (e, "type", json_object_new_string_len (&type, 1));
          json_object_object_add (e, "size", json_object_new_int64 (strtoll (sp1 + 1, NULL, 10)));
          json_object_object_add (e, "path", json_object_new_string (sp2 + 1));
          json_object_array_add (arr, e);
        }
      p = nul + 1;
    }
  free (c.out);
  free (c.err);
  json_object_array_sort (arr, rt_entry_by_path);
  *json = strdup (json_object_to_json_string_ext (arr, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return *json ? 0 : rt_error_oom (err);
}
