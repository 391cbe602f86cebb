#!/bin/bash
# examples.sh - the examples build and do what their comments say.
. "$(dirname "$0")/libtest.sh"
ex=${RUNTIME_EXAMPLES_DIR:?}
scripts=$(cd "$(dirname "$0")/../../examples" && pwd)

out=$("$ex/run-command" python3 -c 'import sys; print(6*7); sys.exit(4)' 2>"$tmp/err"); rc=$?
is "run-command prints the command's output" "$out" "42"
is "run-command exits with the command's code" "$rc" 4
check "run-command names its sandbox" grep -q "^sandbox sb-[0-9a-f]* is up" "$tmp/err"
check_no_leaks "after run-command"

out=$("$ex/run-python" 'import socket
try:
    socket.create_connection(("pypi.org", 443), timeout=5); print("online")
except OSError:
    print("offline")
print(6*7)' 2>"$tmp/err")
is "run-python: the tool handler's result" \
    "$(echo "$out" | json_get '(o["exit_code"], o["timed_out"], o["stdout"])')" "(0, False, 'offline\n42\n')"
is "run-python: a bad package name is refused without a sandbox" \
    "$("$ex/run-python" 'print(1)' 'x; rm -rf /' | json_get 'sorted(o)')" "['error']"

mkdir -p "$tmp/proj" "$tmp/out"
cat >"$tmp/proj/test_math.py" <<'PY'
import unittest
class T(unittest.TestCase):
    def test_add(self): self.assertEqual(1 + 1, 2)
    def test_mul(self): self.assertEqual(6 * 7, 42)
PY
printf 'python3 -m unittest -v 2>report.txt\n' >"$tmp/proj/run-tests.sh"
"$ex/test-project" "$tmp/proj" "$tmp/out" >/dev/null 2>"$tmp/err"; rc=$?
is "test-project: the tests pass" "$rc" 0
check "test-project: the report came out" grep -q "^Ran 2 tests" "$tmp/out/report.txt"

out=$(sh "$scripts/scripted.sh" "$tmp" 2>"$tmp/err")
is "scripted.sh: create, cp, exec, cp out, stop" "$out" "$(printf 'exit 0\nresult: 5050')"
out=$(sh "$scripts/fanout.sh" 3 2>"$tmp/err")
is "fanout.sh: three sandboxes, results in order" "$out" "$(printf '1: 1\n2: 4\n3: 9')"
a=$(runtime sandbox create --label team=blue --timeout 300)
b=$(runtime sandbox create --label team=blue --timeout 300)
c=$(runtime sandbox create --label team=red --timeout 300)
out=$(sh "$scripts/stop-label.sh" team=blue | sort)
is "stop-label.sh stops the two blue ones" "$out" "$(printf 'stopped %s\n' "$a" "$b" | sort)"
is "… and leaves the red one running" "$(runtime sandbox get "$c" --json | json_get 'o["state"]')" "running"
runtime sandbox rm "$a" >/dev/null; runtime sandbox rm "$b" >/dev/null
runtime sandbox rm "$c" >/dev/null
check_no_leaks "examples"

# -- every command of the docs, in order per file (tests/docs-blocks.py has
# the rule); `port` is the docs' variable for runtime serve's port. Each file
# has a data dir of its own: their tokens share names, and a removed token's
# name is never given again.
root=$(cd "$(dirname "$0")/../.." && pwd)
data=$RUNTIME_DATA_DIR
for f in $(python3 "$root/tests/docs-blocks.py" list "$root"); do
    export RUNTIME_DATA_DIR=$tmp/docs-data-${f//\//-}
    start=$SECONDS
    out=$(port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') \
        python3 "$root/tests/docs-blocks.py" run "$root" "$f"); rc=$?
    is "docs: $f runs as written ($((SECONDS - start)) s)" "$rc" 0
    if [ "$rc" != 0 ]; then
        diag "$out"
        for s in $(runtime sandbox ls --all --json | json_get '" ".join(s["id"] for s in o)'); do
            runtime sandbox rm "$s" >/dev/null
        done
    fi
    check_no_leaks "after $f"
done
RUNTIME_DATA_DIR=$data
done_testing
