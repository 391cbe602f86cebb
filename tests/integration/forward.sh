#!/bin/bash
# forward.sh - `sandbox forward` and the sessions under it (rt_sandbox_connect,
# rt_sandbox_attach): a web server inside reached from the host, many
# connections at once with their bytes checked, refusals, bad specs, the end
# of the forward with its sandbox, all on one sandbox with no internet.
. "$(dirname "$0")/libtest.sh"

client=$RUNTIME_TEST_SESSION_CLIENT
id=$(runtime sandbox create --timeout 900 --no-internet)
trap 'kill $fpid 2>/dev/null; runtime sandbox rm "$id" >/dev/null 2>&1; cleanup' EXIT
fpid=

# A free host port: ask the kernel, then give it back.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# -- a web server inside, a forward from the host
net_before=$(runtime sandbox network "$id" --json)
runtime sandbox exec "$id" -- sh -c 'mkdir -p /workspace/www && head -c 4M /dev/urandom > /workspace/www/blob &&
    echo hello-forward > /workspace/www/index.txt'
want=$(runtime sandbox exec "$id" -- sha256sum /workspace/www/blob | cut -d' ' -f1)
runtime sandbox spawn "$id" --cwd /workspace/www -- python3 -m http.server 8000 >/dev/null
for _ in $(seq 50); do
    [ "$("$client" connect "$id" 8000)" = open ] && break
    sleep 0.2
done
runtime sandbox forward "$id" 0:8000 --json >"$tmp/fwd.json" 2>"$tmp/fwd.err" &
fpid=$!
for _ in $(seq 50); do [ -s "$tmp/fwd.json" ] && break; sleep 0.1; done
port=$(json_get 'o["port"]' <"$tmp/fwd.json" 2>/dev/null)
is "forward --json prints the bound address" \
    "$(json_get '(o["address"], o["remote"], o["port"] > 0)' <"$tmp/fwd.json" 2>/dev/null)" "('127.0.0.1', 8000, True)"
is "curl on the host reaches python3 -m http.server inside (no internet in the sandbox)" \
    "$(curl -s --max-time 30 "http://127.0.0.1:$port/index.txt")" "hello-forward"

# -- 20 downloads at once, each checked byte for byte
for i in $(seq 20); do
    curl -s --max-time 120 -o "$tmp/dl.$i" "http://127.0.0.1:$port/blob" &
done
wait_ok=1
for j in $(jobs -p); do [ "$j" = "$fpid" ] || wait "$j" || wait_ok=0; done
good=0
for i in $(seq 20); do
    [ "$(sha256sum <"$tmp/dl.$i" | cut -d' ' -f1)" = "$want" ] && good=$((good + 1))
done
is "20 parallel downloads of 4 MiB through the forward all have the right sha256" "$good/$wait_ok" "20/1"
rm -f "$tmp"/dl.*

# -- clients that reset mid-download (SO_LINGER 0), some after ending their
# side: the forward's next write to them fails (EPIPE after a half-close),
# which must end that connection only
python3 - "$port" <<'PY'
import socket, struct, sys, time
for i in range(4):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b"GET /blob HTTP/1.0\r\n\r\n")
    if i % 2 == 0:
        s.shutdown(socket.SHUT_WR)
    s.recv(65536)
    time.sleep(0.3)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    time.sleep(0.5)
PY
sleep 1
check "clients resetting mid-download leave the forward running" kill -0 "$fpid"
is "… and it still serves a full download" \
    "$(curl -s --max-time 60 "http://127.0.0.1:$port/blob" | sha256sum | cut -d' ' -f1)" "$want"

# -- out of fds: a forward limited to 32 or 33 (soft and hard; one of the
# two leaves accept() the last fd) takes what it has room for and leaves
# the rest waiting, without spinning on accept() or dropping any
for lim in 32 33; do
    prlimit --nofile=$lim:$lim runtime sandbox forward "$id" 0:8000 --json >"$tmp/flim.json" 2>"$tmp/flim.err" &
    flim=$!
    for _ in $(seq 50); do [ -s "$tmp/flim.json" ] && break; sleep 0.1; done
    plim=$(json_get 'o["port"]' <"$tmp/flim.json" 2>/dev/null)
    python3 - "$plim" <<'PY' &
import socket, sys, time
held = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(40)]
time.sleep(5)
PY
    hpid=$!
    sleep 1
    c0=$(awk '{print $14 + $15}' "/proc/$flim/stat"); sleep 3; c1=$(awk '{print $14 + $15}' "/proc/$flim/stat")
    wait "$hpid"
    diag "forward with $lim fds and 40 connections: $((c1 - c0)) clock ticks of CPU in 3 s"
    check "40 connections to a forward with $lim fds do not make it spin ($((c1 - c0)) ticks in 3 s)" \
        test -n "$c1" -a $((c1 - c0)) -le 30
    is "… which then serves a full download" \
        "$(curl -s --max-time 60 "http://127.0.0.1:$plim/blob" | sha256sum | cut -d' ' -f1)" "$want"
    kill -INT "$flim"; wait "$flim"
    is "… ends on Ctrl-C with exit 0" "$?" 0
    is "… and dropped no connection for want of fds (nothing on stderr)" "$(cat "$tmp/flim.err")" ""
done

# -- a port nobody listens on: the client's connection closes, the forward goes on
runtime sandbox forward "$id" 0:9 --json >"$tmp/f9.json" 2>"$tmp/f9.err" &
f9=$!
for _ in $(seq 50); do [ -s "$tmp/f9.json" ] && break; sleep 0.1; done
p9=$(json_get 'o["port"]' <"$tmp/f9.json" 2>/dev/null)
curl -s --max-time 20 "http://127.0.0.1:$p9/" >/dev/null
is "a refused connection closes the client's (curl: empty reply)" "$?" 52
is "… as it does for a client that sends nothing" "$(python3 -c "import socket; s = socket.create_connection(('127.0.0.1', $p9)); s.settimeout(20); print(repr(s.recv(100)))")" "b''"
sleep 0.5
check "… the forward says so, one line a connection" \
    test "$(grep -c "^runtime: a connection was closed: .*port 9 in the sandbox" "$tmp/f9.err")" -ge 1 \
    -a "$(grep -vc "^runtime: a connection was closed: .*port 9 in the sandbox" "$tmp/f9.err")" -eq 0
check "… and keeps running" kill -0 "$f9"
kill -INT "$f9"; wait "$f9"
is "Ctrl-C ends a forward with exit 0" "$?" 0
is "rt_sandbox_connect to a closed port ends with connection_refused" "$("$client" connect "$id" 9)" refused

# -- attach: stdin in, output back, the exit code (3 MiB: past the window)
is "rt_sandbox_attach: 3 MiB of stdin back through cat, stderr apart, exit 3" \
    "$("$client" attach "$id")" "bytes=3145728 err=4 exit=3"

# -- egress rules are untouched
is "the sandbox's egress rules are unchanged by forwarding" "$(runtime sandbox network "$id" --json)" "$net_before"

# -- bad specs and inputs: one error line each
for spec in 0 70000 abc 8080:x 1.2.3:8080:80 :80; do
    expect_error "bad port spec '$spec' is a usage error" usage runtime sandbox forward "$id" "$spec"
done
expect_error "an unknown sandbox is not_found" not_found runtime sandbox forward sb-nosuchbox 8000
expect_error "a port in use is a usage error" usage runtime sandbox forward "$id" "$port:8000"
runtime sandbox forward "$id" 0.0.0.0:0:8000 >/dev/null 2>"$tmp/wild.err" &
wpid=$!
sleep 1
check "a non-loopback ADDR warns on stderr that it exposes the sandbox" grep -q "not a loopback address" "$tmp/wild.err"
kill -INT "$wpid"; wait "$wpid"

# -- the forward ends with its sandbox
runtime sandbox rm "$id" >/dev/null
for _ in $(seq 100); do kill -0 "$fpid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$fpid" 2>/dev/null; then fail "the forward ends when its sandbox is removed"; kill "$fpid"; else ok "the forward ends when its sandbox is removed"; fi
wait "$fpid"
is "… with exit 1" "$?" 1
is "… and one error line (JSON, with --json)" "$(grep -c '^{"error":{"code":"not_found"' "$tmp/fwd.err")/$(wc -l <"$tmp/fwd.err")" 1/1
[ "$(wc -l <"$tmp/fwd.err")" = 1 ] || diag "$(cat "$tmp/fwd.err")"
fpid=

done_testing
