#!/bin/bash
# hostile.sh - the guest is root and controls every byte it sends: each part
# in hostile/ plays one kind of hostile guest (or hostile input) and checks
# that nothing of it reaches the host, that the monitor stays within its
# bounds, and that the error or stop reason is clear.
. "$(dirname "$0")/libtest.sh"
here=$(dirname "$0")/hostile

# One shared sandbox for the parts that do not break it (cp out, recipes);
# parts that flood or fill make their own.  Its id is kept in a file, so a
# part may call `$(hostile_sandbox)` from a subshell and still get the one.
hostile_sandbox() {
    if [ ! -s "$tmp/shared_sb" ]; then
        runtime sandbox create --timeout 1200 </dev/null >"$tmp/shared_sb" || : >"$tmp/shared_sb"
    fi
    cat "$tmp/shared_sb"
}

# A private cache at $1 for a sandbox booted with the flooding agent
# (RUNTIME_CACHE_DIR=$1 RUNTIME_AGENT=$RUNTIME_TEST_FLOOD_AGENT): its
# initramfs is the only thing that differs (the kernel copied, the disks
# shared read-only).
flood_cache() {
    local shared=${RUNTIME_CACHE_DIR:-/var/cache/runtime}
    mkdir -p "$1" && cp -a "$shared/kernel" "$1/"
    for d in base disks accel; do ln -s "$shared/$d" "$1/$d"; done
}
# A sandbox booted with the flooding agent from the private cache $1 (see
# flood_cache), `sandbox create`'s stderr in $2: prints its id, or nothing.
flood_sandbox() {
    flood_cache "$1"
    RUNTIME_CACHE_DIR="$1" RUNTIME_AGENT="$RUNTIME_TEST_FLOOD_AGENT" \
        runtime sandbox create --timeout 900 </dev/null 2>"$2"
}

for part in "$here"/*.sh; do
    [ -e "$part" ] || continue
    echo "# part: $(basename "$part" .sh)"
    . "$part"
done

[ -s "$tmp/shared_sb" ] && runtime sandbox rm "$(cat "$tmp/shared_sb")" >/dev/null 2>&1
check_no_leaks "hostile"
done_testing
