#!/bin/bash
# node.sh - `runtime node` answering API calls over NATS for its own
# sandboxes (runtime.node.NAME.api, cluster/nats.c): three nats-servers on
# loopback with nats-server's default max_payload (1 MB), one node, a
# tenant's sandbox created, exec'd (whole, streamed, a stream cut to fit
# max_payload, a whole answer too big for a reply answered 502), a file
# written and read back (one too big for a reply: cut), deleted, all as
# request messages naming the tenant (no token); SIGTERM ends the node
# with 0; nothing left.
. "$(dirname "$0")/libtest.sh"
cluster=$tmp/nats
node_pid=
tok=node-test-$$
finish() {
    [ -n "$node_pid" ] && kill -TERM "$node_pid" 2>/dev/null && wait "$node_pid"
    runtime token rm "$tok" >/dev/null 2>&1
    "$RUNTIME_TEST_NATS_CLUSTER" stop "$cluster"
    cleanup
}
trap finish EXIT

# The cluster key the node and this test's requests share (cluster/seal.h).
(umask 077 && head -c 32 /dev/urandom >"$tmp/cluster.key")
export RUNTIME_NODE_CLUSTER_KEY=$tmp/cluster.key
urls=$(NATS_MAX_PAYLOAD=1MB "$RUNTIME_TEST_NATS_CLUSTER" start "$cluster" 3)
runtime token create "$tok" >/dev/null
runtime node --nats "$urls" --name it1 2>"$tmp/node.log" &
node_pid=$!
for _ in $(seq 100); do
    "$RUNTIME_TEST_NATS_REQUEST" "$urls" runtime.node.it1.ping 500 </dev/null >/dev/null 2>&1 && break
    sleep 0.1
done

# api METHOD PATH[?QUERY] [BODY]: one call; sets status, body (decoded)
# and truncated.
api() {
    local reply
    reply=$(python3 -c '
import base64, json, sys, urllib.parse
path, _, q = sys.argv[2].partition("?")
print(json.dumps({"method": sys.argv[1], "path": path, "tenant": sys.argv[3], "timeoutMs": 100000,
                  "query": urllib.parse.parse_qs(q),
                  "body": base64.b64encode(sys.argv[4].encode()).decode()}))' "$1" "$2" "$tok" "${3-}" |
        "$RUNTIME_TEST_NATS_REQUEST" "$urls" runtime.node.it1.api 180000)
    status=$(json_get 'o["status"]' <<<"$reply")
    truncated=$(json_get 'o["truncated"]' <<<"$reply")
    body=$(python3 -c 'import base64, json, sys; sys.stdout.write(base64.b64decode(json.load(sys.stdin)["body"]).decode())' <<<"$reply")
}

api POST /v1/sandboxes '{"vcpu":1,"memoryMiB":512,"name":"nats-sb"}'
id=$(json_get 'o["id"]' <<<"$body" 2>/dev/null)
check "a sandbox created over NATS: $status" sh -c '[ "$1" -ge 200 ] && [ "$1" -lt 300 ] && [ -n "$2" ]' sh "$status" "$id"
api GET "/v1/sandboxes/$id?waitFor=running&timeoutSeconds=60"
is "it runs" "$(json_get 'o["state"]' <<<"$body")" "running"
is "the node's runtime lists it" "$(runtime sandbox ls --json | json_get 'len([s for s in o if s["id"] == "'"$id"'"])')" "1"

api POST "/v1/sandboxes/$id:exec" '{"argv":["python3","-c","print(6*7)"]}'
is "exec, answered whole: 200" "$status" "200"
is "its stdout" "$(json_get 'o["stdout"]' <<<"$body")" "42"

api POST "/v1/sandboxes/$id:exec" '{"argv":["sh","-c","echo a; echo b >&2; exit 3"],"stream":true}'
is "exec as a stream, gathered: 200" "$status" "200"
is "its events" "$(python3 -c '
import json, sys
ev = [json.loads(l) for l in sys.stdin if l.strip()]
print(",".join(e["type"] + ("=" + e["data"].strip() if "data" in e else "") + ("=%s" % e["exitCode"] if e["type"] == "exit" else "") for e in ev))' <<<"$body")" \
    "start,stdout=a,stderr=b,exit=3"
is "not truncated" "$truncated" "False"

api POST "/v1/sandboxes/$id:exec" '{"argv":["python3","-c","import sys; sys.stdout.write(\"a\" * 3000000)"],"stream":true}'
is "a stream past what fits 1 MB is cut: truncated" "$truncated" "True"
lines_json() { python3 -c 'import json, sys; [json.loads(l) for l in sys.stdin if l.strip()]' <<<"$body"; }
check "cut at a line's end: every line JSON" lines_json

api POST "/v1/sandboxes/$id:exec" '{"argv":["true"]}'
is "and the next call is answered" "$status" "200"
api POST "/v1/sandboxes/$id:exec" '{"argv":["python3","-c","import sys; sys.stdout.write(\"a\" * 2000000)"]}'
is "an answer too big for a reply (1 MiB of stdout kept, base64'd): 502, not silence" "$status" "502"
is "bad_gateway" "$(json_get 'o["error"]["code"]' <<<"$body")" "bad_gateway"

api PUT "/v1/sandboxes/$id/files/content?path=/workspace/n.txt" "from nats"
is "a file written: $status" "$status" "200"
api GET "/v1/sandboxes/$id/files/content?path=/workspace/n.txt"
is "and read back" "$body" "from nats"
api POST "/v1/sandboxes/$id:exec" '{"argv":["sh","-c","head -c 2000000 /dev/zero >/workspace/big"]}'
api GET "/v1/sandboxes/$id/files/content?path=/workspace/big"
code=$(head -c 300 <<<"$body" | grep -o bad_gateway)
check "a file too big for a reply (a stream): cut, or 502 bad_gateway ($status, truncated $truncated)" \
    sh -c '{ [ "$1" = 502 ] && [ "$3" = bad_gateway ]; } || [ "$2" = True ]' sh "$status" "$truncated" "$code"

api DELETE "/v1/sandboxes/$id"
is "deleted: $status" "$status" "200"
kill -TERM "$node_pid"
wait "$node_pid"
is "SIGTERM ends the node with 0" "$?" "0"
node_pid=
grep -q "stopping (sandboxes keep running)" "$tmp/node.log" || diag "$(cat "$tmp/node.log")"
check_no_leaks "node"
done_testing
