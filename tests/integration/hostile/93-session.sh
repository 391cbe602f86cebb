# 93-session.sh - sessions (monitor/session.h): a guest that answers a
# CONNECT with output past its window is stopped with guest_protocol_error
# while the monitor stays bounded and the session's client gets an end; a
# guest that keeps to its window in one-byte frames does not grow the
# monitor whether the client reads slowly or not at all, and one that
# switches stdout and stderr a byte at a time ends its session; a session
# client that sends stdin past its window is dropped while its sandbox goes
# on; one that writes stdin and RESIZE as fast as it can does not grow the
# monitor, and one left unread behind a guest's full channel is let go when
# it closes.

sess_cap_kib=$((64 * 1024))
client=$RUNTIME_TEST_SESSION_CLIENT
sother=$(hostile_sandbox)

# The flooding agent (see 50-monitor.sh) answers the CONNECT with one-byte
# frames; the client reads nothing for a while, so the output can only
# wait in the guest's window.
scache="$tmp/session-flood-cache"
sfid=$(flood_sandbox "$scache" "$tmp/sflood-create.err")
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

# The peak VmRSS (KiB) of process $1 while process $2 runs.
rss_peak() {
    local peak=0 v
    while kill -0 "$2" 2>/dev/null; do
        v=$(awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null)
        [ -n "$v" ] && [ "$v" -gt "$peak" ] && peak=$v
        sleep 0.1
    done
    echo "$peak"
}
sess_grow_kib=$((8 * 1024))

# The flooding agent's windowed mode: it answers a CONNECT to port 1 with
# one-byte STDOUT frames as far as its credit goes (to port 2, STDOUT and
# STDERR in turn).  The window is payload, credited as the client's socket
# buffer takes it: frame headers must not pile up in the monitor, whether
# the client reads nothing or reads slowly (each frame read crediting 13
# bytes grew the monitor by 12 a frame, without end).
wcache="$tmp/session-window-cache"
wid=$(flood_sandbox "$wcache" "$tmp/swin-create.err")
check "session: a sandbox boots with an agent that floods one-byte frames within its window" test -n "$wid"
if [ -n "$wid" ]; then
    wmpid=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$wid/monitor.pid")
    wbase=$(awk '/^VmRSS/ {print $2}' "/proc/$wmpid/status")
    "$client" trickle "$wid" 1 15 0 >"$tmp/swin-none.out" 2>&1 &
    wnone=$(rss_peak "$wmpid" $!)
    "$client" trickle "$wid" 1 20 262144 >"$tmp/swin-slow.out" 2>&1 &
    wslow=$(rss_peak "$wmpid" $!)
    "$client" trickle "$wid" 2 10 0 >"$tmp/swin-alt.out" 2>&1 &
    walt=$(rss_peak "$wmpid" $!)
    diag "monitor VmRSS $wbase KiB before; peaks: $wnone KiB (client not reading: $(cat "$tmp/swin-none.out")), $wslow KiB (256 KiB/s: $(cat "$tmp/swin-slow.out")), $walt KiB (stdout and stderr in turn: $(cat "$tmp/swin-alt.out"))"
    check "session: one-byte frames to a client that reads nothing grow the monitor by at most 8 MiB ($((wnone - wbase)) KiB)" \
        test "$wnone" -gt 0 -a $((wnone - wbase)) -le "$sess_grow_kib"
    check "… nor to one that reads 256 KiB/s ($((wslow - wbase)) KiB)" \
        test "$wslow" -gt 0 -a $((wslow - wbase)) -le "$sess_grow_kib"
    check "… which gets its bytes" grep -qE '^read [0-9]{7,}, then open$' "$tmp/swin-slow.out"
    is "session: output switching stdout and stderr a byte at a time to a client that reads nothing ends the session" \
        "$(sed 's/^read [0-9]*, then //' "$tmp/swin-alt.out")" "internal"
    check "… with the monitor grown by at most 8 MiB ($((walt - wbase)) KiB)" \
        test "$walt" -gt 0 -a $((walt - wbase)) -le "$sess_grow_kib"
    check "… and the sandbox goes on: a new session gets its bytes" \
        grep -qE '^read [1-9]' <("$client" trickle "$wid" 1 1 1000000)
    runtime sandbox rm "$wid" >/dev/null 2>&1
fi
rm -rf "$wcache"

# The flooding agent after a first CONNECT to port 3 never reads its
# channel again.  A client writing into that fills the channel and is not
# read any more; when it closes, its session must end then (its command
# killed, its slot of 256 let go), not when the guest drains the channel.
dcache="$tmp/session-deaf-cache"
did=$(flood_sandbox "$dcache" "$tmp/sdeaf-create.err")
check "session: a sandbox boots with an agent that stops reading its channel" test -n "$did"
if [ -n "$did" ]; then
    dmpid=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$did/monitor.pid")
    "$client" connect "$did" 3 >"$tmp/sdeaf-connect.out" 2>&1
    dbase=$(ls "/proc/$dmpid/fd" | wc -l)
    "$client" resize-flood "$RUNTIME_STATE_DIR/$did/session.sock" 6 >"$tmp/sdeaf.out" 2>&1
    for _ in $(seq 50); do
        dfds=$(ls "/proc/$dmpid/fd" | wc -l)
        [ "$dfds" -le "$dbase" ] && break
        sleep 0.1
    done
    diag "deaf guest: first CONNECT $(cat "$tmp/sdeaf-connect.out"); client $(cat "$tmp/sdeaf.out"); monitor fds $dbase before, $dfds after"
    check "session: a client not read while the guest's channel is full is let go when it closes ($dfds <= $dbase fds)" \
        test "$dfds" -le "$dbase"
    runtime sandbox rm "$did" >/dev/null 2>&1
fi
rm -rf "$dcache"

# A client sending stdin past its window, with no regard for WINDOW.
if [ -n "$sother" ]; then
    is "session: a client sending stdin past its window is dropped" \
        "$("$client" flood "$RUNTIME_STATE_DIR/$sother/session.sock")" "dropped"
    is "… and its sandbox goes on" "$(runtime sandbox exec "$sother" -- echo alive 2>&1)" "alive"
    sleep 1
    is "… with the dropped session's command killed" \
        "$(runtime sandbox exec "$sother" -- sh -c 'pgrep -xf "sleep 3600" | wc -l' 2>&1)" "0"
fi

# A client writing as fast as it can: 1 MiB of stdin to a command that
# never reads, then RESIZE frames without end.  Its frames wait for the
# guest's channel; while that is full the client is not read.
if [ -n "$sother" ]; then
    rmpid=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$sother/monitor.pid")
    rbase=$(awk '/^VmRSS/ {print $2}' "/proc/$rmpid/status")
    "$client" resize-flood "$RUNTIME_STATE_DIR/$sother/session.sock" 10 >"$tmp/rflood.out" 2>&1 &
    rpeak=$(rss_peak "$rmpid" $!)
    diag "stdin and RESIZE flood: $(cat "$tmp/rflood.out"); monitor VmRSS $rbase KiB before, peak $rpeak KiB"
    check "session: a client writing stdin and RESIZE as fast as it can grows the monitor by at most 16 MiB ($((rpeak - rbase)) KiB)" \
        test "$rpeak" -gt 0 -a $((rpeak - rbase)) -le $((16 * 1024))
    for _ in $(seq 60); do
        ralive=$(runtime sandbox exec "$sother" -- echo alive 2>&1) && break
        sleep 0.5
    done
    is "… and its sandbox goes on" "$ralive" "alive"
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
