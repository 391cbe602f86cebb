#!/bin/bash
# notroot.sh - runtime as a user who is not root: every command that
# manages sandboxes refuses at once with one permission_denied (before it
# reads state or fetches a kernel), --help and client mode still work,
# and `runtime doctor` reports, as that user and as root, changing
# nothing.  Boots nothing: run in the unit suite.
. "$(dirname "$0")/libtest.sh"

# Adding a user takes root (the suite runs as root, as .ci/run does).
if [ "$(id -u)" != 0 ]; then
    echo "1..0 # SKIP needs root to add a user"
    exit 0
fi
# A real user of the host with a home of its own, made for this test.
user=rt-notroot-$$
home=$tmp/home
chmod 711 "$tmp"
for _ in 1 2 3 4 5; do
    useradd --home-dir "$home" --create-home --shell /bin/sh --no-user-group --gid nogroup "$user" 2>"$tmp/useradd" && break
    sleep 1   # another test holding /etc/passwd's lock
done
trap 'userdel "$user" 2>/dev/null; cleanup' EXIT
if ! id "$user" >/dev/null 2>&1; then
    fail "a test user is made"
    diag "$(cat "$tmp/useradd")"
    done_testing
fi
before=$(find "$home" | sort)

# as_user CMD…: CMD as $user, with the environment a login would give it
# (no RUNTIME_*_DIR: the defaults for a user), the runtime under test.
# RUNTIME_KERNEL names no file: a refusal that came too late would fail
# on it rather than fetch a kernel from the network.
as_user() {
    runuser -u "$user" -- env -i PATH="$PATH" HOME="$home" USER="$user" LANG=C.UTF-8 \
        RUNTIME_KERNEL=/nonexistent/kernel.deb RUNTIME_UID_RANGE="${RUNTIME_UID_RANGE:-}" "$@"
}

# refused DESC CMD…: as $user, exit 1, nothing on stdout, exactly the
# error line and its hint on stderr.
refused() {
    local d=$1 rc; shift
    as_user "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ "$rc" = 1 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" = 2 ] \
        && grep -q '^Error \[permission_denied\]: runtime manages sandboxes as root' "$tmp/err" \
        && grep -q '^Hint: run it with sudo' "$tmp/err"; then
        ok "$d"
    else
        fail "$d"
        diag "exit $rc" "stdout: $(head -c 300 "$tmp/out")" "stderr: $(head -c 600 "$tmp/err")"
    fi
}

refused "sandbox ls: refused, not an empty table" runtime sandbox ls
refused "sandbox ls --all" runtime sandbox ls --all
refused "sandbox run: refused before any kernel is fetched" runtime sandbox run -- python3 -c 'print(6*7)'
refused "sandbox create" runtime sandbox create --name dev
refused "sandbox exec: refused, not 'no sandbox'" runtime sandbox exec dev -- true
refused "sandbox get" runtime sandbox get dev
refused "sandbox rm" runtime sandbox rm dev
refused "image ls: refused, not internal" runtime image ls
refused "image build" runtime image build --pip requests --name py
refused "secrets ls" runtime secrets ls
refused "snapshot ls" runtime snapshot ls
refused "pool ls" runtime pool ls
refused "usage" runtime usage
refused "token ls" runtime token ls
refused "serve: refused before it listens" runtime serve --listen 127.0.0.1:1
refused "node: refused before it connects" runtime node --nats nats://127.0.0.1:1
is "nothing was made in the user's home" "$(find "$home" | sort)" "$before"

as_user runtime sandbox ls --json >"$tmp/out" 2>"$tmp/err"
is "--json: one error object on stderr" "$(json_get 'o["error"]["code"]' <"$tmp/err" 2>&1)" "permission_denied"
check "--json: the hint in it" sh -c 'grep -q "\"hint\":\"run it with sudo" "$1"' sh "$tmp/err"
check "--help still works" sh -c 'runuser -u "$1" -- runtime sandbox run --help >/dev/null' sh "$user"
check "--version still works" sh -c 'runuser -u "$1" -- runtime --version | grep -q "^runtime "' sh "$user"

# Client mode needs no root: the server decides (here: none listens).
as_user env RUNTIME_API_URL=http://127.0.0.1:1 RUNTIME_API_KEY=x runtime sandbox ls >"$tmp/out" 2>"$tmp/err"
check "client mode: not refused for not being root (unavailable)" grep -q '^Error \[unavailable\]' "$tmp/err"

# -- runtime doctor, as the user: works, says it may not manage sandboxes.
as_user runtime doctor >"$tmp/out" 2>"$tmp/err"; rc=$?
is "doctor as the user: exit 0" "$rc" "0"
check "doctor as the user: says it may not manage sandboxes" grep -q "^caller: .*may not manage sandboxes" "$tmp/out"
check "doctor: the accelerator and why" grep -qE "^accelerator: +(kvm|tcg|unknown): ." "$tmp/out"
check "doctor: QEMU's version" grep -qE "^QEMU: +QEMU emulator version" "$tmp/out"
json=$(as_user runtime doctor --json 2>"$tmp/err")
is "doctor --json as the user: caller" "$(json_get '[o["caller"]["uid"], o["caller"]["canManage"]]' <<<"$json")" \
    "[$(id -u "$user"), False]"
is "doctor --json as the user: root's directories, for a bug report" \
    "$(json_get '[o["directories"][k] for k in ("state", "data", "cache")]' <<<"$json")" \
    "['/run/runtime', '/var/lib/runtime', '/var/cache/runtime']"
is "doctor --json: what it could not read is a list" "$(json_get 'type(o["unreadable"]).__name__' <<<"$json")" "list"
json=$(as_user env RUNTIME_API_URL=http://127.0.0.1:1/ RUNTIME_API_KEY=x runtime doctor --json 2>"$tmp/err")
is "doctor --json in client mode: the server decides" \
    "$(json_get '[o["mode"], o["apiUrl"], o["caller"]["canManage"]]' <<<"$json")" "['client', 'http://127.0.0.1:1', True]"
is "nothing was made in the user's home by doctor" "$(find "$home" | sort)" "$before"

# -- as root, on this test's own directories.
export RUNTIME_CACHE_DIR=$tmp/cache RUNTIME_ACCEL=tcg
json=$(runtime doctor --json 2>"$tmp/err")
is "doctor --json as root: the keys" "$(json_get 'sorted(o)' <<<"$json")" \
    "['accelerator', 'apiUrl', 'caches', 'caller', 'defaultImage', 'directories', 'host', 'jail', 'kernel', 'mode', 'qemu', 'trial', 'unreadable', 'version']"
is "doctor --json as root: may manage" "$(json_get 'o["caller"]["canManage"]' <<<"$json")" "True"
is "doctor --json: RUNTIME_ACCEL is the reason" "$(json_get 'o["accelerator"]' <<<"$json")" \
    "{'name': 'tcg', 'why': 'RUNTIME_ACCEL=tcg'}"
is "doctor --json: the directories RUNTIME_*_DIR set" "$(json_get 'o["directories"]["data"]' <<<"$json")" "$RUNTIME_DATA_DIR"
is "doctor --json: a cache not made yet is 0 bytes" "$(json_get 'o["caches"]["kernel"]["bytes"]' <<<"$json")" "0"
is "doctor --json: no default image yet" "$(json_get '[o["defaultImage"]["name"], o["defaultImage"]["built"]]' <<<"$json")" \
    "['runtime', False]"
is "doctor --json: the whole trial" "$(json_get 'o["trial"]' <<<"$json")" "{'hoursLeft': 50.0, 'running': 0}"
is "doctor --json: the default shape" "$(json_get 'o["host"]["defaultShape"]' <<<"$json")" \
    "{'vcpu': 2, 'memoryMiB': 4096, 'diskMiB': 4096}"
is "doctor --json: the uids live sandboxes hold, a number" "$(json_get 'type(o["jail"]["uidsInUse"]).__name__' <<<"$json")" "int"
is "doctor --json: the jail's cgroup version" "$(json_get 'o["jail"]["cgroup"] in ("v1", "v2", "none")' <<<"$json")" "True"
is "doctor --json: runtime's own version" "$(json_get 'o["version"]' <<<"$json")" "$(runtime --version | sed -n 's/^runtime //p')"
is "doctor made none of the directories" "$(ls "$tmp" | grep -E '^(state|data|cache)$')" ""
runtime doctor >"$tmp/out" 2>"$tmp/err"
check "doctor as root: the text report" grep -q "^caller: .*may manage sandboxes: root" "$tmp/out"
expect_error "doctor with an unknown option: usage" usage runtime doctor --all
expect_error "doctor with an argument: usage" usage runtime doctor now
done_testing
