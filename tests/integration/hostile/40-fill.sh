# 40-fill.sh - a guest fills its disk until ENOSPC. Its writes land under
# the data dir (<data>/sandboxes/<id>/, 0700), never in the state dir (RAM
# on a Debian host's /run); the overlay stays within the disk's size plus
# qcow2's metadata; the full sandbox still runs commands, its neighbour is
# unaffected, and rm leaves nothing of the disk.

# The QEMU of sandbox $1: the files it holds open under $2 (its disk).
held_under() {
    local q f l
    q=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$1/qemu.pid" 2>/dev/null) || return
    for f in /proc/"$q"/fd/*; do
        l=$(readlink "$f")
        # What QEMU opened in its jail reads as a path of its own root,
        # whose /vm is <disk dir>/vm (vmm/jail.c).
        case $l in /vm/*)
            [ "$(stat -c %d:%i "/proc/$q/root/vm")" = "$(stat -c %d:%i "$2/vm" 2>/dev/null)" ] && l=$2$l ;;
        esac
        case $l in "$2"/*) echo "$f" ;; esac
    done
}

fill_disk=4352    # MiB: above the image's 4096, so a qcow2 overlay (vmm/vm.c)
neighbour=$(hostile_sandbox)
fill_sb=$(runtime sandbox create --disk "$fill_disk" --timeout 1200 </dev/null)
fill_dir="$RUNTIME_DATA_DIR/sandboxes/$fill_sb"
if [ -z "$fill_sb" ] || [ -z "$neighbour" ]; then
    fail "fill: the sandboxes start"
else
    is "fill: the disk dir is under the data dir, 0700" "$(stat -c %a "$fill_dir" 2>&1)" "700"
    check "fill: … with the overlay in it, not in the state dir" \
        sh -c "test -f '$fill_dir/overlay.qcow2' && ! ls '$RUNTIME_STATE_DIR/$fill_sb' | grep -q -e qcow2 -e '^vl\\.'"
    check "fill: a default sandbox's snapshot file is under the data dir too" \
        test -n "$(held_under "$neighbour" "$RUNTIME_DATA_DIR/sandboxes/$neighbour")"
    state_before=$(du -sk "$RUNTIME_STATE_DIR" | cut -f1)
    runtime sandbox exec "$fill_sb" --user root -- sh -c \
        'dd if=/dev/zero of=/fill bs=1M 2>&1 | grep -e "No space" -e copied; sync; df -k / | tail -1' >"$tmp/fill" 2>&1
    check "fill: the guest wrote until its disk was full (ENOSPC)" grep -q "No space left on device" "$tmp/fill"
    state_after=$(du -sk "$RUNTIME_STATE_DIR" | cut -f1)
    grew=$((state_after - state_before))
    check "fill: the state dir did not grow with it (${grew} KiB)" test "$grew" -lt 1024
    overlay_k=$(du -k "$fill_dir/overlay.qcow2" | cut -f1)
    bound_k=$(( (fill_disk + fill_disk / 64) * 1024 ))
    check "fill: the overlay ($((overlay_k / 1024)) MiB) is within the disk ($fill_disk MiB) + 1/64 for metadata" \
        test "$overlay_k" -le "$bound_k"
    check "fill: … and holds what the guest wrote (over 3 GiB)" test "$overlay_k" -gt $((3 * 1024 * 1024))
    diag "fill: $(tail -2 "$tmp/fill" | tr '\n' ' '); overlay $overlay_k KiB; state dir $state_before -> $state_after KiB"
    is "fill: the full sandbox still runs commands" \
        "$(runtime sandbox exec "$fill_sb" --user root -- sh -c 'rm /fill && echo usable' 2>&1)" "usable"
    is "fill: its neighbour is unaffected" "$(runtime sandbox exec "$neighbour" -- echo fine 2>&1)" "fine"
fi
[ -n "$fill_sb" ] && runtime sandbox rm "$fill_sb" >/dev/null 2>&1
check "fill: rm leaves nothing of its disk in the data dir" test ! -e "$fill_dir"
