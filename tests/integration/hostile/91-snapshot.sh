# 91-snapshot: captures of a hostile guest (libruntime/monitor/capture.c,
# libruntime/snapshot/saved.h).  An agent that never answers QUIESCE
# fails a snapshot, pause or fork quickly and leaves nothing half made; a
# layer header a QEMU rewrote names no host file that a child's QEMU
# opens; a guest that fills its memory with random bytes gets a snapshot
# bounded by its shape, root's alone; a guest spamming its channel is
# captured at a frame boundary and both sides go on.
# Two sandboxes of its own (512 MiB): the flood agent's, and one whose
# snapshots make two children.

sn_snaps=$RUNTIME_DATA_DIR/snapshots
# sn_ls: the snapshots' ids, one a line (the data dir may be shared).
sn_ls() { runtime snapshot ls --json 2>&1 | json_get '"\n".join(s["id"] for s in o)'; }
# sn_sandboxes: the sandbox dirs of the state dir, one a line.
sn_sandboxes() { ls -d "$RUNTIME_STATE_DIR"/sb-* "$RUNTIME_DATA_DIR"/sandboxes/sb-* 2>/dev/null | sort; }
# sn_create ARG…: a new sandbox, booted cold whatever a part before left of
# RUNTIME_TEMPLATES (90-template unsets it): no template is made in the
# background, least of all from the flood agent's private cache.
sn_create() { RUNTIME_TEMPLATES=off runtime sandbox create --timeout 600 "$@" </dev/null; }
# sn_state ID: "state stopReason".
sn_state() { runtime sandbox get "$1" --json 2>/dev/null | json_get 'o["state"] + " " + str(o.get("stopReason"))'; }
# sn_fails_fast DESC CMD…: CMD fails with sandbox_not_ready, one line, in
# at most 10 s (the monitor waits 5 s for the agent's DONE).
sn_fails_fast() {
    local d=$1 t0; shift
    t0=$(date +%s%N)
    expect_error "$d: sandbox_not_ready" sandbox_not_ready "$@"
    t0=$((($(date +%s%N) - t0) / 1000000))
    check "… in one line, within 10 s (took $t0 ms)" test "$(wc -l <"$tmp/err")" -eq 1 -a "$t0" -le 10000
    diag "$(cat "$tmp/err")"
}

# -- An agent that ignores QUIESCE: the flood agent greets and reads
#    frames until its first EXEC, so it never answers (or floods) here.
sn_t=$(date +%s)
sn_cache="$tmp/quiet-cache"
flood_cache "$sn_cache"
sn_quiet=$(RUNTIME_CACHE_DIR="$sn_cache" RUNTIME_AGENT="$RUNTIME_TEST_FLOOD_AGENT" \
    sn_create --memory 512 2>"$tmp/quiet-create.err")
check "snapshot: a sandbox boots with an agent that never answers QUIESCE" test -n "$sn_quiet"
[ -n "$sn_quiet" ] || diag "$(cat "$tmp/quiet-create.err")"
if [ -n "$sn_quiet" ]; then
    sn_before=$(sn_sandboxes)
    sn_ls0=$(sn_ls)
    sn_fails_fast "an agent that ignores QUIESCE: snapshot fails" runtime sandbox snapshot "$sn_quiet" --name quiet
    sn_fails_fast "… pause fails" runtime sandbox pause "$sn_quiet"
    is "… and leaves no saved VM (saved, saved.tmp) in its disk dir" \
        "$(ls -d "$RUNTIME_DATA_DIR/sandboxes/$sn_quiet"/saved* 2>/dev/null)" ""
    sn_fails_fast "… fork fails" runtime sandbox fork "$sn_quiet" --count 2
    is "… and leaves no child" "$(sn_sandboxes)" "$sn_before"
    is "… the sandbox still runs" "$(sn_state "$sn_quiet")" "running None"
    is "… snapshot ls lists nothing new, half made or not" "$(sn_ls)" "$sn_ls0"
    is "… and nothing is left under the snapshots dir (.tmp-*, .fork-*)" \
        "$(ls -A "$sn_snaps" 2>/dev/null | grep -E '^\.(tmp|fork)-')" ""
    expect_error "… the name a failed snapshot asked for is free (no such snapshot)" not_found \
        runtime snapshot get quiet
    runtime sandbox rm "$sn_quiet" >/dev/null 2>&1
fi
rm -rf "$sn_cache"
diag "quiesce ignored: $(($(date +%s) - sn_t)) s"
sn_t=$(date +%s)

# -- A guest that fills 300 MiB of its 512 MiB with random bytes (held
#    by a process) and 32 MiB of its disk: the snapshot is bounded by
#    the shape, and only root reads it.
sn_id=$(sn_create --memory 512 2>"$tmp/sn-create.err")
check "snapshot: a 512 MiB sandbox starts" test -n "$sn_id"
[ -n "$sn_id" ] || diag "$(cat "$tmp/sn-create.err")"
cat >"$tmp/fill.py" <<'EOF'
import os, time
b = bytearray(300 << 20)
for i in range(0, len(b), 1 << 20):
    b[i:i + (1 << 20)] = os.urandom(1 << 20)
open("/tmp/filled", "w").close()
time.sleep(3600)
EOF
runtime sandbox cp "$tmp/fill.py" "$sn_id:/workspace/fill.py" 2>/dev/null
sn_fill=$(runtime sandbox spawn "$sn_id" -- python3 /workspace/fill.py </dev/null 2>/dev/null)
runtime sandbox exec "$sn_id" -- sh -c '
    dd if=/dev/urandom of=/workspace/junk bs=1M count=32 2>/dev/null; sync
    for _ in $(seq 600); do [ -e /tmp/filled ] && exit 0; sleep 0.2; done; exit 1' </dev/null
check "a guest holds 300 MiB of random memory and 32 MiB of random disk" test $? -eq 0
sn_a=$(runtime sandbox snapshot "$sn_id" </dev/null 2>"$tmp/sn-a.err")
check "a snapshot of it is taken" test -n "$sn_a"
[ -n "$sn_a" ] || diag "$(cat "$tmp/sn-a.err")"
sn_adir=$sn_snaps/$sn_a
read -r sn_stored sn_mem sn_disk <<<"$(json_get 'o["storedBytes"], o["shape"]["memoryMiB"], o["shape"]["diskMiB"]' \
    <"$sn_adir/meta.json" 2>/dev/null | tr -d '(),')"
sn_du=$(du -s -B1 "$sn_adir" 2>/dev/null | cut -f1)
sn_ram=$(du -B1 "$sn_adir/ram" 2>/dev/null | cut -f1)
sn_bound=$(((${sn_mem:-0} + ${sn_disk:-0} + 64) << 20))
diag "storedBytes $sn_stored, on disk $sn_du (ram $sn_ram), shape ${sn_mem:-?} MiB + ${sn_disk:-?} MiB"
check "its ram file holds the random memory ($sn_ram bytes on disk)" test "${sn_ram:-0}" -ge $((300 << 20))
check "… its storedBytes ($sn_stored) stay within memory + disk + 64 MiB ($sn_bound)" \
    test "${sn_stored:-0}" -gt 0 -a "${sn_stored:-0}" -le "$sn_bound"
check "… and so does what it takes on disk ($sn_du)" test "${sn_du:-0}" -gt 0 -a "${sn_du:-0}" -le "$sn_bound"
is "its dir is 0700 root's, meta.json, ram and state 0600 root's" \
    "$(cd "$sn_adir" 2>/dev/null && stat -c '%a %U %n' . meta.json ram state | tr '\n' ' ')" \
    "700 root . 600 root meta.json 600 root ram 600 root state "
is "… and nothing in it is readable by anyone but root" \
    "$(find "$sn_adir" \( -perm /077 -o ! -user root \) 2>/dev/null)" ""
[ -n "$sn_fill" ] && runtime sandbox kill "$sn_id" "$sn_fill" >/dev/null 2>&1
diag "random memory: $(($(date +%s) - sn_t)) s"
sn_t=$(date +%s)

# -- A guest spamming its channel (a process printing as fast as it
#    can) while it is captured: the QUIESCE lands between frames, the
#    source's output goes on, a child of it answers.
sn_spam=$(runtime sandbox spawn "$sn_id" -- python3 -c 'import itertools, sys
for i in itertools.count(): sys.stdout.write("spam %d\n" % i)' </dev/null 2>/dev/null)
sleep 1
sn_b=$(runtime sandbox snapshot "$sn_id" </dev/null 2>"$tmp/sn-b.err")
check "a snapshot of a guest spamming its channel completes" test -n "$sn_b"
[ -n "$sn_b" ] || diag "$(cat "$tmp/sn-b.err")"
sn_last() { runtime sandbox logs "$sn_id" "$sn_spam" 2>/dev/null | tail -n 2 | head -n 1; }
sn_l1=$(sn_last)
sleep 2
sn_l2=$(sn_last)
diag "spam before: $sn_l1, 2 s later: $sn_l2"
check "… its output goes on afterwards, line by line (${sn_l1#spam } then ${sn_l2#spam })" \
    test -n "$sn_l1" -a -n "$sn_l2" -a "${sn_l2#spam }" -gt "${sn_l1#spam }" 2>/dev/null
is "… the source runs on (no guest_protocol_error)" "$(sn_state "$sn_id")" "running None"
sn_child=$(sn_create --snapshot "$sn_b" 2>"$tmp/sn-child.err")
check "a child starts from it" test -n "$sn_child"
[ -n "$sn_child" ] || diag "$(cat "$tmp/sn-child.err")"
is "… and its monitor serves: exec works in the child, spammer and all" \
    "$(runtime sandbox exec "$sn_child" -- echo child-alive </dev/null 2>&1)" "child-alive"
is "… the child runs" "$(sn_state "$sn_child")" "running None"
[ -n "$sn_child" ] && runtime sandbox rm "$sn_child" >/dev/null 2>&1
[ -n "$sn_spam" ] && runtime sandbox kill "$sn_id" "$sn_spam" >/dev/null 2>&1
diag "spam: $(($(date +%s) - sn_t)) s"
sn_t=$(date +%s)

# -- A layer whose header a QEMU rewrote to name a host file as its
#    backing file (done here with qemu-img on purpose; the product never
#    runs qemu-img on a layer): a child of it does not read the file.
sn_layer=$(ls "$sn_adir"/layers/*.qcow2 2>/dev/null | sort -V | tail -n 1)
qemu-img rebase -u -f qcow2 -b /etc/shadow -F raw "$sn_layer" 2>"$tmp/rebase.err"
check "the snapshot's last layer now names /etc/shadow as its backing file" \
    grep -q 'backing file: /etc/shadow' <(qemu-img info -U "$sn_layer" 2>&1)
sn_child=$(sn_create --snapshot "$sn_a" 2>"$tmp/sn-tamper.err")
sn_rc=$?
check "a child of it starts, or fails with one line" \
    test -n "$sn_child" -o \( "$sn_rc" -eq 1 -a "$(grep -c '^Error \[' "$tmp/sn-tamper.err")" -eq 1 \)
[ -n "$sn_child" ] || diag "$(cat "$tmp/sn-tamper.err")"
if [ -n "$sn_child" ]; then
    sn_q=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$sn_child/qemu.pid" 2>/dev/null)
    check "… its QEMU runs" test -n "$sn_q" -a -d "/proc/${sn_q:-0}"
    is "… and holds no /etc/shadow open" \
        "$(for f in /proc/"${sn_q:-0}"/fd/*; do readlink "$f"; done 2>/dev/null | grep -c shadow)" "0"
    # Read past the guest's page cache (the restored RAM holds one): the
    # first 64 bytes of every block device are not the host's /etc/shadow
    # (root's line at offset 0, were it the backing of an unwritten
    # cluster 0), and a file of the image the guest never wrote reads the
    # same as in the source (a raw /etc/shadow under the layer would read
    # as zeros past its end).
    sn_devs=$(runtime sandbox exec --user root "$sn_child" -- sh -c '
        echo 3 > /proc/sys/vm/drop_caches
        for d in /sys/block/*; do
            [ -b "/dev/${d##*/}" ] && printf "%s " "${d##*/}" &&
                dd if="/dev/${d##*/}" bs=4096 count=1 iflag=direct 2>/dev/null | head -c 64 | od -An -v -tx1 | tr -d " \n"
            echo
        done' </dev/null 2>&1)
    sn_shadow=$(head -c 64 /etc/shadow | od -An -v -tx1 | tr -d ' \n')
    diag "guest block devices: $(cut -d' ' -f1 <<<"$sn_devs" | tr '\n' ' ')"
    check "… its guest reads its block devices" grep -qE '^[a-z0-9]+ [0-9a-f]{128}$' <<<"$sn_devs"
    is "… none of which starts with the host's /etc/shadow (or 'root:')" \
        "$(grep -c -e " $sn_shadow" -e " 726f6f743a" <<<"$sn_devs")" "0"
    sn_sum='echo 3 > /proc/sys/vm/drop_caches; sha256sum "$(readlink -f /usr/bin/python3)" /workspace/junk'
    is "… and its disk reads as the source's: an image file it never wrote, the file it wrote" \
        "$(runtime sandbox exec --user root "$sn_child" -- sh -c "$sn_sum" </dev/null 2>&1)" \
        "$(runtime sandbox exec --user root "$sn_id" -- sh -c "$sn_sum" </dev/null 2>&1)"
    runtime sandbox rm "$sn_child" >/dev/null 2>&1
fi

diag "tampered layer: $(($(date +%s) - sn_t)) s"
[ -n "$sn_id" ] && runtime sandbox rm "$sn_id" >/dev/null 2>&1
runtime snapshot rm ${sn_a:+"$sn_a"} ${sn_b:+"$sn_b"} >/dev/null 2>&1
is "snapshot: none of its snapshots is left" "$(ls -d "$sn_snaps/${sn_a:-none}" "$sn_snaps/${sn_b:-none}" 2>/dev/null)" ""
