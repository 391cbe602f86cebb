# 40-sandboxes.sh - a sandbox's verbs (:stop :pause :wake :extend :update
# :fork :snapshot), waitFor and Prefer: wait, network, metrics, snapshots,
# and the token's limits at create and fork (docs/API.md).  Boots a small
# sandbox of its own (pause, wake, snapshot, fork), one fork child, and one
# sandbox of a limited token.

# answer DESC STATUS CODE: the last answer was STATUS with error CODE.
answer() {
    local got
    got="$status $(bj 'o.get("error", {}).get("code", "-")' 2>/dev/null)"
    if [ "$got" = "$2 $3" ]; then ok "$1"; else fail "$1"; diag "got:  $got" "want: $2 $3" "body: $(head -c 300 "$tmp/api.body")"; fi
}
# issues: the paths of the last answer's details.issues, sorted.
issues() { bj 'sorted(i["path"] for i in o["error"]["details"]["issues"])'; }

# -- verbs: bad input, another tenant, nothing booted
api POST "/v1/sandboxes/$SB:jump" '{}' >/dev/null
answer "an unknown verb: 404 not_found" 404 not_found
api POST "/v1/sandboxes/$SB:extend" '{}' >/dev/null
answer ":extend without seconds: 400" 400 invalid_request
api POST "/v1/sandboxes/$SB:extend" '{"seconds": "ten", "by": 1}' >/dev/null
is ":extend with a string and an unknown field: both named" "$status $(issues)" "400 ['by', 'seconds']"
api POST "/v1/sandboxes/$SB:update" '{"name": "x", "env": {"A": null}, "autoWake": true}' >/dev/null
is ":update of name and env: 400 naming them (the library cannot change them yet)" "$status $(issues)" "400 ['env', 'name']"
api POST "/v1/sandboxes/$SB:fork" '{"count": 99}' >/dev/null
is ":fork of 99: 400 on count" "$status $(issues)" "400 ['count']"
api POST "/v1/sandboxes/$SB:stop" '{"force": true}' >/dev/null
is ":stop takes no fields" "$status $(issues)" "400 ['force']"
API_TOKEN=$TOKEN_B api POST "/v1/sandboxes/$SB:stop" '{}' >/dev/null
answer "B's :stop of A's sandbox: 404" 404 not_found
API_TOKEN=$TOKEN_B api POST "/v1/sandboxes/$SB:snapshot" '{}' >/dev/null
answer "B's :snapshot of A's sandbox: 404" 404 not_found
api POST "/v1/sandboxes/$SB:wake" '{}' >/dev/null
is ":wake of a running sandbox: 200, its SandboxInfo, as a local wake succeeds" "$status $(bj 'o["id"] == "'"$SB"'", o["state"]')" "200 True running"

# -- verbs that leave the shared sandbox as it was
before=$(api GET "/v1/sandboxes/$SB" | json_get 'o["expiresAt"]')
api POST "/v1/sandboxes/$SB:extend" '{"seconds": 60}' >/dev/null
is ":extend {seconds: 60}: 200, a SandboxInfo" "$status $(bj 'o["kind"], o["id"] == "'"$SB"'"')" "200 sandbox True"
check "… its expiresAt later" test "$(bj 'o["expiresAt"]')" \> "$before"
api POST "/v1/sandboxes/$SB:update" '{"idlePauseSeconds": 0, "autoWake": true}' >/dev/null
is ":update {idlePauseSeconds, autoWake}: 200 with them" "$status $(bj 'o["idlePauseSeconds"], o["autoWake"]')" "200 0 True"
api POST "/v1/sandboxes/$SB:update" '{"autoWake": false}' >/dev/null
is "… and back" "$status $(bj 'o["autoWake"], "jail" in o, "tenant" in o')" "200 False False False"

# -- waitFor
api GET "/v1/sandboxes/$SB?waitFor=gone" >/dev/null
answer "waitFor=gone: 400" 400 invalid_request
api GET "/v1/sandboxes/$SB?waitFor=running&timeoutSeconds=999" >/dev/null
answer "timeoutSeconds=999: 400" 400 invalid_request
t0=$(date +%s)
api GET "/v1/sandboxes/$SB?waitFor=paused&timeoutSeconds=1" >/dev/null
is "waitFor=paused of a running one: the state after timeoutSeconds" "$status $(bj 'o["state"]')" "200 running"
check "… after about a second, not at once nor much later" test $(($(date +%s) - t0)) -ge 1 -a $(($(date +%s) - t0)) -le 5

# -- network
api GET "/v1/sandboxes/$SB/network" >/dev/null
is "GET network: its rules and version 1" "$status $(bj 'o["sandboxId"] == "'"$SB"'", o["version"], o["internet"], o["allow"], o["deny"], o["enforced"]')" \
    "200 True 1 True [] [] True"
api PUT "/v1/sandboxes/$SB/network" '{"allow": ["example.com"]}' >/dev/null
is "PUT network without internet: 400 (the whole set is replaced)" "$status $(issues)" "400 ['internet']"
api PUT "/v1/sandboxes/$SB/network" '{"internet": true, "allow": ["example.com", 7]}' >/dev/null
is "PUT network with a number in allow: named" "$status $(issues)" "400 ['allow[1]']"
api PUT "/v1/sandboxes/$SB/network" '{"internet": false}' >/dev/null
is "PUT {internet: false}: version 2, refused" "$status $(bj 'o["version"], o["internet"], o["allow"]')" "200 2 False []"
check "… updatedAt set" test -n "$(bj 'o["updatedAt"]')"
API_TOKEN=$TOKEN_B api PUT "/v1/sandboxes/$SB/network" '{"internet": true}' >/dev/null
answer "B's PUT of A's network: 404" 404 not_found
api PUT "/v1/sandboxes/$SB/network" '{"internet": true, "allow": ["example.com"], "deny": ["10.0.0.0/8"]}' >/dev/null
is "PUT allow and deny: version 3" "$status $(bj 'o["version"], o["allow"], o["deny"]')" "200 3 ['example.com'] ['10.0.0.0/8']"
api PUT "/v1/sandboxes/$SB/network" '{"internet": true}' >/dev/null
is "… and back to the internet" "$(api GET "/v1/sandboxes/$SB/network" | json_get 'o["version"], o["internet"], o["allow"]')" "4 True []"

# -- metrics
api GET "/v1/sandboxes/$SB/metrics" >/dev/null
is "metrics: CPU, memory, CPU seconds, cost" "$status $(bj 'all(k in o for k in ("cpuPercent", "memoryMiB", "cpuSeconds", "chargedMicros"))')" "200 True"
API_TOKEN=$TOKEN_B api GET "/v1/sandboxes/$SB/metrics" >/dev/null
answer "B's metrics of A's sandbox: 404" 404 not_found

# -- a sandbox of its own: create with wait=0, pause, wake, snapshot, fork, stop
api -H 'Prefer: wait=0' POST /v1/sandboxes '{"vcpu": 1, "memoryMiB": 512, "name": "srv40"}' >/dev/null
P=$(bj 'o["id"]')
is "create with Prefer: wait=0: 201 at once, starting" "$status $(bj 'o["state"]')" "201 starting"
api GET "/v1/sandboxes/$P?waitFor=running&timeoutSeconds=120" >/dev/null
is "waitFor=running: it runs" "$status $(bj 'o["state"]')" "200 running"
api -H 'Prefer: wait=120' POST "/v1/sandboxes/$P:pause" '{}' >/dev/null
is ":pause with Prefer: wait=120: paused" "$status $(bj 'o["state"], "path" in o.get("paused", {})')" "200 paused False"
api POST "/v1/sandboxes/$P:pause" '{}' >/dev/null
is ":pause of a paused one: 200, paused" "$status $(bj 'o["state"]')" "200 paused"
api GET "/v1/sandboxes/$P/network" >/dev/null
is "a paused sandbox's network: not enforced until it wakes" "$status $(bj 'o["enforced"]')" "200 False"
t0=$(date +%s%N)
api -H 'Prefer: wait=0' POST "/v1/sandboxes/$P:wake" '{}' >/dev/null
is ":wake with Prefer: wait=0: 200 at once" "$status $(( ($(date +%s%N) - t0) / 1000000000 < 5 ))" "200 1"
api GET "/v1/sandboxes/$P?waitFor=running&timeoutSeconds=120" >/dev/null
is "… then waitFor=running: running" "$status $(bj 'o["state"]')" "200 running"
api POST "/v1/sandboxes/$P:snapshot" '{"name": "srv40-snap", "labels": {"k": 1}}' >/dev/null
is ":snapshot with a label that is no string: 400 on labels.k" "$status $(issues)" "400 ['labels.k']"
api POST "/v1/sandboxes/$P:snapshot" '{"name": "srv40-snap", "labels": {"k": "v"}}' >/dev/null
SNAP=$(bj 'o["id"]')
is ":snapshot: a Snapshot, ready, from P, no host path" \
    "$status $(bj 'o["kind"], o["state"], o["sourceSandboxId"] == "'"$P"'", o["name"], "path" in o')" \
    "200 snapshot ready True srv40-snap False"
is "GET /v1/snapshots lists it" "$(api GET /v1/snapshots | json_get '[s["id"] for s in o["data"]] == ["'"$SNAP"'"], o["nextCursor"]')" "True None"
is "GET /v1/snapshots/{name}: it" "$(api GET /v1/snapshots/srv40-snap | json_get 'o["id"] == "'"$SNAP"'"')" "True"
is "B's snapshot list: empty" "$(API_TOKEN=$TOKEN_B api GET /v1/snapshots | json_get 'o["data"]')" "[]"
API_TOKEN=$TOKEN_B api GET "/v1/snapshots/$SNAP" >/dev/null
answer "B's GET of A's snapshot: 404" 404 not_found
API_TOKEN=$TOKEN_B api DELETE "/v1/snapshots/$SNAP" >/dev/null
answer "B's DELETE of A's snapshot: 404" 404 not_found
api -H 'Prefer: wait=120' POST "/v1/sandboxes/$P:fork" '{"labels": {"forked": "yes"}}' >/dev/null
C=$(bj 'o["sandboxes"][0]["id"]')
is ":fork: {sandboxes: [one running child with the label]}" \
    "$status $(bj 'len(o["sandboxes"]), o["sandboxes"][0]["state"], o["sandboxes"][0]["labels"]')" "200 1 running {'forked': 'yes'}"
is "… B sees neither P nor its child" "$(API_TOKEN=$TOKEN_B api GET /v1/sandboxes | json_get '[s["id"] for s in o["data"] if s["id"] in ("'"$P"'", "'"$C"'")]')" "[]"
api DELETE "/v1/sandboxes/$C" >/dev/null
is "the child deleted" "$status" 200
api DELETE "/v1/snapshots/$SNAP" >/dev/null
is "DELETE the snapshot: 200 deleted" "$status $(bj 'o["status"]')" "200 deleted"
api GET "/v1/snapshots/$SNAP" >/dev/null
answer "… then GET: 404" 404 not_found
api -H 'Prefer: wait=60' POST "/v1/sandboxes/$P:stop" '{}' >/dev/null
is ":stop: stopped" "$status $(bj 'o["state"]')" "200 stopped"
api POST "/v1/sandboxes/$P:stop" '{}' >/dev/null
is ":stop again: 200, still stopped" "$status $(bj 'o["state"]')" "200 stopped"
api POST "/v1/sandboxes/$P:wake" '{}' >/dev/null
check ":wake of a stopped one: refused (4xx)" test "${status:0:1}" = 4
api DELETE "/v1/sandboxes/$P" >/dev/null

# -- the token's limits
TOKEN_Q=$(runtime token create tenant-q --max-sandboxes 1 --max-vcpu 1 --max-snapshots 1 --rate 1000 2>"$tmp/err" | tail -1)
check "a token with --max-sandboxes 1 --max-vcpu 1 --max-snapshots 1" test -n "$TOKEN_Q"
is "/v1/me: its limits" "$(API_TOKEN=$TOKEN_Q api GET /v1/me | json_get '[o["limits"][k] for k in ("maxSandboxes", "maxSnapshots")]')" "[1, 1]"
is "… and another token's default of 32 snapshots" "$(api GET /v1/me | json_get 'o["limits"]["maxSnapshots"]')" 32
API_TOKEN=$TOKEN_Q api POST /v1/sandboxes '{"vcpu": 2, "memoryMiB": 512}' >/dev/null
answer "2 vCPUs over maxVcpu 1: 429 quota_exceeded" 429 quota_exceeded
check "… with Retry-After" test -n "$(hdr Retry-After)"
check "… a message naming the limit" grep -q maxVcpu "$tmp/api.body"
qpids=
for i in 1 2; do
    curl -sS --noproxy '*' --max-time 120 -o "$tmp/q$i.body" -w '%{http_code}' -H "Authorization: Bearer $TOKEN_Q" \
        -H 'Prefer: wait=0' --data-binary '{"vcpu": 1, "memoryMiB": 512, "name": "q'$i'"}' "$API/v1/sandboxes" >"$tmp/q$i.status" &
    qpids="$qpids $!"
done
# Those two only: the server is a job of this shell too.
wait $qpids
is "two creates at once under maxSandboxes 1: one made, one 429" "$( (cat "$tmp/q1.status"; echo; cat "$tmp/q2.status"; echo) | sort | tr '\n' ' ')" "201 429 "
Q=$(for i in 1 2; do [ "$(cat "$tmp/q$i.status")" = 201 ] && json_get 'o["id"]' <"$tmp/q$i.body"; done)
API_TOKEN=$TOKEN_Q api GET "/v1/sandboxes/$Q?waitFor=running&timeoutSeconds=120" >/dev/null
is "… the one made runs" "$(bj 'o["state"]')" running
API_TOKEN=$TOKEN_Q api POST /v1/sandboxes '{"vcpu": 1, "memoryMiB": 512}' >/dev/null
answer "a third create: 429 quota_exceeded" 429 quota_exceeded
QN=$(API_TOKEN=$TOKEN_Q api GET "/v1/sandboxes/$Q" | json_get 'o["name"]')
API_TOKEN=$TOKEN_Q api POST /v1/sandboxes '{"vcpu": 1, "memoryMiB": 512, "getOrCreate": true, "name": "'"$QN"'"}' >/dev/null
is "getOrCreate of its live sandbox at the limit: 200, reused, the same" "$status $(bj 'o["reused"], o["id"] == "'"$Q"'"')" "200 True True"
API_TOKEN=$TOKEN_Q api POST /v1/sandboxes '{"vcpu": 1, "memoryMiB": 512, "getOrCreate": true, "name": "q-other"}' >/dev/null
answer "getOrCreate of another name at the limit: 429 (every create path reserves)" 429 quota_exceeded
API_TOKEN=$TOKEN_Q api POST "/v1/sandboxes/$Q:fork" '{}' >/dev/null
answer ":fork over the limit: 429 quota_exceeded" 429 quota_exceeded
API_TOKEN=$TOKEN_Q api POST "/v1/sandboxes/$Q:snapshot" '{}' >/dev/null
QS=$(bj 'o.get("id", "")')
is ":snapshot under maxSnapshots 1: made" "$status $(bj 'o["kind"]')" "200 snapshot"
API_TOKEN=$TOKEN_Q api POST "/v1/sandboxes/$Q:snapshot" '{}' >/dev/null
answer "a second :snapshot: 429 quota_exceeded" 429 quota_exceeded
check "… naming maxSnapshots" grep -q maxSnapshots "$tmp/api.body"
API_TOKEN=$TOKEN_Q api DELETE "/v1/snapshots/$QS" >/dev/null
is "… its snapshot deleted" "$status" 200
API_TOKEN=$TOKEN_Q api DELETE "/v1/sandboxes/$Q" >/dev/null
is "its sandbox deleted" "$status" 200
runtime token rm tenant-q >/dev/null 2>&1

# -- a token at its --max-cost: its running sandbox is paused (serve/spend.c,
# every 10 s), and waking or running in it is refused as a create is
TOKEN_C=$(runtime token create tenant-c --max-cost 0.000001 --rate 1000 2>"$tmp/err" | tail -1)
API_TOKEN=$TOKEN_C api POST /v1/sandboxes '{"vcpu": 1, "memoryMiB": 256, "funding": "paid", "autoWake": true}' >/dev/null
C=$(bj 'o.get("id", "")')
API_TOKEN=$TOKEN_C api GET "/v1/sandboxes/$C?waitFor=running&timeoutSeconds=120" >/dev/null
is "a paid sandbox of a token with --max-cost \$0.000001 runs" "$(bj 'o["state"]')" running
API_TOKEN=$TOKEN_C api GET "/v1/sandboxes/$C?waitFor=paused&timeoutSeconds=60" >/dev/null
is "… and is paused once its ledger records reach the limit" "$(bj 'o["state"]')" paused
diag "$(grep "tenant tenant-c spent" "$SERVE_LOG" 2>/dev/null | head -1)"
API_TOKEN=$TOKEN_C api POST "/v1/sandboxes/$C:wake" '{}' >/dev/null
answer ":wake of it: 429 quota_exceeded" 429 quota_exceeded
check "… naming maxCostMicros" grep -q maxCostMicros "$tmp/api.body"
API_TOKEN=$TOKEN_C api POST "/v1/sandboxes/$C:exec" '{"argv": ["true"]}' >/dev/null
answer "an exec (it would auto-wake it): 429 quota_exceeded" 429 quota_exceeded
API_TOKEN=$TOKEN_C api GET "/v1/sandboxes/$C" >/dev/null
is "… and it stays paused" "$(bj 'o["state"]')" paused
API_TOKEN=$TOKEN_C api DELETE "/v1/sandboxes/$C" >/dev/null
is "DELETE still works" "$status" 200
runtime token rm tenant-c >/dev/null 2>&1

# -- what runtime-serve.service's KillMode=process relies on: SIGTERM to the
# server alone leaves the sandboxes' monitors running, and a new server
# serves them
mon=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$SB/monitor.pid" 2>/dev/null)
serve_stop TERM
is "SIGTERM to the server: it exits 0" "$serve_rc" 0
check "… the shared sandbox's monitor still runs" kill -0 "${mon:-0}"
serve_start
is "… and a new server serves it, running, the same monitor" \
    "$(api GET "/v1/sandboxes/$SB" | json_get 'o["state"]') $(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$SB/monitor.pid")" "running $mon"
