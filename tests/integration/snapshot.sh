#!/bin/bash
# snapshot.sh - pause to disk, snapshots, fork, idle pause and auto-wake
# a counter process in the guest keeps counting (same pid,
# same token in its memory) across pause/wake, snapshot -> create
# --snapshot and fork, and the children diverge afterwards; a paused
# sandbox holds no QEMU and no monitor; a child keeps its source's rules
# and secrets; every child is unique; kill -9 of the CLI during a pause, a
# snapshot or a fork leaves a consistent store; idle pause fires and
# auto-wake brings the sandbox back for an exec.  Boots cost seconds under
# TCG: one long-lived source (2 vCPU, 1024 MiB) serves most checks.
. "$(dirname "$0")/libtest.sh"
. "$(dirname "$0")/testnet.sh"
exec </dev/null

# A private image store (image rm is tried below) and a private cache whose
# disks are hard links: a wrong `image rm` could only unlink our links.
shared_cache=${RUNTIME_CACHE_DIR:-/var/cache/runtime}
export RUNTIME_CACHE_DIR="$tmp/cache" RUNTIME_DATA_DIR="$tmp/data"
mkdir -p "$RUNTIME_CACHE_DIR/disks" "$RUNTIME_DATA_DIR"
for f in "$shared_cache"/*; do
    case ${f##*/} in templates | disks) ;; *) [ -e "$f" ] && ln -s "$f" "$RUNTIME_CACHE_DIR/" ;; esac
done
ln "$shared_cache"/disks/*.ext4 "$RUNTIME_CACHE_DIR/disks/" 2>/dev/null
# The default image from the suite's store (prepare.sh), else the host's.
for d in "${RUNTIME_TEST_DATA:-}/images" /var/lib/runtime/images; do
    if [ -f "$d/index.json" ]; then cp -al "$d" "$RUNTIME_DATA_DIR/"; break; fi
done
snaps=$RUNTIME_DATA_DIR/snapshots

tag="st$$"
value="sk-snap-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
made=()

# The counter: every 0.2 s "N TOKEN PID" into /tmp/count (renamed into
# place, so a reader never sees half a line); TOKEN lives only in its
# memory.
COUNTER='import os, time
tok = os.urandom(8).hex()
n = 0
while True:
    n += 1
    with open("/tmp/count.new", "w") as f:
        f.write("%d %s %d\n" % (n, tok, os.getpid()))
    os.rename("/tmp/count.new", "/tmp/count")
    time.sleep(0.2)'

in_sb() { runtime sandbox exec "$1" -- "$2" 2>&1; }
get() { runtime sandbox get "$1" --json 2>/dev/null | json_get "$2" 2>/dev/null; }
state_of() { get "$1" 'o["state"]'; }
# count ID: the counter's "N TOKEN PID" in that sandbox.
count() { runtime sandbox exec "$1" -- cat /tmp/count 2>/dev/null; }
field() { echo "$1" | cut -d' ' -f"$2"; }
ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
ids_of() { python3 -c 'import json,sys; [print(s["id"]) for s in json.load(sys.stdin)]'; }
all_sandboxes() { runtime sandbox ls --all --json 2>/dev/null | ids_of; }
# The snapshot store: complete ones, and dirs being made.
state_dirs() { (cd "$RUNTIME_STATE_DIR" 2>/dev/null && compgen -G 'sb-*' | sort); }
snap_dirs() { ls "$snaps" 2>/dev/null | grep -E '^snap-[0-9a-f]{12}$' || true; }
half_dirs() { ls -a "$snaps" 2>/dev/null | grep -E '^\.(tmp|fork)-' || true; }
no_half() { [ -z "$(half_dirs)" ]; }
listed_snaps() { runtime snapshot ls --json 2>/dev/null | ids_of; }
# swept: a command that sweeps has run, and nothing half-made is left.
swept() { runtime snapshot ls >/dev/null 2>&1; no_half; }
qemu_of() { pgrep -f "qemu-system-x86_64.*$1" 2>/dev/null || true; }
monitor_pid() { cut -d' ' -f1 "$RUNTIME_STATE_DIR/$1/monitor.pid" 2>/dev/null; }
# paused_on_disk ID: its monitor gone and its record saying paused, seen
# without asking anything (a `get` could count as activity).
paused_on_disk() {
    local m
    m=$(monitor_pid "$1")
    { [ -z "$m" ] || ! kill -0 "$m" 2>/dev/null; } && grep -q '"state":"paused"' "$RUNTIME_STATE_DIR/$1/state.json" 2>/dev/null
}
wait_until() {
    local end=$((SECONDS + $1))
    shift
    until "$@"; do
        [ "$SECONDS" -ge "$end" ] && return 1
        sleep 0.2
    done
}
settled() { case $(state_of "$1") in running | paused | stopped) return 0 ;; esac; return 1; }
# new_sandbox VAR ARGS…: `sandbox create ARGS…` into VAR (empty on failure).
new_sandbox() {
    local var=$1 out
    shift
    out=$(runtime sandbox create "$@" 2>"$tmp/create.err")
    [ -n "$out" ] && made+=($out)
    printf -v "$var" '%s' "$out"
    [ -n "$out" ] || diag "create $* failed: $(cat "$tmp/create.err")"
}
rm_sandboxes() {
    local id
    for id in "$@"; do [ -n "$id" ] && timeout 60 runtime sandbox rm "$id" >/dev/null 2>&1; done
}
# ident ID: random bytes from a new process, boot id, machine id, hostname.
ident() {
    in_sb "$1" 'python3 -c "import os; print(os.urandom(16).hex())"; cat /proc/sys/kernel/random/boot_id /etc/machine-id /proc/sys/kernel/hostname'
}
records=
last_record() {
    python3 -c "import json,sys; r=json.loads(open(sys.argv[1]).read().splitlines()[-1]); h=dict(r['headers']); print($1)" "$records"
}

teardown() {
    local s
    rm_sandboxes "${made[@]}" $(all_sandboxes)
    for s in $(listed_snaps); do runtime snapshot rm "$s" >/dev/null 2>&1; done
    runtime secrets rm SNAP_KEY >/dev/null 2>&1
    testnet_down
    cleanup
}
trap teardown EXIT

if ! testnet_up; then
    echo "Bail out! cannot make the test network"
    exit 1
fi
records="$TESTNET_DIR/requests.jsonl"
# The egress proxy trusts the test CA as an admin would add one (swap.sh).
cat /etc/ssl/certs/ca-certificates.crt "$TESTNET_CA" >"$tmp/host-bundle.pem"
export SSL_CERT_FILE="$tmp/host-bundle.pem"

# -- refused before anything boots
expect_error "fork --count 0 is a usage error" usage runtime sandbox fork sb-000000000000 --count 0
expect_error "fork --count 17 (over RT_MAX_FORK) is a usage error" usage runtime sandbox fork sb-000000000000 --count 17
expect_error "snapshot of an unknown sandbox is not_found" not_found runtime sandbox snapshot sb-000000000000
expect_error "create --snapshot of an unknown snapshot is not_found" not_found \
    runtime sandbox create --snapshot snap-000000000000
expect_error "snapshot get of an unknown snapshot is not_found" not_found runtime snapshot get snap-000000000000
expect_error "snapshot rm of an unknown snapshot is not_found" not_found runtime snapshot rm snap-000000000000
is "snapshot ls --json with none is []" "$(runtime snapshot ls --json 2>&1)" "[]"

# -- the source: a secret, an allow list, the counter
printf '%s' "$value" | runtime secrets set SNAP_KEY --host echo.test >/dev/null
ph=$(runtime secrets get SNAP_KEY --json | json_get 'o["placeholder"]')
new_sandbox src --paid --timeout 900 --vcpu 2 --memory 1024 --allow echo.test --label "t=$tag"
if [ -z "$src" ]; then
    fail "the source sandbox starts"
    echo "Bail out! no source sandbox"
    exit 1
fi
ok "the source sandbox starts (2 vCPU, 1024 MiB, --allow echo.test, a secret)"
cpid=$(runtime sandbox spawn "$src" -- python3 -c "$COUNTER" 2>"$tmp/err")
check "the counter is spawned (process ${cpid:-none})" test -n "$cpid"
[ -n "$cpid" ] || diag "$(cat "$tmp/err")"
wait_until 30 sh -c "runtime sandbox exec $src -- test -s /tmp/count 2>/dev/null"
c0=$(count "$src")
tok=$(field "$c0" 2) gpid=$(field "$c0" 3)
check "… and counts ($c0)" test -n "$tok" -a -n "$gpid"
# advancing ID N: the counter in ID is past N, same token and pid.
advancing() {
    local c
    c=$(count "$1")
    [ -n "$c" ] && [ "$(field "$c" 1)" -gt "$2" ] && [ "$(field "$c" 2)" = "$tok" ] && [ "$(field "$c" 3)" = "$gpid" ]
}

# -- pause to disk: no QEMU, no monitor; wake: the same process
# verb_prints_id VERB ID: `sandbox VERB ID` exits 0 and prints ID (timed).
verb_prints_id() {
    local t0 out rc
    t0=$(date +%s%N)
    out=$(runtime sandbox "$1" "$2" 2>"$tmp/err")
    rc=$?
    is "$1 exits 0 and prints the id ($(ms_since "$t0") ms)" "$rc/$out" "0/$2"
    [ "$rc" = 0 ] || diag "$(cat "$tmp/err")"
}
q=$(qemu_of "$src") m=$(monitor_pid "$src")
c1=$(count "$src")
verb_prints_id pause "$src"
is "paused: its QEMU (${q:-none}) is gone" "$(qemu_of "$src")" ""
# The monitor answers the pause, then exits.
wait_until 5 sh -c "! kill -0 ${m:-0} 2>/dev/null"
check "… its monitor (${m:-none}) is gone too" sh -c "! kill -0 ${m:-0} 2>/dev/null"
is "… no QEMU of this test runs at all" "$(our_qemus)" ""
is "get says paused" "$(state_of "$src")" "paused"
is "ls --state paused lists it" "$(runtime sandbox ls --state paused --json | ids_of)" "$src"
ppath=$(get "$src" 'o["paused"]["path"]')
pbytes=$(get "$src" 'o["paused"]["storedBytes"]')
check "get shows where it lives (${ppath:-none}), a dir" test -d "${ppath:-/nonexistent}"
check "… and its size (${pbytes:-none} bytes) > 0" test "${pbytes:-0}" -gt 0
diag "paused: $(du -sh --apparent-size "${ppath:-/nonexistent}" 2>/dev/null | cut -f1) apparent, $(du -sh "${ppath:-/nonexistent}" 2>/dev/null | cut -f1) on disk"
expect_error "exec on a paused sandbox without auto-wake is sandbox_paused" sandbox_paused \
    runtime sandbox exec "$src" -- true
is "… and leaves it paused" "$(state_of "$src")" "paused"
verb_prints_id wake "$src"
is "… running again" "$(state_of "$src")" "running"
c2=$(count "$src")
check "the counter kept its pid and in-memory token across pause/wake ($c1 -> $c2)" \
    test "$(field "$c2" 2)/$(field "$c2" 3)" = "$tok/$gpid"
sleep 1
check "… and counts on: after wake past before pause ($(field "$c1" 1) -> $(count "$src" | cut -d' ' -f1))" \
    advancing "$src" "$(field "$c1" 1)"
check "ps still shows the spawned counter running" grep -qE "^${cpid:-none} +running" <(runtime sandbox ps "$src")
is "waking a running sandbox is no error" "$(runtime sandbox wake "$src" >/dev/null 2>&1; echo $?)" "0"

# -- snapshot -> create --snapshot
cs=$(field "$(count "$src")" 1)
t0=$(date +%s%N)
runtime sandbox snapshot "$src" --name "sn-$tag" --label "t=$tag" --json >"$tmp/snap.json" 2>"$tmp/err"
rc=$?
snap_ms=$(ms_since "$t0")
snap=$(json_get 'o["id"]' <"$tmp/snap.json" 2>/dev/null)
is "snapshot --json exits 0 (${snap_ms} ms)" "$rc" "0"
[ "$rc" = 0 ] || diag "$(cat "$tmp/err")"
check "… its id is snap- and 12 hex digits (${snap:-none})" grep -qxE 'snap-[0-9a-f]{12}' <<<"$snap"
is "… kind, name, state, source, shape" \
    "$(json_get '(o["kind"], o["name"], o["state"], o["sourceSandboxId"], o["shape"]["vcpu"], o["shape"]["memoryMiB"])' \
        <"$tmp/snap.json" 2>&1)" "('snapshot', 'sn-$tag', 'ready', '$src', 2, 1024)"
sbytes=$(json_get 'o["storedBytes"]' <"$tmp/snap.json" 2>/dev/null)
check "… storedBytes > 0 (${sbytes:-none})" test "${sbytes:-0}" -gt 0
is "the source runs on after the snapshot" "$(state_of "$src")" "running"
check "… its counter too" advancing "$src" "$cs"
is "snapshot ls --json lists it" "$(listed_snaps)" "${snap:-none}"
is "snapshot get by name" "$(runtime snapshot get "sn-$tag" --json 2>&1 | json_get 'o["id"]' 2>&1)" "$snap"
check "snapshot ls (table) shows it" grep -q "$snap" <(runtime snapshot ls)
is "its dir is complete, nothing half-made beside it" "$(snap_dirs)/$(half_dirs)" "${snap:-none}/"
expect_error "a second snapshot with that name is name_taken" name_taken runtime sandbox snapshot "$src" --name "sn-$tag"
t0=$(date +%s%N)
new_sandbox c --snapshot "$snap"
child_ms=$(ms_since "$t0")
check "create --snapshot starts a sandbox (${child_ms} ms)" test -n "$c"
cc=$(count "$c")
check "the child continues the counter: same token and pid, count ${cc:-none} >= $cs" \
    test -n "$cc" -a "$(field "$cc" 2)/$(field "$cc" 3)" = "$tok/$gpid" -a "$(field "$cc" 1)" -ge "$cs"
sleep 1
check "… and it counts on in the child" advancing "$c" "$(field "$cc" 1)"
is "the child's rules are the source's" "$(get "$c" 'o["network"]')" "$(get "$src" 'o["network"]')"
is "… as sandbox network shows them" "$(runtime sandbox network "$c" 2>&1)" "$(runtime sandbox network "$src" 2>&1)"
is "… and hold: a host off the allow list is refused (403)" \
    "$(runtime sandbox exec "$c" -- curl -s -m 10 -o /dev/null -w '%{http_code}' http://http.test/ 2>/dev/null)" "403"
is "the child has the secret's placeholder" "$(in_sb "$c" 'printenv SNAP_KEY')" "$ph"
is "… which its proxy swaps on the allowed, bound host" \
    "$(in_sb "$c" 'curl -sS --fail -m 20 https://echo.test/record -H "Authorization: Bearer $SNAP_KEY"')" "recorded"
is "… the server got the value" "$(last_record 'h["Authorization"]' 2>&1)" "Bearer $value"
ident "$src" >"$tmp/ident.src"
ident "$c" >"$tmp/ident.c"
in_sb "$c" 'echo from-c >/workspace/from-c; sync' >/dev/null
is "a file written in the child is not in the source" "$(in_sb "$src" 'ls /workspace/from-c 2>/dev/null | wc -l')" "0"
runtime snapshot rm "$snap" >/dev/null 2>"$tmp/err"
is "snapshot rm exits 0" "$?" "0"
is "… it is gone from ls and from the store" "$(listed_snaps)/$(snap_dirs)" "/"
is "… and the child made from it runs on" "$(in_sb "$c" 'cat /workspace/from-c')" "from-c"
rm_sandboxes "$c"
diag "state dirs: $(state_dirs | tr '\n' ' ')"

# -- fork --count 2: the children continue the counter, then diverge
cf=$(field "$(count "$src")" 1)
t0=$(date +%s%N)
runtime sandbox fork "$src" --count 2 --label "t=$tag" >"$tmp/fork.out" 2>"$tmp/err"
rc=$?
fork_ms=$(ms_since "$t0")
kids=($(cat "$tmp/fork.out"))
made+=("${kids[@]}")
a=${kids[0]:-} b=${kids[1]:-}
is "fork --count 2 exits 0 (${fork_ms} ms)" "$rc" "0"
[ "$rc" = 0 ] || diag "$(cat "$tmp/err")"
is "… prints two new ids, a line each" "$(grep -cxE 'sb-[0-9a-f]{12}' "$tmp/fork.out")/$(wc -l <"$tmp/fork.out")" "2/2"
check "… not the source's, not each other's" test -n "$a" -a -n "$b" -a "$a" != "$b" -a "$a" != "$src" -a "$b" != "$src"
is "… both running, with the fork's label" \
    "$(runtime sandbox ls --label "t=$tag" --state running --json | ids_of | grep -vx "$src" | sort | tr '\n' ' ')" \
    "$(printf '%s\n' "$a" "$b" | sort | tr '\n' ' ')"
is "no .fork- dir is left once they run" "$(half_dirs)" ""
is "the source runs on after the fork" "$(state_of "$src")" "running"
ca=$(count "$a") cb=$(count "$b")
check "child A continues the counter: same token and pid, count >= $cf (${ca:-none})" \
    test -n "$ca" -a "$(field "$ca" 2)/$(field "$ca" 3)" = "$tok/$gpid" -a "$(field "$ca" 1)" -ge "$cf"
check "child B too (${cb:-none})" \
    test -n "$cb" -a "$(field "$cb" 2)/$(field "$cb" 3)" = "$tok/$gpid" -a "$(field "$cb" 1)" -ge "$cf"
# A trial child of a paid source would have other rules (ports 80 and 443
# only) and spend the trial's hours.
is "the children keep the source's funding" "$(get "$a" 'o["funding"]') $(get "$b" 'o["funding"]')" \
    "$(get "$src" 'o["funding"]') $(get "$src" 'o["funding"]')"
is "the children keep the source's rules" "$(get "$a" 'o["network"]') $(get "$b" 'o["network"]')" \
    "$(get "$src" 'o["network"]') $(get "$src" 'o["network"]')"
# Divergence: A's counter stopped, B's and the source's count on.
in_sb "$a" "kill $gpid; echo only-a >/workspace/only-a; mkdir -p /dev/shm; echo only-a >/dev/shm/only-a; sync" >/dev/null
in_sb "$src" "echo only-src >/workspace/only-src; sync" >/dev/null
sleep 0.5
ka=$(field "$(count "$a")" 1) kb=$(field "$(count "$b")" 1) ks=$(field "$(count "$src")" 1)
sleep 1.5
check "after the counter is killed in child A, A's count stays (${ka:-?} -> $(count "$a" | cut -d' ' -f1))" \
    test -n "$ka" -a "$(count "$a" | cut -d' ' -f1)" = "$ka"
check "… while B's counts on (${kb:-?} -> $(count "$b" | cut -d' ' -f1))" advancing "$b" "${kb:-0}"
check "… and the source's (${ks:-?} -> $(count "$src" | cut -d' ' -f1))" advancing "$src" "${ks:-0}"
is "a file written in child A (disk and memory) is there" "$(in_sb "$a" 'cat /workspace/only-a /dev/shm/only-a')" \
    "$(printf 'only-a\nonly-a')"
is "… and not in child B" "$(in_sb "$b" 'ls /workspace/only-a /dev/shm/only-a 2>/dev/null | wc -l')" "0"
is "… nor in the source" "$(in_sb "$src" 'ls /workspace/only-a /dev/shm/only-a 2>/dev/null | wc -l')" "0"
is "a file the source wrote after the fork is in neither child" \
    "$(in_sb "$a" 'ls /workspace/only-src 2>/dev/null | wc -l') $(in_sb "$b" 'ls /workspace/only-src 2>/dev/null | wc -l')" \
    "0 0"
ident "$a" >"$tmp/ident.a"
ident "$b" >"$tmp/ident.b"
rm_sandboxes "$a" "$b"
diag "state dirs: $(state_dirs | tr '\n' ' ')"

# -- every child unique: the source, the snapshot's child, the fork's two
i=0
for what in "os.urandom(16) of a new process" "boot_id" "machine-id" "hostname"; do
    i=$((i + 1))
    vals=$(for w in src c a b; do sed -n "${i}p" "$tmp/ident.$w"; done)
    check "$what differs between the source and each child, and between children ($(echo $vals))" \
        test "$(grep -c . <<<"$vals")" = 4 -a "$(sort -u <<<"$vals" | grep -c .)" = 4
done
is "each one's hostname is its own id" "$(for w in src c a b; do sed -n 4p "$tmp/ident.$w"; done | tr '\n' ' ')" \
    "$src ${c:-?} ${a:-?} ${b:-?} "

# -- idle pause and auto-wake (two small cold sandboxes, idle together)
new_sandbox i1 --paid --vcpu 1 --memory 512 --idle-pause 10 --auto-wake --label "t=$tag"
new_sandbox i2 --paid --vcpu 1 --memory 512 --idle-pause 10 --label "t=$tag"
check "create --idle-pause 10 [--auto-wake] starts two sandboxes" test -n "$i1" -a -n "$i2"
is "get shows idlePauseSeconds and autoWake" \
    "$(get "$i1" '(o["idlePauseSeconds"], o["autoWake"])') $(get "$i2" '(o["idlePauseSeconds"], o["autoWake"])')" \
    "(10, True) (10, False)"
t0=$SECONDS
wait_until 60 paused_on_disk "$i1"
w1=$((SECONDS - t0))
wait_until $((60 - w1)) paused_on_disk "$i2"
w2=$((SECONDS - t0))
is "after 10 s idle the auto-wake one pauses itself (${w1} s)" "$(state_of "$i1")" "paused"
is "… and the other (${w2} s)" "$(state_of "$i2")" "paused"
is "… no QEMU left for them" "$(qemu_of "$i1")$(qemu_of "$i2")" ""
t0=$(date +%s%N)
out=$(runtime sandbox exec "$i1" -- echo hi 2>"$tmp/err")
rc=$?
is "exec on the paused auto-wake sandbox wakes it and runs ($(ms_since "$t0") ms)" "$rc/$out" "0/hi"
[ "$rc" = 0 ] || diag "$(cat "$tmp/err")"
is "… it is running again" "$(state_of "$i1")" "running"
expect_error "exec on the paused one without auto-wake is sandbox_paused" sandbox_paused \
    runtime sandbox exec "$i2" -- echo hi
runtime sandbox wake "$i2" >/dev/null 2>"$tmp/err"
is "… wake, then exec works" "$(runtime sandbox exec "$i2" -- echo hi 2>&1)" "hi"
runtime sandbox update "$i1" --idle-pause 30 --auto-wake off >/dev/null 2>"$tmp/err"
rc=$?
is "update --idle-pause 30 --auto-wake off exits 0" "$rc" "0"
[ "$rc" = 0 ] || diag "$(cat "$tmp/err")"
is "… get shows it" "$(get "$i1" '(o["idlePauseSeconds"], o["autoWake"])')" "(30, False)"
rm_sandboxes "$i1" "$i2"
diag "state dirs: $(state_dirs | tr '\n' ' ')"

# -- kill -9 of the CLI mid-operation: the store stays consistent
known=" $src "
# strays: sandboxes this test does not know of (a killed fork's children).
strays() { all_sandboxes | while read -r s; do [[ $known == *" $s "* ]] || echo "$s"; done; }
# after_kill WHAT: the source settles running or paused (woken if paused)
# and its counter runs on; every listed snapshot is whole; nothing half-made
# is left once a command has swept.
after_kill() {
    local what=$1 st s bad=""
    wait_until 60 settled "$src"
    st=$(state_of "$src")
    check "kill -9 of $what: the source is still running or paused ($st)" test "$st" = running -o "$st" = paused
    if [ "$st" = paused ]; then
        runtime sandbox wake "$src" >/dev/null 2>"$tmp/err" || diag "wake: $(cat "$tmp/err")"
    fi
    s=$(field "$(count "$src")" 1)
    sleep 0.5
    check "… exec works on it (woken if paused) and its counter runs on" advancing "$src" "${s:-0}"
    wait_until 30 swept
    is "… no .tmp- or .fork- dir is left after the next command's sweep" "$(half_dirs)" ""
    for s in $(listed_snaps); do runtime snapshot get "$s" --json >/dev/null 2>&1 || bad="$bad $s"; done
    is "… every snapshot listed ($(listed_snaps | tr '\n' ' ')) can be read" "${bad:-none}" "none"
    is "… the listed ones are exactly the complete dirs" "$(listed_snaps | sort | tr '\n' ' ')" \
        "$(snap_dirs | sort | tr '\n' ' ')"
}
# kill_during POINT ARGS…: `runtime ARGS…` in the background, kill -9
# after POINT: a number of seconds, or a command polled for up to 3 s.
kill_during() {
    local point=$1 pid t0
    shift
    runtime "$@" >"$tmp/kill.out" 2>"$tmp/kill.err" &
    pid=$!
    t0=$(date +%s%N)
    if [[ $point =~ ^[0-9.]+$ ]]; then
        sleep "$point"
    else
        for _ in $(seq 150); do $point && break; sleep 0.02; done
    fi
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    diag "kill -9 of '$*' after $(ms_since "$t0") ms; store: $(ls -a "$snaps" 2>/dev/null | grep -v '^\.\.\?$' | tr '\n' ' ')" \
        "state dirs: $(state_dirs | tr '\n' ' ')"
}
kill_during 0.2 sandbox pause "$src"
after_kill "pause (0.2 s in)"
half_made() { [ -n "$(half_dirs)" ]; }
kill_during half_made sandbox snapshot "$src" --name "killed-$tag"
after_kill "snapshot (once its .tmp- dir exists)"
for s in $(listed_snaps); do runtime snapshot rm "$s" >/dev/null 2>&1; done
kill_during half_made sandbox fork "$src" --count 2 --label "t=$tag"
after_kill "fork --count 2 (once its .fork- dir exists)"
# A child being made: a sandbox dir in the state dir that was not there before.
before=$(state_dirs)
child_started() { [ -n "$(comm -13 <(echo "$before") <(state_dirs))" ]; }
kill_during child_started sandbox fork "$src" --count 2 --label "t=$tag"
after_kill "fork --count 2 (once its first child's state dir exists)"
st=$(strays)
for s in $st; do wait_until 60 settled "$s"; done
bad=""
for s in $st; do
    case $(state_of "$s") in
    running) [ "$(in_sb "$s" 'echo up')" = up ] || bad="$bad $s" ;;
    stopped) ;;
    *) bad="$bad $s($(state_of "$s"))" ;;
    esac
done
is "… each child it left ($(echo $st)) is whole: running and answering, or stopped" "${bad:-none}" "none"
rm_sandboxes $st
is "… and once they are removed, only the source's QEMU runs" "$(our_qemus)" "$(qemu_of "$src")"
# A create killed between making its state dir and writing its owner file
# leaves a dir with neither that nor monitor.pid: the next command that
# reaps removes it once it is 60 s old (reap_states, records/reap.c).
orphans() {
    local d
    for d in $(state_dirs); do
        [ -e "$RUNTIME_STATE_DIR/$d/monitor.pid" ] || [ -e "$RUNTIME_STATE_DIR/$d/owner" ] || echo "$d"
    done
}
reaped() { [ -z "$(orphans)" ] && return 0; sleep 2; runtime sandbox ls >/dev/null 2>&1; [ -z "$(orphans)" ]; }
o=$(orphans)
if [ -n "$o" ]; then
    diag "half-made state dirs left by a killed create: $o ($(ls -A "$RUNTIME_STATE_DIR/$o" 2>/dev/null | tr '\n' ' '))"
    wait_until 75 reaped
    is "… a half-made state dir a killed create left is reaped once 60 s old" "$(orphans)" ""
fi

# -- a snapshot outlives its source and holds its image
for s in $(listed_snaps); do runtime snapshot rm "$s" >/dev/null 2>&1; done
cl=$(field "$(count "$src")" 1)
last=$(runtime sandbox snapshot "$src" 2>"$tmp/err")
check "a last snapshot of the source (${last:-none})" test -n "$last"
[ -n "$last" ] || diag "$(cat "$tmp/err")"
img=$(get "$src" 'o["image"]')
rm_sandboxes "$src"
expect_error "with no sandbox left, image rm of the image the snapshot needs is image_in_use" image_in_use \
    runtime image rm "${img:-runtime}"
new_sandbox d --snapshot "${last:-none}"
sleep 0.5
check "create --snapshot after its source is removed continues the counter (past $cl)" advancing "${d:-none}" "${cl:-0}"
rm_sandboxes "$d"
runtime snapshot rm "${last:-none}" >/dev/null 2>"$tmp/err"
is "… snapshot rm of it exits 0" "$?" "0"

# -- the end: nothing left
is "all removed: no sandbox listed" "$(all_sandboxes)" ""
is "… no snapshot listed" "$(listed_snaps)" ""
is "… the snapshot store holds nothing but its lock" "$(ls -A "$snaps" 2>/dev/null | grep -v '^\.lock$')" ""
runtime secrets rm SNAP_KEY >/dev/null 2>&1
for d in $(state_dirs); do
    diag "left: $d: $(ls -A "$RUNTIME_STATE_DIR/$d" | tr '\n' ' ')" "$(cat "$RUNTIME_STATE_DIR/$d/state.json" 2>/dev/null)"
done
check_no_leaks "snapshots"
done_testing
