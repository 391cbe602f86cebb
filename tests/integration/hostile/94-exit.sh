# 94-exit.sh - a guest whose last frames lie (the flooding agent's liar
# mode, tests/fixtures/flood-agent.c): an EXIT with an exit code that is
# huge, negative or not an integer, or that is not JSON, gives exit 255,
# to an exec and to a session alike; an ERROR of garbage gives internal;
# the monitor stays up and an honest exit after them reads as it is.

lclient=$RUNTIME_TEST_SESSION_CLIENT
lcache="$tmp/liar-cache"
lid=$(flood_sandbox "$lcache" "$tmp/liar-create.err")
check "exit: a sandbox boots with an agent whose last frames lie" test -n "$lid"
if [ -n "$lid" ]; then
    lmpid=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$lid/monitor.pid")
    for lie in huge:11 negative:12 string:13 garbage:14; do
        word=${lie%:*}
        runtime sandbox exec "$lid" -- "liar-$word" >"$tmp/liar-$word.out" 2>&1
        is "exit: an exec told an EXIT with a $word exit code exits 255" "$? $(cat "$tmp/liar-$word.out")" "255 "
        is "… and a session told the same ends with exit 255" "$("$lclient" hold "$lid" "${lie#*:}" 0)" \
            "exit 255 after 0 bytes"
    done
    runtime sandbox exec "$lid" -- liar-error >"$tmp/liar-error.out" 2>&1
    lrc=$?
    diag "exec told a garbage ERROR: exit $lrc, $(cat "$tmp/liar-error.out")"
    check "exit: an exec told an ERROR of garbage fails with internal" \
        test "$lrc" -ne 0 -a "$lrc" -lt 124 -a -n "$(grep internal "$tmp/liar-error.out")"
    is "… and a session told the same ends with internal" "$("$lclient" hold "$lid" 15 0)" "internal after 0 bytes"
    check "exit: the monitor is still up after the lies" kill -0 "$lmpid"
    is "… its sandbox running" "$(runtime sandbox get "$lid" --json | json_get 'o["state"]')" "running"
    runtime sandbox exec "$lid" -- liar-honest >/dev/null 2>&1
    is "… and an honest exit after them reads as it is" "$? $("$lclient" hold "$lid" 16 0)" "3 exit 3 after 0 bytes"
    runtime sandbox rm "$lid" >/dev/null 2>&1
fi
rm -rf "$lcache"
