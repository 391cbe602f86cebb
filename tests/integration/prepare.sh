#!/bin/bash
# prepare.sh - first use: kernel fetched, initramfs and default image built
# (cached under the cache dir), then the main job.
. "$(dirname "$0")/libtest.sh"
# What a run stopped part way left before this suite began (leaks.sh leaves
# those out: it judges this suite, and testnet.sh reclaims the networks).
if [ -n "${RUNTIME_TEST_DATA:-}" ]; then
    mkdir -p "$RUNTIME_TEST_DATA"
    ls -d /tmp/rt-test.* 2>/dev/null | grep -vx "$tmp" >"$RUNTIME_TEST_DATA/before-suite"
fi

out=$(runtime sandbox run -- python3 -c 'print(6*7)' 2>"$tmp/err"); rc=$?
is "first run prints 42" "$out" "42"
is "first run exits 0" "$rc" "0"
[ "$rc" = 0 ] || diag "$(cat "$tmp/err")"
check "the kernel is cached" test -s "${RUNTIME_CACHE_DIR:-/var/cache/runtime}/kernel/current" -o -L "${RUNTIME_CACHE_DIR:-/var/cache/runtime}/kernel/current"
check_no_leaks "after the first run"
done_testing
