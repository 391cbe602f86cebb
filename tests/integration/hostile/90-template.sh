# 90-template: a clone shares its template's memory and disk, and its
# guest (or its QEMU, escaped) must not change them for the next clone.
# The template's RAM is copied into each clone's own memfd (the keeper's
# stays sealed against writes, template/keeper.c): what the guest writes
# lands in its own memory.  The template's disk is a
# read-only backing file opened O_RDONLY.  Only root reads any of it.
# One small template (1 vCPU, 512 MiB) and two clones of it.

export RUNTIME_TEMPLATES=on RUNTIME_TEMPLATE_KEEP_S=2
tpl_json=$(runtime image warm --vcpu 1 --memory 512 --json </dev/null 2>"$tmp/tpl-warm.err")
tpl_key=$(echo "$tpl_json" | json_get 'o["key"]' 2>/dev/null)
check "a 1 vCPU / 512 MiB template is made" test -n "$tpl_key"
[ -n "$tpl_key" ] || diag "$(cat "$tmp/tpl-warm.err")"
tpl_dir=$RUNTIME_CACHE_DIR/templates/$tpl_key
tpl_sum() { (cd "$tpl_dir" 2>/dev/null && sha256sum ram state disk.qcow2 clone.qcow2 meta.json 2>/dev/null); }
tpl_before=$(tpl_sum)

tpl_id=$(runtime sandbox create --vcpu 1 --memory 512 --timeout 600 </dev/null 2>"$tmp/tpl-create.err")
is "a clone starts from it" "$(runtime sandbox get "$tpl_id" --json 2>/dev/null | json_get 'o["start"]')" "template"
[ -n "$tpl_id" ] || diag "$(cat "$tmp/tpl-create.err")"
tpl_qemu=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$tpl_id/qemu.pid" 2>/dev/null)

# The guest, root, rewrites memory and disk: 200 MiB of its page cache and
# anonymous pages, the kernel's own data, files everywhere.
runtime sandbox exec "$tpl_id" -- sh -c '
    dd if=/dev/urandom of=/dev/shm/junk bs=1M count=150 2>/dev/null
    dd if=/dev/urandom of=/var/junk bs=1M count=50 2>/dev/null
    python3 -c "import os; b = bytearray(os.urandom(1) * (64 << 20))" 2>/dev/null
    echo hostile > /etc/hostile; sync' </dev/null >/dev/null 2>&1

# What an escaped QEMU holds: its own RAM (qemu-args.h: fd 10), a memfd
# with a copy of the template's (snapshot/saved.h), never the keeper's
# sealed memfd: nothing it writes there reaches the template.
is "a clone's QEMU holds its own RAM, not its template's: fd 10 is its memfd, no fd is the keeper's" \
    "$(readlink "/proc/$tpl_qemu/fd/10" | sed 's/ (deleted)//; s/^.*memfd:/memfd:/'); $(for f in /proc/$tpl_qemu/fd/*; do readlink "$f"; done | grep -c 'memfd:rt-template')" \
    "memfd:runtime-ram; 0"
is "the template's disk is open read-only in the clone's QEMU" \
    "$(for f in /proc/$tpl_qemu/fd/*; do [ "$(readlink "$f")" = "$tpl_dir/disk.qcow2" ] && awk '$1 == "flags:" {print $2}' "/proc/$tpl_qemu/fdinfo/${f##*/}"; done | sed 's/.*\(.\)$/\1/' | sort -u)" "0"

runtime sandbox rm "$tpl_id" >/dev/null 2>&1
is "after the clone wrote 200 MiB and its files, the template is byte for byte the same" "$(tpl_sum)" "$tpl_before"

tpl_id2=$(runtime sandbox create --vcpu 1 --memory 512 --timeout 600 </dev/null 2>/dev/null)
is "the next clone starts from it" "$(runtime sandbox get "$tpl_id2" --json 2>/dev/null | json_get 'o["start"]')" "template"
is "… and sees none of the first clone's files" \
    "$(runtime sandbox exec "$tpl_id2" -- sh -c 'ls /etc/hostile /var/junk /dev/shm/junk 2>/dev/null | wc -l' </dev/null 2>&1)" "0"
runtime sandbox rm "$tpl_id2" >/dev/null 2>&1

is "the template's dir and every file in it are root's alone" \
    "$(find "$RUNTIME_CACHE_DIR/templates" "$tpl_dir" -maxdepth 1 \( -path "$tpl_dir*" -o -name templates \) \( -perm /077 -o ! -user root \) 2>/dev/null)" ""
check "nobody cannot read a template's RAM" sh -c "! setpriv --reuid=nobody --regid=nogroup --clear-groups cat '$tpl_dir/ram' >/dev/null 2>&1"
# Its keeper goes 2 s after the last clone asked (RUNTIME_TEMPLATE_KEEP_S).
for _ in $(seq 50); do
    [ -z "$(ls "$RUNTIME_STATE_DIR/.templates" 2>/dev/null | grep -v '\.lock$')" ] && break
    sleep 0.2
done
export RUNTIME_TEMPLATES=off; unset RUNTIME_TEMPLATE_KEEP_S
