# 93-session.sh - sessions (monitor/session.h): a guest that answers a
# CONNECT with output past its window is stopped with guest_protocol_error
# while the monitor stays bounded and the session's client gets an end; a
# session client that sends stdin past its window is dropped while its
# sandbox goes on.

sess_cap_kib=$((64 * 1024))
client=$RUNTIME_TEST_SESSION_CLIENT
sother=$(hostile_sandbox)

# The flooding agent (see 50-monitor.sh) answers the CONNECT with one-byte
# frames; the client reads nothing for a while, so the output can only
# wait in the guest's window.
scache="$tmp/session-flood-cache"
shared_cache=${RUNTIME_CACHE_DIR:-/var/cache/runtime}
mkdir -p "$scache" && cp -a "$shared_cache/kernel" "$scache/"
for d in base disks accel; do ln -s "$shared_cache/$d" "$scache/$d"; done
sfid=$(RUNTIME_CACHE_DIR="$scache" RUNTIME_AGENT="$RUNTIME_TEST_FLOOD_AGENT" \
    runtime sandbox create --timeout 900 </dev/null 2>"$tmp/sflood-create.err")
check "session: a sandbox boots with an agent that floods a CONNECT's stream" test -n "$sfid"
if [ -n "$sfid" ]; then
    smpid=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$sfid/monitor.pid")
    "$client" hold "$sfid" 8000 5 >"$tmp/shold.out" 2>&1 &
    shpid=$!
    shwm=0
    for _ in $(seq 1200); do
        v=$(awk '/^VmHWM/ {print $2}' "/proc/$smpid/status" 2>/dev/null)
        [ -n "$v" ] && shwm=$v
        kill -0 "$shpid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$shpid" 2>/dev/null; then kill "$shpid"; fi
    wait "$shpid"
    diag "monitor VmHWM during the CONNECT flood: $shwm KiB; client: $(cat "$tmp/shold.out")"
    check "session: the monitor's memory stays under the cap ($shwm KiB <= $sess_cap_kib KiB)" \
        test "$shwm" -gt 0 -a "$shwm" -le "$sess_cap_kib"
    is "session: a guest sending past a CONNECT's window is stopped with guest_protocol_error" \
        "$(runtime sandbox get "$sfid" --json | json_get 'o["state"] + " " + str(o["stopReason"])')" \
        "stopped guest_protocol_error"
    check "… and the session's client gets an end, not output forever" \
        grep -qE "^(sandbox_not_ready|exit [0-9]+) after [0-9]+ bytes" "$tmp/shold.out"
    runtime sandbox rm "$sfid" >/dev/null 2>&1
fi
rm -rf "$scache"

# A client sending stdin past its window, with no regard for WINDOW.
if [ -n "$sother" ]; then
    is "session: a client sending stdin past its window is dropped" \
        "$("$client" flood "$RUNTIME_STATE_DIR/$sother/session.sock")" "dropped"
    is "… and its sandbox goes on" "$(runtime sandbox exec "$sother" -- echo alive 2>&1)" "alive"
    sleep 1
    is "… with the dropped session's command killed" \
        "$(runtime sandbox exec "$sother" -- sh -c 'pgrep -xf "sleep 3600" | wc -l' 2>&1)" "0"
fi

# A client opening sessions without end: the 257th is told no, the sandbox
# goes on, and the 256 are let go when their clients go.
if [ -n "$sother" ]; then
    is "session: past 256 open sessions the next gets too_many_sessions" \
        "$(python3 - "$RUNTIME_STATE_DIR/$sother/session.sock" <<'PY'
import socket, sys
held = []
for _ in range(256):
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); held.append(s)
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(10)
data = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    data += b
print("too_many_sessions" if b"too_many_sessions" in data else repr(data[:80]))
PY
)" "too_many_sessions"
    is "… and once they close, commands and sessions run again" \
        "$(runtime sandbox exec "$sother" -- echo alive 2>&1) $("$client" connect "$sother" 9)" "alive refused"
fi
