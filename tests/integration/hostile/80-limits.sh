# 80-limits: what a QEMU escape or a greedy guest meets.  The monitor,
# which parses every byte the guest sends, runs with only the capabilities
# later work needs (vmm/privs.h) — and still changes the sandbox's rules
# with them; a guest touching all its memory keeps its QEMU under the
# memory limit its control group gets (vmm/cgroup.c); once QEMU runs in
# that group (the jail, vmm/jail.c) the group's files hold the limits; a
# monitor killed -9 leaves no group and no held uid behind.
# One sandbox of its own: small, and it is filled and then killed.

# CAP_NET_ADMIN (12) alone: QEMU's ender (vmm/vm-end.c) holds CAP_KILL and
# CAP_DAC_OVERRIDE for the end (tests/integration/jail.sh checks it).
lim_kept=0000000000001000
lim_id=$(runtime sandbox create --memory 512 --vcpu 1 --timeout 600 </dev/null 2>"$tmp/lim-create.err")
check "a 512 MiB sandbox starts with its monitor's capabilities dropped" test -n "$lim_id"
[ -n "$lim_id" ] || diag "$(cat "$tmp/lim-create.err")"
lim_mon=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$lim_id/monitor.pid" 2>/dev/null)
lim_qemu=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$lim_id/qemu.pid" 2>/dev/null)
for set in CapEff CapPrm CapBnd; do
    is "the monitor's $set holds only NET_ADMIN" \
        "$(awk -v k="$set:" '$1 == k {print $2}' "/proc/$lim_mon/status" 2>/dev/null)" "$lim_kept"
done
is "… and its CapInh and CapAmb are empty" \
    "$(awk '$1 == "CapInh:" || $1 == "CapAmb:" {print $2}' "/proc/$lim_mon/status" 2>/dev/null | sort -u)" \
    "0000000000000000"

# Rule changes need only CAP_NET_ADMIN: netlink sockets opened inside the
# namespace at start (net/netns.c), no setns.
is "a rule change still works with the kept set" \
    "$(runtime sandbox network "$lim_id" --no-internet >/dev/null 2>"$tmp/lim-net.err"; echo $?)" "0"
[ -s "$tmp/lim-net.err" ] && diag "$(cat "$tmp/lim-net.err")"
is "… and shows" "$(runtime sandbox get "$lim_id" --json 2>/dev/null | json_get 'o["network"]["internet"]')" "False"
is "a guest's request is then refused by the proxy" \
    "$(runtime sandbox exec "$lim_id" -- curl -s -o /dev/null -w '%{http_code}' -m 10 http://198.51.100.9/ 2>/dev/null)" "403"
is "the rules go back" "$(runtime sandbox network "$lim_id" --internet >/dev/null 2>&1; echo $?)" "0"

# The guest touches every page it has (its OOM killer ends the hog): QEMU
# stays under guest + the measured overhead (rt_cgroup_limits_for).
runtime sandbox exec "$lim_id" -- python3 -c '
b = []
while True:
    b.append(bytearray(16 << 20))' >/dev/null 2>&1 </dev/null
hwm=$(awk '$1 == "VmHWM:" {print $2}' "/proc/$lim_qemu/status" 2>/dev/null)
diag "QEMU of a 512 MiB guest after the guest touched all its memory: VmHWM ${hwm:-?} KiB"
check "QEMU's peak stays under its memory limit (784 MiB)" test "${hwm:-999999999}" -lt $((784 * 1024))
is "the sandbox still answers" "$(runtime sandbox exec "$lim_id" -- echo alive </dev/null 2>&1)" "alive"

# The control group: QEMU is in it only once the jail puts it there.
# cgroup v1 ("N:memory:/runtime/runtime-UID") or v2 ("0::/runtime/…").
lim_v1=$(awk -F: '$2 == "memory" && $3 ~ /^\/runtime\/runtime-/ {print $3}' "/proc/$lim_qemu/cgroup" 2>/dev/null)
lim_v2=$(awk -F: '$1 == "0" && $3 ~ /^\/runtime\/runtime-/ {print $3}' "/proc/$lim_qemu/cgroup" 2>/dev/null)
if [ -n "$lim_v1" ]; then
    is "QEMU's memory group holds guest + overhead" \
        "$(cat "/sys/fs/cgroup/memory$lim_v1/memory.limit_in_bytes" 2>/dev/null)" "$((784 * 1024 * 1024))"
    lim_pids=$(awk -F: '$2 == "pids" {print $3}' "/proc/$lim_qemu/cgroup")
    is "QEMU's pids group holds the thread limit" "$(cat "/sys/fs/cgroup/pids$lim_pids/pids.max" 2>/dev/null)" "105"
elif [ -n "$lim_v2" ]; then
    is "QEMU's group's memory.max is guest + overhead" \
        "$(cat "/sys/fs/cgroup$lim_v2/memory.max" 2>/dev/null)" "$((784 * 1024 * 1024))"
    is "QEMU's group's pids.max is the thread limit" "$(cat "/sys/fs/cgroup$lim_v2/pids.max" 2>/dev/null)" "105"
else
    echo "ok $((n += 1)) # SKIP QEMU is not in a runtime-<uid> group yet (vmm/jail.c puts it there)"
fi

# A monitor killed -9: its QEMU dies with it; the next command's reaper
# removes the group and the uid is free.  (Other sandboxes, the shared one,
# keep theirs: only this QEMU's uid is looked at.)
lim_uid=$(awk '$1 == "Uid:" {print $2}' "/proc/$lim_qemu/status" 2>/dev/null)
kill -9 "$lim_mon" 2>/dev/null
for _ in $(seq 50); do kill -0 "$lim_qemu" 2>/dev/null || break; sleep 0.1; done
runtime sandbox ls >/dev/null 2>&1
if [ "${lim_uid:-0}" = 0 ]; then
    echo "ok $((n += 1)) # SKIP QEMU runs as root: no uid of its own yet (vmm/jail.c)"
else
    is "after kill -9 of the monitor: no control group of uid $lim_uid left" \
        "$(ls -d /sys/fs/cgroup/{memory,pids,cpu}/runtime/runtime-"$lim_uid" \
                 /sys/fs/cgroup/runtime/runtime-"$lim_uid" 2>/dev/null)" ""
    check "… and uid $lim_uid is free" flock -n "/run/runtime-uids/$lim_uid" true
fi
is "… and the sandbox is stopped (host_stopped)" \
    "$(runtime sandbox get "$lim_id" --json 2>/dev/null | json_get 'o["stopReason"]')" "host_stopped"
runtime sandbox rm "$lim_id" >/dev/null 2>&1
