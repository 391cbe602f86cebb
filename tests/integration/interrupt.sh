#!/bin/bash
# interrupt.sh - Ctrl-C: SIGTERM into the sandbox, exit 130, nothing left.
. "$(dirname "$0")/libtest.sh"

runtime sandbox run -- bash -c 'trap "echo got-term; exit 7" TERM; echo ready; while :; do sleep 0.1; done' \
    >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 600); do grep -q ready "$tmp/out" 2>/dev/null && break; sleep 0.1; done
check "the command started" grep -q ready "$tmp/out"
kill -INT $pid
wait $pid; rc=$?
is "Ctrl-C exits 130" "$rc" 130
check "the command got SIGTERM first" grep -q got-term "$tmp/out"
check_no_leaks "after Ctrl-C"

# A command that ignores SIGTERM is killed after the grace period.
runtime sandbox run -- bash -c 'trap "" TERM; echo ready; while :; do sleep 0.1; done' >"$tmp/out" 2>&1 &
pid=$!
for _ in $(seq 600); do grep -q ready "$tmp/out" 2>/dev/null && break; sleep 0.1; done
kill -TERM $pid
wait $pid; rc=$?
is "SIGTERM to runtime exits 130 even when the command ignores it" "$rc" 130
check_no_leaks "after an ignored SIGTERM"

# kill -9 of the CLI takes its VM with it.
runtime sandbox run -- bash -c 'echo ready; sleep 600' >"$tmp/out" 2>&1 &
pid=$!
for _ in $(seq 600); do grep -q ready "$tmp/out" 2>/dev/null && break; sleep 0.1; done
kill -9 $pid; wait $pid 2>/dev/null
for _ in $(seq 50); do [ -z "$(our_qemus)" ] && break; sleep 0.1; done
is "kill -9 of runtime leaves no QEMU" "$(our_qemus)" ""
runtime sandbox run -- true
is "the next run leaves no state of the killed one" "$(ls -A "$RUNTIME_STATE_DIR" | grep -v '^\.lock$')" ""
done_testing
