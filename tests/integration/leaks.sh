#!/bin/bash
# leaks.sh - runs last: the whole suite left nothing on the machine.
. "$(dirname "$0")/libtest.sh"
cache=${RUNTIME_CACHE_DIR:-/var/cache/runtime}

is "no QEMU started by the tests is running" "$(pgrep -f 'qemu-system-x86_64.*/tmp/rt-test\.' || true)" ""
is "no test state dir is left" "$(ls -d /tmp/rt-test.* 2>/dev/null | grep -v "^$tmp\$" || true)" ""
is "no temporary files in the cache" "$(find "$cache" -name '*.tmp*' -o -name 'probe-*' -o -name 'tmp-*' 2>/dev/null)" ""
is "no QEMU snapshot overlays in /var/tmp" "$(ls /var/tmp/vl.* 2>/dev/null || true)" ""
is "no loop devices or mounts from runtime" "$(grep -c runtime /proc/mounts || true)" "0"
done_testing
