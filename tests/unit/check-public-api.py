#!/usr/bin/env python3
"""check-public-api.py HEADER LIBRARY [TEST-CXX]: the public boundary, as TAP.

1. Every function HEADER declares has a /** comment right before it that
   names each of its parameters (@name) and, unless it returns void, says
   what it returns ("Return:").
2. The functions TEST-CXX (test-cxx.cc) links are exactly those HEADER
   declares: a new public function needs a caller in the C++ test.
3. LIBRARY exports exactly the header's functions, each versioned
   LIBRUNTIME_0.1 (libruntime.map), and nothing else.
"""
import re
import shutil
import subprocess
import sys

NODE = "LIBRUNTIME_0.1"


def declared(header):
    text = open(header).read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^\s*#[^\n]*", " ", text, flags=re.M)
    # A declaration: a name followed by its parameter list.  A function
    # pointer type, `(*rt_x_fn) (…)`, has ')' before its '('.
    return sorted(set(re.findall(r"\b(rt_\w+)\s*\(", text)))


def undocumented(header):
    """The functions whose comment lacks a parameter or the return."""
    text = open(header).read()
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


def main():
    header, library = sys.argv[1], sys.argv[2]
    cxx = sys.argv[3] if len(sys.argv) > 3 else None
    n, failed = 0, False
    want = declared(header)

    def ok(cond, what, why=""):
        nonlocal n, failed
        n += 1
        print(("ok" if cond else "not ok") + f" {n} - {what}")
        if not cond:
            failed = True
            for line in why.splitlines():
                print("# " + line)

    ok(len(want) > 0, f"{header} declares {len(want)} functions")
    bad, documented = undocumented(header)
    bad += [f"{name}: no /** comment" for name in want if name not in documented]
    ok(not bad, "every function is documented: each parameter, the return", "\n".join(bad))
    if cxx is None:
        n += 1
        print(f"ok {n} - # SKIP no C++ compiler: the C++ link test is not built")
    else:
        listed = subprocess.run([cxx, "--list"], check=True, capture_output=True, text=True).stdout.split()
        ok(sorted(listed) == want, "test-cxx.cc links every function runtime.h declares, and no other",
           f"not in test-cxx.cc: {sorted(set(want) - set(listed))}\n"
           f"not in runtime.h: {sorted(set(listed) - set(want))}")
        ok(len(listed) == len(set(listed)), "test-cxx.cc lists each function once")

    nm = shutil.which("nm")
    if nm is None:
        n += 1
        print(f"ok {n} - # SKIP nm not found (binutils)")
    else:
        out = subprocess.run([nm, "-D", "--defined-only", library], check=True, capture_output=True, text=True).stdout
        exported, unversioned = [], []
        for line in out.splitlines():
            fields = line.split()
            if len(fields) < 3 or fields[2] == NODE:
                continue  # the version node's own symbol
            name, _, version = fields[2].partition("@@")
            exported.append(name)
            if version != NODE:
                unversioned.append(fields[2])
        ok(sorted(exported) == want, "the library exports exactly the header's functions",
           f"exported, not declared: {sorted(set(exported) - set(want))}\n"
           f"declared, not exported: {sorted(set(want) - set(exported))}")
        ok(not unversioned, f"every export is versioned {NODE}", f"{unversioned}")
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
