#!/bin/bash
# errors.sh - every user-facing error is one clear line, exit 1, and leaves
# nothing behind.
. "$(dirname "$0")/libtest.sh"

# expect_error DESC CODE PATTERN CMD…: exit 1, "Error [CODE]: …PATTERN…".
expect_error() {
    local d=$1 code=$2 pat=$3 rc; shift 3
    "$@" >"$tmp/out" 2>"$tmp/err" </dev/null; rc=$?
    if [ "$rc" = 1 ] && grep -q "^Error \[$code\]: .*$pat" "$tmp/err" && [ ! -s "$tmp/out" ]; then
        ok "$d"
    else
        fail "$d"; diag "exit $rc" "$(cat "$tmp/err" "$tmp/out")"
    fi
}

expect_error "unknown option suggests the right one" usage "Unknown option --memory-mib. Did you mean --memory?" \
    runtime sandbox run --memory-mib 512 -- true
check "… and points at --help, not after --" grep -q "^Hint: runtime sandbox run --help lists the options" "$tmp/err"
expect_error "an option like none of ours" usage "Unknown option --zzzq" runtime sandbox run --zzzq 1 -- true
check "… hints to put the command after --" grep -q "^Hint: put the command to run after --" "$tmp/err"
expect_error "a command without -- is refused" usage "is not an option" runtime sandbox run python3 -c 1
host_mib=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
if [ "$host_mib" -lt 65000 ]; then
    expect_error "--memory above the host's is refused" usage "more than this host's" runtime sandbox create --memory 65536
    check "… naming --overcommit" grep -q "overcommit" "$tmp/err"
    expect_error "… and passes with --overcommit (on to the next check: the image)" image_not_found "no-such-image" \
        runtime sandbox create --memory 65536 --overcommit --image no-such-image
else
    ok "# SKIP the host has 64 GiB or more"
fi
expect_error "no command at all" usage "no command given" runtime sandbox run
expect_error "prune --older-than beyond 100 years is a usage error" usage "must be an age" \
    runtime sandbox prune --older-than 40000d
expect_error "prune --older-than a negative age is a usage error" usage "must be an age" \
    runtime sandbox prune --older-than -1d
expect_error "unknown command suggests" usage "Did you mean 'run'" runtime sandbox rnu
expect_error "unknown group suggests" usage "Did you mean 'sandbox'" runtime sandbx run
expect_error "bad --vcpu" usage "vcpu must be a whole number from 1 to 16" runtime sandbox run --vcpu 0 -- true
expect_error "bad --timeout" usage "timeout must be a whole number" runtime sandbox run --timeout soon -- true
# --env-file (docker's format): a missing file, a line that is no
# variable (named FILE:LINE), all before any sandbox is made.
expect_error "a missing --env-file is file_not_found" file_not_found "env-file '$tmp/no.env'" \
    runtime sandbox run --env-file "$tmp/no.env" -- true
printf 'A=1\n# ok\n\nnot a name=2\n' >"$tmp/bad.env"
bad_line="$tmp/bad.env:4: 'not a name' is not a valid variable name"
expect_error "run: a bad --env-file line is invalid_env naming FILE:LINE" invalid_env "$bad_line" \
    runtime sandbox run --env-file "$tmp/bad.env" -- true
expect_error "… create's" invalid_env "$bad_line" runtime sandbox create --env-file "$tmp/bad.env"
expect_error "… exec's, before the sandbox is looked up" invalid_env "$bad_line" \
    runtime sandbox exec nosuch --env-file "$tmp/bad.env" -- true
expect_error "… spawn's" invalid_env "$bad_line" runtime sandbox spawn nosuch --env-file "$tmp/bad.env" -- true
printf '1X=2\n' >"$tmp/digit.env"
expect_error "… a name starting with a digit" invalid_env "digit.env:1: '1X'" runtime sandbox create --env-file "$tmp/digit.env"
expect_error "a directory as --env-file" invalid_env "Is a directory" runtime sandbox run --env-file "$tmp" -- true
printf 'A=\0\n' >"$tmp/nul.env"
expect_error "a binary --env-file" invalid_env "not text" runtime sandbox run --env-file "$tmp/nul.env" -- true
expect_error "-t without a terminal on run" usage "-t needs a terminal" runtime sandbox run -t -- true
check "… pointing at run -i" grep -q "^Hint: .*runtime sandbox run -i" "$tmp/err"
expect_error "unknown image" image_not_found "image 'nope' not found" runtime sandbox run --image nope -- true
# Snapshots, fork, idle pause: refused before any sandbox is touched.
expect_error "bad --idle-pause" usage "idle-pause must be 0 or a whole number of seconds from 10 to 86400" \
    runtime sandbox create --idle-pause 5
expect_error "--idle-pause is whole seconds" usage "not '1m'" runtime sandbox create --idle-pause 1m
expect_error "unknown --snapshot" not_found "no snapshot 'nope-snap'" runtime sandbox create --snapshot nope-snap
expect_error "bad --count" usage "count must be a whole number from 1 to 16" runtime sandbox fork x --count 17
expect_error "update needs an option" usage "give --idle-pause, --auto-wake or both" runtime sandbox update x
expect_error "bad --auto-wake" usage "auto-wake must be one of on, off" runtime sandbox update x --auto-wake yes
expect_error "unknown snapshot" not_found "no snapshot 'nope-snap'" runtime snapshot get nope-snap
expect_error "removing an unknown snapshot" not_found "no snapshot 'nope-snap'" runtime snapshot rm nope-snap

# cp: the host's side named as such, a directory the user may not write
# is permission_denied (--user root writes it), a stopped sandbox is
# sandbox_stopped.
expect_error "cp of a missing host path" file_not_found "no such file or directory on this host: ./nope" \
    runtime sandbox cp ./nope nosuch:/x
expect_error "cp --user of another user" usage "user must be runtime or root" runtime sandbox cp --user bob "$0" x:/tmp/
cpid=$(runtime sandbox create --timeout 300 2>/dev/null)
echo data >"$tmp/f.txt"
expect_error "cp into a root-owned directory is permission_denied" permission_denied "may not write into" \
    runtime sandbox cp "$tmp/f.txt" "$cpid:/etc/"
check "… with the --user root hint" grep -q "^Hint: .*--user root" "$tmp/err"
runtime sandbox cp --user root "$tmp/f.txt" "$cpid:/etc/" >/dev/null 2>"$tmp/err"
is "cp --user root writes it, as root" "$(runtime sandbox exec "$cpid" -- stat -c '%U %s' /etc/f.txt 2>&1)" "root 5"
runtime sandbox cp "$tmp/f.txt" "$cpid:/workspace/" >/dev/null 2>&1
is "cp by default writes as runtime" "$(runtime sandbox exec "$cpid" -- stat -c %U /workspace/f.txt 2>&1)" "runtime"
runtime sandbox stop "$cpid" >/dev/null 2>&1
expect_error "exec on a stopped sandbox is sandbox_stopped" sandbox_stopped "is stopped" runtime sandbox exec "$cpid" -- true
expect_error "cp into a stopped sandbox is sandbox_stopped" sandbox_stopped "is stopped" \
    runtime sandbox cp "$tmp/f.txt" "$cpid:/workspace/"
runtime sandbox rm "$cpid" >/dev/null 2>&1

# --json errors are one JSON object on stderr.
runtime sandbox run --json --memory-mib 1 -- true >"$tmp/out" 2>"$tmp/err"; rc=$?
is "--json usage error exits 1" "$rc" 1
is "--json error shape" "$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["error"]; print(e["code"], "memory" in e["message"], "hint" in e)' "$tmp/err")" "usage True True"

# Help runs nothing and exits 0.
runtime sandbox run --help >"$tmp/out"; is "--help exits 0" "$?" 0
check "--help lists --timeout with its default" grep -q -- "--timeout S.*default" "$tmp/out"
runtime --version | grep -q '^runtime [0-9]'; is "--version" "$?" 0

# QEMU missing: the package is named, nothing is left.
expect_error "QEMU missing names the package" startup_failed "qemu-system-x86_64 not found" \
    env RUNTIME_QEMU=/nonexistent/qemu runtime sandbox run -- true
check "… with the apt-get hint" grep -q "apt-get install qemu-system-x86" "$tmp/err"
check_no_leaks "after QEMU missing"
mkdir -p "$tmp/c1"; cp -a "${RUNTIME_CACHE_DIR:-/var/cache/runtime}/kernel" "$tmp/c1/"
env RUNTIME_CACHE_DIR="$tmp/c1" RUNTIME_QEMU=/nonexistent/qemu runtime sandbox run -- true 2>/dev/null
check "a missing QEMU caches no accelerator verdict" test ! -e "$tmp/c1/accel"

# A kernel that cannot be had, in a private cache.
cache="$tmp/cache"; mkdir -p "$cache"
shared=${RUNTIME_CACHE_DIR:-/var/cache/runtime}
ln -s "$shared/base" "$cache/base"; ln -s "$shared/disks" "$cache/disks"; cp "$shared/accel" "$cache/" 2>/dev/null
expect_error "a missing kernel package is one clear error" internal "" \
    env RUNTIME_CACHE_DIR="$cache" RUNTIME_KERNEL=/nonexistent/linux.deb runtime sandbox run -- true
check "… naming the file" grep -q "/nonexistent/linux.deb" "$tmp/err"
check "… and leaving no half-made kernel" test -z "$(ls -A "$cache/kernel" 2>/dev/null | grep -v '^\.lock$')"
check_no_leaks "after a missing kernel"

# A guest that cannot boot: an agent that is not a static binary panics the
# kernel; the error carries the console's last lines.
cp -a "$shared/kernel" "$cache/kernel.tmp" && rm -rf "$cache/kernel" && mv "$cache/kernel.tmp" "$cache/kernel"
printf '#!/bin/nonexistent\n' > "$tmp/bad-agent"; chmod +x "$tmp/bad-agent"
expect_error "a guest that fails to boot is startup_failed" startup_failed "did not start" \
    env RUNTIME_CACHE_DIR="$cache" RUNTIME_AGENT="$tmp/bad-agent" runtime sandbox run -- true
check "… with the console's last lines" grep -qi "panic\|init" "$tmp/err"
is "… on the hint's one line: no dump" "$(grep -v '^Error \[[a-z_]*\]: \|^Hint: \|^runtime: ' "$tmp/err")" ""
check_no_leaks "after a failed boot"

# A default image that cannot be built: its mirror refuses at once (a closed
# loopback port), in a private cache and store; the error carries the
# recipe's last lines and nothing half-made stays.
c3="$tmp/c3"; mkdir -p "$c3"; cp -a "$cache/kernel" "$c3/kernel"; cp "$shared/accel" "$c3/" 2>/dev/null
expect_error "a default image that cannot be built is one error" internal "building the default image failed" \
    env RUNTIME_CACHE_DIR="$c3" RUNTIME_DATA_DIR="$tmp/d3" RUNTIME_DEBIAN_MIRROR=http://127.0.0.1:9/debian \
    runtime sandbox run -- true
check "… with the recipe's last lines" grep -q "debootstrap failed" "$tmp/err"
check "… and no half-made base or image" \
    test -z "$(ls -A "$c3/base" 2>/dev/null | grep -v '^\.lock$')$(ls -A "$tmp/d3/images/manifests" 2>/dev/null)"
check_no_leaks "after a failed default image"

done_testing
