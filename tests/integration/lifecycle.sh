#!/bin/bash
# lifecycle.sh - sandboxes that outlive one command: create, exec, ls, get,
# extend, pause/wake, stop, rm.  Boots cost seconds under TCG, so one
# long-lived sandbox serves most checks; a second one, with a 60 s lease,
# ends by itself while they run.  With RUNTIME_TEST_REMOTE=1 (meson test
# lifecycle-remote) every command is a client of a `runtime serve` of this
# machine (libremote.sh), and every check stands as it is.
. "$(dirname "$0")/libtest.sh"
. "$(dirname "$0")/libremote.sh"

# Nothing reads a terminal by accident; the stdin checks pipe their own.
exec </dev/null

tag="lc$$"            # labels every sandbox made here, for the cleanup
name="lc-main-$$"
secret="v4lue-$$-$RANDOM-do-not-show"
made=()

remove_ours() {
    local id
    for id in "${made[@]}" $(timeout 60 runtime sandbox ls --all --label "t=$tag" --json 2>/dev/null | ids); do
        timeout 60 runtime sandbox rm "$id" >/dev/null 2>&1
    done
    stop_server
    cleanup
}
trap remove_ours EXIT
if [ "${RUNTIME_TEST_REMOTE:-}" = 1 ]; then
    start_server || { fail "runtime serve starts"; done_testing; }
fi

# ids: the ids in a JSON array of sandboxes on stdin.
ids() { python3 -c 'import json,sys; [print(s["id"]) for s in json.load(sys.stdin)]'; }
# jq_ EXPR: evaluates a Python expression over the JSON on stdin (as o).
jq_() { python3 -c 'import json,sys; o=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }
epoch() { date -d "$1" +%s 2>/dev/null || echo 0; }
state_of() { runtime sandbox get "$1" --json 2>/dev/null | jq_ 'o["state"]'; }

# -- checked before anything boots
expect_error "a bad env name at create is invalid_env" invalid_env runtime sandbox create --env 1BAD=x
expect_error "--on-timeout takes only pause or stop" usage runtime sandbox create --on-timeout later
expect_error "--get-or-create needs --name" usage runtime sandbox create --get-or-create
expect_error "a lease under 60 s is refused" usage runtime sandbox create --timeout 30
runtime sandbox create --help >"$tmp/out"; is "create --help exits 0" "$?" 0
check "… and lists --on-timeout" grep -q -- "--on-timeout" "$tmp/out"

# -- a sandbox whose 60 s lease stops it; looked at again near the end
lease=$(runtime sandbox create --timeout 60 --on-timeout stop --vcpu 1 --memory 512 --label "t=$tag" --label "u=$tag" 2>"$tmp/err")
rc=$?; lease_made=$(date +%s)
made+=($lease)
is "create with a 60 s lease" "$rc" 0
[ "$rc" = 0 ] || diag "$(cat "$tmp/err")"
is "… its lease and what ends it" \
    "$(runtime sandbox get "$lease" --json | jq_ 'o["timeoutSeconds"], o["onLeaseEnd"]')" "(60, 'stop')"
check "… a QEMU runs for it" test -n "$(pgrep -f "qemu-system-x86_64.*$lease")"
# … and one left to the default end of a lease: pause.
# (u=$tag: the lease and this one, for prune: one stopped, one live.)
please=$(runtime sandbox create --timeout 60 --vcpu 1 --memory 512 --label "u=$tag")
made+=($please)

# -- the long-lived sandbox
runtime sandbox create --name "$name" --label "t=$tag" --label role=main --env "LC_SECRET=$secret" \
    --vcpu 1 --memory 1024 >"$tmp/out" 2>"$tmp/err"
rc=$?
id=$(cat "$tmp/out")
made+=($id)
is "create exits 0" "$rc" 0
check "create prints only an id" grep -qxE 'sb-[0-9a-f]{12}' <(printf '%s\n' "$id")
is "… on one line" "$(wc -l <"$tmp/out")" 1

out=$(runtime sandbox exec "$name" -- echo by-name); rc=$?
is "exec by name" "$out/$rc" "by-name/0"

expect_error "a second sandbox with that name is name_taken" name_taken runtime sandbox create --name "$name" \
    --label "t=$tag"
out=$(runtime sandbox create --name "$name" --get-or-create --label "t=$tag")
is "--get-or-create returns the same id" "$out" "$id"
[ "$out" != "$id" ] && [ -n "$out" ] && made+=($out)

# -- ls
runtime sandbox ls >"$tmp/ls"
check "ls header" grep -qE '^ID +NAME +STATE +CPU/MIB +FUNDING +EXPIRES$' <(head -1 "$tmp/ls")
check "ls row: id, name, state, CPU/MIB" grep -qE "^$id +$name +running +1/1024 +[a-z]+ +[0-9]{4}-" "$tmp/ls"
is "ls --json lists it" "$(runtime sandbox ls --json | ids | grep -c "^$id\$")" 1
is "ls --label (every label must match)" "$(runtime sandbox ls --label "t=$tag" --label role=main --json | ids)" "$id"
is "ls --label with no match prints only the header" "$(runtime sandbox ls --label role=nobody | wc -l)" 1
is "ls --state running" "$(runtime sandbox ls --state running --label role=main --json | ids)" "$id"
is "ls --state paused: none yet" "$(runtime sandbox ls --state paused --label "t=$tag" --json)" "[]"
expect_error "ls --state takes only a real state" usage runtime sandbox ls --state sleeping
is "ls lists oldest first" "$(runtime sandbox ls --label "t=$tag" --json | ids | tr '\n' ' ')" "$lease $id "

# -- get
fields="id kind name labels state funding vcpu memoryMiB diskMiB image timeoutSeconds onLeaseEnd createdAt expiresAt
endedAt stopReason network envNames cpuSeconds chargedMicros"
runtime sandbox get "$id" --json >"$tmp/get.json"
is "get --json has every field" "$(python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print(" ".join(k for k in sys.argv[2].split() if k not in o) or "all")' "$tmp/get.json" "$fields")" "all"
is "get --json values" "$(jq_ 'o["id"], o["kind"], o["name"], o["state"], o["vcpu"], o["memoryMiB"], o["timeoutSeconds"], o["onLeaseEnd"], o["endedAt"], o["stopReason"]' <"$tmp/get.json")" \
    "('$id', 'sandbox', '$name', 'running', 1, 1024, 1800, 'pause', None, None)"
is "get --json labels" "$(jq_ 'sorted(o["labels"].items()) if isinstance(o["labels"], dict) else sorted(x.split("=",1) for x in o["labels"])' <"$tmp/get.json" | tr -d ' ')" \
    "[('role','main'),('t','$tag')]"
is "get --json envNames" "$(jq_ 'o["envNames"]' <"$tmp/get.json")" "['LC_SECRET']"
runtime sandbox get "$name" >"$tmp/get.txt"
missing=""
for f in $fields; do grep -qE "^$f +[^ ]" "$tmp/get.txt" || missing="$missing $f"; done
is "get (text) shows every field" "${missing:-none}" "none"
check "get: id" grep -qE "^id +$id\$" "$tmp/get.txt"
check "get: labels as k=v" grep -qE "^labels +.*role=main" "$tmp/get.txt"
check "get: envNames" grep -qE "^envNames +LC_SECRET\$" "$tmp/get.txt"
check "get: null as -" grep -qE "^endedAt +-\$" "$tmp/get.txt"

# -- exec
out=$(runtime sandbox exec "$id" -- printf '[%s]' 'a b' '"q"' '$HOME' '*' '')
is "exec: argv unmangled, no shell" "$out" "[a b][\"q\"][\$HOME][*][]"
out=$(runtime sandbox exec "$id" -- 'echo $((6*7)); echo $0')
is "exec: one argument runs under bash -c" "$out" "$(printf '42\nbash')"
is "exec --cwd" "$(runtime sandbox exec "$id" --cwd /tmp -- pwd)" "/tmp"
is "exec runs in /workspace by default" "$(runtime sandbox exec "$id" -- pwd)" "/workspace"
expect_error "a relative --cwd is refused" usage runtime sandbox exec "$id" --cwd tmp -- pwd
is "create-time env reaches exec" "$(runtime sandbox exec "$id" -- bash -c 'echo "$LC_SECRET"')" "$secret"
is "exec --env overrides it and adds" \
    "$(runtime sandbox exec "$id" --env LC_SECRET=over --env LC_NEW=1 -- bash -c 'echo "$LC_SECRET $LC_NEW"')" "over 1"
expect_error "a bad exec --env name" invalid_env runtime sandbox exec "$id" --env 'A-B=1' -- true
out=$(printf 'from the host\n' | runtime sandbox exec "$id" -- tr a-z A-Z)
is "piped stdin reaches the command" "$out" "FROM THE HOST"
head -c 1100000 /dev/zero | runtime sandbox exec "$id" -- wc -c >"$tmp/out" 2>"$tmp/err"; rc=$?
is "stdin over 1 MiB: exit 1" "$rc" 1
check "… a usage error" grep -q '^Error \[usage\]: ' "$tmp/err"
runtime sandbox exec "$id" -- true; is "exit 0" "$?" 0
runtime sandbox exec "$id" -- bash -c 'exit 3'; is "exit 3 passed through" "$?" 3
runtime sandbox exec "$id" -- bash -c 'kill -USR1 $$'; is "signal USR1 gives 138" "$?" 138
start=$(date +%s)
runtime sandbox exec "$id" --timeout 2 -- sleep 60 2>"$tmp/err"; rc=$?
is "--timeout 2 gives 124" "$rc" 124
check "… with the message" grep -qF "runtime: timed out after 2 s; the command's process group was killed." "$tmp/err"
check "… without waiting for the command" test $(($(date +%s) - start)) -lt 30
runtime sandbox exec "$id" -- bash -c 'echo out1; echo err1 >&2' >"$tmp/o" 2>"$tmp/e"
is "stdout and stderr kept apart" "$(cat "$tmp/o")/$(cat "$tmp/e")" "out1/err1"
json=$(runtime sandbox exec "$id" --json -- bash -c 'echo hi; echo oops >&2; exit 5'); rc=$?
is "--json keeps the exit code" "$rc" 5
is "--json result" "$(printf '%s' "$json" | jq_ 'sorted(o), o["exitCode"], o["stdout"], o["stderr"], o["timedOut"], o["stdoutTruncated"], o["stderrTruncated"], type(o["durationMs"]).__name__')" \
    "(['durationMs', 'exitCode', 'stderr', 'stderrTruncated', 'stdout', 'stdoutTruncated', 'timedOut'], 5, 'hi\\n', 'oops\\n', False, False, False, 'int')"
json=$(runtime sandbox exec "$id" --json --timeout 60 -- head -c 100000 /dev/zero)
is "--json with --timeout 60 caps stdout at 64 KiB" "$(printf '%s' "$json" | jq_ 'len(o["stdout"]), o["stdoutTruncated"]')" "(65536, True)"
json=$(runtime sandbox exec "$id" --json -- head -c 100000 /dev/zero)
is "--json alone sets no timeout: 100 kB kept whole" "$(printf '%s' "$json" | jq_ 'len(o["stdout"]), o["stdoutTruncated"]')" "(100000, False)"

runtime sandbox exec "$id" -- bash -c 'echo kept > /workspace/state-file' &&
    is "state kept between execs" "$(runtime sandbox exec "$id" -- cat /workspace/state-file)" "kept"
pid=$(runtime sandbox exec "$id" -- bash -c 'sleep 300 & echo $!')
check "a background process got a pid" test -n "$pid"
is "what a command started ends when it returns" \
    "$(runtime sandbox exec "$id" -- bash -c "test -e /proc/${pid:-1} && echo alive || echo gone")" "gone"

# Ctrl-C: SIGTERM into the sandbox, exit 130; the sandbox lives on.
runtime sandbox exec "$id" -- bash -c 'trap "echo got-term; exit 7" TERM; echo ready; while :; do sleep 0.1; done' \
    >"$tmp/int" 2>&1 &
bg=$!
for _ in $(seq 300); do grep -q ready "$tmp/int" 2>/dev/null && break; sleep 0.1; done
kill -INT $bg; wait $bg; rc=$?
is "Ctrl-C on exec exits 130" "$rc" 130
check "… after the command got SIGTERM" grep -q got-term "$tmp/int"

# Eight clients at once on the one sandbox: each output whole and its own.
pids=()
for k in 1 2 3 4 5 6 7 8; do
    runtime sandbox exec "$id" -- bash -c "yes client-$k-0123456789abcdef | head -c 200000; echo e$k >&2" \
        >"$tmp/c$k.out" 2>"$tmp/c$k.err" &
    pids+=($!)
done
bad=""
for k in 1 2 3 4 5 6 7 8; do
    wait "${pids[k - 1]}" || bad="$bad rc$k"
    yes "client-$k-0123456789abcdef" | head -c 200000 | cmp -s - "$tmp/c$k.out" || bad="$bad out$k"
    [ "$(cat "$tmp/c$k.err")" = "e$k" ] || bad="$bad err$k"
done
is "8 concurrent execs: every output intact and separate" "${bad:-none}" "none"

# -- the env value is shown nowhere
check "get --json never shows an env value" bash -c "! runtime sandbox get '$id' --json | grep -qF -- '$secret'"
check "ls --json never shows an env value" bash -c "! runtime sandbox ls --all --json | grep -qF -- '$secret'"
check "no file of the runtime holds an env value" \
    bash -c "! grep -rqF --exclude-dir=images -- '$secret' '$RUNTIME_STATE_DIR' '$RUNTIME_DATA_DIR'"

# -- extend
before=$(runtime sandbox get "$id" --json | jq_ 'o["expiresAt"]')
after=$(runtime sandbox extend "$id" 600); rc=$?
is "extend exits 0" "$rc" 0
check "extend prints an RFC 3339 time" grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}' <(echo "$after")
check "… later than before" test "$(epoch "$after")" -gt "$(epoch "$before")"
is "get shows the new end" "$(epoch "$(runtime sandbox get "$id" --json | jq_ 'o["expiresAt"]')")" "$(epoch "$after")"
expect_error "an end more than 1 h from now is invalid_request" invalid_request runtime sandbox extend "$id" 7200
expect_error "SECONDS must be positive" usage runtime sandbox extend "$id" 0
is "extend --json" "$(runtime sandbox extend "$id" 1 --json | jq_ 'o["id"], type(o["expiresAt"]).__name__')" "('$id', 'str')"

# -- pause and wake
is "pause prints the id" "$(runtime sandbox pause "$name")" "$id"
is "state paused" "$(state_of "$id")" "paused"
is "… pauseReason requested" "$(runtime sandbox get "$id" --json | jq_ 'o.get("pauseReason")')" "requested"
is "ls --state paused" "$(runtime sandbox ls --state paused --label "t=$tag" --json | ids)" "$id"
expect_error "exec on a paused sandbox is sandbox_paused" sandbox_paused runtime sandbox exec "$id" -- true
is "wake prints the id" "$(runtime sandbox wake "$id")" "$id"
is "state running again" "$(state_of "$id")" "running"
is "… no pauseReason once awake" "$(runtime sandbox get "$id" --json | jq_ 'o.get("pauseReason")')" "None"
is "exec works after wake" "$(runtime sandbox exec "$id" -- cat /workspace/state-file)" "kept"

# -- run --keep
runtime sandbox run --keep --label "t=$tag" --vcpu 1 --memory 512 -- echo from-run >"$tmp/out" 2>"$tmp/err"; rc=$?
kept=$(sed -n 's/^runtime: kept sandbox \(sb-[0-9a-f]*\); run more with: runtime sandbox exec \1 -- CMD$/\1/p' "$tmp/err")
made+=($kept)
is "run --keep: output and exit code" "$(cat "$tmp/out")/$rc" "from-run/0"
check "run --keep says how to run more" test -n "$kept"
check "… and how to stop it" grep -q "runtime sandbox stop $kept" "$tmp/err"
is "the kept sandbox runs" "$(state_of "$kept")" "running"
is "… and takes commands" "$(runtime sandbox exec "$kept" -- echo again)" "again"
is "stop it" "$(runtime sandbox stop "$kept")" "$kept"
is "… stopped" "$(state_of "$kept")" "stopped"

# -- unknown ids
expect_error "get: unknown id is not_found" not_found runtime sandbox get sb-000000000000
expect_error "exec: unknown id is not_found" not_found runtime sandbox exec sb-000000000000 -- true
expect_error "stop: unknown id is not_found" not_found runtime sandbox stop sb-000000000000

# -- stop and rm
is "stop prints the id" "$(runtime sandbox stop "$id")" "$id"
is "stopped, by request" "$(runtime sandbox get "$id" --json | jq_ 'o["state"], o["stopReason"], o["endedAt"] is not None')" \
    "('stopped', 'requested', True)"
expect_error "exec on a stopped sandbox is sandbox_stopped" sandbox_stopped runtime sandbox exec "$id" -- true
is "stop again: done already, exit 0, the id" "$(runtime sandbox stop "$id")" "$id"
is "ls without --all hides it" "$(runtime sandbox ls --json | ids | grep -c "^$id\$")" 0
is "ls --all shows it" "$(runtime sandbox ls --all --json | ids | grep -c "^$id\$")" 1
check "ls --all shows it stopped, without an end" grep -qE "^$id +$name +stopped +1/1024 +[a-z]+ +-\$" \
    <(runtime sandbox ls --all)
is "rm prints the id" "$(runtime sandbox rm "$id")" "$id"
is "rm: gone from ls --all" "$(runtime sandbox ls --all --json | ids | grep -c "^$id\$")" 0
runtime sandbox rm "$id" >/dev/null; is "rm again: still exit 0" "$?" 0
is "rm --json" "$(runtime sandbox rm "$id" --json | jq_ 'o')" "{'id': '$id', 'removed': True}"
expect_error "get after rm is not_found" not_found runtime sandbox get "$id"
expect_error "rm of an id that never was is not_found" not_found runtime sandbox rm sb-000000000000
expect_error "rm of a name that never was is not_found" not_found runtime sandbox rm "no-such-$$"
expect_error "rm with neither ids nor --label is a usage error" usage runtime sandbox rm
expect_error "prune --older-than 3x is a usage error" usage runtime sandbox prune --older-than 3x

# -- a signal while create boots: no sandbox whose id nobody saw
runtime sandbox create --label "t=$tag" --label role=interrupted >"$tmp/out" 2>"$tmp/err" &
bg=$!
sleep 0.5; kill -TERM $bg; wait $bg; rc=$?
if [ "$rc" = 0 ]; then
    made+=($(cat "$tmp/out"))
    ok "# SKIP create finished before the signal"
else
    is "a signal during create exits 130" "$rc" 130
    is "… and leaves no sandbox" "$(runtime sandbox ls --all --label "t=$tag" --label role=interrupted --json)" "[]"
fi

# -- the 60 s lease has ended by itself
wait_s=$((lease_made + 65 - $(date +%s)))
[ "$wait_s" -gt 0 ] && { diag "waiting ${wait_s} s for the 60 s lease"; sleep "$wait_s"; }
for _ in $(seq 30); do [ "$(state_of "$lease")" = stopped ] && break; sleep 1; done
is "the lease ended: stopped, time_limit" \
    "$(runtime sandbox get "$lease" --json | jq_ 'o["state"], o["stopReason"]')" "('stopped', 'time_limit')"
is "… and its QEMU is gone" "$(pgrep -f "qemu-system-x86_64.*$lease" || true)" ""
for _ in $(seq 30); do [ "$(state_of "$please")" = paused ] && break; sleep 1; done
is "a lease that ends by default pauses the sandbox" "$(state_of "$please")" "paused"
is "… and get says why" "$(runtime sandbox get "$please" --json | jq_ 'o["pauseReason"]')" "lease_ended"
expect_error "… exec on it is sandbox_paused" sandbox_paused runtime sandbox exec "$please" -- true
runtime sandbox wake "$please" >/dev/null
is "wake resumes it" "$(runtime sandbox exec "$please" -- echo awake)" "awake"
check "… with a new lease in the future" python3 -c '
import datetime, json, sys
end = json.loads(sys.argv[1])["expiresAt"]
sys.exit(datetime.datetime.fromisoformat(end.replace("Z", "+00:00")) <= datetime.datetime.now(datetime.timezone.utc))' \
    "$(runtime sandbox get "$please" --json)"
# -- clean-up as docker's: prune, rm of several, rm --label
is "prune --older-than 1d leaves what just ended" \
    "$(runtime sandbox prune --older-than 1d --label "t=$tag" --json)" "[]"
is "prune removes the stopped ones, not the live" \
    "$(runtime sandbox prune --label "u=$tag" --json | jq_ '[s["id"] for s in o]')" "['$lease']"
is "… the live one runs on" "$(state_of "$please")" "running"
runtime sandbox stop "$please" >/dev/null
expect_error "… gone: get is not_found" not_found runtime sandbox get "$lease"
runtime sandbox rm "$please" "$lease" >"$tmp/out"; rc=$?
is "rm of several (one removed already): exit 0, each id" "$rc $(tr '\n' ' ' <"$tmp/out")" "0 $please $lease "
runtime sandbox rm "$please" sb-000000000000 >"$tmp/out" 2>"$tmp/err"; rc=$?
is "rm of several goes on past one that never was, exit 1" "$rc $(cat "$tmp/out")" "1 $please"
check "… naming it" grep -q "not_found.*sb-000000000000" "$tmp/err"
runtime sandbox rm --label "t=$tag" >/dev/null; rc=$?
is "rm --label removes every one with it" "$rc $(runtime sandbox ls --all --label "t=$tag" --json)" "0 []"

for s in "${made[@]}"; do runtime sandbox rm "$s" >/dev/null; done
is "nothing of this test is listed" "$(runtime sandbox ls --all --label "t=$tag" --json)" "[]"
check_no_leaks "after the lifecycle"
done_testing
