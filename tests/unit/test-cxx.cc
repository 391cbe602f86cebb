// test-cxx.cc - a C++ program that links every function the public
// headers declare (include/runtime.h and its parts, include/runtime/*.h),
// so each has C linkage and is exported, and calls those that need no VM.
// With --list it prints the table's names, one a line, for
// check-public-api.py to compare with the headers: a new public function
// must be added here.
#include <runtime.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <filesystem>
#include <string>

namespace
{

struct entry
{
  const char *name;
  void (*addr) (void);
};

#define FN(f) { #f, reinterpret_cast<void (*) (void)> (&f) }

// Every public function, in the order <runtime.h> includes its parts
// and each part declares them.
const entry table[] = {
  // runtime/base.h
  FN (rt_error_free),
  FN (rt_version),
  FN (rt_env_name_valid),
  FN (rt_text_escape),
  FN (rt_context_new),
  FN (rt_context_free),
  FN (rt_context_set_progress),
  FN (rt_context_accel),
  FN (rt_context_can_manage),
  FN (rt_context_set_tenant),
  // runtime/sandbox.h
  FN (rt_sandbox_create),
  FN (rt_sandbox_set_network),
  FN (rt_sandbox_egress_log),
  FN (rt_sandbox_open),
  FN (rt_sandbox_close),
  FN (rt_sandbox_id),
  FN (rt_sandbox_stop),
  FN (rt_sandbox_destroy),
  FN (rt_sandbox_pause),
  FN (rt_sandbox_wake),
  FN (rt_sandbox_snapshot),
  FN (rt_sandbox_fork),
  FN (rt_sandbox_update),
  FN (rt_sandbox_extend),
  FN (rt_sandbox_remove),
  FN (rt_sandbox_get_json),
  FN (rt_sandbox_list_json),
  FN (rt_sandbox_config_check),
  FN (rt_sandbox_state),
  FN (rt_sandbox_state_name),
  FN (rt_sandbox_state_parse),
  FN (rt_sandbox_metrics_json),
  // runtime/exec.h
  FN (rt_sandbox_exec),
  FN (rt_sandbox_spawn),
  FN (rt_sandbox_ps_json),
  FN (rt_sandbox_logs),
  FN (rt_sandbox_kill),
  FN (rt_sandbox_write),
  FN (rt_sandbox_resize),
  FN (rt_sandbox_attach),
  FN (rt_sandbox_connect),
  FN (rt_session_fd),
  FN (rt_session_read),
  FN (rt_session_writable),
  FN (rt_session_write),
  FN (rt_session_close_input),
  FN (rt_session_resize),
  FN (rt_session_signal),
  FN (rt_session_result),
  FN (rt_session_free),
  // runtime/files.h
  FN (rt_sandbox_cat),
  FN (rt_sandbox_files_json),
  FN (rt_sandbox_copy_in),
  FN (rt_sandbox_copy_out),
  // runtime/image.h
  FN (rt_image_build),
  FN (rt_image_list_json),
  FN (rt_image_get_json),
  FN (rt_image_remove),
  FN (rt_image_warm),
  FN (rt_pool_set),
  FN (rt_pool_list_json),
  FN (rt_pool_remove),
  FN (rt_image_export),
  FN (rt_image_import),
  FN (rt_snapshot_list_json),
  FN (rt_snapshot_get_json),
  FN (rt_snapshot_remove),
  // runtime/admin.h
  FN (rt_token_create),
  FN (rt_token_list_json),
  FN (rt_token_remove),
  FN (rt_secret_set),
  FN (rt_secret_set_opts),
  FN (rt_secret_list_json),
  FN (rt_secret_remove),
  FN (rt_usage_json),
  FN (rt_doctor_json),
  FN (rt_sandbox_copy_in_as),
  // runtime/serve.h
  FN (rt_serve),
  FN (rt_node_list_json),
  FN (rt_node),
  // runtime/chat.h
  FN (rt_run_python),
  FN (rt_chat),
};

int n_tests, n_failed;

void
ok (bool cond, const std::string &what)
{
  std::printf ("%sok %d - %s\n", cond ? "" : "not ", ++n_tests, what.c_str ());
  if (!cond)
    n_failed++;
}

// Whether a call failed with @code (and freed its error), or succeeded
// when @code is nullptr.
bool
outcome (int ret, rt_error *&err, const char *code)
{
  bool good = code ? (ret < 0 && err && std::strcmp (err->code, code) == 0) : (ret >= 0 && err == nullptr);
  if (!good && err)
    std::printf ("# %d %s: %s\n", ret, err->code, err->msg);
  rt_error_free (err);
  err = nullptr;
  return good;
}

void
progress (void *data, const char *)
{
  ++*static_cast<int *> (data);
}

// Sandbox records, the accelerator, errors: no VM needed.
void
call_context (rt_context *ctx, rt_error *&err)
{
  const char *accel = nullptr;
  char *json = nullptr, *path = nullptr;
  rt_sandbox *sb = nullptr;
  rt_sandbox_config bad = {};
  int lines = 0;

  ok (rt_version () && *rt_version (), "rt_version");
  ok (rt_env_name_valid ("A_1", 3) && !rt_env_name_valid ("1A", 2), "rt_env_name_valid");
  {
    char *esc = rt_text_escape ("a\x1b]0;x", false);
    ok (esc && std::strcmp (esc, "a\\x1b]0;x") == 0, "rt_text_escape");
    std::free (esc);
  }
  rt_error_free (nullptr);
  rt_context_set_progress (ctx, progress, &lines);
  ok (outcome (rt_context_accel (ctx, &accel, &err), err, nullptr) && std::strcmp (accel, "tcg") == 0,
      "rt_context_accel follows RUNTIME_ACCEL");
  ok (outcome (rt_sandbox_list_json (ctx, true, &json, &err), err, nullptr) && std::strcmp (json, "[]") == 0,
      "rt_sandbox_list_json: none");
  std::free (json);
  ok (outcome (rt_sandbox_get_json (ctx, "sb-none", &json, &err), err, "not_found"), "rt_sandbox_get_json");
  ok (outcome (rt_sandbox_open (ctx, "sb-none", &sb, &err), err, "not_found"), "rt_sandbox_open");
  ok (outcome (rt_sandbox_egress_log (ctx, "sb-none", &path, &err), err, "not_found"), "rt_sandbox_egress_log");
  ok (outcome (rt_sandbox_remove (ctx, "sb-none", &err), err, "not_found"), "rt_sandbox_remove: one that never was");
  bad.vcpu = 99;
  ok (outcome (rt_sandbox_create (ctx, &bad, &sb, &err), err, "invalid_request"), "rt_sandbox_create: 99 vCPUs");
  rt_sandbox_close (nullptr);
  ok (outcome (rt_sandbox_destroy (nullptr, &err), err, nullptr), "rt_sandbox_destroy (NULL)");
  ok (outcome (rt_usage_json (ctx, &json, &err), err, nullptr), "rt_usage_json");
  std::free (json);
  ok (outcome (rt_context_can_manage (ctx, &err), err, geteuid () == 0 ? nullptr : "permission_denied"),
      "rt_context_can_manage");
  ok (outcome (rt_doctor_json (ctx, &json, &err), err, nullptr) && json[0] == '{', "rt_doctor_json");
  std::free (json);
}

// The state enum from C++: the function's name hides the enum's, which
// is named `enum rt_sandbox_state`.
void
call_state ()
{
  enum rt_sandbox_state state = RT_SANDBOX_STARTING;

  ok (std::strcmp (rt_sandbox_state_name (RT_SANDBOX_PAUSED), "paused") == 0, "rt_sandbox_state_name");
  ok (rt_sandbox_state_parse ("stopping", &state) == 0 && state == RT_SANDBOX_STOPPING, "rt_sandbox_state_parse");
  {
    rt_sandbox_config cfg = {};
    const char *field = nullptr;
    rt_error *err = nullptr;
    cfg.memory_mib = 1;
    ok (rt_sandbox_config_check (&cfg, &field, &err) < 0 && field && std::strcmp (field, "memory_mib") == 0,
        "rt_sandbox_config_check");
    rt_error_free (err);
  }
}

void
call_images (rt_context *ctx, const std::string &dir, rt_error *&err)
{
  char *json = nullptr, *id = nullptr;
  rt_build_opts bo = {};

  ok (outcome (rt_image_list_json (ctx, &json, &err), err, nullptr), "rt_image_list_json");
  std::free (json);
  ok (outcome (rt_image_get_json (ctx, "no-such-image", &json, &err), err, "image_not_found"), "rt_image_get_json");
  ok (outcome (rt_image_remove (ctx, "no-such-image", &err), err, "image_not_found"), "rt_image_remove");
  ok (outcome (rt_image_export (ctx, "no-such-image", (dir + "/out.tar").c_str (), &err), err, "image_not_found"),
      "rt_image_export");
  ok (outcome (rt_image_import (ctx, (dir + "/missing.tar").c_str (), &id, &err), err, "file_not_found"),
      "rt_image_import");
  bo.name = "Not A Name";
  bo.log_fd = -1;
  ok (outcome (rt_image_build (ctx, &bo, &id, &err), err, "invalid_request"), "rt_image_build: a bad name");
}

// Lists are passed as `char *const *` arrays of mutable strings: they
// convert to `const char *const *` too.
void
call_secrets_and_llm (rt_context *ctx, rt_error *&err)
{
  static char host[] = "api.example.com", bad_pkg[] = "not a package!";
  char *const hosts[] = { host, nullptr };
  char *const packages[] = { bad_pkg, nullptr };
  char *placeholder = nullptr, *json = nullptr, *result = nullptr;
  rt_chat_opts co = {};

  ok (outcome (rt_secret_set (ctx, "API_KEY", "v", 1, hosts, nullptr, nullptr, &placeholder, &err), err, nullptr),
      "rt_secret_set");
  std::free (placeholder);
  ok (outcome (rt_secret_list_json (ctx, &json, &err), err, nullptr) && std::strstr (json, "API_KEY"),
      "rt_secret_list_json");
  std::free (json);
  ok (outcome (rt_secret_remove (ctx, "API_KEY", &err), err, nullptr), "rt_secret_remove");
  ok (outcome (rt_secret_remove (ctx, "API_KEY", &err), err, "not_found"), "rt_secret_remove: gone");
  // A package name that is not one is answered without a sandbox.
  ok (outcome (rt_run_python (ctx, "print(1)", packages, nullptr, &result, nullptr, &err), err, nullptr)
          && std::strstr (result, "\"error\""),
      "rt_run_python: a bad package name");
  std::free (result);
  co.prompt = "hello";
  co.cancel_fd = -1;
  ok (outcome (rt_chat (ctx, &co, &result, &err), err, "invalid_request"), "rt_chat: no API key");
}

} // namespace

int
main (int argc, char **argv)
{
  char tmpl[] = "/tmp/rt-cxx-XXXXXX";
  rt_context *ctx = nullptr;
  rt_error *err = nullptr;

  if (argc > 1 && std::strcmp (argv[1], "--list") == 0)
    {
      for (const entry &e : table)
        std::printf ("%s\n", e.name);
      return 0;
    }
  for (const entry &e : table)
    ok (e.addr != nullptr, std::string (e.name) + " links");

  if (mkdtemp (tmpl) == nullptr)
    {
      std::printf ("Bail out! mkdtemp: %s\n", std::strerror (errno));
      return 1;
    }
  const std::string dir = tmpl;
  setenv ("RUNTIME_STATE_DIR", (dir + "/state").c_str (), 1);
  setenv ("RUNTIME_DATA_DIR", (dir + "/data").c_str (), 1);
  setenv ("RUNTIME_CACHE_DIR", (dir + "/cache").c_str (), 1);
  setenv ("RUNTIME_ACCEL", "tcg", 1);
  unsetenv ("RUNTIME_KERNEL");
  ok (outcome (rt_context_new (&ctx, &err), err, nullptr), "rt_context_new");
  if (ctx)
    {
      call_context (ctx, err);
      call_state ();
      call_images (ctx, dir, err);
      call_secrets_and_llm (ctx, err);
    }
  rt_context_free (ctx);
  std::filesystem::remove_all (dir);
  std::printf ("1..%d\n", n_tests);
  return n_failed ? 1 : 0;
}
