#!/bin/bash
# jail.sh - every QEMU in a jail (vmm/jail.c): its own uid from the reserved
# range, no capabilities, no_new_privs, seccomp, its own mount, PID, IPC and
# UTS namespaces with nothing of the host's data in view, an empty
# environment, rlimits and a cgroup; the uid given back whatever ends the
# sandbox; a jail that cannot be built stops the start.  Looked at from the
# host and from a process with QEMU's credentials, as an escape would have.
# Two live sandboxes serve every check.
. "$(dirname "$0")/libtest.sh"
exec </dev/null

unset RUNTIME_UID_RANGE RUNTIME_UNSAFE_NO_JAIL
range_first=1879048192 range_last=1879113727 # uidpool.h's default
lockdir=/run/runtime-uids
made=()
remove_ours() {
    local id
    # Ours, and any a start meant to fail made anyway.
    for id in "${made[@]}" $(runtime sandbox ls --json 2>/dev/null | json_get '" ".join(s["id"] for s in o)'); do
        timeout 60 runtime sandbox rm "$id" >/dev/null 2>&1
    done
    cleanup
}
trap remove_ours EXIT

# A data dir of the test's own, reachable by any uid down to its files (as
# /var/lib/runtime is, 0755): what keeps QEMU's uid out is each file's own
# mode, not a private parent.  It holds a secret, hence the egress CA, and
# the ledger once a sandbox runs.
export RUNTIME_DATA_DIR="$tmp/data"
mkdir -p -m 0755 "$RUNTIME_DATA_DIR"
chmod 0711 "$tmp"
if [ -d "${RUNTIME_TEST_DATA:-}/images" ]; then cp -al "$RUNTIME_TEST_DATA/images" "$RUNTIME_DATA_DIR/"; fi
data=$RUNTIME_DATA_DIR state=$RUNTIME_STATE_DIR
printf 'jail-%s' "$RANDOM$RANDOM" | runtime secrets set JAIL_KEY --host jail.example.com >/dev/null

qemu_of() { cut -d' ' -f1 "$state/$1/qemu.pid" 2>/dev/null; }
status_of() { sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" 2>/dev/null; }
get_json() { runtime sandbox get --json "$1" 2>/dev/null; }
lock_free() { flock -n "$lockdir/$1" true; }
# as_qemu UID CMD…: CMD with QEMU's credentials, in the host's namespaces:
# what an escape could reach if it also left the mount namespace.
as_qemu() {
    local u=$1; shift
    setpriv --reuid "$u" --regid "$u" --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- "$@"
}
# cgroup_dir PID CONTROLLER: the directory of PID's group in a v1 hierarchy.
cgroup_dir() { sed -n "s/^[0-9]*:$2:\(.*\)/\/sys\/fs\/cgroup\/$2\1/p" "/proc/$1/cgroup"; }

# -- two live sandboxes; the second with a disk above the image's, so that
#    its writes go to an overlay file in <data>/sandboxes/<id>/.
a=$(runtime sandbox create --timeout 900 --vcpu 1 --memory 512 2>"$tmp/err-a")
made+=($a)
check "a jailed sandbox starts" test -n "$a"
[ -n "$a" ] || diag "$(cat "$tmp/err-a")"
b=$(runtime sandbox create --timeout 900 --vcpu 1 --memory 512 --disk 4608 2>"$tmp/err-b")
made+=($b)
check "a second one starts beside it" test -n "$b"
[ -n "$b" ] || diag "$(cat "$tmp/err-b")"
qa=$(qemu_of "$a") qb=$(qemu_of "$b")
check "… and each has a running QEMU" kill -0 "${qa:-0}" "${qb:-0}"
is "the jail prints no warning" "$(cat "$tmp/err-a" "$tmp/err-b" | grep -i warn)" ""

# -- its own uid and gid, from the range, not shared
ua=$(status_of "$qa" Uid | awk '{print $1}') ub=$(status_of "$qb" Uid | awk '{print $1}')
is "QEMU's real, effective, saved and fs uids are one" "$(status_of "$qa" Uid | tr -s '\t ' '\n' | sort -u | wc -l)" 1
is "… its gids the same number" "$(status_of "$qa" Gid | tr -s '\t ' '\n' | sort -u)" "$ua"
is "… and it has no supplementary groups" "$(status_of "$qa" Groups)" ""
check "its uid ($ua) is not root" test "${ua:-0}" != 0
check "… and in the default range $range_first-$range_last" \
    test "${ua:-0}" -ge "$range_first" -a "${ua:-0}" -le "$range_last"
check "the other sandbox's QEMU has a uid of its own ($ub)" test -n "$ub" -a "$ub" != "$ua" -a "${ub:-0}" != 0
check "… and its uid's lock is held while it lives" bash -c "! flock -n $lockdir/${ua:-0} true"
check "the monitor itself is not that uid" test "$(stat -c %u "/proc/$(cut -d' ' -f1 "$state/$a/monitor.pid")")" != "$ua"

# -- the monitor keeps CAP_NET_ADMIN alone (vmm/privs.h); what ends QEMU,
#    which needs CAP_KILL and CAP_DAC_OVERRIDE, is its child, QEMU's ender
#    (vmm/vm-end.c), which holds nothing of the guest's.
mon_a=$(cut -d' ' -f1 "$state/$a/monitor.pid") mon_b=$(cut -d' ' -f1 "$state/$b/monitor.pid")
is "the monitor's CapEff, CapPrm and CapBnd hold CAP_NET_ADMIN alone" \
    "$(for f in CapEff CapPrm CapBnd; do status_of "$mon_a" $f; done | sort -u | tr '\n' ' ')" "0000000000001000 "
end_a=$(pgrep -P "${mon_a:-0}" -x runtime-vm-end) end_b=$(pgrep -P "${mon_b:-0}" -x runtime-vm-end)
check "QEMU's ender is a child of each monitor" test -n "$end_a" -a -n "$end_b"
is "… keeping CAP_KILL and CAP_DAC_OVERRIDE alone (CapEff, CapPrm, CapBnd)" \
    "$(for f in CapEff CapPrm CapBnd; do status_of "${end_a:-0}" $f; done | sort -u | tr '\n' ' ')" "0000000000000022 "
is "… with two fds open: its pipe and QEMU's pidfd" "$(ls "/proc/${end_a:-0}/fd" 2>/dev/null | wc -l)" 2
# What QEMU's uid may leave in /vm that the monitor cannot open: a
# subdir of mode 0 with a file in it.  The end removes it.
vm_a=$(for d in "$data/sandboxes/$a/vm" "$state/$a/vm"; do [ -d "$d" ] && echo "$d"; done | head -1)
check "QEMU's dir of the first sandbox is on the host ($vm_a)" test -n "$vm_a"
# (Made by root as QEMU's uid would: the host path is not QEMU's to reach.)
[ -n "$vm_a" ] && mkdir "$vm_a/left" && touch "$vm_a/left/file" && chown -R "$ua:$ua" "$vm_a/left" && chmod 0 "$vm_a/left"
check "… where QEMU's uid leaves a mode-0 subdir (as it can)" test -d "$vm_a/left"

# -- no privilege: caps, no_new_privs, seccomp
for f in CapInh CapPrm CapEff CapBnd CapAmb; do
    is "QEMU's $f is empty" "$(status_of "$qa" $f)" 0000000000000000
done
is "QEMU has no_new_privs" "$(status_of "$qa" NoNewPrivs)" 1
is "QEMU runs under a seccomp filter (mode 2)" "$(status_of "$qa" Seccomp)" 2
check "… QEMU's own (-sandbox on,…, spawn and elevateprivileges denied)" \
    grep -qF -- "-sandbox on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny" \
    <(tr '\0' ' ' <"/proc/$qa/cmdline")

# -- its environment: nothing
is "QEMU's environment is empty" "$(tr '\0' '\n' <"/proc/$qa/environ" | grep -vx -e '')" ""
is "… and empty with a disk overlay of the monitor's" "$(tr -d '\0' <"/proc/$qb/environ")" ""
is "its cwd is its root" "$(readlink "/proc/$qa/cwd")" /

# -- namespaces: its own mount, PID, IPC, UTS; the sandbox's network
for ns in mnt pid ipc uts; do
    check "QEMU has its own $ns namespace" test "$(readlink "/proc/$qa/ns/$ns")" != "$(readlink /proc/1/ns/$ns)" \
        -a "$(readlink "/proc/$qa/ns/$ns")" != "$(readlink "/proc/$qb/ns/$ns")"
done
check "… and the sandbox's network namespace, not the host's" \
    test "$(readlink "/proc/$qa/ns/net")" != "$(readlink /proc/1/ns/net)"

# -- what its root holds: nothing of the host's data
root=/proc/$qa/root
for p in /var/lib/runtime /root /home /etc/shadow /run/runtime "$state" "$state/$a" "$state/$b" \
    "$data/secrets.json" "$data/ca" "$data/ledger" "$data/images" "$data/sandboxes/$b" \
    "${RUNTIME_CACHE_DIR:-/var/cache/runtime}/disks" "${RUNTIME_CACHE_DIR:-/var/cache/runtime}/base" "$lockdir"; do
    check "QEMU's root has no $p" test ! -e "$root$p" -a ! -L "$root$p"
done
is "… no block or character device but null, zero, random, urandom, kvm" \
    "$(find "$root/" \( -path "$root/proc" -o -path "$root/sys" \) -prune -o \( -type b -o -type c \) -printf '%f\n' 2>/dev/null |
        grep -vx -e null -e zero -e random -e urandom -e kvm | sort -u | tr '\n' ' ')" ""
own=/vm
is "its own dir, $own, is root's and its group's only" "$(stat -c '%u %g %a' "$root$own" 2>&1)" "0 $ua 770"
is "… and nothing else in its root is its uid's, its group's or writable by all" \
    "$(find "$root/" -path "$root/proc" -prune -o -path "$root/sys" -prune -o -path "$root$own" -prune -o \
        \( -user "$ua" -o -group "$ua" -o -perm -0002 \) ! -type l ! -path "$root/dev/null" -printf '%P\n' 2>/dev/null |
        head -5)" ""
diag "QEMU's root: $(find "$root/" -maxdepth 2 -printf '%P ' 2>/dev/null | head -c 600)"

# -- rlimits
limit() { awk -v w="$2" 'index($0, w) == 1 { print $(NF - 2), $(NF - 1) }' "/proc/$1/limits"; }
is "no core dumps (soft, hard)" "$(limit "$qa" 'Max core file size')" "0 0"
for w in 'Max open files' 'Max file size' 'Max processes'; do
    l=$(limit "$qa" "$w")
    check "$w is finite ($l)" test -n "$l" -a "${l#*unlimited}" = "$l"
done

# -- its cgroup: memory and pids limited (v1 here; v2 hosts: one group)
json=$(get_json "$a")
missing=$(json_get 'o.get("jail", {}).get("missingLimits")' <<<"$json" 2>/dev/null)
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    mem=/sys/fs/cgroup$(sed -n 's/^0:://p' "/proc/$qa/cgroup") pids=$mem mem_file=memory.max
else
    mem=$(cgroup_dir "$qa" memory) pids=$(cgroup_dir "$qa" pids) mem_file=memory.limit_in_bytes
fi
check "QEMU's memory cgroup is runtime-$ua ($mem)" test "${mem##*/}" = "runtime-$ua"
check "… and its pids cgroup ($pids)" test "${pids##*/}" = "runtime-$ua"
v=$(cat "$mem/$mem_file" 2>/dev/null)
# v1 says "no limit" with 2^63 rounded down to a page, v2 with "max".
check "… $mem_file is finite ($v)" test -n "$v" -a "$v" != max -a "${v/max/0}" -lt 4611686018427387904
v=$(cat "$pids/pids.max" 2>/dev/null)
check "… pids.max is finite ($v)" test -n "$v" -a "$v" != max
[ "$missing" = None ] || [ -z "$missing" ] || diag "missingLimits: $missing"

# -- sandbox get --json: the jail object
is "get --json: jail.enabled, jail.uid is QEMU's uid" \
    "$(json_get 'o["jail"]["enabled"], o["jail"]["uid"]' <<<"$json" 2>/dev/null)" "True $ua"
su=$(json_get 'o["jail"]["setupUs"]' <<<"$json" 2>/dev/null)
check "… jail.setupUs is a positive count of µs ($su)" test "${su:-0}" -gt 0 2>/dev/null
is "… jail.missingLimits: none on this host (cgroup v1, memory and pids writable)" "$missing" None

# -- with QEMU's credentials, in the host's namespaces (had it left its
#    mount namespace): the other sandbox, the secrets, the CA key, the
#    ledger, the state dirs stay out of reach.
check "as QEMU's uid: the data dir is reachable (so the files' own modes are tested)" as_qemu "$ua" test -x "$data"
overlay=$data/sandboxes/$b/overlay.qcow2
check "… the other sandbox's overlay is there to try" test -f "$overlay"
cannot_read() { test -e "$2" && ! as_qemu "$1" cat "$2" >/dev/null 2>&1; }
cannot_list() { test -d "$2" && ! as_qemu "$1" ls "$2" >/dev/null 2>&1; }
cannot_connect() {
    test -S "$2" && ! as_qemu "$1" python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])' \
        "$2" 2>/dev/null
}
cannot_create() {
    if as_qemu "$1" touch "$2/jail-probe" 2>/dev/null || test -e "$2/jail-probe"; then
        rm -f "$2/jail-probe"
        return 1
    fi
}
for f in "$overlay" "$data/secrets.json" "$data/ca/egress-ca.key" "$data/ledger/ledger.jsonl" \
    "$state/$b/state.json" "$state/$a/state.json"; do
    check "as QEMU's uid: cannot read ${f#"$tmp"/}" cannot_read "$ua" "$f"
done
for d in "$data/sandboxes/$b" "$data/sandboxes/$a" "$data/images" "$state/$b"; do
    check "as QEMU's uid: cannot list ${d#"$tmp"/}" cannot_list "$ua" "$d"
done
for sock in "$state/$b/qmp.sock" "$state/$b/agent.sock" "$state/$a/qmp.sock"; do
    check "as QEMU's uid: cannot connect to ${sock#"$tmp"/}" cannot_connect "$ua" "$sock"
done
for d in "$data" "$data/sandboxes" "$state"; do
    check "as QEMU's uid: cannot create a file in ${d#"$tmp"/}" cannot_create "$ua" "$d"
done
cannot_signal() { kill -0 "$2" && ! as_qemu "$1" kill -0 "$2" 2>/dev/null; }
check "as QEMU's uid: cannot signal the other sandbox's QEMU" cannot_signal "$ua" "$qb"
check "… nor a monitor" cannot_signal "$ua" "$(cut -d' ' -f1 "$state/$b/monitor.pid")"

# -- inside the jail: a process with QEMU's credentials in all its
#    namespaces (what escaped code would be, minus QEMU's seccomp filter).
#    Python, started on the host, enters them and looks around: the jail
#    holds no shell, and /vm, the one place QEMU writes, is noexec.
cat >"$tmp/in-jail.py" <<'EOF'
import ctypes, errno, os, sys
pid, uid, own, prog = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
paths = sys.argv[5:]
libc = ctypes.CDLL(None, use_errno=True)
exe = open(prog, "rb").read() if prog else b""  # a static binary, read on the host
nss = [os.open(f"/proc/{pid}/ns/{ns}", os.O_RDONLY) for ns in ("ipc", "uts", "net", "pid", "mnt")]
for fd in nss:  # the mount namespace last: it moves our root into the jail
    if libc.setns(fd, 0) != 0:
        sys.exit(f"setns: {os.strerror(ctypes.get_errno())}")
os.chdir("/")
child = os.fork()  # the PID namespace holds only the children
if child:
    sys.exit(os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]))
os.setgroups([])
os.setresgid(uid, uid, uid)
for cap in range(64):
    libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP
os.setresuid(uid, uid, uid)
libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS
def out(key, vals):
    print(f"{key}: {' '.join(sorted(vals))}", flush=True)
out("ids", [f"{os.getuid()}/{os.getgid()}"])
out("present", [p for p in paths if os.path.lexists(p)])
writable = []  # every dir where a file can be made, every file that opens for writing
reopened = set()
for d, dirs, files in os.walk("/"):
    if d == own:
        dirs[:] = []
        continue
    try:
        os.close(os.open(os.path.join(d, "jail-probe"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        writable.append(d + "/")
    except OSError:
        pass
    try:
        os.mkdir(os.path.join(d, "jail-dir"))
        writable.append(d + "/ (mkdir)")
    except OSError:
        pass
    for f in files:
        try:
            os.close(os.open(os.path.join(d, f), os.O_WRONLY | os.O_APPEND))
            if os.path.join(d, f) == "/dev/null":
                pass
            elif "/fd/" in os.path.join(d, f) and d.startswith("/proc/"):
                # QEMU's own fds, reopened through its /proc: what it
                # already holds open for writing, nothing more.
                reopened.add(os.path.basename(os.readlink(os.path.join(d, f))))
            else:
                writable.append(os.path.join(d, f))
        except OSError:
            pass
out("writable outside own dir", writable)
out("its own fds reopened for writing", reopened)
out("in /proc", [e for e in os.listdir("/proc") if not e.isdigit()] if os.path.isdir("/proc") else [])
try:
    os.close(os.open(own + "/jail-probe", os.O_WRONLY | os.O_CREAT, 0o700))
    out("own dir writable", ["yes"])
except OSError as e:
    out("own dir writable", [e.strerror])
did = []
if libc.mount(b"none", own.encode(), b"tmpfs", 0, None) == 0:
    did.append("mount")
try:
    os.chroot("/")
    did.append("chroot")
except OSError:
    pass
if libc.unshare(0x00020000) == 0:  # CLONE_NEWNS: needs CAP_SYS_ADMIN
    did.append("unshare")
out("privileged calls that worked", did)
if exe:  # what it writes it cannot run
    with open(own + "/jail-probe", "wb") as f:
        f.write(exe)
    os.chmod(own + "/jail-probe", 0o755)
    try:
        os.execve(own + "/jail-probe", ["true"], {})
    except OSError as e:
        out("exec of a file it wrote", [errno.errorcode.get(e.errno, str(e.errno))])
EOF
bb=$(command -v busybox)
if [ -n "$bb" ] && ldd "$bb" >/dev/null 2>&1; then bb=""; fi
if [ "${ua:-0}" = 0 ] || [ ! -d "$root/vm" ]; then
    fail "inside the jail: QEMU is jailed (uid '$ua')"
else
    python3 "$tmp/in-jail.py" "$qa" "$ua" /vm "$bb" /var/lib/runtime /root /home /etc/passwd /etc/shadow /tmp /sys /run "$data" \
        "$state" "$data/sandboxes/$b" "$state/$b" /usr/bin/setpriv /bin/sh >"$tmp/in-jail" 2>&1
    field() { sed -n "s/^$1: //p" "$tmp/in-jail"; }
    is "inside the jail: QEMU's uid and gid" "$(field ids)" "$ua/$ua"
    is "… none of the host's paths exist (/var/lib/runtime, /root, /etc/passwd, /tmp, the data and state dirs, a shell)" \
        "$(field present)" ""
    # Its /proc (for its RAM's memfd, vmm/qemu-args.c) is its own PID
    # namespace's, pid dirs only, read-only.
    is "… its /proc holds only its own processes" "$(field 'in /proc' | tr ' ' '\n' | grep -v -x -e self -e thread-self | tr '\n' ' ')" ""
    is "… through it only /dev/null and its own RAM reopen for writing (its overlay is root's 0600)" \
        "$(field 'its own fds reopened for writing')" "memfd:runtime-ram (deleted) null"
    is "… nothing outside /vm can be created or opened for writing (but /dev/null)" \
        "$(field 'writable outside own dir')" ""
    is "… /vm, its own dir, is writable" "$(field 'own dir writable')" yes
    is "… no mount, chroot or new mount namespace" "$(field 'privileged calls that worked')" ""
    if [ -n "$bb" ]; then
        is "… a program it writes to /vm cannot be run (noexec)" "$(field 'exec of a file it wrote')" EACCES
    else
        fail "… a static busybox to try exec with (apt-get install busybox-static)"
    fi
    grep -v -e '^[a-z ]*:' "$tmp/in-jail" | head -5 | while read -r l; do diag "in-jail: $l"; done
    rm -f "$root/vm/jail-probe"
fi

# -- refused ranges: one clear line each, nothing left
nothing_left() {
    test -z "$(ls -A "$state" | grep -v -x -e '.lock' -e "$a" -e "$b")" &&
        test -z "$(ls -A "$data/sandboxes" | grep -v -e "^$a" -e "^$b")"
}
one_line() { test "$(grep -c . "$tmp/err")" -ge 1 && test "$(grep -c '^Error' "$tmp/err")" = 1; }
expect_error "RUNTIME_UID_RANGE=0-10 (root's uid) is refused" startup_failed \
    env RUNTIME_UID_RANGE=0-10 runtime sandbox create
check "… in one Error line" one_line
nobody=$(id -u nobody 2>/dev/null || echo 65534)
expect_error "a range holding a host user (nobody, $nobody) is refused" startup_failed \
    env RUNTIME_UID_RANGE="$((nobody - 1))-$((nobody + 1))" runtime sandbox create
check "… naming the range and the user" grep -q "$((nobody - 1))-$((nobody + 1)).*user $nobody" "$tmp/err"
check "… in one Error line" one_line
check "… leaving nothing" nothing_left
expect_error "an exhausted range ($ua-$ua, held by a live sandbox) refuses the next start" startup_failed \
    env RUNTIME_UID_RANGE="$ua-$ua" runtime sandbox create
check "… saying the range is taken" grep -q "$ua-$ua.*taken" "$tmp/err"
check "… in one Error line" one_line
check "… leaving nothing" nothing_left
check "… and the live one keeps its uid" bash -c "! flock -n $lockdir/$ua true"

# -- a jail step that fails: QEMU given as a wrapper script, whose
#    interpreter the jail does not hold.  The start fails naming the step.
printf '#!/bin/sh\nexec qemu-system-x86_64 "$@"\n' >"$tmp/qemu-wrapper"
chmod 0755 "$tmp/qemu-wrapper"
expect_error "a QEMU the jail cannot run (a script) fails the start" startup_failed \
    env RUNTIME_QEMU="$tmp/qemu-wrapper" runtime sandbox create
check "… naming the jail's step" grep -qi 'jail' "$tmp/err"
diag "$(head -2 "$tmp/err")"
check "… leaving nothing" nothing_left
# Machine-wide: VM tests run one at a time under the machine lock.
all_qemus() { pgrep -x qemu-system-x86 | sort | tr '\n' ' '; }
is "… no QEMU but the two" "$(all_qemus)" "$(printf '%s\n' "$qa" "$qb" | sort | tr '\n' ' ')"
is "… and no uid held for it" "$(held_uids | sort | tr '\n' ' ')" "$(printf '%s\n' "$ua" "$ub" | sort | tr '\n' ' ')"
is "… nor a cgroup made" "$(our_cgroups | grep -v -e "runtime-$ua\$" -e "runtime-$ub\$")" ""

# -- the only way out of the jail says so
c=$(RUNTIME_UNSAFE_NO_JAIL=1 runtime sandbox create --timeout 300 --vcpu 1 --memory 512 2>"$tmp/err-c")
made+=($c)
check "RUNTIME_UNSAFE_NO_JAIL=1: the sandbox starts" test -n "$c"
check "… with a warning naming the switch" grep -qi 'warning.*RUNTIME_UNSAFE_NO_JAIL' "$tmp/err-c"
grep -qi 'warning.*RUNTIME_UNSAFE_NO_JAIL' "$tmp/err-c" ||
    diag "stderr: $(cat "$tmp/err-c")" "monitor.log: $(grep -i warning "$state/$c/monitor.log" 2>&1)"
qc=$(qemu_of "$c")
is "… and its QEMU runs as root, unjailed" "$(status_of "$qc" Uid | awk '{print $1}')" 0
is "… which get --json says: jail.enabled false" "$(get_json "$c" | json_get 'o["jail"]["enabled"]' 2>&1)" False
runtime sandbox rm "$c" >/dev/null 2>&1

# -- the uid given back: after rm, and after kill -9 of the monitor
runtime sandbox rm "$a" >/dev/null
for _ in $(seq 50); do kill -0 "$qa" 2>/dev/null || break; sleep 0.1; done
check "after rm: its QEMU is gone" bash -c "! kill -0 $qa 2>/dev/null"
check "… and its ender" bash -c "! kill -0 ${end_a:-0} 2>/dev/null"
for _ in $(seq 50); do [ -e "${vm_a:-/}" ] || break; sleep 0.1; done
check "… and QEMU's dir, mode-0 subdir and all" test -n "$vm_a" -a ! -e "${vm_a:-/}"
check "… and its uid $ua is free (flock -n $lockdir/$ua)" lock_free "$ua"
check "… and its cgroup is removed" test ! -e "$mem" -a ! -e "$pids"
kill -9 "$(cut -d' ' -f1 "$state/$b/monitor.pid")"
for _ in $(seq 100); do kill -0 "$qb" 2>/dev/null || break; sleep 0.1; done
check "kill -9 of the other's monitor: its QEMU goes too" bash -c "! kill -0 $qb 2>/dev/null"
for _ in $(seq 50); do kill -0 "${end_b:-0}" 2>/dev/null || break; sleep 0.1; done
check "… and its ender, its job done" bash -c "! kill -0 ${end_b:-0} 2>/dev/null"
check "… and its uid $ub is free at once" lock_free "$ub"
runtime sandbox ls >/dev/null 2>&1 # the next command reaps it
is "… the next command reaps it" "$(ls -A "$state" | grep -v '^\.lock$')" ""
is "… and its cgroup is swept" "$(our_cgroups | grep -e "runtime-$ub\$")" ""

made=()
is "none of this test's QEMUs is left" "$(ps -o pid= -p "$qa,$qb,${qc:-$qa}" 2>/dev/null)" ""
check_no_leaks "jail"
done_testing
