#!/bin/bash
# spend.sh - a token that spent its --max-cost is refused, as a create is
# (429 quota_exceeded, limit maxCostMicros), on every verb that would keep
# one of its sandboxes running or wake it: :extend, :wake, exec, processes,
# files; :stop, :pause, DELETE and reads of the sandbox stay open, and
# another token under its limit is not refused.  `runtime serve` on
# loopback, the spend written into the ledger: boots nothing, so it runs in
# the unit suite.
. "$(dirname "$0")/libtest.sh"
export RUNTIME_DATA_DIR="$tmp/data" RUNTIME_ACCEL=tcg
unset RUNTIME_API_URL
trap '[ -n "${serve:-}" ] && kill "$serve" 2>/dev/null && wait "$serve"; cleanup' EXIT

spent=$(runtime token create spent --max-cost 0.000005 2>/dev/null)
fresh=$(runtime token create fresh --max-cost 1 2>/dev/null)
mkdir -p -m 0700 "$RUNTIME_DATA_DIR/ledger"
rec='{"t":"2026-01-01T00:00:00.000Z","id":"%s","name":null,"funding":"paid","createdAt":"2026-01-01T00:00:00.000Z",'
rec+='"state":"stopped","stopReason":"requested","tenant":"%s","vcpu":1,"memoryMiB":256,"runningUs":1,"cpuUs":1,'
rec+='"billedCpuUs":1,"micros":%d}\n'
printf "$rec" sb-00000000000a spent 3 sb-00000000000b spent 4 sb-00000000000c fresh 7 >"$RUNTIME_DATA_DIR/ledger/ledger.jsonl"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
runtime serve --listen "127.0.0.1:$port" >"$tmp/serve.log" 2>&1 &
serve=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/v1/health" >/dev/null && break; sleep 0.1; done

# METHOD PATH [BODY]: "STATUS CODE LIMIT HELD", as the server answers.
ask() {
    local tok=$1 method=$2 path=$3 body=${4:-}
    curl -s -o "$tmp/out" -D "$tmp/headers" -w '%{http_code}' -X "$method" -H "Authorization: Bearer $tok" \
        ${body:+-H 'Content-Type: application/json' -d "$body"} "http://127.0.0.1:$port$path" >"$tmp/status"
    printf '%s ' "$(cat "$tmp/status")"
    python3 -c 'import json, sys
e = json.load(open(sys.argv[1])).get("error", {}); d = e.get("details") or {}
print(e.get("code"), d.get("limit"), d.get("held"))' "$tmp/out" 2>/dev/null || echo "?"
}
sb=/v1/sandboxes/sb-0123456789ab
refused="429 quota_exceeded maxCostMicros 7"
is "create, at the limit (as before)" "$(ask "$spent" POST /v1/sandboxes '{}')" "$refused"
is ":extend is refused" "$(ask "$spent" POST "$sb:extend" '{"seconds":600}')" "$refused"
is ":wake is refused" "$(ask "$spent" POST "$sb:wake" '{}')" "$refused"
is "exec is refused" "$(ask "$spent" POST "$sb:exec" '{"argv":["true"]}')" "$refused"
is "a process is refused" "$(ask "$spent" POST "$sb/processes" '{"argv":["true"]}')" "$refused"
is "a file read (it may wake the sandbox) is refused" "$(ask "$spent" GET "$sb/files/content?path=/etc/hostname")" "$refused"
check "… with the create's Retry-After (an hour)" grep -qix $'retry-after: 3600\r' "$tmp/headers"
is ":stop is not refused" "$(ask "$spent" POST "$sb:stop" '{}')" "404 not_found None None"
is ":pause is not refused" "$(ask "$spent" POST "$sb:pause" '{}')" "404 not_found None None"
is "DELETE is not refused" "$(ask "$spent" DELETE "$sb")" "404 not_found None None"
is "GET is not refused" "$(ask "$spent" GET "$sb")" "404 not_found None None"
is "a token under its limit may :extend" "$(ask "$fresh" POST "$sb:extend" '{"seconds":600}')" "404 not_found None None"
is "… and exec" "$(ask "$fresh" POST "$sb:exec" '{"argv":["true"]}')" "404 not_found None None"
check "the server still runs" kill -0 "$serve"

# One JSON casing: usage in camelCase, as the rest of the API, the old
# snake_case keys kept one release (deprecated) with the same values.
keys='import json, sys
u = json.load(sys.stdin); r = u["sandboxes"][0]
print(u["chargedMicros"], u["chargedUsd"], "trialHoursLeft" in u, r["resourceId"], r["memoryMiB"], r["runningSeconds"],
      r["activeCpuSeconds"], r["memoryGiBSeconds"], r["chargedUsd"], r["createdAt"],
      all(u[o] == u[n] for o, n in [("charged_micros", "chargedMicros"), ("charged_usd", "chargedUsd"),
                                    ("trial_hours_left", "trialHoursLeft")]),
      all(r[o] == r[n] for o, n in [("resource_id", "resourceId"), ("memory_mib", "memoryMiB"),
                                    ("created_at", "createdAt"), ("charged_usd", "chargedUsd")]))'
is "usage --json: camelCase, the old keys alike" "$(runtime usage --json | python3 -c "$keys")" \
    "14 0.000014 True sb-00000000000c 256 0.0 0.0 0.0 0.000007 2026-01-01T00:00:00.000Z True True"
curl -s -H "Authorization: Bearer $fresh" "http://127.0.0.1:$port/v1/usage" >"$tmp/usage.json"
is "GET /v1/usage: the same keys, a tenant's own" "$(python3 -c "$keys" <"$tmp/usage.json")" \
    "7 0.000007 True sb-00000000000c 256 0.0 0.0 0.0 0.000007 2026-01-01T00:00:00.000Z True True"
is "usage --csv keeps its header" "$(runtime usage --csv | head -1)" \
    "resource_id,name,kind,state,created_at,vcpu,memory_mib,running_seconds,active_cpu_seconds,memory_gib_seconds,charged_usd"
is "… and its rows" "$(runtime usage --csv | sed -n 2p | cut -d, -f1,7)" "sb-00000000000c,256"
done_testing
