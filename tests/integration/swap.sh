#!/bin/bash
# swap.sh - secrets on the wire against the test
# internet (testnet.sh): the egress proxy terminates TLS for a secret's
# hosts only, with a CA the guest trusts; the real server is verified; the
# placeholder becomes the value in credential headers (a --header secret:
# that header is set) on requests to the bound host alone, in the request
# line only --in-url, and only on requests a --rule allows; elsewhere in a
# head it is refused (403); forwarding headers are dropped; bodies, other
# hosts and plain HTTP keep the placeholder; answers that quote the value
# back (echoes, a 404, a redirect, chunked or not, cut across reads, in
# base64 or upper case) reach the guest with the placeholder instead; the value is nowhere in the guest's
# memory or disk, its state or its logs; an untrusted server gets nothing.
. "$(dirname "$0")/libtest.sh"
. "$(dirname "$0")/testnet.sh"

export RUNTIME_DATA_DIR="$tmp/data"
mkdir -p "$RUNTIME_DATA_DIR"
if [ -d "${RUNTIME_TEST_DATA:-}/images" ]; then cp -al "$RUNTIME_TEST_DATA/images" "$RUNTIME_DATA_DIR/"; fi
rand() { head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
key="sk-live-$(rand)"
tok="tok-$(rand)"
rogue="rogue-$(rand)"
ukey="uk-live-$(rand)"
rkey="rk-live-$(rand)"

id=
trap 'runtime sandbox rm "$id" >/dev/null 2>&1; testnet_down; cleanup' EXIT
if ! testnet_up; then
    echo "Bail out! cannot make the test network"
    exit 1
fi
# The host trusts the test CA as an admin would add one: OpenSSL's
# SSL_CERT_FILE, read by the monitor's egress proxy.
cat /etc/ssl/certs/ca-certificates.crt "$TESTNET_CA" >"$tmp/host-bundle.pem"
export SSL_CERT_FILE="$tmp/host-bundle.pem"
records="$TESTNET_DIR/requests.jsonl"

# in_sb CMD: CMD under sh in the sandbox, stdout and stderr.
in_sb() { runtime sandbox exec "$id" -- sh -c "$1" 2>&1; }
# last_record EXPR: EXPR over the last request the servers recorded (as r;
# h: its headers as a dict).
last_record() {
    python3 -c "import json,sys; r=json.loads(open(sys.argv[1]).read().splitlines()[-1]); h=dict(r['headers']); print($1)" "$records"
}
records_now() { wc -l <"$records" 2>/dev/null || echo 0; }
# wait_log PATTERN: the egress log in $tmp/log.json, once it has PATTERN (a
# connection is logged when it ends: the server's, or a few seconds after
# the guest's), or after 10 s.
wait_log() {
    for _ in $(seq 50); do
        runtime sandbox network "$id" --log --json >"$tmp/log.json" 2>&1
        grep -q "$1" "$tmp/log.json" && break
        sleep 0.2
    done
}

printf '%s' "$key" | runtime secrets set API_KEY --host echo.test --host http.test >/dev/null
printf '%s' "$tok" | runtime secrets set TOKEN --host echo.test --header X-Api-Token --format 'Token {value}' >/dev/null
printf '%s' "$rogue" | runtime secrets set ROGUE_KEY --host rogue.test >/dev/null
printf '%s' "$ukey" | runtime secrets set URL_KEY --host echo.test --in-url >/dev/null
printf '%s' "$rkey" | runtime secrets set RULED_KEY --host echo.test --rule 'GET:/rec*' --rule 'PUT:/record' \
    --header X-Ruled --format '{value}' >/dev/null
phof() { runtime secrets get "$1" --json | json_get 'o["placeholder"]'; }
ph=$(phof API_KEY)
tokph=$(phof TOKEN)
uph=$(phof URL_KEY)
is "secrets get shows the rules and --in-url, no value" \
    "$(runtime secrets get RULED_KEY --json | json_get '(o["rules"], o["inUrl"], "value" in o)') $(runtime secrets get URL_KEY --json | json_get 'o["inUrl"]')" \
    "(['GET:/rec*', 'PUT:/record'], False, False) True"

# 1 GiB, so that its whole memory can be searched from the host below.
id=$(runtime sandbox create --timeout 900 --memory 1024 2>/dev/null)
check "a sandbox with secrets starts" test -n "$id"
# Files the values could have reached are changed after this.
runtime sandbox exec "$id" -- touch /tmp/.t0
is "the egress CA key is mode 0600" "$(stat -c %a "$RUNTIME_DATA_DIR/ca/egress-ca.key")" "600"
is "the guest has the egress CA as its own file" \
    "$(in_sb 'cat /usr/local/share/ca-certificates/runtime-egress.crt')" "$(cat "$RUNTIME_DATA_DIR/ca/egress-ca.pem")"
is "… and in its bundle, once" \
    "$(in_sb "grep -cxF '$(sed -n 2p "$RUNTIME_DATA_DIR/ca/egress-ca.pem")' /etc/ssl/certs/ca-certificates.crt")" "1"
is "SSL_CERT_FILE, REQUESTS_CA_BUNDLE and NODE_EXTRA_CA_CERTS are set" \
    "$(in_sb 'echo $SSL_CERT_FILE $REQUESTS_CA_BUNDLE $NODE_EXTRA_CA_CERTS')" \
    "/etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt /usr/local/share/ca-certificates/runtime-egress.crt"
is "the guest sees the placeholder" "$(in_sb 'printenv API_KEY')" "$ph"

# -- the bound host, through the proxy (curl reads https_proxy)
is "curl through the proxy to the bound host works" \
    "$(in_sb 'curl -sS --fail -m 20 https://echo.test/record -H "Authorization: Bearer $API_KEY" --data-binary "body=$API_KEY" -H "X-Forwarded-Host: evil.test" -H "X-Original-URL: /admin"')" \
    "recorded"
is "… X-Forwarded-Host and X-Original-URL are dropped" "$(last_record '[k for k in h if k.startswith("X-Forwarded") or k == "X-Original-URL"]')" "[]"
check "the guest was talking to the egress CA's certificate" sh -c \
    "runtime sandbox exec '$id' -- curl -sv -m 20 -o /dev/null https://echo.test/bytes/0 2>&1 | grep -q 'issuer: O=runtime; CN=runtime egress CA'"
is "the Authorization header carries the value" "$(last_record 'h["Authorization"]')" "Bearer $key"
is "--header/--format set X-Api-Token" "$(last_record 'h["X-Api-Token"]')" "Token $tok"
is "the body keeps the placeholder" "$(last_record 'r["body"]')" "body=$ph"
is "… and the server was asked for an uncoded answer" "$(last_record 'h["Accept-Encoding"]')" "identity"
is "a secret set --in-url goes into the request line" \
    "$(in_sb 'curl -sS --fail -m 20 "https://echo.test/record?key=$URL_KEY"'; last_record 'r["line"]')" \
    "recorded
GET /record?key=$ukey HTTP/1.1"
is "a --rule allowing GET /rec*: the --header is set" \
    "$(in_sb 'curl -sS --fail -m 20 https://echo.test/record' >/dev/null; last_record 'h.get("X-Ruled")')" "$rkey"
is "… not on a POST, which no rule allows" \
    "$(in_sb 'curl -sS --fail -m 20 -d x https://echo.test/record' >/dev/null; last_record 'h.get("X-Ruled")')" "None"

# -- the bound host, transparently (no proxy), and from Python
is "curl without the proxy (transparent, SNI) works" \
    "$(in_sb 'curl -sS --fail -m 20 --noproxy "*" https://echo.test/record -H "Authorization: Bearer $API_KEY"')" "recorded"
is "… and the server gets the value" "$(last_record 'h["Authorization"]')" "Bearer $key"
is "Python's urllib (SSL_CERT_FILE) works" \
    "$(in_sb 'python3 -c "import os, urllib.request as u; print(u.urlopen(u.Request(\"https://echo.test/record\", headers={\"Authorization\": \"Bearer \" + os.environ[\"API_KEY\"]}), timeout=20).read().decode().strip())"')" \
    "recorded"
is "… and the server gets the value" "$(last_record 'h["Authorization"]')" "Bearer $key"
before=$(records_now)
is "two requests on one kept-alive connection" \
    "$(in_sb 'curl -sS --fail -m 20 -H "Authorization: Bearer $API_KEY" https://echo.test/record https://echo.test/record')" \
    "recorded
recorded"
is "… both swapped" "$(tail -n 2 "$records" | grep -c "Bearer $key")" "2"
is "… two more records" "$(($(records_now) - before))" "2"

# -- a placeholder where its value may not go: refused, the server gets nothing
before=$(records_now)
is "the placeholder in the request line (no --in-url), in X-Echo, a --header secret's in Authorization: 403" \
    "$(in_sb 'for a in "https://echo.test/record?k=$API_KEY" "-HX-Echo:$API_KEY https://echo.test/record" "-HAuthorization:$TOKEN https://echo.test/record"; do curl -sS -m 20 -o /dev/null -D - --suppress-connect-headers $a | tr -d "\r" | grep -E "^HTTP|^X-Runtime-Egress" | tr "\n" " "; echo; done')" \
    "HTTP/1.1 403 Forbidden X-Runtime-Egress: placeholder_misplaced 
HTTP/1.1 403 Forbidden X-Runtime-Egress: placeholder_misplaced 
HTTP/1.1 403 Forbidden X-Runtime-Egress: placeholder_misplaced "
is "… and none of them reached the server" "$(records_now)" "$before"

# -- everywhere else the placeholder stays a placeholder
is "another host on the same server (not bound) is tunnelled" \
    "$(in_sb 'curl -sS -k -m 20 https://secure.test/record -H "Authorization: Bearer $API_KEY"')" "recorded"
is "… and gets the placeholder" "$(last_record 'h["Authorization"]')" "Bearer $ph"
is "… and no X-Api-Token" "$(last_record '"X-Api-Token" in h')" "False"
is "plain HTTP to a bound host works" \
    "$(in_sb 'curl -sS -m 20 http://http.test/record -H "Authorization: Bearer $API_KEY"')" "recorded"
is "… and never swaps" "$(last_record 'h["Authorization"]')" "Bearer $ph"

# -- a server the host does not trust gets nothing
before=$(records_now)
in_sb 'curl -sS -v -m 20 https://rogue.test/record -H "Authorization: Bearer $ROGUE_KEY"' >"$tmp/rogue.out"
check "an untrusted server: the CONNECT is answered 502" grep -q "HTTP/1.1 502" "$tmp/rogue.out"
check "… saying why in X-Runtime-Egress" grep -qi "X-Runtime-Egress: untrusted_certificate" "$tmp/rogue.out"
in_sb 'curl -sS -m 20 --noproxy "*" https://rogue.test/record -H "Authorization: Bearer $ROGUE_KEY"' >"$tmp/rogue2.out"
check "… and without the proxy the connection fails" grep -q "curl: (" "$tmp/rogue2.out"
check "… reset at once" grep -q "curl: (35)" "$tmp/rogue2.out"
is "… and it received no request at all" "$(records_now)" "$before"
# A connection is logged when it ends: the server's, or a few seconds
# after the guest's.
wait_log '"secretRequests":2'
check "the egress log says untrusted_certificate for rogue.test" python3 -c '
import json, sys
log = json.load(open(sys.argv[1]))
for kind in ("connect", "tcp"):
    assert any(e["name"] == "rogue.test" and e["kind"] == kind and e["reason"] == "untrusted_certificate" for e in log), log' "$tmp/log.json"
check "… and counts the swapped requests to echo.test" python3 -c '
import json, sys
log = json.load(open(sys.argv[1]))
assert any(e["name"] == "echo.test" and e.get("secretRequests") == 2 for e in log), log' "$tmp/log.json"

# -- a client that trusts another CA only: its handshake with the proxy
# fails, and the request never leaves
before=$(records_now)
in_sb 'curl -sS -m 20 --cacert /etc/ssl/certs/ISRG_Root_X1.pem https://echo.test/record -H "Authorization: Bearer $API_KEY"' \
    >"$tmp/distrust.out"
check "a client not trusting the egress CA fails to verify it" grep -q "curl: (60)" "$tmp/distrust.out"
is "… and nothing reaches the server" "$(records_now)" "$before"
wait_log guest_tls_failed
check "… the egress log says guest_tls_failed for it" python3 -c '
import json, sys
log = json.load(open(sys.argv[1]))
assert any(e["name"] == "echo.test" and e["reason"] == "guest_tls_failed" for e in log), log' "$tmp/log.json"

# -- requests the proxy must not pass: another Host behind the same
# certificate, a framing a server could read otherwise; the monitor lives on
before=$(records_now)
runtime sandbox exec "$id" -- python3 - >"$tmp/raw.out" 2>&1 <<'EOF'
import os, socket, ssl
ctx = ssl.create_default_context()
def send(raw):
    s = ctx.wrap_socket(socket.create_connection(("echo.test", 443), timeout=20), server_hostname="echo.test")
    s.sendall(raw.replace("KEY", os.environ["API_KEY"]).encode())
    data = b""
    while True:
        d = s.recv(4096)
        if not d:
            break
        data += d
    lines = data.decode().split("\r\n")
    print(lines[0], [l for l in lines if l.startswith("X-Runtime-Egress")][0])
send("GET /record HTTP/1.1\r\nHost: secure.test\r\nAuthorization: Bearer KEY\r\n\r\n")
send("GET /record HTTP/1.1\r\nHost: echo.test\r\nX: a\r\n folded KEY\r\n\r\n")
send("POST /record HTTP/1.1\r\nHost: echo.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
EOF
is "another Host on the bound host's connection: 403 host_mismatch; obs-fold, CL with chunked: 400" \
    "$(cat "$tmp/raw.out")" "HTTP/1.1 403 Forbidden X-Runtime-Egress: host_mismatch
HTTP/1.1 400 Bad Request X-Runtime-Egress: bad_request
HTTP/1.1 400 Bad Request X-Runtime-Egress: bad_request"
is "… none of them reached the server" "$(records_now)" "$before"
is "… and the proxy still works" \
    "$(in_sb 'curl -sS --fail -m 20 https://echo.test/record -H "Authorization: Bearer $API_KEY"')" "recorded"

# -- a new value applies at once, under the same placeholder
key2="sk-live-$(rand)"
printf '%s' "$key2" | runtime secrets set API_KEY --host echo.test --host http.test >/dev/null
is "after secrets set, the same placeholder" "$(in_sb 'printenv API_KEY')" "$ph"
in_sb 'curl -sS --fail -m 20 https://echo.test/record -H "Authorization: Bearer $API_KEY"' >/dev/null
is "… swaps to the new value" "$(last_record 'h["Authorization"]')" "Bearer $key2"

# -- answers that quote the value back reach the guest with the placeholder
# (key2 is API_KEY's value now).  Each checks that the value came back
# with the placeholder in its place, so the scrubbing is seen working.
reflect() { in_sb "curl -sS -m 30 $1 -H \"Authorization: Bearer \$API_KEY\" 2>&1"; }
nothing() { ! grep -qF -e "$key" -e "$key2" -e "$tok" -e "$ukey" -e "$rkey" <<<"$1"; }
out=$(reflect '--data-binary "body $API_KEY" "https://echo.test/echo/$URL_KEY?q=$URL_KEY"')
check "an echo (length-framed): the request line comes back with the placeholder" \
    grep -qF "POST /echo/$uph?q=$uph HTTP/1.1" <<<"$out"
check "… the headers too (Authorization, --header)" \
    bash -c 'grep -qF "Authorization: Bearer $1" <<<"$3" && grep -qF "X-Api-Token: Token $2" <<<"$3"' sh "$ph" "$tokph" "$out"
check "… and no value at all" nothing "$out"
out=$(reflect '"https://echo.test/chunked?k=$URL_KEY"')
check "a chunked echo in 7-byte chunks: the placeholder" grep -qF "Authorization: Bearer $ph" <<<"$out"
check "… and no value" nothing "$out"
out=$(reflect '"https://echo.test/split?k=$URL_KEY"')
check "a length-framed echo in 7-byte writes: the placeholder" grep -qF "GET /split?k=$uph HTTP/1.1" <<<"$out"
check "… and no value" nothing "$out"
is "a 404 quoting the path: the placeholder" "$(reflect '"https://echo.test/missing/$URL_KEY"')" \
    "model '$uph' does not exist"
out=$(reflect '-i https://echo.test/redirect')
check "a redirect's Location: the placeholder" grep -qF "Location: /landing?auth=Bearer+$ph" <<<"$out"
check "… and no value" nothing "$out"
out=$(reflect https://echo.test/transformed)
is "an answer with the Authorization header in base64 and upper case: the placeholder" \
    "$(grep -c -F "$ph" <<<"$out")" "2"
check "… and neither the value's base64 nor its upper case" bash -c \
    '! grep -qF -e "$(printf "Bearer %s" "$1" | base64 | cut -c 12-30)" -e "$(tr a-z A-Z <<<"$1")" <<<"$2"' sh "$key2" "$out"
out=$(runtime sandbox exec "$id" -- python3 -c '
import os, urllib.request as u
r = u.urlopen(u.Request("https://echo.test/chunked", headers={"Authorization": "Bearer " + os.environ["API_KEY"]}), timeout=30)
print(r.read().decode())' 2>&1)
check "… Python reading the chunked echo: the placeholder" grep -qF "Authorization: Bearer $ph" <<<"$out"
check "… and no value" nothing "$out"
# Each connection is logged a few seconds after its guest goes.
sleep 4
wait_log '"scrubbed":[1-9]'
check "the egress log counts the values scrubbed" python3 -c '
import json, sys
log = json.load(open(sys.argv[1]))
assert sum(e.get("scrubbed", 0) for e in log if e["name"] == "echo.test") >= 10, log' "$tmp/log.json"

# -- the values are nowhere the sandbox or its records can reach
# First the memory, from the host: the search in the guest below has to
# put the values in there.  A control string the guest was handed (and
# wrote to its disk) shows that both searches see what the guest got.
ctl="ctl-$(rand)"
runtime sandbox exec "$id" --user root -- sh -c 'curl -sS -m 20 "http://http.test/missing/$1" >/var/tmp/ctl.txt; sync' sh "$ctl"
"$(dirname "$0")/../fixtures/pmemsave.py" "$RUNTIME_STATE_DIR/$id/qmp.sock" $((1024 * 1024 * 1024)) "$tmp/mem"
check "the placeholder is in the guest's memory (the search below can see)" grep -qaF -- "$ph" "$tmp/mem"
check "… and so is the control string the guest fetched in a 404" grep -qaF -- "model '$ctl' does not exist" "$tmp/mem"
check "… and no value is, anywhere in it, after every reflection" sh -c \
    '! grep -qaF -e "$1" -e "$2" -e "$3" -e "$4" -e "$5" "$6"' sh "$key" "$key2" "$tok" "$ukey" "$rkey" "$tmp/mem"
rm -f "$tmp/mem"
# Then the guest's disks, raw, in one pass: every block device (files,
# free blocks, metadata), 4 MiB at a time with an overlap, all-zero blocks
# skipped (grep over the device held whole \0-less runs in memory and was
# killed).  Prints how many of the arguments were found.
disk_hits() {
    runtime sandbox exec "$id" --user root -- python3 -c '
import glob, os, sys
pats = [a.encode() for a in sys.argv[1:]]
keep, zero, found = max(map(len, pats)) - 1, bytes(4 << 20), set()
os.sync()
for d in glob.glob("/dev/vd[a-z]") + glob.glob("/dev/sd[a-z]") + glob.glob("/dev/nvme[0-9]n[0-9]"):
    tail = b""
    with open(d, "rb", buffering=0) as f:
        while True:
            blk = f.read(4 << 20)
            if not blk:
                break
            if blk != zero[:len(blk)] or tail.strip(b"\0"):
                buf = tail + blk
                found |= {p for p in pats if p in buf}
            tail = blk[-keep:]
print(len(found))' "$@" 2>&1
}
check "the control string is found on the guest's disks (the search sees)" test "$(disk_hits "$ctl")" = 1
is "no value is anywhere on the guest's disks" "$(disk_hits "$key" "$key2" "$tok" "$ukey" "$rkey")" "0"
# The image below is shared and read-only to every sandbox: what this one
# wrote is what changed since /tmp/.t0, on every file system.
for v in "$key" "$key2" "$tok" "$ukey" "$rkey"; do
    out=$(runtime sandbox exec "$id" --user root -- sh -c \
        'find / /tmp /run /dev/shm /workspace -xdev -type f -cnewer /tmp/.t0 -print0 2>/dev/null | xargs -0r grep -lsF -- "$1"
         cat /proc/[0-9]*/environ 2>/dev/null | tr "\0" "\n" | grep -cF -- "$1"' sh "$v" 2>&1)
    is "a value is in no file the sandbox changed and no process environment" "$out" "0"
done
check "… nor in the state dir, the console log or the egress log" sh -c \
    '! grep -rqsF -e "$1" -e "$2" -e "$3" "$RUNTIME_STATE_DIR" "$RUNTIME_DATA_DIR/sandboxes"' sh "$key" "$key2" "$tok"
check "secrets ls --json holds no value" sh -c '! runtime secrets ls --json | grep -qF -e "$1" -e "$2"' sh "$key2" "$tok"

runtime sandbox rm "$id" >/dev/null
id=

# -- examples/secret-api.sh, against the test server instead of DeepSeek
key3="sk-example-$(rand)"
out=$(DEEPSEEK_API_KEY="$key3" "$(dirname "$0")/../../examples/secret-api.sh" echo.test /record 2>"$tmp/err")
check "examples/secret-api.sh: the sandbox sees a placeholder" \
    grep -q "^inside, DEEPSEEK_API_KEY=rtsec_[0-9a-f]*$" <<<"$out"
check "… and its own request works" grep -qx "HTTP 200 recorded" <<<"$out" || diag "$out" "$(cat "$tmp/err")"
is "… carrying the key the sandbox never saw" "$(last_record 'h["Authorization"]')" "Bearer $key3"
check "… which it never printed" sh -c '! printf %s "$3" | grep -qF -- "$1" && ! grep -qF -- "$1" "$2"' \
    sh "$key3" "$tmp/err" "$out"
check_no_leaks "after secret-api.sh"

# -- without secrets, no CA and no interception
rm -f "$RUNTIME_DATA_DIR/secrets.json"
id=$(runtime sandbox create --timeout 300 2>/dev/null)
is "a sandbox without secrets trusts no egress CA" \
    "$(in_sb 'test -e /usr/local/share/ca-certificates/runtime-egress.crt && echo yes; echo ${SSL_CERT_FILE:-unset}')" "unset"
check "… and its TLS to echo.test is the server's own (the test CA's)" sh -c \
    "runtime sandbox exec '$id' -- curl -skv -m 20 -o /dev/null https://echo.test/bytes/0 2>&1 | grep -q 'issuer: CN=runtime test CA'"
runtime sandbox rm "$id" >/dev/null
id=

check_no_leaks "after the secrets on the wire"
done_testing
