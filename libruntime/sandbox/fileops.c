/* fileops.c - a sandbox's files for `runtime serve` (fileops.h): fixed
   scripts, the caller's paths as their arguments; exit codes say what
   went wrong (files.h's two and the ones below), not stderr to parse.  */
#include <string.h>

#include "core/checks.h"
#include "sandbox/fileops.h"
#include "sandbox/files.h"
#include "sandbox/fork.h"
#include "sandbox/stdin.h"
#include "sandbox/unpack.h"

#define EXIT_EXISTS 68
#define EXIT_NOT_EMPTY 69
#define EXIT_NOT_DIR 70
#define EXIT_DENIED 72

/* What a listing may send (RT_LIST_MAX_ENTRIES long paths would be more:
   the listing is then cut there).  */
#define OUT_MAX (16u << 20)

/* After a failed mkdir: the nearest existing ancestor of $1 is a
   directory (so the user may not write there) or not.  */
#define FAIL_FN                                                                                                       \
  "fail() { e=$1; while [ ! -e \"$e\" ] && [ ! -L \"$e\" ]; do e=$(dirname -- \"$e\"); done; "                      \
  "[ -d \"$e\" ] && exit 72; exit 70; }; "

/* A guest command's output: stdout to @pass's callback, or kept up to
   OUT_MAX; the first bytes of stderr.  */
struct run
{
  const rt_exec_opts *pass;
  char *out;
  size_t out_len;
  bool over;
  char err[1024];
  size_t err_len;
};

static int
run_output (void *data, int stream, const char *buf, size_t len)
{
  struct run *g = data;
  char *p;

  if (stream == 2)
    {
      size_t n = len < sizeof (g->err) - 1 - g->err_len ? len : sizeof (g->err) - 1 - g->err_len;
      memcpy (g->err + g->err_len, buf, n);
      g->err_len += n;
      return 0;
    }
  if (g->pass)
    return g->pass->on_output ? g->pass->on_output (g->pass->data, 1, buf, len) : 0;
  if (g->out_len + len > OUT_MAX || (p = realloc (g->out, g->out_len + len + 1)) == NULL)
    {
      g->over = true;
      return -1;
    }
  memcpy (p + g->out_len, buf, len);
  g->out = p;
  g->out_len += len;
  return 0;
}

/* Runs `sh -c @script sh @args…` as @user with stdin from @in (@in_len
   bytes) or from @in_fd (when >= 0); its exit code in *code.  */
static int
run (rt_sandbox *sb, const char *user, const char *script, const char *const args[], const void *in, size_t in_len,
     int in_fd, struct run *g, int *code, rt_error **err)
{
  const char *argv[8] = { "sh", "-c", script, "sh" };
  rt_exec_opts o = { .user = user,
                     .cancel_fd = g->pass ? g->pass->cancel_fd : -1,
                     .stdin_data = in,
                     .stdin_len = in_len,
                     .on_output = run_output,
                     .data = g };
  rt_exec_result res = { 0 };
  int ret;

  for (size_t i = 0; args[i] && i < 3; i++)
    argv[4 + i] = args[i];
  ret = rt_sandbox_auto_wake (sb, err);
  if (ret == 0 && in_fd >= 0)
    ret = rt_exec_stdin_fd (sb, argv, &o, in_fd, &res, err);
  else if (ret == 0)
    ret = rt_local_sandbox_exec (sb, argv, &o, &res, err);
  if (ret < 0 && g->over && err)
    {
      /* Stopped for sending too much: what came is the answer, cut.  */
      rt_error_free (*err);
      *err = NULL;
      *code = 0;
      return 0;
    }
  if (ret < 0)
    return ret;
  if (res.interrupted)
    return rt_error_set (err, EINTR, "interrupted", "the command on the sandbox's files was interrupted");
  *code = res.exit_code;
  return 0;
}

/* The error of a script's exit @code about @path.  */
static int
op_error (int code, const char *path, const struct run *g, const char *what, rt_error **err)
{
  char text[sizeof (g->err) * 6];

  switch (code)
    {
    case EXIT_IS_DIR:
      return rt_error_set (err, EISDIR, "is_a_directory", "%s is a directory", path);
    case EXIT_MISSING:
      return rt_error_set (err, ENOENT, "file_not_found", "no such file in the sandbox: %s", path);
    case EXIT_EXISTS:
      return rt_error_set (err, EEXIST, "conflict", "%s already exists", path);
    case EXIT_NOT_EMPTY:
      return rt_error_set (err, ENOTEMPTY, "conflict", "%s is a directory that is not empty", path);
    case EXIT_NOT_DIR:
      return rt_error_set (err, ENOTDIR, "file_not_found", "a parent of %s is missing or not a directory", path);
    case EXIT_DENIED:
      return rt_error_set (err, EACCES, "permission_denied", "the sandbox's user \"runtime\" may not change %s", path);
    default:
      rt_unpack_escape (text, sizeof (text), g->err, g->err_len);
      return rt_error_set (err, EIO, "internal", "cannot %s %s: %s", what, path, *text ? text : "the guest's tool failed");
    }
}

static const char *
type_name (char y)
{
  return y == 'f' ? "file" : y == 'd' ? "directory" : y == 'l' ? "symlink" : "other";
}

/* One FileEntry of find's "TYPE SIZE MODE MTIME PATH\0TARGET\0"; NULL
   when the guest sent something else.  */
static json_object *
parse_entry (const char *rec, const char *target)
{
  char type, mode[8], when[32];
  unsigned long long size;
  double mtime;
  int n = 0;
  const char *path, *name;
  json_object *e;

  if (sscanf (rec, "%c %llu %7[0-7] %lf %n", &type, &size, mode, &mtime, &n) != 4 || n == 0 || rec[n] != '/')
    return NULL;
  /* touch -d 1900 is the guest's right; NaN and 1e300 are lies.  */
  if (!(mtime >= 0 && mtime < 1e11))
    mtime = 0;
  path = rec + n;
  name = strrchr (path, '/');
  name = name[1] ? name + 1 : path;
  rt_format_time ((int64_t) (mtime * 1000), when);
  e = json_object_new_object ();
  json_object_object_add (e, "name", json_object_new_string (name));
  json_object_object_add (e, "path", json_object_new_string (path));
  json_object_object_add (e, "type", json_object_new_string (type_name (type)));
  json_object_object_add (e, "size", json_object_new_int64 (size > INT64_MAX ? INT64_MAX : (int64_t) size));
  json_object_object_add (e, "mode", json_object_new_string (mode));
  json_object_object_add (e, "modifiedAt", json_object_new_string (when));
  if (type == 'l')
    json_object_object_add (e, "symlinkTarget", json_object_new_string (target));
  return e;
}

bool
rt_guest_parse_entries (const char *buf, size_t len, size_t max, json_object *arr)
{
  size_t count = 0;

  for (const char *p = buf, *end = buf + len; p && p < end;)
    {
      const char *nul = memchr (p, '\0', end - p), *nul2;
      json_object *e;
      if (nul == NULL || (nul2 = memchr (nul + 1, '\0', end - nul - 1)) == NULL)
        break;
      if (count == max)
        return true;
      if ((e = parse_entry (p, nul + 1)) != NULL)
        {
          json_object_array_add (arr, e);
          count++;
        }
      p = nul2 + 1;
    }
  return false;
}

int
rt_guest_entries (rt_sandbox *sb, const char *path, unsigned depth, enum rt_entry_what what, json_object **out,
                  bool *truncated, rt_error **err)
{
  static const char script[]
      = "p=$1; [ -e \"$p\" ] || [ -L \"$p\" ] || exit 67; F='%y %s %m %T@ %p\\0%l\\0'; "
        "[ \"$2\" = L ] && exec find -H \"$p\" -maxdepth 0 -printf \"$F\"; "
        "if [ \"$2\" = 0 ] || [ ! -d \"$p\" ]; then exec find \"$p\" -maxdepth 0 -printf \"$F\"; fi; "
        "find -H \"$p\" -mindepth 1 -maxdepth \"$2\" -printf \"$F\" | head -z -n \"$3\"";
  char depth_s[16], lines_s[32];
  const char *args[] = { path, depth_s, lines_s, NULL };
  struct run g = { 0 };
  json_object *arr;
  int code = 0, ret = rt_check_guest_path (path, err);

  if (what == RT_ENTRY_BELOW)
    snprintf (depth_s, sizeof (depth_s), "%u", depth < 1 ? 1 : depth > RT_LIST_MAX_DEPTH ? RT_LIST_MAX_DEPTH : depth);
  else
    snprintf (depth_s, sizeof (depth_s), "%s", what == RT_ENTRY_SELF ? "0" : "L");
  /* One more than allowed, to tell a cut listing from a full one.  */
  snprintf (lines_s, sizeof (lines_s), "%u", 2 * (RT_LIST_MAX_ENTRIES + 1));
  if (ret == 0)
    ret = run (sb, "root", script, args, NULL, 0, -1, &g, &code, err);
  if (ret == 0 && code != 0)
    ret = op_error (code, path, &g, "list", err);
  if (ret < 0)
    {
      free (g.out);
      return ret;
    }
  arr = json_object_new_array ();
  *truncated = rt_guest_parse_entries (g.out, g.out_len, RT_LIST_MAX_ENTRIES, arr) || g.over;
  free (g.out);
  json_object_array_sort (arr, rt_entry_by_path);
  *out = arr;
  return 0;
}

int
rt_guest_write (rt_sandbox *sb, const char *path, unsigned mode, const void *data, int fd, uint64_t size,
                rt_error **err)
{
  static const char script[]
      = FAIL_FN "p=$1; d=$(dirname -- \"$p\"); [ -d \"$p\" ] && exit 66; mkdir -p -- \"$d\" 2>/dev/null || fail \"$d\"; "
                "[ -w \"$d\" ] || exit 72; t=$(mktemp -- \"$d/.rt-put.XXXXXX\") || exit 1; "
                "if cat >\"$t\" && [ \"$(stat -c %s -- \"$t\")\" = \"$3\" ] && chmod -- \"$2\" \"$t\" "
                "&& mv -fT -- \"$t\" \"$p\"; then exit 0; fi; rm -f -- \"$t\"; exit 1";
  char mode_s[8], size_s[24];
  const char *args[] = { path, mode_s, size_s, NULL };
  struct run g = { 0 };
  int code = 0, ret = rt_check_guest_path (path, err);

  snprintf (mode_s, sizeof (mode_s), "%o", mode & 07777);
  snprintf (size_s, sizeof (size_s), "%llu", (unsigned long long) size);
  if (ret == 0)
    ret = run (sb, "runtime", script, args, data, data ? size : 0, data ? -1 : fd, &g, &code, err);
  if (ret == 0 && code != 0)
    ret = op_error (code, path, &g, "write", err);
  return ret;
}

int
rt_guest_mkdir (rt_sandbox *sb, const char *path, bool parents, rt_error **err)
{
  static const char script[]
      = FAIL_FN "p=$1; if [ -e \"$p\" ] || [ -L \"$p\" ]; then [ \"$2\" = 1 ] && [ -d \"$p\" ] && exit 0; exit 68; fi; "
                "if [ \"$2\" = 1 ]; then mkdir -p -- \"$p\" 2>/dev/null && exit 0; "
                "else [ -d \"$(dirname -- \"$p\")\" ] || exit 70; mkdir -- \"$p\" 2>/dev/null && exit 0; fi; fail \"$p\"";
  const char *args[] = { path, parents ? "1" : "0", NULL };
  struct run g = { 0 };
  int code = 0, ret = rt_check_guest_path (path, err);

  if (ret == 0)
    ret = run (sb, "runtime", script, args, NULL, 0, -1, &g, &code, err);
  if (ret == 0 && code != 0)
    ret = op_error (code, path, &g, "make", err);
  return ret;
}

int
rt_guest_remove (rt_sandbox *sb, const char *path, bool recursive, bool *removed, rt_error **err)
{
  static const char script[]
      = "p=$1; [ -e \"$p\" ] || [ -L \"$p\" ] || exit 67; "
        "if [ -d \"$p\" ] && [ ! -L \"$p\" ]; then "
        "if [ \"$2\" = 1 ]; then rm -rf -- \"$p\" 2>/dev/null; "
        "else rmdir -- \"$p\" 2>/dev/null || { [ -n \"$(ls -A -- \"$p\")\" ] && exit 69; exit 72; }; fi; "
        "else rm -f -- \"$p\" 2>/dev/null; fi; [ -e \"$p\" ] || [ -L \"$p\" ] || exit 0; exit 72";
  const char *args[] = { path, recursive ? "1" : "0", NULL };
  struct run g = { 0 };
  int code = 0, ret = rt_check_guest_path (path, err);

  *removed = false;
  if (ret == 0)
    ret = run (sb, "runtime", script, args, NULL, 0, -1, &g, &code, err);
  if (ret == 0 && code == EXIT_MISSING)
    return 0;
  if (ret == 0 && code != 0)
    ret = op_error (code, path, &g, "remove", err);
  *removed = ret == 0;
  return ret;
}

int
rt_guest_rename (rt_sandbox *sb, const char *from, const char *to, bool overwrite, rt_error **err)
{
  static const char script[]
      = "[ -e \"$1\" ] || [ -L \"$1\" ] || exit 67; d=$(dirname -- \"$2\"); [ -d \"$d\" ] || exit 70; "
        "[ -w \"$d\" ] && [ -w \"$(dirname -- \"$1\")\" ] || exit 72; "
        "if [ -e \"$2\" ] || [ -L \"$2\" ]; then [ \"$3\" = 1 ] || exit 68; "
        "if [ -d \"$2\" ] && [ ! -L \"$2\" ] && [ -n \"$(ls -A -- \"$2\")\" ]; then exit 69; fi; fi; "
        "exec mv -fT -- \"$1\" \"$2\"";
  const char *args[] = { from, to, overwrite ? "1" : "0", NULL };
  struct run g = { 0 };
  int code = 0, ret = rt_check_guest_path (from, err);

  if (ret == 0)
    ret = rt_check_guest_path (to, err);
  if (ret == 0)
    ret = run (sb, "runtime", script, args, NULL, 0, -1, &g, &code, err);
  if (ret == 0 && code != 0)
    ret = op_error (code, code == EXIT_MISSING ? from : to, &g, "rename to", err);
  return ret;
}

int
rt_guest_tar_out (rt_sandbox *sb, const char *path, bool gzip, bool named, const rt_exec_opts *opts,
                  rt_error **err)
{
  /* A directory's entries are relative to it (./…) unless @named; a
     file's entry is its own name.  */
  static const char script[]
      = "[ -e \"$1\" ] || [ -L \"$1\" ] || exit 67; z=; [ \"$2\" = 1 ] && z=z; "
        "if [ \"$3\" = 0 ] && [ -d \"$1\" ] && ! [ -L \"$1\" ]; then cd -- \"$1\" || exit 1; exec tar -c${z}f - .; fi; "
        "cd -- \"$(dirname -- \"$1\")\" || exit 1; n=$(basename -- \"$1\"); exec tar -c${z}f - -- \"$n\"";
  const char *args[] = { path, gzip ? "1" : "0", named ? "1" : "0", NULL };
  struct run g = { .pass = opts };
  int code = 0, ret = rt_check_guest_path (path, err);

  if (ret == 0 && strspn (path, "/") == strlen (path))
    ret = rt_error_set (err, EINVAL, "usage", "cannot archive '/' itself; name a file or directory in it");
  if (ret == 0)
    ret = run (sb, "root", script, args, NULL, 0, -1, &g, &code, err);
  if (ret == 0 && code != 0)
    ret = op_error (code, path, &g, "archive", err);
  return ret;
}

int
rt_guest_tar_in (rt_sandbox *sb, const char *path, bool gzip, int fd, rt_error **err)
{
  static const char script[]
      = FAIL_FN "mkdir -p -- \"$1\" 2>/dev/null || fail \"$1\"; [ -w \"$1\" ] || exit 72; "
                "if [ \"$2\" = 1 ]; then exec tar -xzf - -C \"$1\" --no-same-owner; fi; "
                "exec tar -xf - -C \"$1\" --no-same-owner";
  const char *args[] = { path, gzip ? "1" : "0", NULL };
  struct run g = { 0 };
  char text[sizeof (g.err) * 6];
  int code = 0, ret = rt_check_guest_path (path, err);

  if (ret == 0)
    ret = run (sb, "runtime", script, args, NULL, 0, fd, &g, &code, err);
  if (ret == 0 && code >= EXIT_IS_DIR && code <= EXIT_DENIED)
    return op_error (code, path, &g, "unpack into", err);
  if (ret == 0 && code != 0)
    {
      rt_unpack_escape (text, sizeof (text), g.err, g.err_len);
      ret = rt_error_set (err, EINVAL, "invalid_request", "the archive could not be unpacked in %s: %s", path,
                          *text ? text : "tar failed");
    }
  return ret;
}
