#!/bin/bash
# crash.sh - kill -9 of a monitor or of QEMU leaks nothing once the next
# command runs, and racing creators never share a name.
. "$(dirname "$0")/libtest.sh"

state_of() { runtime sandbox get --json "$1" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["state"], r["stopReason"])'; }

# kill -9 of the monitor: its QEMU dies with it (PR_SET_PDEATHSIG); the next
# command writes the record and removes the state dir.
id=$(runtime sandbox create --timeout 300)
mon=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$id/monitor.pid")
qemu=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$id/qemu.pid")
kill -9 "$mon"
for _ in $(seq 50); do kill -0 "$qemu" 2>/dev/null || break; sleep 0.1; done
check "kill -9 of the monitor takes its QEMU along" bash -c "! kill -0 $qemu 2>/dev/null"
is "the next command sees it stopped by the host" "$(state_of "$id")" "stopped host_stopped"
check "its state dir is gone" test ! -e "$RUNTIME_STATE_DIR/$id"
runtime sandbox exec "$id" -- true 2>"$tmp/err"; rc=$?
is "exec on it fails" "$rc" 1
check "… with sandbox_stopped" grep -q "^Error \[sandbox_stopped\]: " "$tmp/err"

# kill -9 of QEMU: the monitor notices at once and cleans up itself.
id=$(runtime sandbox create --timeout 300)
mon=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$id/monitor.pid")
kill -9 "$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$id/qemu.pid")"
for _ in $(seq 100); do kill -0 "$mon" 2>/dev/null || break; sleep 0.1; done
check "the monitor exits when its QEMU dies" bash -c "! kill -0 $mon 2>/dev/null"
check "… and removes its state dir itself" test ! -e "$RUNTIME_STATE_DIR/$id"
is "… leaving a host_stopped record" "$(state_of "$id")" "stopped host_stopped"

# kill -9 of a CLI in the middle of an exec: the command dies with the
# connection, the sandbox lives on.
id=$(runtime sandbox create --timeout 300)
runtime sandbox exec "$id" -- bash -c 'echo $$ > /tmp/pid; echo ready; sleep 600' >"$tmp/out" &
pid=$!
for _ in $(seq 300); do grep -q ready "$tmp/out" 2>/dev/null && break; sleep 0.1; done
kill -9 $pid; wait $pid 2>/dev/null
sleep 1
out=$(runtime sandbox exec "$id" -- bash -c 'kill -0 $(cat /tmp/pid) 2>/dev/null && echo alive || echo gone')
is "kill -9 of an exec client kills its command" "$out" "gone"
is "… and the sandbox still runs" "$(state_of "$id")" "running None"
runtime sandbox rm "$id" >/dev/null

# kill -9 of `create` while the VM boots: nobody ever learns the id, so
# the sandbox must not live on.
runtime sandbox create --name orphan >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do [ -n "$(our_qemus)" ] && break; sleep 0.05; done
kill -9 $pid; wait $pid 2>/dev/null
# The monitor notices only once the boot is over (under TCG, seconds; on a
# loaded host, more), so wait for it to have gone, within a bound.
for _ in $(seq 600); do
    [ -z "$(our_qemus)" ] && [ "$(runtime sandbox ls --json)" = "[]" ] && break
    sleep 0.1
done
is "kill -9 of create during boot leaves no QEMU" "$(our_qemus)" ""
is "… and no live sandbox" "$(runtime sandbox ls --json)" "[]"

# --no-wait: the id at once, the sandbox starting, then running.
id=$(runtime sandbox create --no-wait --timeout 300)
st=$(state_of "$id")
# Under TCG the boot takes seconds; a KVM host may be done already.
check "--no-wait prints the id at once (starting; running on a fast host)" \
    test "$st" = "starting None" -o "$st" = "running None"
if [ "$st" = "starting None" ]; then
    runtime sandbox exec "$id" -- true 2>"$tmp/err"; rc=$?
    if [ "$rc" = 1 ]; then
        check "exec while starting fails with sandbox_not_ready: still starting" \
            grep -q "sandbox_not_ready.*still starting" "$tmp/err"
    else
        is "exec right after the boot ended works" "$rc" 0
    fi
fi
for _ in $(seq 600); do [ "$(state_of "$id")" = "running None" ] && break; sleep 0.1; done
is "… then it runs" "$(runtime sandbox exec "$id" -- echo up)" "up"
runtime sandbox rm "$id" >/dev/null
# A --no-wait boot that fails ends as a startup_failed record.
mkdir -p "$tmp/nw-cache"; cp -a "${RUNTIME_CACHE_DIR:-/var/cache/runtime}/kernel" "$tmp/nw-cache/"
for d in base disks accel; do ln -s "${RUNTIME_CACHE_DIR:-/var/cache/runtime}/$d" "$tmp/nw-cache/$d"; done
printf '#!/bin/nonexistent\n' > "$tmp/bad-agent"; chmod +x "$tmp/bad-agent"
id=$(RUNTIME_CACHE_DIR="$tmp/nw-cache" RUNTIME_AGENT="$tmp/bad-agent" runtime sandbox create --no-wait 2>/dev/null)
for _ in $(seq 600); do [ "$(state_of "$id" 2>/dev/null)" = "stopped startup_failed" ] && break; sleep 0.1; done
is "a failed --no-wait boot is stopped with startup_failed" "$(state_of "$id")" "stopped startup_failed"
runtime sandbox rm "$id" >/dev/null
# stop while booting.
id=$(runtime sandbox create --no-wait --timeout 300)
runtime sandbox stop "$id" >/dev/null; rc=$?
is "stop during the boot works" "$rc" 0
is "… and it is stopped, as requested" "$(state_of "$id")" "stopped requested"

# Two creators racing for one name: exactly one wins.
for i in 1 2 3; do runtime sandbox create --name racer >"$tmp/c$i" 2>"$tmp/e$i" & done
wait
is "one of three racing creates gets the name" "$(cat "$tmp"/c? | grep -c '^sb-')" 1
is "the others get name_taken" "$(cat "$tmp"/e? | grep -c 'name_taken')" 2
runtime sandbox rm racer >/dev/null

check_no_leaks "after the crashes"
done_testing
