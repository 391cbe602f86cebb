#!/bin/bash
# network.sh - egress rules on one sandbox against the test internet
# (testnet.sh): the PyPI-only install flow, live changes that cut open
# connections, wildcards, deny, CIDRs, private addresses, the host's own
# services, root in the guest, raw TCP, UDP, the egress log, and nothing
# left after stop or kill -9.
. "$(dirname "$0")/libtest.sh"
. "$(dirname "$0")/testnet.sh"

# in_sb CMD: runs CMD under bash in the sandbox, output on stdout.
in_sb() { runtime sandbox exec "$id" -- "$1" 2>&1; }
# http_code URL [curl args]: the status the guest's curl sees, 000 when none.
http_code() { runtime sandbox exec "$id" -- curl -s -m 10 -o /dev/null -w '%{http_code}' "$@" 2>/dev/null; }
# tcp_echo ADDR: "ping" back when the connection is allowed, else the error.
tcp_echo() {
    in_sb "timeout 10 python3 -c 'import socket; s=socket.create_connection((\"$1\", 7777)); s.sendall(b\"ping\"); print(s.recv(4).decode())' 2>&1 | tail -1"
}
# ns_of PID: the network namespace inode of a process.
ns_of() { readlink "/proc/$1/ns/net" 2>/dev/null; }
ns_alive() { [ -n "$1" ] && lsns -t net -n -o NS | grep -qx "$(echo "$1" | tr -dc 0-9)"; }

id=
hostsrv=
trap 'runtime sandbox rm "$id" >/dev/null 2>&1; [ -n "$hostsrv" ] && kill "$hostsrv" 2>/dev/null; testnet_down; cleanup' EXIT
if ! testnet_up; then
    echo "Bail out! cannot make the test network"
    exit 1
fi

# Names in the ranges every sandbox refuses (net/refused.c): the proxy
# resolves them to these addresses, and refuses them; nothing is ever sent.
export RUNTIME_RESOLVE="$RUNTIME_RESOLVE,ietf.test=192.0.0.9,bench.test=198.18.0.1,azure.test=168.63.129.16"
# Two sites on one address, as behind a CDN: the HTTP echo answers both.
# (echo.test and secure.test already share the HTTPS echo's.)
export RUNTIME_RESOLVE="$RUNTIME_RESOLVE,cdn.test=198.51.100.3,other.test=198.51.100.3"

# -- bad rules are refused before anything starts
expect_error "a malformed --allow is refused" invalid_request runtime sandbox create --allow 'bad host!'
expect_error "a CIDR with host bits is refused" invalid_request runtime sandbox create --allow 198.51.100.7/24
check_no_leaks "refused rules"

# -- PyPI only, install, internet off, run
id=$(runtime sandbox create --paid --timeout 900 --allow pypi.org --allow '*.pythonhosted.org')
check "create with an allow list prints an id" test -n "$id"
is "get --json shows the rules" "$(runtime sandbox get "$id" --json | json_get 'o["network"]')" \
    "{'internet': True, 'allow': ['pypi.org', '*.pythonhosted.org'], 'deny': []}"
is "network shows them as a table" "$(runtime sandbox network "$id" | sed -n 2p)" "allow     pypi.org *.pythonhosted.org"
runtime sandbox cp "$TESTNET_CA" "$id:/workspace/ca.pem"
is "the guest sees the proxy variables" "$(in_sb 'echo $HTTPS_PROXY')" "http://10.0.2.2:3128"
out=$(in_sb 'pip install --quiet --cert /workspace/ca.pem --index-url https://pypi.org/simple rtdemo && python3 -c "import rtdemo; print(rtdemo.answer())"')
is "pip install through the allow list works" "$(echo "$out" | tail -1)" "42"
is "a host off the list gets 403 not_allowed" "$(http_code http://http.test/)" "403"
hdr=$(runtime sandbox exec "$id" -- curl -s -m 10 -D - -o /dev/null http://http.test/ 2>/dev/null | tr -d '\r' | grep -i '^x-runtime-egress')
is "… with X-Runtime-Egress saying why" "$hdr" "X-Runtime-Egress: not_allowed"
check "a name off the list does not resolve" test "$(in_sb 'getent hosts http.test >/dev/null; echo $?')" = 2
is "an allowed name resolves to its address" "$(in_sb 'getent hosts pypi.org' | awk '{print $1}')" "198.51.100.2"

# A connection open across the switch is cut; the next request fails at once.
runtime sandbox network "$id" --allow pypi.org --allow '*.pythonhosted.org' --allow http.test >/dev/null
drip=$(runtime sandbox spawn "$id" -- bash -c 'curl -sN http://http.test/drip | { head -c 5 >/dev/null; echo started; cat >/dev/null; }; echo ended')
for _ in $(seq 100); do runtime sandbox logs "$id" "$drip" 2>/dev/null | grep -q started && break; sleep 0.2; done
check "the drip reader runs before the switch" grep -qE "^$drip +running" <(runtime sandbox ps "$id")
start=$(date +%s%N)
runtime sandbox network "$id" --no-internet >/dev/null 2>"$tmp/closed"
for _ in $(seq 50); do runtime sandbox ps "$id" | grep -qE "^$drip +exited" && break; sleep 0.1; done
cut_ms=$((($(date +%s%N) - start) / 1000000))
check "network --no-internet cuts the open connection" grep -qE "^$drip +exited" <(runtime sandbox ps "$id")
diag "cut seen by the host after ${cut_ms} ms (TCG)"
check "… and says it closed it" grep -q "^Closed 1 open connection" "$tmp/closed"
t0=$(date +%s%N)
is "the next request is refused (internet_off)" "$(http_code http://http.test/)" "403"
check "… at once, not after a timeout" test $((($(date +%s%N) - t0) / 1000000)) -lt 5000
is "raw TCP to an address is reset at once" \
    "$(in_sb 'timeout 5 python3 -c "import socket; socket.create_connection((\"198.51.100.5\", 7777))" 2>&1 | tail -1')" \
    "ConnectionRefusedError: [Errno 111] Connection refused"
check "pypi.org no longer resolves" test "$(in_sb 'getent hosts pypi.org >/dev/null; echo $?')" = 2

# -- wildcards, deny, CIDRs
runtime sandbox network "$id" --allow '*.http.test' >/dev/null
is "*.http.test does not match http.test itself" "$(http_code http://http.test/)" "403"
runtime sandbox network "$id" --allow '*.test' >/dev/null
is "*.test matches http.test" "$(http_code http://http.test/)" "200"
runtime sandbox network "$id" --allow '*.test' --deny http.test >/dev/null
is "deny beats allow" "$(http_code http://http.test/)" "403"
is "… for that name only" "$(http_code --cacert /workspace/ca.pem https://echo.test/)" "200"
runtime sandbox network "$id" --allow 198.51.100.0/28 >/dev/null
is "a CIDR allow admits a name resolving into it" "$(http_code http://http.test/)" "200"
is "raw TCP into the CIDR works, proxy variables ignored" "$(tcp_echo 198.51.100.5)" "ping"
runtime sandbox network "$id" --allow 198.51.100.128/25 >/dev/null
is "a CIDR that does not hold the address refuses it" "$(http_code http://http.test/)" "403"
is "raw TCP outside the CIDR is reset" \
    "$(in_sb 'python3 -c "import socket; socket.create_connection((\"198.51.100.5\", 7777)).recv(1)" 2>&1 | tail -1 | cut -d: -f1')" \
    "ConnectionResetError"

# -- always refused: private addresses, this host, metadata, SMTP
runtime sandbox network "$id" --internet >/dev/null
is "the public internet: http.test works" "$(http_code http://http.test/)" "200"
runtime sandbox network "$id" --allow private.test --allow loop.test >/dev/null
check "an allowed name resolving to a private address does not resolve" \
    test "$(in_sb 'getent hosts private.test >/dev/null; echo $?')" = 2
hdr=$(runtime sandbox exec "$id" -- curl -s -m 10 -D - -o /dev/null http://private.test/ 2>/dev/null | tr -d '\r' | grep -i '^x-runtime-egress')
is "… and the proxy refuses it (private_address)" "$hdr" "X-Runtime-Egress: private_address"
runtime sandbox network "$id" --internet >/dev/null
python3 -m http.server --bind 0.0.0.0 18123 >/dev/null 2>&1 &
hostsrv=$!
sleep 0.5
is "host loopback through the proxy: refused" "$(http_code -x http://10.0.2.2:3128 --noproxy '' http://127.0.0.1:18123/)" "403"
is "host loopback by name through the proxy: refused" "$(http_code http://loop.test:18123/)" "403"
is "the gateway's other ports are closed" "$(http_code --noproxy '*' http://10.0.2.2:18123/)" "000"
is "the proxy's transparent port cannot be dialled directly" "$(http_code --noproxy '*' http://10.0.2.2:3129/)" "000"
is "cloud metadata is unreachable" "$(http_code --noproxy '*' -m 5 http://169.254.169.254/)" "000"
is "cloud metadata through the proxy: refused" "$(http_code http://169.254.169.254/)" "403"
hostip=$(ip -4 -o route get 198.51.100.3 | sed -n 's/.* src \([0-9.]*\).*/\1/p')
is "this host's own address is unreachable ($hostip)" "$(http_code --noproxy '*' http://$hostip:18123/)" "000"
is "SMTP is refused even with the internet on" \
    "$(in_sb 'timeout 5 python3 -c "import socket; print(socket.create_connection((\"198.51.100.6\", 25)).recv(100))" 2>&1 | tail -1 | cut -d: -f1')" \
    "ConnectionResetError"

# -- the other always-refused ranges, and IPv6 forms that wrap a refused
# IPv4 address: the sandbox's nft table resets a direct connection before
# anything leaves its namespace; the proxy refuses them by name or literal
# without dialling (403 private_address, in the egress log); their names do
# not resolve.  The addresses are only data: no packet reaches them.
for ra in 192.0.0.9 198.18.0.1 198.19.255.254 168.63.129.16; do
    is "$ra direct: reset by the sandbox's table" \
        "$(in_sb "timeout 5 python3 -c 'import socket; socket.create_connection((\"$ra\", 80))' 2>&1 | tail -1")" \
        "ConnectionRefusedError: [Errno 111] Connection refused"
    hdr=$(runtime sandbox exec "$id" -- curl -s -m 10 -D - -o /dev/null "http://$ra/" 2>/dev/null | tr -d '\r' | grep -i '^x-runtime-egress')
    is "$ra through the proxy: 403 private_address" "$hdr" "X-Runtime-Egress: private_address"
done
for ra in 2002:c612::1 2001:0:4136:e378:8000:63bf:f5ff:fffe 2001:0:a9fe:a9fe::1 64:ff9b::a9fe:a9fe ::ffff:a9fe:a9fe fd00:ec2::254; do
    hdr=$(runtime sandbox exec "$id" -- curl -s -m 10 -D - -o /dev/null "http://[$ra]/" 2>/dev/null | tr -d '\r' | grep -i '^x-runtime-egress')
    is "[$ra] through the proxy: 403 private_address" "$hdr" "X-Runtime-Egress: private_address"
done
for rname in ietf.test bench.test azure.test; do
    is "$rname (a refused address) does not resolve" "$(in_sb "getent hosts $rname >/dev/null; echo \$?")" "2"
done
runtime sandbox network "$id" --log --json >"$tmp/ranges.json"
check "the egress log says private_address for each of them" python3 -c '
import json, sys
log = json.load(open(sys.argv[1]))
refused = [json.dumps(e) for e in log if e["decision"] == "refused" and e["reason"] == "private_address"]
for want in sys.argv[2:]:
    assert any(want in e for e in refused), want' "$tmp/ranges.json" \
    192.0.0.9 198.18.0.1 198.19.255.254 168.63.129.16 2002:c612::1 2001:0:4136:e378:8000:63bf:f5ff:fffe \
    2001:0:a9fe:a9fe::1 64:ff9b::a9fe:a9fe fd00:ec2::254 ietf.test bench.test azure.test

# -- names must agree: one address, many sites (a CDN).  The guest has
# the address from the sandbox's DNS for an allowed name, then names
# another site in its TLS SNI or HTTP Host: refused (name_mismatch), on the
# transparent port and inside a CONNECT tunnel alike.
runtime sandbox network "$id" --allow echo.test --allow cdn.test >/dev/null
ca="--cacert /workspace/ca.pem"
is "https to the allowed name: 200 (transparent)" "$(http_code --noproxy '*' $ca https://echo.test/)" "200"
is "… and through CONNECT" "$(http_code $ca https://echo.test/)" "200"
is "SNI of another site to its address: refused (transparent)" \
    "$(http_code --noproxy '*' $ca --connect-to secure.test:443:echo.test:443 https://secure.test/)" "000"
is "… with the address given by hand (--resolve)" \
    "$(http_code --noproxy '*' $ca --resolve secure.test:443:198.51.100.4 https://secure.test/)" "000"
is "… and in a CONNECT to the allowed name" \
    "$(http_code $ca --connect-to secure.test:443:echo.test:443 https://secure.test/)" "000"
is "http to the allowed name: 200 (transparent)" "$(http_code --noproxy '*' http://cdn.test/)" "200"
is "… and through a CONNECT tunnel" "$(http_code -p -x http://10.0.2.2:3128 http://cdn.test/)" "200"
is "Host of another site to its address: refused (transparent)" \
    "$(http_code --noproxy '*' --connect-to other.test:80:cdn.test:80 http://other.test/)" "000"
is "… with -H Host" "$(http_code --noproxy '*' -H 'Host: other.test' http://cdn.test/)" "000"
is "… and in a CONNECT tunnel to the allowed name" \
    "$(http_code -p -x http://10.0.2.2:3128 --connect-to other.test:80:cdn.test:80 http://other.test/)" "000"
is "the trailing dot and case of the allowed name change nothing" \
    "$(http_code --noproxy '*' -H 'Host: CDN.test.' http://cdn.test/)" "200"
cat >"$tmp/keepalive.py" <<'PY'
import socket

def rest_of(s):
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except OSError:
        pass
    return out

s = socket.create_connection(("cdn.test", 80))
s.settimeout(10)
s.sendall(b"GET /one HTTP/1.1\r\nHost: cdn.test\r\n\r\n")
first = s.recv(65536)
s.sendall(b"GET /two HTTP/1.1\r\nHost: other.test\r\n\r\n")
rest = rest_of(s)
print(first.split(b"\r\n")[0].decode(), "|", b"X-Runtime-Egress: name_mismatch" in rest, b"/two" in rest)
# What a lenient server reads as a request (an empty line first, two
# spaces) is checked strictly too.
s = socket.create_connection(("cdn.test", 80))
s.settimeout(10)
s.sendall(b"\r\nGET  /three  HTTP/1.1\r\nHost: other.test\r\n\r\n")
rest = rest_of(s)
print(rest.split(b"\r\n")[0].decode(), "|", b"/three" in rest)
# A byte the sniffer's request-line parser refuses (UTF-8 in the path):
# still HTTP, so checked strictly.
s = socket.create_connection(("cdn.test", 80))
s.settimeout(10)
s.sendall(b"GET /\xc3\xa9four HTTP/1.1\r\nHost: other.test\r\n\r\n")
rest = rest_of(s)
print(rest.split(b"\r\n")[0].decode(), "|", b"four" in rest)
PY
runtime sandbox cp "$tmp/keepalive.py" "$id:/workspace/keepalive.py"
in_sb 'python3 /workspace/keepalive.py' >"$tmp/keepalive.out"
is "a kept-alive connection: the second request, for another site, gets 403 name_mismatch and never leaves" \
    "$(sed -n 1p "$tmp/keepalive.out")" "HTTP/1.1 200 OK | True False"
is "an empty line and odd spacing before another site's request: 400, never leaves" \
    "$(sed -n 2p "$tmp/keepalive.out")" "HTTP/1.1 400 Bad Request | False"
is "a non-ASCII path before another site's Host: 403, never leaves" \
    "$(sed -n 3p "$tmp/keepalive.out")" "HTTP/1.1 403 Forbidden | False"
# A ClientHello the sniffer cannot read whole (over 16 KiB: OpenSSL takes
# 128 KiB) must not count as one without SNI, or the address's name
# decides and the server answers the SNI inside.
cat >"$tmp/bighello.py" <<'PY'
# A raw TLS 1.3 ClientHello for SNI argv[1] with a padding extension of
# argv[2] bytes, in records of at most 16 KiB, to argv[3]:443: "answered"
# when the server's first byte is a handshake record, else "refused".
import os, socket, struct, sys

def ext(t, b):
    return struct.pack(">HH", t, len(b)) + b

sni, pad, host = sys.argv[1].encode(), int(sys.argv[2]), sys.argv[3]
exts = ext(0x2B, b"\x02\x03\x04")
exts += ext(0x0A, b"\x00\x02\x00\x1d")
exts += ext(0x0D, b"\x00\x06\x08\x04\x04\x03\x04\x01")
exts += ext(0, struct.pack(">HBH", len(sni) + 3, 0, len(sni)) + sni)
exts += ext(0x33, struct.pack(">HHH", 36, 0x1D, 32) + os.urandom(32))
if pad:
    exts += ext(0x15, bytes(pad))
body = b"\x03\x03" + os.urandom(32) + b"\x20" + os.urandom(32) + b"\x00\x02\x13\x01\x01\x00"
body += struct.pack(">H", len(exts)) + exts
msg = b"\x01" + struct.pack(">I", len(body))[1:] + body
out = b""
for i in range(0, len(msg), 16384):
    part = msg[i:i + 16384]
    out += bytes([0x16, 3, 1 if i == 0 else 3]) + struct.pack(">H", len(part)) + part
s = socket.create_connection((host, 443))
s.settimeout(10)
try:
    s.sendall(out)
    first = s.recv(1)
except OSError:
    first = b""
print("answered" if first == b"\x16" else "refused")
PY
runtime sandbox cp "$tmp/bighello.py" "$id:/workspace/bighello.py"
is "a hand-made ClientHello for the allowed name: answered" \
    "$(in_sb 'python3 /workspace/bighello.py echo.test 300 echo.test')" "answered"
is "the same over 16 KiB (padding) naming another site: refused, not taken for no SNI" \
    "$(in_sb 'python3 /workspace/bighello.py secure.test 20000 echo.test')" "refused"
runtime sandbox network "$id" --allow cdn.test --allow other.test >/dev/null
check "two allowed names on one address: both resolve to it" \
    test "$(in_sb 'getent hosts other.test; getent hosts cdn.test' | awk '{print $1}' | sort -u)" = 198.51.100.3
is "… and either may be named on a connection to it" \
    "$(http_code --noproxy '*' --connect-to other.test:80:cdn.test:80 http://other.test/)" "200"
runtime sandbox network "$id" --allow cdn.test >/dev/null
is "… until the rules drop one: the address's other name is refused again" \
    "$(http_code --noproxy '*' --connect-to other.test:80:cdn.test:80 http://other.test/)" "000"
runtime sandbox network "$id" --allow http.test --allow echo.test >/dev/null
is "an address given out only for names no longer allowed: an allowed name that resolves to it works" \
    "$(http_code --noproxy '*' --resolve http.test:80:198.51.100.3 http://http.test/)" "200"
is "… one that resolves elsewhere is refused, not dialled elsewhere" \
    "$(http_code --noproxy '*' -H 'Host: echo.test' --resolve http.test:80:198.51.100.3 http://http.test/)" "000"
runtime sandbox network "$id" --log --json >"$tmp/names.json"
check "the egress log says name_mismatch for each, naming the site asked for" python3 -c '
import json, sys
log = json.load(open(sys.argv[1]))
mm = [(e["kind"], e["name"]) for e in log if e["decision"] == "refused" and e["reason"] == "name_mismatch"]
for want in [("tcp", "secure.test"), ("connect", "secure.test"), ("tcp", "other.test"), ("connect", "other.test"),
             ("tcp", "cdn.test"), ("tcp", "echo.test")]:
    assert want in mm, (want, mm)
assert sum(1 for k, n in mm if n == "secure.test") >= 3 and sum(1 for k, n in mm if n == "other.test") >= 3, mm
assert any(e["reason"] == "not_allowed" and e["name"] == "other.test" and e["kind"] == "tcp" for e in log)' "$tmp/names.json"

# -- UDP other than DNS goes nowhere
ip netns exec "$TESTNET_NS" python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("198.51.100.5", 9999))
while True:
    d, a = s.recvfrom(100)
    s.sendto(d, a)' &
udpsrv=$!
sleep 0.3
is "the UDP echo answers the host (control)" \
    "$(python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2); s.sendto(b"u", ("198.51.100.5", 9999)); print(s.recv(10).decode())' 2>&1)" "u"
is "UDP from the guest is dropped" \
    "$(in_sb 'python3 -c "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2); s.sendto(b\"u\", (\"198.51.100.5\", 9999)); print(s.recv(10))" 2>&1 | tail -1')" \
    "TimeoutError: timed out"
kill "$udpsrv" 2>/dev/null

# -- root in the guest changes nothing outside it
runtime sandbox network "$id" --allow http.test >/dev/null
mon=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$id/monitor.pid")
qemu=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$id/qemu.pid")
before=$(nsenter --net=/proc/$qemu/ns/net nft list ruleset)
host_before=$(ip route; nft list ruleset 2>/dev/null)
runtime sandbox exec "$id" --user root -- bash -c 'ip addr add 10.0.2.99/24 dev eth0; ip link set eth0 promisc on;
    nft flush ruleset; echo nameserver 198.51.100.2 >/etc/resolv.conf; true' >/dev/null 2>&1
is "root in the guest: a denied host is still reset" "$(tcp_echo 198.51.100.5 | cut -d: -f1)" "ConnectionResetError"
is "root in the guest: a resolver of its own gets no answer (UDP dropped)" \
    "$(in_sb 'getent hosts tcp.test >/dev/null; echo $?')" "2"
is "root in the guest: the allowed host still works, through the host's proxy" \
    "$(http_code --noproxy '*' --resolve http.test:80:198.51.100.3 http://http.test/)" "200"
is "the sandbox's table on the host is unchanged" "$(nsenter --net=/proc/$qemu/ns/net nft list ruleset)" "$before"
is "the host's routes and rules are unchanged" "$(ip route; nft list ruleset 2>/dev/null)" "$host_before"

# -- the egress log
runtime sandbox network "$id" --log --json >"$tmp/log.json"
check "the log has the pip download, allowed, with bytes" python3 -c '
import json, sys
log = json.load(open(sys.argv[1]))
assert any(e["name"] == "files.pythonhosted.org" and e["decision"] == "allowed" and e["bytesIn"] > 0 for e in log), log
assert any(e["decision"] == "cut" and e["reason"] == "internet_off" for e in log)
assert any(e["kind"] == "dns" and e["decision"] == "refused" for e in log)
assert all(set(e) >= {"time", "name", "address", "port", "decision", "reason", "bytesOut", "bytesIn"} for e in log)' "$tmp/log.json"
check "the log table has its header" grep -q "^TIME  *DECISION  *REASON" <(runtime sandbox network "$id" --log)

# -- errors
expect_error "network of an unknown sandbox" not_found runtime sandbox network sb-000000000000
expect_error "--internet with --no-internet" usage runtime sandbox network "$id" --internet --no-internet
expect_error "a bad entry in a change" invalid_request runtime sandbox network "$id" --allow '*.'
is "a refused change leaves the rules as they were" "$(runtime sandbox network "$id" --json | json_get 'o["allow"]')" "['http.test']"

# -- a trial sandbox reaches ports 80 and 443 only
trial=$(runtime sandbox create --trial --timeout 600 --allow '*.test')
is "trial: port 80 works" "$(runtime sandbox exec "$trial" -- curl -s -m 10 -o /dev/null -w '%{http_code}' http://http.test/)" "200"
is "trial: port 7777 is reset" "$(runtime sandbox exec "$trial" -- timeout 10 python3 -c 'import socket; s=socket.create_connection(("198.51.100.5", 7777)); s.sendall(b"ping"); print(s.recv(4))' 2>&1 | tail -1 | cut -d: -f1)" "ConnectionResetError"
hdr=$(runtime sandbox exec "$trial" -- curl -s -m 10 -D - -o /dev/null http://http.test:8080/ 2>/dev/null | tr -d '\r' | grep -i '^x-runtime-egress')
is "trial: another port through the proxy: 403 trial_port" "$hdr" "X-Runtime-Egress: trial_port"
runtime sandbox rm "$trial" >/dev/null

# -- nothing left: after stop, and after kill -9 of the monitor
ns=$(ns_of "$qemu")
check "the sandbox has its own namespace" ns_alive "$ns"
runtime sandbox stop "$id" >/dev/null
for _ in $(seq 50); do ns_alive "$ns" || break; sleep 0.1; done
check "stop: the namespace, its tap and its table are gone" sh -c "! lsns -t net -n -o NS | grep -qx $(echo "$ns" | tr -dc 0-9)"
id=$(runtime sandbox create --paid --timeout 600 --no-internet)
mon=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$id/monitor.pid")
qemu=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$id/qemu.pid")
ns=$(ns_of "$qemu")
kill -9 "$mon"
# QEMU dies with its monitor; its exit (freeing the guest's memory) can
# take seconds on a slow kernel: the sweep below needs it gone.
for _ in $(seq 300); do kill -0 "$qemu" 2>/dev/null || break; sleep 0.1; done
check "kill -9 of the monitor: its QEMU is gone" sh -c "! kill -0 $qemu 2>/dev/null"
for _ in $(seq 50); do ns_alive "$ns" || break; sleep 0.1; done
check "kill -9 of the monitor: the namespace is gone" sh -c "! lsns -t net -n -o NS | grep -qx $(echo "$ns" | tr -dc 0-9)"
runtime sandbox ls >/dev/null
[ -z "$(our_cgroups)" ] || diag "cgroups after the reap: $(our_cgroups); QEMUs: $(pgrep -x qemu-system-x86 | tr '\n' ' ')"
is "… and the sandbox is reaped as host_stopped" "$(runtime sandbox get "$id" --json | json_get 'o["stopReason"]')" "host_stopped"
check_no_leaks "network"
done_testing
