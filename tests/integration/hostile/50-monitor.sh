# 50-monitor.sh - a guest that floods its channel or its console.  The
# monitor stays within its memory cap (docs/ARCHITECTURE.md, "The monitor's
# bounds"), stops a guest that sends past its window with
# guest_protocol_error, keeps the console log capped; the other sandbox
# goes on.

mon_cap_kib=$((64 * 1024))
console_cap=$((1024 * 1024))
other=$(hostile_sandbox)
check "monitor: the other sandbox runs" test -n "$other"

# The flooding agent boots from a private cache (flood_cache, hostile.sh).
fcache="$tmp/flood-cache"
fid=$(flood_sandbox "$fcache" "$tmp/flood-create.err")
check "monitor: a sandbox boots with an agent that floods one-byte frames and reads nothing" test -n "$fid"
if [ -n "$fid" ]; then
    mpid=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$fid/monitor.pid")
    runtime sandbox exec "$fid" -- flood >/dev/null 2>"$tmp/flood.err" &
    epid=$!
    hwm=0; t0=$(date +%s)
    # VmHWM only grows: the last reading before the monitor exits is its peak.
    for _ in $(seq 1800); do
        v=$(awk '/^VmHWM/ {print $2}' "/proc/$mpid/status" 2>/dev/null)
        [ -n "$v" ] && hwm=$v
        kill -0 "$epid" 2>/dev/null || break
        sleep 0.1
    done
    secs=$(($(date +%s) - t0))
    if kill -0 "$epid" 2>/dev/null; then kill "$epid"; fi
    wait "$epid"; rc=$?
    diag "monitor VmHWM during the flood: $hwm KiB (cap $mon_cap_kib KiB), stopped after ${secs} s"
    check "monitor: its memory stays under the cap during the flood ($hwm KiB <= $mon_cap_kib KiB)" \
        test "$hwm" -gt 0 -a "$hwm" -le "$mon_cap_kib"
    is "monitor: the flooding guest is stopped with guest_protocol_error" \
        "$(runtime sandbox get "$fid" --json | json_get 'o["state"] + " " + str(o["stopReason"])')" \
        "stopped guest_protocol_error"
    check "… and its exec ends with an error, not output forever" test "$rc" -ne 0 -a "$rc" -ne 143
    is "… no QEMU of it is left" "$(pgrep -f "qemu-system-x86_64.*$fid" || true)" ""
    runtime sandbox rm "$fid" >/dev/null 2>&1
fi
rm -rf "$fcache"
is "monitor: the sandbox started before still runs commands" \
    "$(runtime sandbox exec "$other" -- echo alive 2>&1)" "alive"

# The guest writes 1.5 MiB to its console (three halves of the cap: two
# rotations; the emulated serial port takes ≈10 s per MiB): the log keeps the latest, at most
# 1 MiB over console.log and console.log.1.
t0=$(date +%s)
runtime sandbox exec --user root "$other" -- \
    sh -c 'head -c 1536K /dev/zero | tr "\0" x > /dev/console; echo console-end-marker > /dev/console' \
    >/dev/null 2>"$tmp/console.err"
diag "1.5 MiB to the console took $(($(date +%s) - t0)) s"
cdir="$RUNTIME_STATE_DIR/$other"
total=$(cat "$cdir"/console.log* 2>/dev/null | wc -c)
diag "console logs: $(ls -l "$cdir"/console.log* 2>/dev/null | awk '{print $5, $9}' | tr '\n' ' ')"
check "monitor: 1.5 MiB on the console leave at most 1 MiB of log ($total bytes)" \
    test "$total" -gt 0 -a "$total" -le "$console_cap"
check "… the older half kept as console.log.1" test -s "$cdir/console.log.1"
check "… and the newest line is in console.log" grep -q console-end-marker "$cdir/console.log"
is "… the sandbox still runs commands" "$(runtime sandbox exec "$other" -- echo alive 2>&1)" "alive"
