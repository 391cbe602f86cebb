#!/usr/bin/env python3
"""check-public-api.py INCLUDE-DIR BUILD-ROOT LIBRARY [TEST-CXX]: the public boundary, as TAP.

INCLUDE-DIR is include/: runtime.h, the umbrella callers include, and its
parts, the headers under runtime/.

1. The umbrella includes every other header under INCLUDE-DIR, and each
   header compiles alone and twice over ($CC; $CXX too when set).
2. Each is installed at its own path under the include directory
   (BUILD-ROOT's meson-info).
3. Every function a header declares has a /** comment right before it that
   names each of its parameters (@name) and, unless it returns void, says
   what it returns ("Return:").
4. The functions TEST-CXX (test-cxx.cc) links are exactly those the headers
   declare: a new public function needs a caller in the C++ test.
5. LIBRARY exports exactly the headers' functions and nothing else, each in
   the version node of the release that added it (NODES: a released node
   never changes), each node inheriting the one before (libruntime.map).
"""
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

UMBRELLA = "runtime.h"

# The version nodes in order, each with the functions it added.
NODES = [
    ("LIBRUNTIME_0.1", """
        rt_error_free rt_version rt_context_new rt_context_free rt_context_set_progress rt_context_set_tenant
        rt_token_create rt_token_list_json rt_token_remove rt_context_accel rt_sandbox_create rt_sandbox_id
        rt_sandbox_exec rt_sandbox_destroy rt_sandbox_open rt_sandbox_close rt_sandbox_stop rt_sandbox_pause
        rt_sandbox_snapshot rt_sandbox_fork rt_sandbox_update rt_snapshot_list_json rt_snapshot_get_json
        rt_snapshot_remove rt_sandbox_wake rt_sandbox_extend rt_sandbox_remove rt_sandbox_get_json
        rt_sandbox_list_json rt_sandbox_spawn rt_sandbox_ps_json rt_sandbox_logs rt_sandbox_kill rt_sandbox_write
        rt_sandbox_resize rt_sandbox_attach rt_sandbox_connect rt_session_fd rt_session_read rt_session_writable
        rt_session_write rt_session_close_input rt_session_resize rt_session_signal rt_session_result
        rt_session_free rt_sandbox_cat rt_sandbox_files_json rt_sandbox_copy_in rt_sandbox_copy_out
        rt_sandbox_set_network rt_sandbox_egress_log rt_image_build rt_image_list_json rt_image_get_json
        rt_image_remove rt_image_warm rt_pool_set rt_pool_list_json rt_pool_remove rt_image_export
        rt_image_import rt_usage_json rt_sandbox_metrics_json rt_run_python rt_chat rt_secret_set
        rt_secret_set_opts rt_secret_list_json rt_secret_remove rt_env_name_valid rt_text_escape rt_serve
        rt_node rt_node_list_json
    """.split()),
    ("LIBRUNTIME_0.2", """
        rt_sandbox_config_check rt_sandbox_state rt_sandbox_state_name rt_sandbox_state_parse rt_context_can_manage
        rt_doctor_json rt_sandbox_copy_in_as
    """.split()),
]


def headers(include_dir):
    """Every header under @include_dir, as paths relative to it."""
    found = glob.glob(os.path.join(include_dir, "**", "*.h"), recursive=True)
    return sorted(os.path.relpath(p, include_dir) for p in found)


def uncommented(path):
    text = open(path).read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def declared(path):
    text = re.sub(r"^\s*#[^\n]*", " ", uncommented(path), flags=re.M)
    # A declaration: a name followed by its parameter list.  A function
    # pointer type, `(*rt_x_fn) (…)`, has ')' before its '('.
    return set(re.findall(r"\b(rt_\w+)\s*\(", text))


def undocumented(path):
    """The functions whose comment lacks a parameter or the return."""
    text = open(path).read()
    bad = []
    decl = re.compile(r"/\*\*((?:(?!\*/).)*)\*/\s*([^;{}#]*?\b(rt_\w+)\s*\(([^;]*?)\)\s*;)", re.S)
    for m in decl.finditer(text):
        doc, proto, name, params = m.groups()
        if proto.lstrip().startswith("typedef"):
            continue
        names = [re.findall(r"(\w+)\s*(?:\[\])?$", p.strip())[0] for p in params.split(",")
                 if p.strip() not in ("void", "")]
        missing = [f"@{n}" for n in names if f"@{n}" not in doc]
        if proto.split(name)[0].strip() != "void" and "Return" not in doc:
            missing.append("Return:")
        if missing:
            bad.append(f"{name}: {' '.join(missing)}")
    documented = {m.group(3) for m in decl.finditer(text)}
    return bad, documented


def included(include_dir, header):
    """The headers @header includes with quotes, relative to @include_dir."""
    here = os.path.dirname(os.path.join(include_dir, header))
    names = re.findall(r'^\s*#\s*include\s+"([^"]+)"', open(os.path.join(include_dir, header)).read(), re.M)
    return {os.path.relpath(os.path.normpath(os.path.join(here, n)), include_dir) for n in names}


def compile_errors(compiler, lang, include_dir, header):
    """What @compiler says about a file that includes @header twice; "" when nothing."""
    std = ["-std=c11"] if lang == "c" else []
    src = f'#include "{header}"\n#include "{header}"\n'
    cmd = shlex.split(compiler) + std + ["-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only",
                                         "-I", include_dir, "-x", lang, "-"]
    r = subprocess.run(cmd, input=src, capture_output=True, text=True)
    return "" if r.returncode == 0 else f"{header} ({lang}):\n{r.stderr}"


def installed(build_root):
    """Installed path of each source file, from meson's introspection."""
    path = os.path.join(build_root, "meson-info", "intro-installed.json")
    return {os.path.realpath(src): dst for src, dst in json.load(open(path)).items()}


def exports(library):
    """The functions @library defines, as NAME@@NODE (NAME@NODE: not the
    default; NAME: no version), and the parent of each of its version nodes."""
    syms = subprocess.run(["readelf", "--dyn-syms", "-W", library], check=True, capture_output=True,
                          text=True).stdout
    out = [f[7] for f in (line.split() for line in syms.splitlines())
           if len(f) >= 8 and f[3] == "FUNC" and f[6] != "UND"]
    verdefs = subprocess.run(["readelf", "-V", "-W", library], check=True, capture_output=True, text=True).stdout
    parents, node = {}, None
    for line in verdefs.split("Version needs section")[0].splitlines():
        m = re.search(r"Flags: (\S+).*Name: (\S+)", line)
        if m:
            node = None if m.group(1) == "BASE" else m.group(2)
            if node:
                parents[node] = None
            continue
        m = re.search(r"Parent \d+: (\S+)", line)
        if m and node and parents[node] is None:
            parents[node] = m.group(1)
    return out, parents


def check_exports(ok, library, want):
    """@library exports @want and no other, each at its node of NODES."""
    exported, parents = exports(library)
    names = sorted(sym.split("@")[0] for sym in exported)
    ok(names == want, "the library exports exactly the headers' functions",
       f"exported, not declared: {sorted(set(names) - set(want))}\n"
       f"declared, not exported: {sorted(set(want) - set(names))}")
    for node, added in NODES:
        moved = [sym for sym in exported if sym.split("@")[0] in added and sym != sym.split("@")[0] + "@@" + node]
        ok(not moved, f"the {len(added)} functions {node} added are exported at {node}, the default version",
           " ".join(moved))
    chain = [node for node, _ in NODES]
    want_parents = {node: (chain[i - 1] if i else None) for i, node in enumerate(chain)}
    ok(parents == want_parents, f"the version nodes are {', '.join(chain)}, each inheriting the one before",
       f"found (node: parent): {parents}")


def main():
    include_dir, build_root, library = sys.argv[1:4]
    cxx = sys.argv[4] if len(sys.argv) > 4 else None
    n, failed = 0, False

    def ok(cond, what, why=""):
        nonlocal n, failed
        n += 1
        print(("ok" if cond else "not ok") + f" {n} - {what}")
        if not cond:
            failed = True
            for line in why.splitlines():
                print("# " + line)

    def skip(what):
        nonlocal n
        n += 1
        print(f"ok {n} - # SKIP {what}")

    files = headers(include_dir)
    parts = [h for h in files if h != UMBRELLA]
    ok(UMBRELLA in files and parts, f"{include_dir}: {UMBRELLA} and {len(parts)} parts")
    missing = sorted(set(parts) - included(include_dir, UMBRELLA))
    ok(not missing, f"{UMBRELLA} includes every header under include/", f"not included: {missing}")

    errors = []
    for var, lang in (("CC", "c"), ("CXX", "c++")):
        if os.environ.get(var):
            errors += [e for h in files if (e := compile_errors(os.environ[var], lang, include_dir, h))]
    if os.environ.get("CC"):
        ok(not errors, "each header compiles alone, and included twice", "\n".join(errors))
    else:
        skip("$CC not set: the headers are not compiled alone")

    dests = installed(build_root)
    top = dests.get(os.path.realpath(os.path.join(include_dir, UMBRELLA)))
    wrong = [h for h in files if top is None
             or dests.get(os.path.realpath(os.path.join(include_dir, h))) != os.path.join(os.path.dirname(top), h)]
    ok(not wrong, "every header is installed at its own path under the include directory",
       f"not installed so (libruntime/meson.build's install_headers): {wrong}")

    want, bad, documented = set(), [], set()
    for h in files:
        names = declared(os.path.join(include_dir, h))
        want |= names
        b, d = undocumented(os.path.join(include_dir, h))
        bad += [f"{h}: {x}" for x in b] + [f"{h}: {name}: no /** comment" for name in sorted(names - d)]
    want = sorted(want)
    ok(len(want) > 0, f"the headers declare {len(want)} functions")
    ok(not bad, "every function is documented: each parameter, the return", "\n".join(bad))

    if cxx is None:
        skip("no C++ compiler: the C++ link test is not built")
    else:
        listed = subprocess.run([cxx, "--list"], check=True, capture_output=True, text=True).stdout.split()
        ok(sorted(listed) == want, "test-cxx.cc links every function the headers declare, and no other",
           f"not in test-cxx.cc: {sorted(set(want) - set(listed))}\n"
           f"not in a header: {sorted(set(listed) - set(want))}")
        ok(len(listed) == len(set(listed)), "test-cxx.cc lists each function once")

    node_of = {name: node for node, names in NODES for name in names}
    unknown = sorted(set(want) - set(node_of))
    ok(not unknown, "every declared function has its version node here (NODES)",
       f"add to the newest node of libruntime.map and of NODES: {unknown}")
    if shutil.which("readelf") is None:
        skip("readelf not found (binutils)")
    else:
        check_exports(ok, library, want)
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
