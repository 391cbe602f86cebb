# 60-clean: the monitor and QEMU keep nothing of their caller (environment,
# cwd), a comma in the state dir adds no QEMU option, a guest's escape
# sequences reach the terminal as text, and a guest flooding the proxy and
# the DNS server hits the per-sandbox caps while the monitor keeps serving.
# One sandbox of its own: it needs a caller's environment and a state dir
# of its own.

clean_state="$tmp/state,x=y"  # still matched by our_qemus
clean_key="sekrit-60clean-$$"
ESC=$(printf '\033')
BEL=$(printf '\007')
# rc CMD…: runtime against the comma state dir.
rc() { RUNTIME_STATE_DIR="$clean_state" runtime "$@"; }
mkdir -p "$tmp/caller-cwd"
clean_id=$(cd "$tmp/caller-cwd" && DEEPSEEK_API_KEY="$clean_key" RUNTIME_STATE_DIR="$clean_state" \
    runtime sandbox create --timeout 900 --env "TOKEN=$clean_key-argv" </dev/null 2>"$tmp/clean-create.err")
check "a state dir with a comma in it (…/state,x=y): the sandbox starts" test -n "$clean_id"
[ -n "$clean_id" ] || diag "$(cat "$tmp/clean-create.err")"
is "… and runs true" "$(rc sandbox exec "$clean_id" -- true </dev/null 2>&1; echo $?)" "0"

clean_mon=$(cut -d' ' -f1 "$clean_state/$clean_id/monitor.pid" 2>/dev/null)
clean_qemu=$(cut -d' ' -f1 "$clean_state/$clean_id/qemu.pid" 2>/dev/null)
check "QEMU's -name option holds the state dir's comma doubled (its only host path: sockets are fds)" \
    grep -qF -- "runtime:$tmp/state,,x=y/$clean_id,debug-threads=on" <(tr '\0' ' ' <"/proc/$clean_qemu/cmdline" 2>/dev/null)
# /proc/PID/cmdline is readable by every local user, dumpable or not: the
# monitor (a fork of the CLI) shows "runtime sandbox create" only.
is "the monitor's command line holds no --env value" \
    "$(tr '\0' ' ' <"/proc/$clean_mon/cmdline" 2>/dev/null | grep -c -e "$clean_key" -e TOKEN)" "0"
check "… and still says what it is" grep -q '^runtime sandbox create' <(tr '\0' ' ' <"/proc/$clean_mon/cmdline")
is "the guest still gets the --env value" "$(rc sandbox exec "$clean_id" -- sh -c 'echo $TOKEN' </dev/null 2>&1)" "$clean_key-argv"
for who in monitor qemu; do
    pid=clean_mon; [ "$who" = qemu ] && pid=clean_qemu; pid=${!pid}
    if [ -z "$pid" ] || [ ! -r "/proc/$pid/environ" ]; then
        fail "the $who runs (pid '$pid')"
        continue
    fi
    env_of=$(tr '\0' '\n' <"/proc/$pid/environ")
    check "the caller's DEEPSEEK_API_KEY is not in the $who's environment" \
        test -z "$(printf '%s\n' "$env_of" | grep -e "$clean_key" -e DEEPSEEK)"
    # The monitor wipes the block exec left (its own variables live
    # elsewhere); QEMU's is PATH and TMPDIR.
    is "the $who's environment holds none of the caller's variables" \
        "$(printf '%s\n' "$env_of" | cut -d= -f1 | grep -v -x -e '' -e PATH -e TMPDIR -e SSL_CERT_FILE -e SSL_CERT_DIR)" ""
    is "the $who's cwd is / (not the caller's)" "$(readlink "/proc/$pid/cwd")" "/"
done

# Not dumpable: a process of the same user without CAP_SYS_PTRACE in
# effect (kcmp(2) checks with PTRACE_MODE_READ_REALCREDS) may not look
# into the monitor; QEMU, dumpable again after exec, is the control.
cat >"$tmp/peek.py" <<'EOF'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
class Hdr(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
class Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]
h, d = Hdr(0x20080522, 0), (Data * 2)()
libc.capget(ctypes.byref(h), d)
d[0].effective &= ~(1 << 19)  # CAP_SYS_PTRACE
if libc.capset(ctypes.byref(h), d) != 0:
    sys.exit("capset: " + os.strerror(ctypes.get_errno()))
for pid in sys.argv[1:]:
    r = libc.syscall(312, os.getpid(), int(pid), 1, 0, 0)  # kcmp(KCMP_VM)
    print("readable" if r >= 0 else os.strerror(ctypes.get_errno()))
EOF
# The control: a dumpable process of root's (QEMU runs as its own uid now).
sleep 60 &
clean_control=$!
is "the monitor is not dumpable (a root sleep, the control, is)" \
    "$(python3 "$tmp/peek.py" "${clean_mon:-0}" "$clean_control" 2>&1 | tr '\n' ' ')" "Operation not permitted readable "
kill "$clean_control" 2>/dev/null
wait "$clean_control" 2>/dev/null

# -- guest text on the terminal: a file name and a command line carrying
#    an OSC (retitle) sequence; an error message quoting such a path.
rc sandbox exec "$clean_id" -- bash -c 'touch "/workspace/evil$(printf "\033]0;pwned\007")name"' </dev/null
out=$(rc sandbox files "$clean_id" /workspace 2>&1)
check "files: an escape sequence in a guest file name is shown as text" \
    grep -qF 'evil\x1b]0;pwned\x07name' <<<"$out"
check "… and no raw ESC reaches the terminal" test -z "$(grep -F "$ESC" <<<"$out")"
check "… while --json keeps the name JSON-escaped" \
    grep -qF 'evil\u001b]0;pwned\u0007name' <(rc sandbox files "$clean_id" /workspace --json 2>&1)
proc=$(rc sandbox spawn "$clean_id" -- bash -c "sleep 600 # ${ESC}]0;pwned${BEL}" </dev/null)
out=$(rc sandbox ps "$clean_id" 2>&1)
check "ps: a command line with an escape sequence is shown as text" grep -qF 'sleep 600 # \x1b]0;pwned\x07' <<<"$out"
check "… with no raw ESC or BEL" test -z "$(grep -e "$ESC" -e "$BEL" <<<"$out")"
rc sandbox cat "$clean_id" "/workspace/no${ESC}[2Jsuch" >/dev/null 2>"$tmp/clean-err"
check "an error quoting a path shows its escape sequence as text" \
    grep -qF 'no\x1b[2Jsuch' "$tmp/clean-err"
check "… with no raw ESC" test -z "$(grep -F "$ESC" "$tmp/clean-err")"
[ -n "$proc" ] && rc sandbox kill "$clean_id" "$proc" >/dev/null 2>&1

# -- 1000 connections held open on the proxy port: at most 256 are kept,
#    the rest reset at once; the monitor keeps serving.
cat >"$tmp/conns.py" <<'EOF'
import socket, time
socks, failed = [], 0
for i in range(1000):
    s = socket.socket()
    s.settimeout(10)
    try:
        s.connect(("10.0.2.2", 3128))
        socks.append(s)
    except OSError:
        failed += 1
time.sleep(2)
gone = 0
for s in socks:
    s.setblocking(False)
    try:
        if s.recv(1) == b"":
            gone += 1
    except BlockingIOError:
        pass
    except OSError:
        gone += 1
print(len(socks) - gone, gone + failed)
EOF
rc sandbox cp "$tmp/conns.py" "$clean_id:/workspace/conns.py" 2>/dev/null
read -r kept refused <<<"$(rc sandbox exec "$clean_id" -- bash -c 'ulimit -n 4096; python3 /workspace/conns.py' </dev/null 2>&1 | tail -1)"
check "1000 proxy connections: at most 256 kept open (kept $kept)" test "${kept:-999}" -le 256 -a "${kept:-0}" -ge 200
check "… the rest refused at once (refused $refused)" test "${refused:-0}" -ge 700
log=$(rc sandbox network "$clean_id" --log --json 2>/dev/null)
cnt=$(json_get 'sum(1 for e in o if e.get("reason") == "too_many_connections")' <<<"$log" 2>/dev/null)
check "… each refusal is in the egress log as too_many_connections ($cnt)" test "${cnt:-0}" -ge 700
code=$(rc sandbox exec "$clean_id" -- curl -s -m 20 -o /dev/null -w '%{http_code}' -x http://10.0.2.2:3128 \
    http://nothing.invalid/ </dev/null 2>/dev/null)
check "… and afterwards the proxy answers again (HTTP $code)" test -n "$code" -a "$code" != 000

# -- 500 DNS queries at once: at most 64 in flight, the rest REFUSED.
cat >"$tmp/dns.py" <<'EOF'
import random, socket, struct
ns = open("/etc/resolv.conf").read().split("nameserver")[1].split()[0]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)  # as much room as rmem_max gives
for i in range(500):
    name = "q%d-%d.example.com" % (i, random.randrange(1 << 30))
    qname = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    s.sendto(struct.pack(">HHHHHH", i, 0x0100, 1, 0, 0, 0) + qname + struct.pack(">HH", 1, 1), (ns, 53))
s.settimeout(15)
codes = {}
try:
    while sum(codes.values()) < 500:
        d, _ = s.recvfrom(1500)
        codes[d[3] & 15] = codes.get(d[3] & 15, 0) + 1
except socket.timeout:
    pass
print(codes.get(5, 0), sum(codes.values()))
EOF
rc sandbox cp "$tmp/dns.py" "$clean_id:/workspace/dns.py" 2>/dev/null
read -r refused answered <<<"$(rc sandbox exec "$clean_id" -- python3 /workspace/dns.py </dev/null 2>&1 | tail -1)"
# Some lookups end while the burst still arrives, freeing their places;
# the guest's socket (rmem_max) may drop answers it does not read in time.
check "500 DNS queries at once: answers REFUSED reach the guest ($refused of $answered answers)" \
    test "${refused:-0}" -ge 50
log=$(rc sandbox network "$clean_id" --log --json 2>/dev/null)
cnt=$(json_get 'sum(1 for e in o if e.get("reason") == "too_many_queries")' <<<"$log" 2>/dev/null)
check "… most of the 500 are refused, each in the egress log as too_many_queries ($cnt)" \
    test "${cnt:-0}" -ge 250 -a "${cnt:-0}" -ge "${refused:-1}"
is "… and the monitor keeps serving: exec still works" \
    "$(rc sandbox exec "$clean_id" -- echo still-here </dev/null 2>&1)" "still-here"

rc sandbox rm "$clean_id" >/dev/null 2>&1
is "clean: nothing left in the comma state dir" "$(ls -A "$clean_state" 2>/dev/null | grep -v '^\.lock$')" ""
