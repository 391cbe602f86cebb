#!/bin/bash
# clone.sh - sandboxes started from a template (template/template.h): each
# clone unique and current (entropy, boot id, machine id, hostname, clock,
# env, its own disk and memory), the claimant's network rules from the
# first packet, stale templates unused, the template made in the
# background after a cold start, kill -9 at each step of making one, its
# keeper killed, `image rm`, `chat deepseek` on clones, and a spare claimed
# with --no-internet (once `runtime pool` exists).  Under TCG a
# cold boot takes seconds and a clone well under one, so clones are shared
# between checks; the cold boots are few.
export RUNTIME_TEMPLATES=on RUNTIME_TEMPLATE_KEEP_S=15
# Room for a spare of the default shape (4096 MiB) whatever the host's RAM.
export RUNTIME_POOL_MAX_MIB=8192
. "$(dirname "$0")/libtest.sh"
. "$(dirname "$0")/testnet.sh"
exec </dev/null

FIXTURES=$(cd "$(dirname "$0")/../fixtures" && pwd)

# A private cache, so that the templates made here go with the test; the
# kernel, base and image disks are the shared cache's.
shared_cache=${RUNTIME_CACHE_DIR:-/var/cache/runtime}
export RUNTIME_CACHE_DIR="$tmp/cache"
mkdir -p "$RUNTIME_CACHE_DIR"
for f in "$shared_cache"/*; do
    [ -e "$f" ] && [ "${f##*/}" != templates ] && ln -s "$f" "$RUNTIME_CACHE_DIR/"
done
# A private image store (images are built and removed here).
export RUNTIME_DATA_DIR="$tmp/data"
mkdir -p "$RUNTIME_DATA_DIR"
if [ -d "${RUNTIME_TEST_DATA:-}/images" ]; then cp -al "$RUNTIME_TEST_DATA/images" "$RUNTIME_DATA_DIR/"; fi

tdir=$RUNTIME_CACHE_DIR/templates
kdir=$RUNTIME_STATE_DIR/.templates

# Every QEMU on the machine; those there before the test are not ours (the
# machine lock keeps other tests' away).
all_qemus() { pgrep -f '^[^ ]*qemu-system-x86_64 ' | sort; }
qemus_before=$(all_qemus)
new_qemus() { comm -13 <(printf '%s\n' "$qemus_before") <(all_qemus) | grep . || true; }
sandbox_qemus() { cat "$RUNTIME_STATE_DIR"/sb-*/qemu.pid 2>/dev/null | cut -d' ' -f1 | sort; }
# QEMUs that are no live sandbox's: the template makers'.
maker_qemus() { comm -23 <(new_qemus) <(sandbox_qemus) | grep . || true; }
# Keepers: whoever listens on a socket in <state>/.templates/.
keeper_pids() { ss -xlpn 2>/dev/null | grep -F "$kdir/" | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u; }
# keeper_of KEY: its socket is named by the key (or its first 32 digits).
keeper_of() { ss -xlpn 2>/dev/null | grep -F "$kdir/${1:0:32}" | grep -o 'pid=[0-9]*' | cut -d= -f2 | sort -u; }
keeper_socks() { ls "$kdir" 2>/dev/null | grep '\.sock$' || true; }
templates() { ls "$tdir" 2>/dev/null | grep -E '^[0-9a-f]{64}$' || true; }
tmp_dirs() { ls -a "$tdir" 2>/dev/null | grep '^\.tmp-' || true; }
# templates_of IMAGE_ID: the keys of that image's templates.
templates_of() {
    local k
    for k in $(templates); do grep -qF "$1" "$tdir/$k/meta.json" 2>/dev/null && echo "$k"; done
}
# templates_with MEMORY: the keys of the templates of that memory size.
templates_with() {
    local k
    for k in $(templates); do
        [ "$(json_get 'o.get("memoryMiB")' <"$tdir/$k/meta.json" 2>/dev/null)" = "$1" ] && echo "$k"
    done
}
# A sandbox's network namespace holds its tap0 (as leaks.sh looks).
sandbox_netns() {
    local ns
    for ns in $(lsns -t net -n -o PID 2>/dev/null); do
        nsenter --net=/proc/$ns/ns/net ip -br link show tap0 >/dev/null 2>&1 && echo "$ns"
    done
}
# What this test holds beyond what was held before it began (a sandbox
# left running by hand elsewhere must not fail the checks of each step;
# check_no_leaks at the end looks at the whole machine).
sorted_lines() { "$@" | sort | grep . || true; }
uids_before=$(sorted_lines held_uids) netns_before=$(sorted_lines sandbox_netns) cgroups_before=$(sorted_lines our_cgroups)
new_uids() { comm -13 <(printf '%s\n' "$uids_before") <(sorted_lines held_uids) | grep . || true; }
new_netns() { comm -13 <(printf '%s\n' "$netns_before") <(sorted_lines sandbox_netns) | grep . || true; }
new_cgroups() { comm -13 <(printf '%s\n' "$cgroups_before") <(sorted_lines our_cgroups) | grep . || true; }
# wait_until SECONDS CMD…: polls CMD until it succeeds (0) or time is up (1).
wait_until() {
    local end=$((SECONDS + $1))
    shift
    until "$@"; do
        [ "$SECONDS" -ge "$end" ] && return 1
        sleep 0.2
    done
}
no_maker() { [ -z "$(maker_qemus)" ]; }
makers_idle() { no_maker && [ -z "$(tmp_dirs)" ]; }
no_keeper() { [ -z "$(keeper_pids)" ]; }
has_maker_qemu() { [ -n "$(maker_qemus)" ]; }
has_template_of() { [ -n "$(templates_of "$1")" ]; }

get() { runtime sandbox get "$1" --json 2>/dev/null | json_get "$2" 2>/dev/null; }
start_of() { get "$1" 'o.get("start")'; }
ready_of() { get "$1" 'o.get("readyMs")'; }
in_sb() { runtime sandbox exec "$1" -- bash -c "$2" 2>&1; }
made=()
# new_sandbox VAR ARGS…: `sandbox create ARGS…` into VAR; its wall time in ms in $wall_ms.
new_sandbox() {
    local var=$1 t0 out
    shift
    t0=$(date +%s%N)
    out=$(runtime sandbox create --timeout 900 "$@" 2>"$tmp/create.err")
    wall_ms=$((($(date +%s%N) - t0) / 1000000))
    made+=($out)
    printf -v "$var" '%s' "$out"
    if [ -z "$out" ]; then diag "create $* failed: $(cat "$tmp/create.err")"; fi
}
rm_sandboxes() {
    local id
    for id in "$@"; do [ -n "$id" ] && timeout 60 runtime sandbox rm "$id" >/dev/null 2>&1; done
}
# ident ID: the clone's random bytes, boot id, machine id and hostname, a line each.
ident() {
    in_sb "$1" 'python3 -c "import os; print(os.urandom(16).hex())"; cat /proc/sys/kernel/random/boot_id /etc/machine-id /proc/sys/kernel/hostname'
}
# tcp_echo ID: "ping" when the guest reaches the test internet's TCP echo, else the error.
tcp_echo() {
    in_sb "$1" "timeout 10 python3 -c 'import socket; s=socket.create_connection((\"198.51.100.5\", 7777), timeout=5); s.sendall(b\"ping\"); print(s.recv(4).decode())' 2>&1 | tail -1"
}
http_code() { runtime sandbox exec "$1" -- curl -s -m 10 -o /dev/null -w '%{http_code}' http://http.test/ 2>/dev/null; }

srv=
teardown() {
    local p
    [ -n "$srv" ] && kill "$srv" 2>/dev/null
    rm_sandboxes "${made[@]}" $(runtime sandbox ls --all --json 2>/dev/null | json_get '" ".join(s["id"] for s in o)')
    # Ours only: the keepers of our state dir, QEMUs naming our dirs.
    for p in $(keeper_pids) $(pgrep -f "qemu-system-x86_64.*$tmp/"); do
        kill -9 "$p" 2>/dev/null && echo "# cleanup: killed $p ($(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-80))"
    done
    testnet_down
    cleanup
}
trap teardown EXIT

if ! testnet_up; then
    echo "Bail out! cannot make the test network"
    exit 1
fi

# -- refused before anything boots
expect_error "image warm of an unknown image is image_not_found" image_not_found runtime image warm nosuch

# -- image warm: the default image and shape
t0=$(date +%s%N)
runtime image warm --json >"$tmp/warm.json" 2>"$tmp/warm.err"
rc=$?
warm_ms=$((($(date +%s%N) - t0) / 1000000))
warmed=$SECONDS
if [ "$rc" != 0 ]; then
    fail "image warm exits 0"
    diag "exit $rc: $(cat "$tmp/warm.err")"
    echo "Bail out! no template: nothing else here can be checked"
    exit 1
fi
ok "image warm exits 0 (${warm_ms} ms)"
is "… prints the template as JSON" \
    "$(json_get '[k for k in "key imageId vcpu memoryMiB createdAt makeMs sizeBytes fresh".split() if k not in o] or "all"' \
        <"$tmp/warm.json")" "all"
is "… made now, of the default shape" "$(json_get '(o["fresh"], o["vcpu"], o["memoryMiB"])' <"$tmp/warm.json")" \
    "(True, 2, 4096)"
runtime_id=$(runtime image get runtime --json | json_get 'o["id"]')
is "… of the default image" "$(json_get 'o["imageId"]' <"$tmp/warm.json")" "$runtime_id"
key=$(json_get 'o["key"]' <"$tmp/warm.json")
diag "makeMs $(json_get 'o["makeMs"]' <"$tmp/warm.json"), sizeBytes $(json_get 'o["sizeBytes"]' <"$tmp/warm.json")"
missing=""
for f in meta.json ram state disk.qcow2 clone.qcow2; do [ -f "$tdir/$key/$f" ] || missing="$missing $f"; done
is "… in <cache>/templates/<key>/, whole" "${missing:-none}" "none"
is "… and nothing half-made beside it" "$(tmp_dirs)" ""
wait_until 10 no_maker
is "… the template's VM is gone" "$(maker_qemus)" ""
is "… its uid given back" "$(new_uids)" ""
t0=$(date +%s%N)
again=$(runtime image warm --json 2>"$tmp/err")
again_ms=$((($(date +%s%N) - t0) / 1000000))
is "image warm again: the same template, not fresh" "$(printf '%s' "$again" | json_get '(o["key"], o["fresh"])')" \
    "('$key', False)"
check "… at once (${again_ms} ms)" test "$again_ms" -lt 3000

# The template is older than the clones by a few seconds: a clone whose
# clock came from the template would be behind the host's.
sleep $((warmed + 6 - SECONDS)) 2>/dev/null

# -- two clones: each unique, each current
new_sandbox a --env CLONE_ENV=a-$$
a_ms=$wall_ms
check "a sandbox of the default image and shape starts" test -n "$a"
is "… from the template" "$(start_of "$a")" "template"
is "… readyMs is a number" "$(get "$a" 'type(o.get("readyMs")).__name__')" "int"
h0=$(date +%s.%N)
g=$(runtime sandbox exec "$a" -- date +%s.%N 2>&1)
h1=$(date +%s.%N)
check "its clock is the host's, not the template's ($((SECONDS - warmed)) s old): host $h0..$h1, guest $g" \
    python3 -c 'import sys; h0, g, h1 = map(float, sys.argv[1:]); sys.exit(not h0 - 1 <= g <= h1 + 1)' "$h0" "$g" "$h1"
is "the template's processes are not in it" "$(runtime sandbox ps "$a" --json 2>&1 | json_get 'len(o)' 2>&1)" "0"
is "… none of its warm-up's python3 left in the guest" "$(in_sb "$a" 'cat /proc/[0-9]*/comm 2>/dev/null | grep -c "^python3$"')" "0"
ident "$a" >"$tmp/ident.a"
new_sandbox b --env CLONE_ENV=b-$$
check "a second clone starts" test -n "$b"
is "… from the template" "$(start_of "$b")" "template"
ident "$b" >"$tmp/ident.b"
diag "create took ${a_ms} and ${wall_ms} ms (readyMs $(ready_of "$a"), $(ready_of "$b"))"
is "each clone prints 4 lines" "$(wc -l <"$tmp/ident.a") $(wc -l <"$tmp/ident.b")" "4 4"
i=0
for what in "os.urandom(16)" "boot_id" "machine-id" "hostname"; do
    i=$((i + 1))
    va=$(sed -n "${i}p" "$tmp/ident.a") vb=$(sed -n "${i}p" "$tmp/ident.b")
    check "two clones differ in $what ($va, $vb)" test -n "$va" -a -n "$vb" -a "$va" != "$vb"
done
is "a clone's hostname is its id" "$(sed -n 4p "$tmp/ident.a") $(sed -n 4p "$tmp/ident.b")" "$a $b"
check "its machine id is 32 hex digits" grep -qxE '[0-9a-f]{32}' <(sed -n 3p "$tmp/ident.a")
is "each clone has its own env" "$(in_sb "$a" 'echo $CLONE_ENV') $(in_sb "$b" 'echo $CLONE_ENV')" "a-$$ b-$$"

# -- its own disk and memory
# /dev/shm: in the guest's memory (devtmpfs when no tmpfs is mounted there).
in_sb "$a" 'mkdir -p /dev/shm; echo from-a >/workspace/from-a; echo from-a >/dev/shm/from-a; sync' >/dev/null
is "a file written in one clone is there" "$(in_sb "$a" 'cat /workspace/from-a /dev/shm/from-a')" \
    "$(printf 'from-a\nfrom-a')"
is "… and not in the other (disk and memory)" \
    "$(in_sb "$b" 'ls /workspace/from-a /dev/shm/from-a 2>/dev/null | wc -l')" "0"

# -- the claimant's rules from the first packet: the template was made with
#    the default (open) rules; this clone has none.
new_sandbox c --no-internet
check "a clone with --no-internet starts" test -n "$c"
is "… from the template" "$(start_of "$c")" "template"
is "… its first request out is refused (internet_off)" "$(http_code "$c")" "403"
out=$(tcp_echo "$c")
check "… and raw TCP (${out:-nothing})" grep -qE '^[A-Za-z]+Error: ' <<<"$out"
is "… its rules say no internet" "$(get "$c" 'o["network"]["internet"]')" "False"
is "an open clone of the same template gets out (the server answers)" "$(http_code "$a")" "200"
is "a fresh clone has none of the other clone's files" \
    "$(in_sb "$c" 'ls /workspace/from-a /dev/shm/from-a 2>/dev/null | wc -l')" "0"

# -- --cold, and what a stopped sandbox's record keeps
new_sandbox k --cold
check "--cold starts a sandbox" test -n "$k"
is "… booted cold" "$(start_of "$k")" "cold"
ra=$(ready_of "$a") rk=$(ready_of "$k")
check "a clone is ready in under half a cold boot's time (${ra} ms, cold ${rk} ms)" \
    test "${ra:-99999}" -lt $((${rk:-0} / 2))
is "a cold sandbox's hostname is its id too" "$(in_sb "$k" 'cat /proc/sys/kernel/hostname')" "$k"
rb=$(ready_of "$b")
runtime sandbox stop "$b" >/dev/null
is "a stopped clone's record keeps start and readyMs" "$(get "$b" '(o["state"], o.get("start"), o.get("readyMs"))')" \
    "('stopped', 'template', $rb)"
rm_sandboxes "$b" "$k"

# -- the keeper: kill -9 of it, then the next create works
new_sandbox d
kp=$(keeper_of "$key")
check "the template has a keeper (pid ${kp:-none})" test -n "$kp"
[ -n "$kp" ] && kill -9 $kp
wait_until 5 sh -c "! kill -0 ${kp:-none} 2>/dev/null"
new_sandbox e
check "after kill -9 of the keeper the next create works" test -n "$e"
is "… from the template" "$(start_of "$e")" "template"
check "… through a new keeper ($(keeper_of "$key"))" test -n "$(keeper_of "$key")" -a "$(keeper_of "$key")" != "$kp"
is "the clones made before still answer" "$(in_sb "$d" 'echo up') $(in_sb "$a" 'echo up')" "up up"
rm_sandboxes "$a" "$c" "$d" "$e"


# -- chat deepseek: run_python's sandbox is a clone
cat >"$tmp/scenario.json" <<'JSON'
[{"tool_call": {"code": "import socket, time\nprint(socket.gethostname())\ntime.sleep(3)", "packages": []}},
 {"answer": "cloned"}]
JSON
python3 "$FIXTURES/fake_deepseek.py" "$tmp/scenario.json" "$tmp/api.jsonl" >"$tmp/api.out" 2>"$tmp/api.err" &
srv=$!
port=
for _ in $(seq 100); do
    port=$(sed -n 's/^port \([0-9][0-9]*\)$/\1/p' "$tmp/api.out" 2>/dev/null)
    [ -n "$port" ] && break
    sleep 0.05
done
DEEPSEEK_API_KEY=sk-test timeout 300 runtime chat deepseek --base-url "http://127.0.0.1:$port" "Your hostname?" \
    >"$tmp/chat.out" 2>"$tmp/chat.err" &
cpid=$!
cid= cstart=
for _ in $(seq 600); do
    cid=$(runtime sandbox ls --json 2>/dev/null | json_get 'o[0]["id"] if o else ""' 2>/dev/null)
    [ -n "$cid" ] && cstart=$(start_of "$cid") && [ -n "$cstart" ] && [ "$cstart" != None ] && break
    kill -0 "$cpid" 2>/dev/null || break
    sleep 0.1
done
wait "$cpid"
rc=$?
is "chat deepseek with a run_python call answers" "$rc/$(cat "$tmp/chat.out")" "0/cloned"
[ "$rc" = 0 ] || diag "$(tail -5 "$tmp/chat.err")" "$(cat "$tmp/api.err")"
is "… its run_python sandbox ($cid) started from the template" "$cstart" "template"
is "… and ran as that sandbox (its hostname)" \
    "$(python3 -c 'import json, sys
L = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
m = [m for m in L[-1]["body"]["messages"] if m.get("role") == "tool"][-1]
print(json.loads(m["content"]).get("stdout", "").strip())' "$tmp/api.jsonl" 2>&1)" "$cid"
kill "$srv" 2>/dev/null
wait "$srv" 2>/dev/null
srv=

# -- a spare (runtime pool), once they exist: paused with no rules,
#    claimed with --no-internet, which holds from its first packet
spares() { for f in "$RUNTIME_STATE_DIR"/sb-*/state.json; do
    grep -q '"state":"spare"' "$f" 2>/dev/null && basename "$(dirname "$f")"; done | sort; }
ready() { runtime pool ls --json 2>/dev/null | json_get 'sum(p["ready"] for p in o)'; }
two_ready() { [ "$(ready)" = 2 ]; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null; }
if runtime pool --help >/dev/null 2>&1; then
    runtime pool set --spares 2 >/dev/null 2>"$tmp/err"
    rc=$?
    is "pool set --spares 2 of the default shape" "$rc" "0"
    [ "$rc" = 0 ] || diag "$(cat "$tmp/err")"
    is "… two spares ready" "$(ready)" "2"
    is "… none of them listed" "$(runtime sandbox ls --json | json_get 'len(o)')" "0"
    sq=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$(spares | head -1)/qemu.pid" 2>/dev/null)
    c0=$(cpu_ticks "$sq"); sleep 3; c1=$(cpu_ticks "$sq")
    check "… a spare's QEMU is paused: no CPU (${c0:-?} -> ${c1:-?} ticks in 3 s)" test "$((${c1:-999} - ${c0:-0}))" -le 2
    expect_error "a pool past RUNTIME_POOL_MAX_MIB is refused" quota_exceeded \
        env RUNTIME_POOL_MAX_MIB=300 runtime pool set --spares 2 --vcpu 1 --memory 4096
    new_sandbox p --no-internet --env SPARE_ENV=p-$$
    is "a create of that shape claims a spare" "$(start_of "$p")" "spare"
    diag "claimed in $wall_ms ms (readyMs $(ready_of "$p"))"
    is "… its first request out is refused (internet_off)" "$(http_code "$p")" "403"
    out=$(tcp_echo "$p")
    check "… and raw TCP (${out:-nothing})" grep -qE '^[A-Za-z]+Error: ' <<<"$out"
    is "… its hostname is its id, its env the claimant's" \
        "$(in_sb "$p" 'cat /proc/sys/kernel/hostname; echo $SPARE_ENV')" "$(printf '%s\n%s' "$p" "p-$$")"
    new_sandbox o
    is "another create claims the other spare" "$(start_of "$o")" "spare"
    is "… with open rules it gets out (the server answers)" "$(http_code "$o")" "200"
    check "… and differs from the first in boot id and machine id" \
        test "$(in_sb "$p" 'cat /proc/sys/kernel/random/boot_id /etc/machine-id')" != \
        "$(in_sb "$o" 'cat /proc/sys/kernel/random/boot_id /etc/machine-id')"
    is "… both are billed from their claim: they show in the list" "$(runtime sandbox ls --json | json_get 'len(o)')" "2"
    rm_sandboxes "$p" "$o"
    check "the pool is topped up again in the background" wait_until 120 two_ready
    # kill -9 of a spare's monitor: that spare is lost, nothing leaks, no record.
    victim=$(spares | head -1)
    vmon=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$victim/monitor.pid" 2>/dev/null)
    vq=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$victim/qemu.pid" 2>/dev/null)
    kill -9 "$vmon" 2>/dev/null
    wait_until 10 sh -c "! kill -0 $vq 2>/dev/null"
    check "kill -9 of a spare's monitor: its QEMU is gone" sh -c "! kill -0 $vq 2>/dev/null"
    runtime sandbox ls >/dev/null 2>&1
    is "… its state is reaped, with no record" \
        "$(ls -d "$RUNTIME_STATE_DIR/$victim" "$RUNTIME_DATA_DIR/sandboxes/$victim.json" 2>/dev/null)" ""
    # kill -9 of a create while it claims: the spare goes back or stops.
    runtime sandbox create --timeout 900 >/dev/null 2>&1 &
    cpid=$!
    sleep 0.05
    kill -9 "$cpid" 2>/dev/null
    wait "$cpid" 2>/dev/null
    sleep 2
    is "kill -9 of a create claiming a spare: no sandbox is left listed" "$(runtime sandbox ls --json | json_get 'len(o)')" "0"
    new_sandbox q
    check "… and the next create works" test -n "$q"
    rm_sandboxes "$q"
    runtime pool rm runtime >/dev/null 2>"$tmp/err"
    is "pool rm" "$?" "0"
    wait_until 60 no_maker
    wait_until 30 sh -c "[ -z \"\$(ls -d $RUNTIME_STATE_DIR/sb-* 2>/dev/null)\" ]"
    is "… no spare is left" "$(spares)" ""
    is "… no spare's QEMU is left" "$(maker_qemus)" ""
fi

# -- another shape: cold, and its template made in the background; the
#    background maker killed while it boots leaves nothing
new_sandbox m --memory 768
check "a sandbox of another memory size starts" test -n "$m"
is "… cold (the template is 4096 MiB)" "$(start_of "$m")" "cold"
if wait_until 60 has_maker_qemu; then
    ok "… and a template of its shape is being made in the background"
    q=$(maker_qemus | head -1)
    sleep 0.5
    kill -9 $q
    rm_sandboxes "$m"
    wait_until 30 no_maker
    is "kill -9 of the background maker's QEMU while it boots: no QEMU left" "$(maker_qemus)" ""
    is "… no uid held" "$(new_uids)" ""
    is "… no network namespace" "$(new_netns)" ""
    is "… no template made" "$(templates_with 768)" ""
else
    fail "… and a template of its shape is being made in the background"
    rm_sandboxes "$m"
fi
new_sandbox l --disk 4608
check "a sandbox with a disk larger than the image's starts" test -n "$l"
is "… cold" "$(start_of "$l")" "cold"
rm_sandboxes "$l"
wait_until 120 no_maker

# -- kill -9 at each step of `image warm`
# saving: the make is writing its state or RAM.
saving() { compgen -G "$tdir/.tmp-*/state" >/dev/null || compgen -G "$tdir/.tmp-*/ram" >/dev/null; }
# reap PID SECONDS: waits for PID (a child) to end, killing its group after SECONDS; its exit code in $rc.
reap() {
    wait_until "$2" sh -c "! kill -0 $1 2>/dev/null" || { diag "pid $1 did not end: killed"; kill -9 -- "-$1" 2>/dev/null; }
    wait "$1" 2>/dev/null
    rc=$?
}
# warm_killed POINT WHAT: `image warm --memory 768` in a process group of
# its own, SIGKILL to WHAT (group, qemu or both) at POINT (boot: its QEMU
# has started; agent: a cold boot's time later, the guest up and its save
# not begun; save: its state or RAM is being written).
warm_killed() {
    local point=$1 what=$2 pid q t0 el late ntempl
    ntempl=$(templates | wc -l)
    setsid runtime image warm --memory 768 >"$tmp/kw.out" 2>"$tmp/kw.err" &
    pid=$!
    if ! wait_until 60 has_maker_qemu; then
        fail "kill -9 at $point: the make's QEMU started"
        diag "$(cat "$tmp/kw.err")"
        kill -9 -- "-$pid" 2>/dev/null
        reap "$pid" 10
        return
    fi
    q=$(maker_qemus | head -1)
    t0=$(date +%s%N)
    case $point in
    boot) sleep 0.3 ;;
    agent)
        late=$((${rk:-4000} + 500))
        while ! saving && [ $((($(date +%s%N) - t0) / 1000000)) -lt "$late" ]; do sleep 0.05; done ;;
    save)
        for _ in $(seq 6000); do saving && break; [ "$(templates | wc -l)" != "$ntempl" ] && break; sleep 0.02; done ;;
    esac
    el=$((($(date +%s%N) - t0) / 1000000))
    diag "kill -9 of the $what at '$point', $el ms after its QEMU started; being made: $(cd "$tdir" 2>/dev/null && ls .tmp-* 2>/dev/null | tr '\n' ' ')"
    case $what in
    group) kill -9 -- "-$pid" ;;
    qemu) kill -9 "$q" ;;
    both) kill -9 -- "-$pid"; kill -9 "$q" ;;
    esac
    reap "$pid" 60
    if [ -n "$(templates_with 768)" ]; then
        ok "kill -9 at $point # SKIP the make was over before the kill"
        rm -rf "${tdir:?}/$(templates_with 768)"
        return
    fi
    wait_until 30 no_maker
    is "kill -9 of the $what at $point: no QEMU left" "$(maker_qemus)" ""
    is "… no uid held" "$(new_uids)" ""
    is "… no network namespace" "$(new_netns)" ""
    is "… no template made" "$(templates_with 768)" ""
    if [ "$what" = qemu ]; then
        if [ "$rc" = 1 ] && [ "$(grep -c '^Error \[[a-z_]*\]: ' "$tmp/kw.err")" = 1 ] && [ ! -s "$tmp/kw.out" ]; then
            ok "… image warm fails with one error line"
        else
            fail "… image warm fails with one error line"
            diag "exit $rc" "stdout: $(head -c 300 "$tmp/kw.out")" "stderr: $(cat "$tmp/kw.err")"
        fi
    fi
}
warm_killed boot both
warm_killed agent qemu
warm_killed save group
runtime image warm --memory 768 --json >"$tmp/w768.json" 2>"$tmp/err"
rc=$?
is "after the kills, image warm --memory 768 works" "$rc/$(json_get '(o["fresh"], o["memoryMiB"])' <"$tmp/w768.json" 2>/dev/null)" \
    "0/(True, 768)"
[ "$rc" = 0 ] || diag "$(cat "$tmp/err")"
is "… nothing half-made is left (swept)" "$(tmp_dirs)" ""
is "… no control group left" "$(new_cgroups)" ""
is "… one template of that shape" "$(templates_with 768 | wc -l)" "1"
new_sandbox m --memory 768
is "… and a sandbox of that shape is a clone" "$(start_of "$m")" "template"
rm_sandboxes "$m"

# -- stale: a new version of an image does not start from the old one's
#    template; image build --warm, image rm
echo v1 >"$tmp/v.txt"
runtime image build --file "$tmp/v.txt:/opt/" --env CT_VERSION=1 --name clonetest --warm >"$tmp/id1" 2>"$tmp/log1"
rc=$?
v1=$(grep -m1 -xE '[0-9a-f]{64}' "$tmp/id1")
is "image build --warm exits 0" "$rc" "0"
[ "$rc" = 0 ] || diag "$(tail -5 "$tmp/log1")"
check "… and made the image's template" has_template_of "${v1:-none}"
is "… which image warm then finds made" "$(runtime image warm clonetest --json 2>/dev/null | json_get '(o["fresh"], o["imageId"])')" \
    "(False, '$v1')"
wait_until 120 makers_idle
new_sandbox s1 --image clonetest
is "a sandbox of that image is a clone" "$(start_of "$s1")" "template"
is "… of it: its file and env" "$(in_sb "$s1" 'cat /opt/v.txt; echo $CT_VERSION')" "$(printf 'v1\n1')"
k1=$(templates_of "$v1")
kp1=$(keeper_of "$k1")
check "… through the template's keeper (${kp1:-none})" test -n "$kp1"
runtime image build --file "$tmp/v.txt:/opt/" --env CT_VERSION=2 --name clonetest >"$tmp/id2" 2>"$tmp/log2"
v2=$(grep -m1 -xE '[0-9a-f]{64}' "$tmp/id2")
check "a new version of the image (its env changed)" test -n "$v2" -a "$v2" != "$v1"
new_sandbox s2 --image clonetest
is "a sandbox of the new version does not start from the old one's template" "$(start_of "$s2")" "cold"
is "… it runs the new version" "$(in_sb "$s2" 'echo $CT_VERSION')" "2"
rm_sandboxes "$s1" "$s2"
runtime image rm clonetest@1 >/dev/null 2>"$tmp/err"
is "image rm of the old version" "$?" "0"
is "… removes its template" "$(templates_of "$v1")" ""
wait_until 10 sh -c "! kill -0 ${kp1:-none} 2>/dev/null"
check "… ends its keeper" sh -c "! kill -0 ${kp1:-none} 2>/dev/null"
is "… and its socket" "$(keeper_socks | grep -c "${k1:0:32}")" "0"
check "the new version's template is made in the background after its cold start" wait_until 240 has_template_of "${v2:-none}"
wait_until 120 makers_idle
new_sandbox s3 --image clonetest
is "… the next sandbox of it is a clone" "$(start_of "$s3")" "template"
k2=$(templates_of "$v2")
kp2=$(keeper_of "$k2")
rm_sandboxes "$s3"
runtime image rm clonetest >/dev/null 2>"$tmp/err"
is "image rm of the new version" "$?" "0"
is "… removes its template" "$(templates_of "$v2")" ""
wait_until 10 sh -c "! kill -0 ${kp2:-none} 2>/dev/null"
check "… ends its keeper (${kp2:-none})" sh -c "! kill -0 ${kp2:-none} 2>/dev/null"
is "… and its socket" "$(keeper_socks | grep -c "${k2:0:32}")" "0"

# -- nothing left: the other keepers end once idle
wait_until $((RUNTIME_TEMPLATE_KEEP_S + 20)) no_keeper
is "keepers end after RUNTIME_TEMPLATE_KEEP_S s unasked" "$(keeper_pids)" ""
is "… taking their sockets along" "$(keeper_socks)" ""
# Lock files are no leak (as libtest.sh's .lock): what else is there is.
is "<state>/.templates holds nothing but lock files" "$(ls -A "$kdir" 2>/dev/null | grep -v '\.lock$')" ""
rm -rf "$kdir" "$RUNTIME_STATE_DIR/.pool.lock"
is "no template maker runs" "$(maker_qemus)" ""
is "nothing half-made is left" "$(tmp_dirs)" ""
is "no sandbox network namespace is left" "$(new_netns)" ""
check_no_leaks "clones"
done_testing
