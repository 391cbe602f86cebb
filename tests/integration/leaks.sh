#!/bin/bash
# leaks.sh - runs last: the whole suite left nothing on the machine.
. "$(dirname "$0")/libtest.sh"
cache=${RUNTIME_CACHE_DIR:-/var/cache/runtime}

is "no QEMU started by the tests is running" "$(pgrep -f 'qemu-system-x86_64.*/tmp/rt-test\.' || true)" ""
# Those a run stopped part way left before the suite (prepare.sh) are not this one's.
before=${RUNTIME_TEST_DATA:-/nonexistent}/before-suite
is "no test state dir is left" "$(ls -d /tmp/rt-test.* 2>/dev/null | grep -vx "$tmp" | { [ -s "$before" ] && grep -vxF -f "$before" || cat; } || true)" ""
is "no temporary files in the cache" "$(find "$cache" -name '*.tmp*' -o -name 'probe-*' -o -name 'tmp-*' 2>/dev/null)" ""
is "no QEMU snapshot overlays in /var/tmp" "$(ls /var/tmp/vl.* 2>/dev/null || true)" ""
is "no QEMU control group is left (runtime-<uid>)" "$(our_cgroups)" ""
is "no sandbox uid lock is held" "$(held_uids)" ""
is "no loop devices or mounts from runtime" "$(grep -c runtime /proc/mounts || true)" "0"
# A sandbox's namespace has no name: it lives while a process holds it.
# Any namespace with a tap0 in it is a sandbox's; none may be left.
left=""
for ns in $(lsns -t net -n -o PID 2>/dev/null); do
    nsenter --net=/proc/$ns/ns/net ip -br link show tap0 >/dev/null 2>&1 && left="$left $ns"
done
is "no sandbox network namespace (tap, nft table) is left" "$left" ""
is "no test network is left" "$(ip netns list | grep rt-testnet || true; ip -br link | grep '^rtn' || true)" ""
is "no egress proxy listens on the host" "$(ss -Htlnp 2>/dev/null | grep -E ':312[89] ' || true)" ""
done_testing
