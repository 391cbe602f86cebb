# 10-transport.sh - the transport rules (docs/API.md "Transport"): auth,
# the error object and x-request-id, bodies refused (malformed, unknown
# fields, too large), tenants apart, idempotency (retries, conflicts, a
# restart), Prefer: wait and waitFor, cursor pages, the rate limit, the
# listen address and TLS.  Boots two sandboxes: one stays shared.

# errobj: the last answer is an error object with every field, status as
# in the body, requestId as in x-request-id; prints its code.
errobj() {
    python3 - "$tmp/api.body" "$status" "$(hdr x-request-id)" <<'EOF'
import json, sys
try:
    e = json.load(open(sys.argv[1]))["error"]
except Exception as x:
    print("not an error object: %s" % x); sys.exit()
missing = {"code", "status", "message", "hint", "details", "requestId"} - set(e)
if missing:
    print("missing %s" % sorted(missing))
elif str(e["status"]) != sys.argv[2] or e["requestId"] != sys.argv[3] or not e["requestId"]:
    print("status %s / requestId %r against %s / %r" % (e["status"], e["requestId"], sys.argv[2], sys.argv[3]))
else:
    print(e["code"])
EOF
}
# is_error DESC STATUS CODE: the last answer was STATUS with a whole error object of CODE.
is_error() {
    local got
    got="$status $(errobj)"
    if [ "$got" = "$2 $3" ]; then ok "$1"; else fail "$1"; diag "got:  $got" "want: $2 $3" "body: $(head -c 400 "$tmp/api.body")"; fi
}

# -- auth
API_TOKEN='' api GET /v1/sandboxes >/dev/null
is_error "no Authorization: 401 unauthorized, a whole error object" 401 unauthorized
API_TOKEN=rt_wrong-token api GET /v1/sandboxes >/dev/null
is_error "a wrong token: 401 unauthorized" 401 unauthorized
API_TOKEN="${TOKEN_A}x" api GET "/v1/sandboxes/$SB" >/dev/null
is_error "a token with a byte more: 401, even for A's own sandbox" 401 unauthorized
API_TOKEN='' api -H "Authorization: Basic $(printf 'A:%s' "$TOKEN_A" | base64 -w0)" GET /v1/me >/dev/null
is "Basic auth with A's token too: still 401 (Bearer only)" "$status" 401
api GET /v1/me >/dev/null
is "GET /v1/me: 200" "$status" 200
check "… x-request-id on a success too, req_ + 16 hex" grep -qE '^req_[0-9a-f]{16}$' <<<"$(hdr x-request-id)"
api -H 'x-request-id: my-req.1_A' GET /v1/nope >/dev/null
is_error "an unknown route: 404 not_found" 404 not_found
is "… the client's own x-request-id kept (and so in requestId)" "$(hdr x-request-id)" "my-req.1_A"
api -H 'x-request-id: bad id!{}' GET /v1/me >/dev/null
check "an insane x-request-id replaced by req_ + 16 hex" grep -qE '^req_[0-9a-f]{16}$' <<<"$(hdr x-request-id)"

# -- bodies refused
api POST /v1/sandboxes '{"vcpu": 1, "memoryMiB":' >/dev/null
is_error "malformed JSON: 400 invalid_request" 400 invalid_request
api POST /v1/sandboxes '[1, 2]' >/dev/null
is_error "a JSON array, not an object: 400 invalid_request" 400 invalid_request
api POST /v1/sandboxes '{"vcpus": 1, "colour": "red", "memoryMiB": 512, "network": {"internet": true, "alow": ["x"]}}' >/dev/null
is_error "unknown fields: 400 invalid_request" 400 invalid_request
is "… every one named in details.issues, and nothing else" \
    "$(bj 'sorted(i["path"] for i in o["error"]["details"]["issues"])')" "['colour', 'network.alow', 'vcpus']"
is "… as unknown fields" "$(bj 'sorted(set(i["message"] for i in o["error"]["details"]["issues"]))')" "['unknown field']"
api POST /v1/sandboxes '{"vcpu": "one", "timeoutSeconds": 600}' >/dev/null
is_error "a wrong type: 400 invalid_request" 400 invalid_request
is "… named, must be a …" "$(bj '[(i["path"], i["message"].startswith("must be")) for i in o["error"]["details"]["issues"]]')" \
    "[('vcpu', True)]"
python3 -c 'import json; print(json.dumps({"name": "big", "labels": {"x": "y" * (2 << 20)}}))' >"$tmp/big.json"
api -H 'Content-Type: application/json' POST /v1/sandboxes "@$tmp/big.json" >/dev/null
is_error "a 2 MiB JSON body: 413 payload_too_large" 413 payload_too_large
head -c $((2 << 20)) /dev/zero >"$tmp/big.bin"
api PUT "/v1/sandboxes/$SB/files/content?path=/tmp/big.bin" "@$tmp/big.bin" >/dev/null
is_error "a 2 MiB file PUT: 413 payload_too_large" 413 payload_too_large
api GET "/v1/sandboxes/$SB/files/stat?path=/tmp/big.bin" >/dev/null
is "… and no file made" "$status $(bj 'o.get("exists")')" "200 False"

# -- tenants apart: B sees nothing of A's
api GET /v1/sandboxes/sb-00000000000000000000 >/dev/null
missing="$status $(errobj)"
API_TOKEN=$TOKEN_B api GET "/v1/sandboxes/$SB" >/dev/null
is_error "B asks for A's sandbox: 404 not_found" 404 not_found
is "… as for an id that does not exist" "$status $(errobj)" "$missing"
API_TOKEN=$TOKEN_B api GET "/v1/sandboxes?includeStopped=true&limit=100" >/dev/null
is "… absent from B's list" "$status $(bj "[s['id'] for s in o['data'] if s['id'] == '$SB']")" "200 []"
API_TOKEN=$TOKEN_B api POST "/v1/sandboxes/$SB:exec" '{"argv": ["true"]}' >/dev/null
is_error "B execs in it: 404" 404 not_found
API_TOKEN=$TOKEN_B api POST "/v1/sandboxes/$SB:stop" '{}' >/dev/null
is_error "B stops it: 404" 404 not_found
API_TOKEN=$TOKEN_B api DELETE "/v1/sandboxes/$SB" >/dev/null
is_error "B deletes it: 404" 404 not_found
api GET "/v1/sandboxes/$SB" >/dev/null
is "… and it still runs, for A" "$status $(bj 'o["state"]')" "200 running"

# -- idempotency: one create retried, as a client does after a timeout
key=$(python3 -c 'import uuid; print(uuid.uuid4())')
idem='{"name": "idem-'$$'", "vcpu": 1, "memoryMiB": 512, "timeoutSeconds": 1800, "labels": {"suite": "serve"}}'
idem_pids=()
for i in 1 2 3; do
    curl -sS --noproxy '*' --max-time 150 -o "$tmp/idem.$i" -D "$tmp/idem.$i.h" -w '%{http_code}' -X POST \
        -H "Authorization: Bearer $TOKEN_A" -H "Idempotency-Key: $key" -H 'Content-Type: application/json' \
        --data-binary "$idem" "$API/v1/sandboxes" >"$tmp/idem.$i.status" 2>&1 &
    idem_pids+=($!)
    sleep 0.3
done
wait "${idem_pids[@]}"
python3 - "$tmp" >"$tmp/idem.sum" <<'EOF'
import json, sys
t = sys.argv[1]
rows = []
for i in (1, 2, 3):
    st = open("%s/idem.%d.status" % (t, i)).read().strip()
    h = open("%s/idem.%d.h" % (t, i)).read().lower()
    try:
        b = json.load(open("%s/idem.%d" % (t, i)))
    except Exception:
        b = {}
    rows.append((st, b.get("id"), b.get("state"), "idempotency-replayed: true" in h, b.get("replayed") is True))
print(json.dumps(rows))
EOF
idem_id=$(json_get 'o[0][1] or ""' <"$tmp/idem.sum")
is "a create sent three times at once with one Idempotency-Key: one id, running, in every answer" \
    "$(json_get 'sorted(set((r[0] in ("200", "201"), r[1] is not None, r[2]) for r in o))' <"$tmp/idem.sum")" \
    "[(True, True, 'running')]"
[ -n "$idem_id" ] && [ "$(json_get 'len(set(r[1] for r in o))' <"$tmp/idem.sum")" = 1 ] || diag "$(cat "$tmp/idem.sum")"
is "… two of them replayed (header and body), one not" \
    "$(json_get 'sorted((r[3], r[4]) for r in o)' <"$tmp/idem.sum")" "[(False, False), (True, True), (True, True)]"
api GET "/v1/sandboxes?name=idem-$$&includeStopped=true" >/dev/null
is "… one sandbox of that name made" "$(bj '[s["id"] for s in o["data"]]')" "['$idem_id']"
[ -n "$idem_id" ] && shared_add "$idem_id"
api -H "Idempotency-Key: $key" POST /v1/sandboxes "$idem" >/dev/null
is "a fourth time, after: the same answer, replayed" "$status $(bj 'o["id"], o["replayed"]') $(hdr Idempotency-Replayed)" \
    "$(cat "$tmp/idem.1.status") $idem_id True true"
api -H "Idempotency-Key: $key" POST /v1/sandboxes '{"name": "idem-other-'$$'", "vcpu": 1, "memoryMiB": 512}' >/dev/null
is_error "the same key with another body: 409 idempotency_conflict" 409 idempotency_conflict
key2=$(python3 -c 'import uuid; print(uuid.uuid4())')
api -H "Idempotency-Key: $key2" POST "/v1/sandboxes/$SB:extend" '{"seconds": 60}' >/dev/null
is "keys are per token: A extends its sandbox with a key" "$status" 200
API_TOKEN=$TOKEN_B api -H "Idempotency-Key: $key2" POST "/v1/sandboxes/$SB:extend" '{"seconds": 60}' >/dev/null
is_error "… B with the same key and body: 404, not A's answer replayed" 404 not_found
serve_stop TERM
is "SIGTERM: the server exits 0" "$serve_rc" 0
serve_start
api -H "Idempotency-Key: $key" POST /v1/sandboxes "$idem" >/dev/null
is "after a restart of the server: replayed still" "$(bj 'o["id"], o["replayed"]') $(hdr Idempotency-Replayed)" "$idem_id True true"
api GET "/v1/sandboxes?name=idem-$$" >/dev/null
is "… still one sandbox of that name, running" "$(bj '[(s["id"], s["state"]) for s in o["data"]]')" "[('$idem_id', 'running')]"

# -- Prefer: wait and waitFor
t0=$(date +%s%N)
api -H 'Prefer: wait=0' POST /v1/sandboxes '{"vcpu": 1, "memoryMiB": 512, "timeoutSeconds": 600, "labels": {"suite": "serve"}}' >/dev/null
ms=$((($(date +%s%N) - t0) / 1000000))
w=$(bj 'o.get("id", "")')
is "create with Prefer: wait=0: answered at once, starting" "${status:0:1} $(bj 'o.get("state")')" "2 starting"
check "… within 1.5 s ($ms ms)" test "$ms" -lt 1500
api GET "/v1/sandboxes/$w?waitFor=running&timeoutSeconds=90" >/dev/null
is "GET ?waitFor=running: answers once it runs" "$status $(bj 'o.get("state")')" "200 running"
t0=$(date +%s%N)
api GET "/v1/sandboxes/$w?waitFor=stopped&timeoutSeconds=1" >/dev/null
ms=$((($(date +%s%N) - t0) / 1000000))
is "?waitFor=stopped&timeoutSeconds=1 on a running one: the current state" "$status $(bj 'o.get("state")')" "200 running"
check "… after about 1 s ($ms ms)" test "$ms" -ge 900 -a "$ms" -lt 5000
api GET "/v1/sandboxes/$w?waitFor=sleeping" >/dev/null
is_error "?waitFor=sleeping: 400" 400 invalid_request
api -H 'Prefer: wait=60' POST "/v1/sandboxes/$w:stop" '{}' >/dev/null
is ":stop with Prefer: wait=60: answered stopped" "$status $(bj 'o.get("state")')" "200 stopped"
api DELETE "/v1/sandboxes/$w" >/dev/null
first="$status $(bj '[o.get(k) for k in ("id", "status", "state", "deletedAt")]')"
is "DELETE: 200, status deleted" "$(cut -d' ' -f1 <<<"$first") $(bj 'o.get("status")')" "200 deleted"
api DELETE "/v1/sandboxes/$w" >/dev/null
is "… the same answer every time" "$status $(bj '[o.get(k) for k in ("id", "status", "state", "deletedAt")]')" "$first"

# -- cursor pages: A has at least $SB and the idempotent one
api GET "/v1/sandboxes?limit=100" >/dev/null
all=$(bj 'sorted(s["id"] for s in o["data"])')
python3 - >"$tmp/pages" <<'EOF'
import os, sys
sys.path.insert(0, os.environ["RTAPI_DIR"])
import rtapi
c = rtapi.Client(os.environ["API"], os.environ["TOKEN_A"])
first = c.call("GET", "/v1/sandboxes", query={"limit": 1})
print(len(first["data"]), bool(first["nextCursor"]))
print(sorted(s["id"] for s in c.pages("/v1/sandboxes", {"limit": 1})))
EOF
is "limit=1: one item and a nextCursor" "$(sed -n 1p "$tmp/pages")" "1 True"
is "… paging to the end gives the whole list, each once" "$(sed -n 2p "$tmp/pages")" "$all"
check "… of at least two" test "$(bj 'len(o["data"])')" -ge 2
api GET "/v1/sandboxes?limit=0" >/dev/null
is_error "limit=0: 400" 400 invalid_request
api GET "/v1/sandboxes?limit=101" >/dev/null
is_error "limit=101: 400" 400 invalid_request
api GET "/v1/sandboxes?cursor=not-a-cursor" >/dev/null
is_error "a forged cursor: 400" 400 invalid_request

# -- the rate limit: a token with --rate 1 (a burst of 2)
TOKEN_R=$(runtime token create rate-one --rate 1 2>"$tmp/err" | tail -1)
for i in 1 2 3 4 5; do
    API_TOKEN=$TOKEN_R api GET /v1/me >/dev/null
    [ "$status" = 429 ] && break
done
is_error "--rate 1: the third quick request or so is 429 rate_limited" 429 rate_limited
check "… with Retry-After in whole seconds ($(hdr Retry-After))" grep -qE '^[1-9][0-9]*$' <<<"$(hdr Retry-After)"
out=$(TOKEN_R=$TOKEN_R python3 - 2>&1 <<'EOF'
import os, sys
sys.path.insert(0, os.environ["RTAPI_DIR"])
import rtapi
c = rtapi.Client(os.environ["API"], os.environ["TOKEN_R"])
for _ in range(4):
    c.call("GET", "/v1/me")
print("ok", len(c.waits) > 0, all(w >= 1 for w in c.waits))
EOF
)
is "… rtapi waits Retry-After and gets through" "$out" "ok True True"
API_TOKEN=$TOKEN_A api GET /v1/me >/dev/null
is "… A is not limited by R's bucket" "$status" 200
runtime token rm rate-one >/dev/null 2>&1

# -- the server's log: one line a request, a token never in it
check "the log: one line per request (time, token name, method, path, status, ms, request id)" \
    grep -qE '^[0-9-]+T[0-9:.]+Z tenant-a GET /v1/sandboxes/[^ ]+ 200 [0-9]+ms [A-Za-z0-9._-]+$' "$SERVE_LOG"
check "… and the 401s are logged too" grep -qE ' 401 [0-9]+ms ' "$SERVE_LOG"
check "… no token in it" sh -c "! grep -qF -e '$TOKEN_A' -e '$TOKEN_B' '$SERVE_LOG'"

# -- the listen address and TLS
port2=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$tmp/tls.key" -out "$tmp/tls.pem" \
    -days 2 -subj /CN=127.0.0.1 -addext "subjectAltName = IP:127.0.0.1" 2>"$tmp/openssl.err"
expect_error "--listen 0.0.0.0 without TLS: refused" invalid_request timeout 10 runtime serve --listen "0.0.0.0:$port2"
is "… in one error line (and its hint)" "$(grep -vc '^Hint: ' "$tmp/err")" 1
check "… naming --tls-cert" grep -q -- '--tls-cert' "$tmp/err"
timeout 10 runtime serve --listen "0.0.0.0:$port2" --tls-cert "$tmp/tls.pem" >"$tmp/out" 2>"$tmp/err"
is "--tls-cert without --tls-key: refused, exit 1, one error line" \
    "$? $(grep -vc '^Hint: ' "$tmp/err") $(grep -c '^Error \[[a-z_]*\]: ' "$tmp/err") $(wc -c <"$tmp/out")" "1 1 1 0"
serve_stop TERM
runtime serve --listen "127.0.0.1:$port2" --tls-cert "$tmp/tls.pem" --tls-key "$tmp/tls.key" \
    </dev/null >"$tmp/tls.out" 2>"$tmp/tls.log" &
tls_pid=$!
for _ in $(seq 100); do
    curl -s --noproxy '*' -o /dev/null --cacert "$tmp/tls.pem" "https://127.0.0.1:$port2/v1/me" && break
    sleep 0.05
done
got=$(curl -sS --noproxy '*' --cacert "$tmp/tls.pem" -H "Authorization: Bearer $TOKEN_A" \
    "https://127.0.0.1:$port2/v1/sandboxes/$SB" 2>&1 | json_get 'o.get("state")' 2>&1)
is "https on 127.0.0.1 with a self-signed cert: the shared sandbox, running" "$got" running
got=$(python3 - "$port2" "$tmp/tls.pem" 2>&1 <<'EOF'
import os, sys
sys.path.insert(0, os.environ["RTAPI_DIR"])
import rtapi
c = rtapi.Client("https://127.0.0.1:%s" % sys.argv[1], os.environ["TOKEN_A"], ca=sys.argv[2], retries=0)
print(c.call("GET", "/v1/me") is not None)
EOF
)
is "… and through rtapi, verified against the cert" "$got" True
check "… plain HTTP to the TLS port gets no answer" sh -c "! curl -s --noproxy '*' --max-time 5 -o /dev/null 'http://127.0.0.1:$port2/v1/me'"
kill -TERM "$tls_pid"
wait "$tls_pid"
is "… SIGTERM: exit 0" "$?" 0
serve_start
