/* test-remote.c - client mode (libruntime/remote/) against a scripted
   stand-in server on 127.0.0.1 (remote-stub.py, its path in argv[1]):
   the URL and key rules, headers, idempotency keys kept across retries,
   Retry-After, the error object, pages, an exec stream cut midway and
   resumed by cursor with no byte lost or repeated, a process's stdin
   written with offsets, and a session whose server stopped answering
   freed within the bound.  */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "public/driver.h"
#include "common/sys.h"
#include "remote/http.h"
#include "remote/exec.h"
#include "remote/stdin.h"
#include "tap.h"

static char url[64];
static FILE *stub_in;

/* Starts the stub; its port comes on its stdout.  */
static pid_t
start_stub (const char *script)
{
  int to[2], from[2];
  char port[16] = "";
  pid_t pid;
  FILE *f;

  if (pipe (to) < 0 || pipe (from) < 0)
    return -1;
  pid = fork ();
  if (pid == 0)
    {
      dup2 (to[0], 0);
      dup2 (from[1], 1);
      close (to[1]);
      close (from[0]);
      execlp ("python3", "python3", script, (char *) NULL);
      _exit (127);
    }
  close (to[0]);
  close (from[1]);
  stub_in = fdopen (to[1], "w");
  f = fdopen (from[0], "r");
  if (f == NULL || fgets (port, sizeof (port), f) == NULL)
    return -1;
  port[strcspn (port, "\n")] = '\0';
  snprintf (url, sizeof (url), "http://127.0.0.1:%s", port);
  fclose (f);
  return pid;
}

static rt_context *
context (const char *api_url, const char *key)
{
  rt_context *ctx = NULL;

  setenv ("RUNTIME_API_URL", api_url, 1);
  if (key)
    setenv ("RUNTIME_API_KEY", key, 1);
  else
    unsetenv ("RUNTIME_API_KEY");
  if (rt_context_new (&ctx, NULL) < 0)
    return NULL;
  return ctx;
}

static bool
code_is (rt_error *e, const char *code)
{
  bool r = e && strcmp (e->code, code) == 0;
  if (!r)
    printf ("# error: %s: %s\n", e ? e->code : "(none)", e ? e->msg : "");
  return r;
}

static void
test_url_rules (void)
{
  static const char *const good[] = { "http://127.0.0.1:8430", "http://localhost", "http://[::1]:8430/",
                                      "https://api.example.com", "HTTP://LOCALHOST:1", "http://runtime.internal",
                                      NULL };
  static const char *const bad[] = { "http://example.com", "http://127.0.0.1.example.com", "http://10.0.0.1:8430",
                                     "ftp://localhost", "http://localhost@evil.example", NULL };
  rt_context *ctx;
  rt_error *e = NULL;

  for (const char *const *u = good; *u; u++)
    {
      ctx = context (*u, "k");
      ok (ctx && rt_driver_of (ctx) == &rt_remote_driver && rt_remote_check (ctx, NULL) == 0, "%s is accepted", *u);
      rt_context_free (ctx);
    }
  for (const char *const *u = bad; *u; u++)
    {
      ctx = context (*u, "k");
      e = NULL;
      ok (ctx && rt_remote_check (ctx, &e) < 0 && code_is (e, "invalid_request"), "%s is refused", *u);
      rt_error_free (e);
      rt_context_free (ctx);
    }
  ctx = context ("http://127.0.0.1:1", NULL);
  e = NULL;
  ok (rt_sandbox_get_json (ctx, "x", &(char *){ NULL }, &e) < 0 && code_is (e, "unauthorized") && e->hint
          && strstr (e->hint, "RUNTIME_API_KEY"),
      "a URL without a key fails at the first call: unauthorized, with a hint");
  rt_error_free (e);
  rt_context_free (ctx);
}

/* The requests the stub saw since the last look.  */
static json_object *
seen (rt_context *ctx)
{
  json_object *o = NULL;
  rt_remote_json (ctx, "GET", "/seen", NULL, NULL, &o, NULL);
  return o;
}

static void
test_calls (rt_context *ctx)
{
  cleanup_json json_object *s = NULL;
  char *json = NULL;
  rt_error *e = NULL;
  rt_sandbox *sb = NULL;
  uint64_t t0;

  json_object_put (seen (ctx));
  ok (rt_sandbox_get_json (ctx, "sb-000000000001", &json, NULL) == 0 && strstr (json, "\"name\":\"a/b\""),
      "get: the server's object, slashes as the library prints them: %s", json ? json : "");
  free (json);
  s = seen (ctx);
  {
    json_object *r = json_object_array_get_idx (s, 0);
    ok (r && strcmp (rt_json_str (r, "auth"), "Bearer tok-good") == 0, "Bearer auth");
    ok (r && strncmp (rt_json_str (r, "client"), "runtime-cli/", 12) == 0, "X-Runtime-Client: runtime-cli/…");
    ok (r && rt_json_str (r, "key") == NULL, "no Idempotency-Key on a GET");
  }
  ok (rt_sandbox_get_json (ctx, "missing", &json, &e) < 0 && code_is (e, "not_found")
          && strcmp (e->msg, "no sandbox missing") == 0 && e->hint && strcmp (e->hint, "runtime sandbox ls") == 0,
      "an error object becomes the error: code, message, hint");
  rt_error_free (e);
  e = NULL;
  json_object_put (seen (ctx));
  t0 = rt_now_ms ();
  ok (rt_sandbox_get_json (ctx, "broken", &json, &e) < 0 && code_is (e, "internal"),
      "a 502 without JSON, retried to the end, is an internal error");
  rt_error_free (e);
  e = NULL;
  json_object_put (s);
  s = seen (ctx);
  ok (json_object_array_length (s) == 1 + RT_REMOTE_RETRIES, "… asked %d times (%zu)", 1 + RT_REMOTE_RETRIES,
      json_object_array_length (s));
  ok (rt_now_ms () - t0 >= 3000, "… with backoff between the tries");
  t0 = rt_now_ms ();
  ok (rt_sandbox_get_json (ctx, "limited", &json, NULL) == 0, "a 429 is retried");
  free (json);
  ok (rt_now_ms () - t0 >= 1000, "… after its Retry-After");
  json_object_put (s);
  s = seen (ctx);
  ok (strcmp (rt_http_reason (429), "Too Many Requests") == 0 && strcmp (rt_http_reason (401), "Unauthorized") == 0
          && strcmp (rt_http_reason (418), "Client Error") == 0,
      "the server's reason phrases: 429 Too Many Requests, 401 Unauthorized, else the status's class");
  t0 = rt_now_ms ();
  ok (rt_sandbox_get_json (ctx, "overquota", &json, &e) < 0 && code_is (e, "quota_exceeded") && e->hint,
      "a 429 quota_exceeded is the error, with its hint");
  ok (rt_now_ms () - t0 < 1000, "… answered at once, not after its Retry-After");
  rt_error_free (e);
  e = NULL;
  json_object_put (s);
  s = seen (ctx);
  ok (json_object_array_length (s) == 1, "… asked once (%zu)", json_object_array_length (s));
  json_object_put (s);
  s = seen (ctx);

  ok (rt_sandbox_open (ctx, "sb-000000000001", &sb, NULL) == 0 && strcmp (rt_sandbox_id (sb), "sb-000000000001") == 0,
      "open gives a handle with the server's id");
  ok (rt_sandbox_stop (sb, NULL) == 0, "a stop answered 503 twice succeeds on its third try");
  json_object_put (s);
  s = seen (ctx);
  {
    const char *k1 = rt_json_str (json_object_array_get_idx (s, 1), "key");
    const char *k3 = rt_json_str (json_object_array_get_idx (s, 3), "key");
    ok (json_object_array_length (s) == 4 && k1 && strlen (k1) == 36 && k1[14] == '4' && k3 && strcmp (k1, k3) == 0,
        "… one uuid v4 Idempotency-Key on all three tries (%s)", k1 ? k1 : "none");
    ok (rt_json_str (json_object_array_get_idx (s, 1), "prefer") == NULL,
        "… without Prefer: wait, so that the server answers once the stop is done");
  }
  rt_sandbox_close (sb);
  e = NULL;
  ok (rt_sandbox_open (ctx, "gone", &sb, &e) < 0 && code_is (e, "sandbox_stopped"),
      "opening a stopped sandbox is sandbox_stopped, as locally");
  rt_error_free (e);
  ok (rt_sandbox_list_json (ctx, true, &json, NULL) == 0 && strcmp (json, "[{\"id\":\"sb-a\"},{\"id\":\"sb-b\"}]") == 0,
      "list follows nextCursor (escaped) and joins the pages: %s", json ? json : "");
  free (json);
}

struct out
{
  char buf[256];
  size_t len;
  int streams[8];
  int n;
};

static int
on_out (void *data, int stream, const char *buf, size_t len)
{
  struct out *o = data;
  if (o->len + len < sizeof (o->buf))
    {
      memcpy (o->buf + o->len, buf, len);
      o->len += len;
    }
  if (o->n < 8)
    o->streams[o->n++] = stream;
  return 0;
}

static void
test_exec (rt_context *ctx)
{
  static const char *const argv[] = { "echo", "hi", NULL };
  struct out o = { 0 };
  rt_exec_opts opts = { .cancel_fd = -1, .on_output = on_out, .data = &o, .env = (const char *const[]){ "A=1", NULL } };
  rt_exec_result res = { 0 };
  rt_sandbox *sb = NULL;
  cleanup_json json_object *s = NULL;
  char *json = NULL;
  rt_error *e = NULL;

  rt_sandbox_open (ctx, "sb-000000000001", &sb, NULL);
  json_object_put (seen (ctx));
  ok (sb && rt_sandbox_exec (sb, argv, &opts, &res, &e) == 0, "an exec whose stream is cut midway ends");
  if (e)
    printf ("# %s: %s\n", e->code, e->msg);
  ok (o.len == 15 && memcmp (o.buf, "hello world\nerr", 15) == 0, "… every byte once, in order (%zu bytes)", o.len);
  ok (o.n == 3 && o.streams[0] == 1 && o.streams[1] == 1 && o.streams[2] == 2, "… on its own stream");
  ok (res.exit_code == 3 && !res.timed_out && res.duration_ms == 5, "… with the exit event's result");
  s = seen (ctx);
  ok (json_object_array_length (s) == 3
          && strcmp (rt_json_str (json_object_array_get_idx (s, 1), "path"),
                     "/v1/sandboxes/sb-000000000001/processes/7/output?cursor=6&follow=true")
                 == 0
          && strcmp (rt_json_str (json_object_array_get_idx (s, 2), "path"),
                     "/v1/sandboxes/sb-000000000001/processes/7/output?cursor=12&follow=true")
                 == 0,
      "… resumed from the bytes seen, then from the continue event's cursor");
  {
    cleanup_json json_object *body = json_tokener_parse (rt_json_str (json_object_array_get_idx (s, 0), "body"));
    json_object *env = NULL;
    ok (body && json_object_object_get_ex (body, "env", &env) && strcmp (rt_json_str (env, "A"), "1") == 0
            && json_object_get_boolean (json_object_object_get_ex (body, "stream", &env) ? env : NULL),
        "… the request: env as an object, stream: true");
  }
  {
    rt_exec_opts in = { .cancel_fd = -1, .stdin_data = "x", .stdin_len = 1 };
    uint32_t pid = 0;
    json_object *r;
    json_object_put (s);
    ok (rt_sandbox_spawn (sb, argv, &in, &pid, NULL) == 0 && pid == 7,
        "spawn with stdin: the process a streamed exec started, its stream left after the start");
    s = seen (ctx);
    r = json_object_array_get_idx (s, 0);
    ok (json_object_array_length (s) == 1 && strcmp (rt_json_str (r, "path"), "/v1/sandboxes/sb-000000000001:exec") == 0
            && strstr (rt_json_str (r, "body"), "\"stdinBase64\":\"eA==\""),
        "… sent as :exec with stdinBase64 (POST …/processes takes no stdin)");
    json_object_put (s);
    ok (rt_sandbox_kill (sb, 7, SIGKILL, NULL) == 0 && rt_sandbox_kill (sb, 7, SIGSEGV, NULL) == 0,
        "kill: a signal the server names, and one it does not");
    s = seen (ctx);
    ok (json_object_array_length (s) == 2 && strcmp (rt_json_str (json_object_array_get_idx (s, 0), "body"), "{\"signal\":\"SIGKILL\"}") == 0
            && strcmp (rt_json_str (json_object_array_get_idx (s, 1), "body"), "{\"signal\":11}") == 0,
        "… sent as SIGKILL and as the number 11");
  }
  ok (rt_sandbox_ps_json (sb, &json, NULL) == 0
          && strcmp (json, "[{\"process\":3,\"state\":\"exited\",\"exitCode\":137,\"command\":\"sleep 9\","
                           "\"droppedBytes\":5}]")
                 == 0,
      "ps: ProcessInfo in the local shape: %s", json ? json : "");
  free (json);
  ok (rt_sandbox_files_json (sb, "/w", 1, &json, NULL) == 0
          && strcmp (json, "[{\"type\":\"-\",\"size\":3,\"path\":\"/w/a\"},{\"type\":\"d\",\"size\":4096,\"path\":\"/w/b\"},"
                           "{\"type\":\"l\",\"size\":1,\"path\":\"/w/l\"}]")
                 == 0,
      "files: FileEntry in the local shape, sorted: %s", json ? json : "");
  free (json);
  {
    rt_exec_opts kept = { .cancel_fd = -1, .keep_stdin = true }, pty = { .cancel_fd = -1, .pty_cols = 80, .pty_rows = 24 };
    rt_error *e1 = NULL, *e2 = NULL;
    json_object_put (s);
    s = seen (ctx);
    json_object_put (s);
    ok (rt_sandbox_exec (sb, argv, &kept, &res, &e1) < 0 && code_is (e1, "usage") && strstr (e1->msg, "keep_stdin"),
        "exec with keep_stdin: a usage error naming it (spawn's)");
    ok (rt_sandbox_exec (sb, argv, &pty, &res, &e2) < 0 && code_is (e2, "usage") && strstr (e2->msg, "pty"),
        "exec with a pty: a usage error naming it (spawn's and attach's)");
    s = seen (ctx);
    ok (json_object_array_length (s) == 0, "… nothing sent");
    rt_error_free (e1);
    rt_error_free (e2);
  }
  rt_sandbox_close (sb);
}

static bool
file_is (const char *path, const char *want)
{
  char buf[64] = "";
  FILE *f = fopen (path, "r");
  size_t n = f ? fread (buf, 1, sizeof (buf) - 1, f) : 0;

  if (f)
    fclose (f);
  buf[n] = '\0';
  return f && strcmp (buf, want) == 0;
}

static void
test_copy_out (rt_sandbox *sb, const char *dir)
{
  struct out o = { 0 };
  rt_exec_opts opts = { .cancel_fd = -1, .on_output = on_out, .data = &o };
  rt_copy_result res = { 0 };
  rt_error *e = NULL;
  char path[PATH_MAX];
  struct stat st;

  ok (rt_sandbox_cat (sb, "/w/a", &opts, NULL) == 0 && o.len == 5 && memcmp (o.buf, "abc\0\377", 5) == 0,
      "cat: the file's bytes as they are");
  ok (rt_sandbox_cat (sb, "/w/nope", &opts, &e) < 0 && code_is (e, "file_not_found"), "cat: file_not_found");
  rt_error_free (e);
  e = NULL;
  ok (rt_sandbox_cat (sb, "w/a", &opts, &e) < 0 && code_is (e, "usage"), "cat: a relative path is a usage error");
  rt_error_free (e);
  e = NULL;
  ok (rt_sandbox_copy_out (sb, "/w/dir", dir, NULL, &res, &e) == 0, "cp out: the server's tar lands");
  snprintf (path, sizeof (path), "%s/dir/a.txt", dir);
  ok (file_is (path, "A\n") && stat (path, &st) == 0 && (st.st_mode & 07000) == 0,
      "… through the guarded extractor: the file, without its setuid bit");
  snprintf (path, sizeof (path), "%s/dir/evil", dir);
  ok (lstat (path, &st) < 0 && res.links == 1 && res.skipped == 1, "… and not the symlink out of the copy");
  ok (rt_sandbox_copy_out (sb, "/w/missing", dir, NULL, &res, &e) < 0 && code_is (e, "file_not_found"),
      "cp out of a missing file: file_not_found");
  rt_error_free (e);
  snprintf (path, sizeof (path), "%s/missing", dir);
  ok (lstat (path, &st) < 0, "… and nothing written");
}

static void
test_copy_in (rt_context *ctx, rt_sandbox *sb, const char *dir)
{
  cleanup_json json_object *s = NULL;
  char small[PATH_MAX], big[PATH_MAX], tree[PATH_MAX];
  FILE *f;

  snprintf (small, sizeof (small), "%s/small.txt", dir);
  snprintf (big, sizeof (big), "%s/big.bin", dir);
  snprintf (tree, sizeof (tree), "%s/d", dir);
  f = fopen (small, "w");
  fputs ("small\n", f);
  fclose (f);
  chmod (small, 0640);
  f = fopen (big, "w");
  for (int i = 0; i < 2600 * 1024; i++)
    fputc (i * 7 % 251, f);
  fclose (f);
  mkdir (tree, 0755);
  strcat (tree, "/f");
  fclose (fopen (tree, "w"));
  tree[strlen (tree) - 2] = '\0';

  json_object_put (seen (ctx));
  ok (rt_sandbox_copy_in (sb, small, "/w", NULL, NULL) == 0, "cp in: a small file");
  s = seen (ctx);
  {
    json_object *put = json_object_array_get_idx (s, 1);
    ok (put && strcmp (rt_json_str (put, "path"), "/v1/sandboxes/sb-000000000001/files/content?path=%2Fw%2Fsmall.txt&mode=640")
                   == 0
            && strcmp (rt_json_str (put, "body"), "small\n") == 0,
        "… one PUT into the directory by its name, with its mode: %s", put ? rt_json_str (put, "path") : "");
  }
  json_object_put (s);
  ok (rt_sandbox_copy_in (sb, big, "/w/big", NULL, NULL) == 0, "cp in: a 2.6 MiB file in a checked upload");
  s = seen (ctx);
  {
    int chunks = 0;
    for (size_t i = 0; i < json_object_array_length (s); i++)
      chunks += strncmp (rt_json_str (json_object_array_get_idx (s, i), "path"),
                         "/v1/sandboxes/sb-000000000001/uploads/u1?offset=", 48)
                == 0;
    ok (chunks == 3, "… in 3 chunks of the server's size, committed (size and SHA-256 matched)");
  }
  json_object_put (s);
  ok (rt_sandbox_copy_in (sb, tree, "/w", NULL, NULL) == 0, "cp in: a directory");
  s = seen (ctx);
  {
    json_object *put = json_object_array_get_idx (s, 1), *names = NULL;
    ok (put && strcmp (rt_json_str (put, "path"), "/v1/sandboxes/sb-000000000001/files/archive?path=%2Fw") == 0
            && json_object_object_get_ex (put, "names", &names)
            && strcmp (json_object_to_json_string_ext (names, JSON_C_TO_STRING_PLAIN), "[\"d\",\"d\\/f\"]") == 0,
        "… as a tar named from the directory's name, PUT into its parent: %s",
        names ? json_object_to_json_string (names) : "");
  }
}

static void
test_files (rt_context *ctx)
{
  char dir[] = "/tmp/test-remote.XXXXXX";
  rt_sandbox *sb = NULL;

  if (mkdtemp (dir) == NULL || rt_sandbox_open (ctx, "sb-000000000001", &sb, NULL) < 0)
    {
      ok (0, "a temp dir and a handle");
      return;
    }
  test_copy_out (sb, dir);
  test_copy_in (ctx, sb, dir);
  rt_sandbox_close (sb);
  rt_rm_rf (dir, NULL);
}

static void
test_image_build (rt_context *ctx)
{
  char dir[] = "/tmp/test-remote.XXXXXX", log[PATH_MAX], spec[PATH_MAX + 16], text[256] = "";
  const char *files[] = { spec, NULL }, *pip[] = { "requests", NULL };
  rt_build_opts o = { .pip = pip, .files = files, .name = "web" };
  cleanup_json json_object *s = NULL;
  char *id = NULL;
  FILE *f;

  if (mkdtemp (dir) == NULL)
    return;
  snprintf (log, sizeof (log), "%s/log", dir);
  snprintf (spec, sizeof (spec), "%s/app.py:/opt/app.py", dir);
  *strrchr (spec, ':') = '\0';
  f = fopen (spec, "w");
  fputs ("print('hi')\n", f);
  fclose (f);
  spec[strlen (spec)] = ':';
  o.log_fd = open (log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  json_object_put (seen (ctx));
  ok (rt_image_build (ctx, &o, &id, NULL) == 0 && id && strcmp (id, "img-abc") == 0,
      "image build: the image's id from the log's end: %s", id ? id : "");
  close (o.log_fd);
  f = fopen (log, "r");
  if (f)
    {
      text[fread (text, 1, sizeof (text) - 1, f)] = '\0';
      fclose (f);
    }
  ok (strcmp (text, "step 1\nstep 2\n") == 0, "… its log followed across a cut, each line once");
  s = seen (ctx);
  {
    json_object *r = NULL;
    json_object_object_get_ex (json_object_array_get_idx (s, 0), "recipe", &r);
    ok (r && strcmp (json_object_to_json_string_ext (r, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
                     "{\"files\":{\"/opt/app.py\":\"print('hi')\\n\"},\"apt\":[],\"pip\":[\"requests\"],\"npm\":[],"
                     "\"commands\":[],\"env\":{}}")
                  == 0,
        "… the recipe, its file inline: %s", r ? json_object_to_json_string (r) : "");
  }
  free (id);
  rt_rm_rf (dir, NULL);
}

static void
test_unsupported (rt_context *ctx)
{
  rt_error *e = NULL;
  char *path = NULL;

  ok (rt_sandbox_egress_log (ctx, "x", &path, &e) < 0 && code_is (e, "unsupported_remote") && e->hint
          && strstr (e->hint, "unset RUNTIME_API_URL"),
      "the egress log refuses: unsupported_remote, with the hint");
  rt_error_free (e);
  e = NULL;
  ok (rt_image_export (ctx, "x", "/nonexistent", &e) < 0 && code_is (e, "unsupported_remote"), "image export refuses");
  rt_error_free (e);
  e = NULL;
  ok (rt_pool_list_json (ctx, &path, &e) < 0 && code_is (e, "unsupported_remote"), "pools refuse");
  rt_error_free (e);
}

/* The string of @s's request @i's @key.  */
static const char *
seen_str (json_object *s, size_t i, const char *key)
{
  const char *v = rt_json_str (json_object_array_get_idx (s, i), key);
  return v ? v : "";
}

static void
test_stdin (rt_context *ctx)
{
  static const char *const argv[] = { "cat", NULL };
  rt_exec_opts in = { .cancel_fd = -1, .stdin_data = "hello world", .stdin_len = 11, .keep_stdin = true };
  cleanup_json json_object *s = NULL;
  rt_sandbox *sb = NULL;
  uint64_t at = 0;
  uint32_t pid = 0;
  rt_error *e = NULL;

  rt_sandbox_open (ctx, "sb-000000000001", &sb, NULL);
  json_object_put (seen (ctx));
  ok (sb && rt_sandbox_spawn (sb, argv, &in, &pid, NULL) == 0 && pid == 9,
      "spawn keeping stdin: POST …/processes names the process");
  s = seen (ctx);
  ok (json_object_array_length (s) == 4 && strstr (seen_str (s, 0, "body"), "\"stdinMode\":\"pipe\"")
          && !strstr (seen_str (s, 0, "body"), "keepStdin") && !strstr (seen_str (s, 0, "body"), "stdinBase64"),
      "… with stdinMode pipe, no keepStdin, no stdinBase64");
  ok (strcmp (seen_str (s, 1, "path"), "/v1/sandboxes/sb-000000000001/processes/9:write") == 0
          && strstr (seen_str (s, 1, "body"), "\"offset\":0") && strstr (seen_str (s, 2, "body"), "\"offset\":4")
          && strstr (seen_str (s, 3, "body"), "\"offset\":8"),
      "… then its stdin written from where the server stopped taking it: 0, 4, 8");
  json_object_put (steal_pointer (&s));
  ok (rt_sandbox_write (sb, 9, "abcdef", 6, 11, true, &at, NULL) == 0 && at == 15,
      "write: the accepted end, short of the bytes sent");
  s = seen (ctx);
  ok (json_object_array_length (s) == 1 && strstr (seen_str (s, 0, "body"), "\"base64\":\"YWJjZGVm\"")
          && strstr (seen_str (s, 0, "body"), "\"offset\":11") && strstr (seen_str (s, 0, "body"), "\"eof\":true"),
      "… sent as base64 at its offset, with eof");
  ok (rt_sandbox_write (sb, 9, "abcdef", 6, 11, false, &at, NULL) == 0 && at == 17,
      "a retry at an old offset: only the new bytes taken");
  ok (rt_sandbox_write (sb, 9, "x", 1, 40, false, &at, &e) < 0 && code_is (e, "invalid_offset"),
      "an offset past the end: invalid_offset");
  rt_error_free (e);
  e = NULL;
  ok (rt_sandbox_write (sb, 9, NULL, RT_MAX_STDIN + 1, 0, false, &at, &e) < 0 && code_is (e, "usage"),
      "over 1 MiB a write: usage");
  rt_error_free (e);
  e = NULL;
  json_object_put (steal_pointer (&s));
  json_object_put (seen (ctx));
  ok (rt_sandbox_resize (sb, 9, 100, 30, NULL) == 0, "resize");
  ok (rt_sandbox_resize (sb, 9, 0, 30, &e) < 0 && code_is (e, "usage"), "… of 0 columns: usage");
  rt_error_free (e);
  s = seen (ctx);
  ok (json_object_array_length (s) == 1 && strcmp (seen_str (s, 0, "path"), "/v1/sandboxes/sb-000000000001/processes/9:resize") == 0
          && strcmp (seen_str (s, 0, "body"), "{\"cols\":100,\"rows\":30}") == 0,
      "… sent as :resize {cols, rows}, the bad one not sent");
  rt_sandbox_close (sb);
}

/* The threads of this process.  */
static int
threads (void)
{
  DIR *d = opendir ("/proc/self/task");
  struct dirent *e;
  int n = 0;

  while (d && (e = readdir (d)))
    n += e->d_name[0] != '.';
  if (d)
    closedir (d);
  return n;
}

/* Whether the stub got a request whose path ends with @suffix, within 3 s
   (what it saw is taken).  */
static bool
got (rt_context *ctx, const char *suffix)
{
  for (int i = 0; i < 60; i++)
    {
      cleanup_json json_object *s = seen (ctx);
      for (size_t j = 0; j < json_object_array_length (s); j++)
        {
          const char *p = seen_str (s, j, "path");
          size_t n = strlen (p), m = strlen (suffix);
          if (n >= m && strcmp (p + n - m, suffix) == 0)
            return true;
        }
      usleep (50 * 1000);
    }
  return false;
}

/* How many of the requests the stub saw since the last look were
   :signal calls, and whether all were SIGKILL.  */
static size_t
kills_seen (rt_context *ctx, bool *all_kill)
{
  cleanup_json json_object *s = seen (ctx);
  size_t n = 0;

  *all_kill = true;
  for (size_t i = 0; i < json_object_array_length (s); i++)
    if (strstr (seen_str (s, i, "path"), ":signal"))
      {
        n++;
        *all_kill = *all_kill && strcmp (seen_str (s, i, "body"), "{\"signal\":\"SIGKILL\"}") == 0;
      }
  return n;
}

/* A session of @argv with a :write the server holds, then @sig (0:
   none) asked for, freed: how long that took (ms), or -1 when it did not
   start; *sig_ms: how long the signal took to ask.  */
static long
held_write_freed (rt_context *ctx, rt_sandbox *sb, const char *const *argv, const char *write_path, int sig,
                  long *sig_ms)
{
  rt_exec_opts opts = { .cancel_fd = -1 };
  rt_session *s = NULL;
  uint64_t t0;

  if (rt_sandbox_attach (sb, argv, &opts, &s, NULL) < 0)
    return -1;
  if (rt_session_write (s, "x", 1, NULL) < 0 || !got (ctx, write_path))
    {
      rt_session_free (s);
      return -1;
    }
  t0 = rt_now_ms ();
  if (sig && rt_session_signal (s, sig, NULL) < 0)
    {
      rt_session_free (s);
      return -1;
    }
  if (sig_ms)
    *sig_ms = (long) (rt_now_ms () - t0);
  t0 = rt_now_ms ();
  rt_session_free (s);
  return (long) (rt_now_ms () - t0);
}

static void
test_hang (rt_context *ctx)
{
  static const char *const hang_all[] = { "hang-all", NULL }, *const hang_write[] = { "hang-write", NULL };
  rt_sandbox *sb = NULL;
  rt_error *e = NULL;
  int before = threads (), p[2], saved;
  uint64_t t0;
  long ms, sig_ms = -1;
  bool all_kill;

  rt_sandbox_open (ctx, "sb-000000000001", &sb, NULL);
  json_object_put (seen (ctx));
  t0 = rt_now_ms ();
  ok (sb && rt_remote_sandbox_resize (sb, 5, 80, 24, &(struct rt_remote_bound){ 400, -1 }, &e) < 0
          && code_is (e, "unavailable") && strstr (e->msg, "within"),
      "a bounded call the server holds: unavailable, did not answer within …");
  ok (rt_now_ms () - t0 < 1500, "… when its time is up, retries included (%llu ms)",
      (unsigned long long) (rt_now_ms () - t0));
  rt_error_free (steal_pointer (&e));
  if (pipe (p) == 0)
    {
      t0 = rt_now_ms ();
      ok (write (p[1], "x", 1) == 1
              && rt_remote_sandbox_kill (sb, 5, SIGKILL, &(struct rt_remote_bound){ 60000, p[0] }, &e) < 0
              && code_is (e, "interrupted") && rt_now_ms () - t0 < 1500,
          "a call whose abort fd is readable: interrupted at once");
      rt_error_free (steal_pointer (&e));
      close (p[0]);
      close (p[1]);
    }

  {
    rt_exec_opts opts = { .cancel_fd = -1 };
    rt_session *s = NULL;
    ok (rt_sandbox_attach (sb, hang_write, &opts, &s, NULL) == 0 && rt_session_signal (s, SIGTERM, NULL) == 0
            && got (ctx, "/processes/6:signal"),
        "a session's signal: sent as :signal by its input thread");
    rt_session_free (s);
  }
  ms = held_write_freed (ctx, sb, hang_write, "/processes/6:write", 0, NULL);
  ok (ms >= 0 && ms < 2000, "a session whose :write the server holds: freed at once (%ld ms)", ms);
  ok (threads () == before, "… no thread left (%d, %d before)", threads (), before);

  /* pipe2 gives the session's abort pipe fd 0: it is watched all the same. */
  saved = dup (0);
  close (0);
  ms = held_write_freed (ctx, sb, hang_write, "/processes/6:write", 0, NULL);
  dup2 (saved, 0);
  close (saved);
  ok (ms >= 0 && ms < 2000, "… with stdin closed (the abort pipe on fd 0) too (%ld ms)", ms);

  ms = held_write_freed (ctx, sb, hang_all, "/processes/5:write", SIGTERM, &sig_ms);
  ok (ms >= 0 && sig_ms < 200, "a session whose server answers nothing: a signal asked for at once (%ld ms)", sig_ms);
  ok (ms < RT_REMOTE_CALL_TIMEOUT_MS + 2000, "… freed within the bound, not even its kill answered (%ld ms)", ms);
  ok (kills_seen (ctx, &all_kill) == 1 && all_kill,
      "… after trying the kill (the SIGTERM behind the held :write dropped)");
  ok (threads () == before, "… no thread left (%d, %d before)", threads (), before);

  ms = held_write_freed (ctx, sb, hang_write, "/processes/6:write", SIGKILL, &sig_ms);
  ok (ms >= 0 && ms < 2000 && kills_seen (ctx, &all_kill) == 1 && all_kill,
      "a SIGKILL asked for behind a held :write: freed at once (%ld ms), the kill sent once, by free", ms);
  rt_sandbox_close (sb);
}

int
main (int argc, char **argv)
{
  pid_t pid;
  rt_context *ctx;
  rt_error *e = NULL;
  char *json = NULL;

  signal (SIGPIPE, SIG_IGN);
  test_url_rules ();
  if (argc < 2 || (pid = start_stub (argv[1])) < 0)
    {
      ok (0, "the stub server starts");
      return tap_done ();
    }
  ctx = context (url, "tok-wrong");
  ok (rt_sandbox_get_json (ctx, "sb-000000000001", &json, &e) < 0 && code_is (e, "unauthorized"),
      "a wrong key: unauthorized");
  rt_error_free (e);
  rt_context_free (ctx);
  ctx = context (url, "tok-good");
  test_calls (ctx);
  test_exec (ctx);
  test_stdin (ctx);
  test_hang (ctx);
  test_files (ctx);
  test_image_build (ctx);
  test_unsupported (ctx);
  rt_context_free (ctx);
  fclose (stub_in);
  waitpid (pid, NULL, 0);
  return tap_done ();
}
