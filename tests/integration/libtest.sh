# libtest.sh - sourced by each integration test: TAP output, a private state
# dir, and a cleanup that runs whatever happened.
set -u
n=0
failed=0
tmp=$(mktemp -d /tmp/rt-test.XXXXXX)
export RUNTIME_STATE_DIR="$tmp/state"
: "${RUNTIME_DATA_DIR:=${RUNTIME_TEST_DATA:-$tmp/data}}"
export RUNTIME_DATA_DIR
# Cold boots only, unless the suite asks for templates (clone.sh): no start
# from a template, and no template made in the background behind a test.
: "${RUNTIME_TEMPLATES:=off}"
export RUNTIME_TEMPLATES

ok()   { n=$((n + 1)); echo "ok $n - $1"; }
fail() { n=$((n + 1)); echo "not ok $n - $1"; failed=1; }
diag() { printf '%s\n' "$@" | sed 's/^/# /'; }
# check DESC CMD…: ok when CMD succeeds.
check() { local d=$1; shift; if "$@"; then ok "$d"; else fail "$d"; fi; }
# is DESC GOT WANT
is() {
    if [ "$2" = "$3" ]; then ok "$1"; else fail "$1"; diag "got:  $(printf %q "$2")" "want: $(printf %q "$3")"; fi
}

# QEMU processes started for this test's state dir.
our_qemus() { pgrep -f "qemu-system-x86_64.*$RUNTIME_STATE_DIR" 2>/dev/null || true; }

# Sandboxes whose monitors still run in this test's state dir.
our_monitors() { cat "$RUNTIME_STATE_DIR"/sb-*/monitor.pid 2>/dev/null | cut -d' ' -f1; }

# Every sandbox of $RUNTIME_STATE_DIR stopped, its leftover QEMUs killed.
stop_sandboxes() {
    local left pid
    for pid in $(our_monitors); do kill -TERM "$pid" 2>/dev/null; done
    for _ in $(seq 50); do [ -z "$(our_monitors)" ] && break; sleep 0.1; done
    left=$(our_qemus)
    if [ -n "$left" ]; then
        echo "# cleanup: killing leftover QEMU $left"
        kill -9 $left 2>/dev/null
    fi
}

cleanup() {
    stop_sandboxes
    rm -rf "$tmp"
}
trap cleanup EXIT

# Nothing of this test may be left: no QEMU, no sandbox dir.
check_no_leaks() {
    local what=$1
    is "$what: no QEMU left" "$(our_qemus)" ""
    # Lock files stay (the state dir's, the pool's, template keepers'
    # starters'); a keeper's socket is a live keeper.
    is "$what: no sandbox state left" "$(ls -A "$RUNTIME_STATE_DIR" 2>/dev/null | grep -vE '^\.(lock|pool\.lock|templates)$')" ""
    is "$what: no template keeper left" "$(ls "$RUNTIME_STATE_DIR/.templates" 2>/dev/null | grep -v '\.lock$')" ""
    is "$what: no sandbox disk left in the data dir" "$(ls -d "$RUNTIME_DATA_DIR"/sandboxes/sb-*/ 2>/dev/null)" ""
    is "$what: no QEMU control group left" "$(our_cgroups)" ""
    is "$what: no sandbox uid held" "$(held_uids)" ""
}

# Control groups of QEMUs (vmm/cgroup.c): cgroup v1 hierarchies, then v2.
# Machine-wide: every VM test runs under the one machine lock.
our_cgroups() {
    ls -d /sys/fs/cgroup/{memory,pids,cpu}/runtime/runtime-* /sys/fs/cgroup/runtime/runtime-* 2>/dev/null || true
}
# Sandbox uids either of whose locks (vmm/uidpool.h: N, the monitor's,
# N.qemu, QEMU's) a live process holds, once each.
held_uids() {
    local f
    for f in /run/runtime-uids/*; do
        [ -f "$f" ] || continue
        f=${f##*/}
        flock -n "/run/runtime-uids/$f" true || echo "${f%.qemu}"
    done | sort -u
}

# expect_error DESC CODE CMD…: exit 1, "Error [CODE]: …" on stderr, nothing
# on stdout.
expect_error() {
    local d=$1 code=$2 rc; shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
    if [ "$rc" = 1 ] && grep -q "^Error \[$code\]: " "$tmp/err" && [ ! -s "$tmp/out" ]; then
        ok "$d"
    else
        fail "$d"
        diag "exit $rc" "stdout: $(head -c 300 "$tmp/out")" "stderr: $(cat "$tmp/err")"
    fi
}
# json_get EXPR: EXPR over the JSON value on stdin (as o), printed.
json_get() { python3 -c "import json,sys; o=json.load(sys.stdin); print($1)"; }

done_testing() {
    echo "1..$n"
    exit $failed
}
