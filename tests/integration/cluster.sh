#!/bin/bash
# cluster.sh - many hosts, one API on one machine: three
# nats-servers clustered on loopback with JetStream, three "hosts" (a
# `runtime node` each, with its own state, data and cache dirs), two
# `runtime serve --nats` replicas on free loopback ports, every host with
# the same tokens.json.  Then: six small sandboxes created through both
# replicas spread over the nodes; exec, files and network through either;
# /v1/nodes and `runtime node ls`; a node killed -9 is lost and its
# sandboxes host_lost, creates go elsewhere; a NATS server killed costs
# nothing; a replica killed mid-stream, the stream resumed through the
# other from its cursor with no byte lost or repeated; the lost node back
# reconciles (its host_lost sandboxes and one made behind the cluster's
# back are stopped on it); an idempotent create retried across replicas
# makes one sandbox; bad input.  Real VMs; nothing listens beyond
# loopback; nothing left on any host.
. "$(dirname "$0")/libtest.sh"
exec </dev/null
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

hosts="h1 h2 h3"
nats=$tmp/nats
src_cache=${RUNTIME_CACHE_DIR:-/var/cache/runtime}
images=${RUNTIME_TEST_DATA:-/nonexistent}/images
declare -A pid=() port=()
urls= status= body=

# hostenv NAME: the environment of host or replica NAME (its own state,
# data and cache dirs), as a command prefix in the array E.
hostenv() {
    E=(env -u RUNTIME_API_URL -u RUNTIME_API_KEY RUNTIME_STATE_DIR="$tmp/$1/state"
       RUNTIME_DATA_DIR="$tmp/$1/data" RUNTIME_CACHE_DIR="$tmp/$1/cache")
}
# on NAME CMD…: CMD as that host sees it.
on() { hostenv "$1"; shift; "${E[@]}" "$@"; }

# seed NAME: its dirs; the cache hard-linked from the shared one (kernel,
# base tar, boot disks, empty overlays: read, never written in place) so
# no host builds the default image again; the image store likewise; the
# tokens every host shares.
seed() {
    local d=$tmp/$1 x
    mkdir -p "$d/state" "$d/data" "$d/cache"
    for x in kernel base disks overlays; do
        [ -d "$src_cache/$x" ] && cp -al "$src_cache/$x" "$d/cache/"
    done
    for x in accel qemu-libs; do
        [ -f "$src_cache/$x" ] && cp "$src_cache/$x" "$d/cache/"
    done
    [ -d "$images" ] && cp -al "$images" "$d/data/"
    find "$d/cache" "$d/data" -name .lock -delete
    cp "$tmp/tokens/tokens.json" "$d/data/"
}

# start_node NAME: its `runtime node` in the background (pid[NAME]);
# returns once it answers a ping.
start_node() {
    hostenv "$1"
    "${E[@]}" runtime node --nats "$urls" --name "$1" >>"$tmp/$1/node.log" 2>&1 &
    pid[$1]=$!
    for _ in $(seq 100); do
        "$RUNTIME_TEST_NATS_REQUEST" "$urls" "runtime.node.$1.ping" 500 </dev/null >/dev/null 2>&1 && return 0
        kill -0 "${pid[$1]}" 2>/dev/null || break
        sleep 0.1
    done
    diag "node $1 did not answer:" "$(cat "$tmp/$1/node.log")"
    return 1
}

# start_replica A|B: `runtime serve --nats` on its port; returns once it
# answers /v1/health.
start_replica() {
    hostenv "r$1"
    "${E[@]}" runtime serve --nats "$urls" --listen "127.0.0.1:${port[$1]}" >>"$tmp/r$1/serve.log" 2>&1 &
    pid[r$1]=$!
    for _ in $(seq 200); do
        curl -s -o /dev/null --max-time 2 "http://127.0.0.1:${port[$1]}/v1/health" && return 0
        kill -0 "${pid[r$1]}" 2>/dev/null || break
        sleep 0.05
    done
    diag "replica $1 did not answer:" "$(tail -20 "$tmp/r$1/serve.log")"
    return 1
}

# stop NAME [SIGNAL]: ends a node or replica and reaps it; rc its exit.
stop() {
    local p=${pid[$1]:-}
    rc=
    [ -n "$p" ] || return 0
    kill "-${2:-TERM}" "$p" 2>/dev/null
    wait "$p" 2>/dev/null
    rc=$?
    pid[$1]=
}

finish() {
    local h f
    if [ "$failed" != 0 ]; then
        for f in "$tmp"/*/node.log "$tmp"/r?/serve.log; do
            [ -s "$f" ] && diag "--- ${f#$tmp/}:" "$(tail -n 25 "$f")"
        done
    fi
    stop rA; stop rB
    for h in $hosts; do stop "$h"; done
    for h in $hosts; do [ -d "$tmp/$h" ] && RUNTIME_STATE_DIR=$tmp/$h/state stop_sandboxes; done
    "$RUNTIME_TEST_NATS_CLUSTER" stop "$nats"
    cleanup
}
trap finish EXIT

# server_of PID: K of the NATS server (nats-cluster.sh's DIR/url.K)
# process PID is connected to.
server_of() {
    local peer f
    peer=$(ss -tnpH state established | grep "pid=$1," | awk '{ print $4 }')
    for f in "$nats"/url.*; do
        grep -qxF "$(sed 's|^nats://||' "$f")" <<<"$peer" && echo "${f##*.}"
    done
}

# call A|B METHOD PATH [BODY [CURLOPT…]]: one request to a replica as
# tenant a (TOKEN=T call … for another, TOKEN= call … for none); sets
# $status and $body; the answer's headers in $tmp/headers (hdr NAME).
call() {
    local r=$1 m=$2 p=$3 data=() auth=() tok=${TOKEN-$tok_a}
    shift 3
    if [ $# -gt 0 ]; then
        [ -n "$1" ] && data=(--data-binary "$1" -H 'Content-Type: application/json')
        shift
    fi
    [ -n "$tok" ] && auth=(-H "Authorization: Bearer $tok")
    status=$(curl -sS --max-time 150 -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' -X "$m" \
        "${auth[@]}" "${data[@]}" "$@" "http://127.0.0.1:${port[$r]}$p")
    body=$(cat "$tmp/body")
}
hdr() { grep -i "^$1:" "$tmp/headers" | tail -n 1 | cut -d' ' -f2- | tr -d '\r'; }
bj() { json_get "$1" <<<"$body" 2>/dev/null; }

# nodes_state: "h1=up h2=up h3=up" from /v1/nodes through replica A.
nodes_state() {
    call A GET /v1/nodes
    bj '" ".join("%s=%s" % (x["name"], x["state"]) for x in sorted(o["data"], key=lambda x: x["name"]))'
}
# wait_nodes WANT SECONDS: until nodes_state is WANT; prints the seconds it took.
wait_nodes() {
    local t0=$SECONDS
    while [ $((SECONDS - t0)) -le "$2" ]; do
        [ "$(nodes_state)" = "$1" ] && { echo $((SECONDS - t0)); return 0; }
        sleep 0.5
    done
    return 1
}
# create R [JSON]: a small sandbox through replica R; sets $sid and $snode.
small='{"vcpu":1,"memoryMiB":512,"timeoutSeconds":1200}'
create() {
    call "$1" POST /v1/sandboxes "${2:-$small}"
    sid=$(bj 'o["id"]') snode=$(bj 'o["node"]')
}

# --- the cluster ---
mkdir -p "$tmp/tokens"
tok_a=$(RUNTIME_DATA_DIR=$tmp/tokens runtime token create tenant-a --rate 1000 --json | json_get 'o["token"]')
tok_b=$(RUNTIME_DATA_DIR=$tmp/tokens runtime token create tenant-b --rate 1000 --json | json_get 'o["token"]')
check "two tokens made" test -n "$tok_a" -a -n "$tok_b"
if [ ! -d "$images" ]; then
    # The default image is made by the prepare suite; alone, make it here
    # once (from the cached base) rather than on every host.
    diag "no default image in $images yet: making it"
    RUNTIME_DATA_DIR=${RUNTIME_TEST_DATA:-$tmp/data} runtime sandbox run -- true >/dev/null
fi
for h in $hosts rA rB; do seed "$h"; done

# The cluster key every node and replica shares (cluster/seal.h).
(umask 077 && head -c 32 /dev/urandom >"$tmp/cluster.key")
export RUNTIME_NODE_CLUSTER_KEY=$tmp/cluster.key RUNTIME_SERVE_CLUSTER_KEY=$tmp/cluster.key
urls=$("$RUNTIME_TEST_NATS_CLUSTER" start "$nats" 3)
check "three nats-servers with JetStream: $urls" test -n "$urls"
for h in $hosts; do
    check "node $h answers its pings" start_node "$h"
done
read -r "port[A]" "port[B]" <<<"$(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s:
    x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')"
check "replica A answers on 127.0.0.1:${port[A]}" start_replica A
check "replica B answers on 127.0.0.1:${port[B]}" start_replica B

took=$(wait_nodes "h1=up h2=up h3=up" 15)
check "GET /v1/nodes: three nodes up (${took:-no} s)" test -n "$took"
call A GET /v1/nodes
is "each with its capacity report" "$(bj '",".join(str(x["report"]["vcpus"]["total"] > 0) for x in o["data"])')" \
    "True,True,True"
ls_json=$(RUNTIME_API_URL="http://127.0.0.1:${port[B]}" RUNTIME_API_KEY=$tok_a runtime node ls --json 2>"$tmp/err")
is "runtime node ls --json (through B): three up" "$(json_get '" ".join(sorted("%s=%s" % (x["name"], x["state"])
    for x in (o["data"] if isinstance(o, dict) else o)))' <<<"$ls_json" 2>&1)" "h1=up h2=up h3=up"
ls_text=$(RUNTIME_API_URL="http://127.0.0.1:${port[A]}" RUNTIME_API_KEY=$tok_a runtime node ls 2>"$tmp/err")
is "runtime node ls: a line per node, each up" "$(grep -cE '^h[123][[:space:]].*\bup\b' <<<"$ls_text")" "3"
[ "$(grep -cE '^h[123][[:space:]].*\bup\b' <<<"$ls_text")" = 3 ] || diag "$ls_text" "$(cat "$tmp/err")"

# --- six sandboxes through both replicas ---
declare -A node_of=()
ids=()
for i in 1 2 3 4 5 6; do
    r=A; [ $((i % 2)) = 0 ] && r=B
    create "$r"
    if [ "$status" = 201 ] && [ "$(bj 'o["state"]')" = running ] && [ -n "$sid" ]; then
        ids+=("$sid")
        node_of[$sid]=$snode
    else
        diag "create $i through $r: $status $body"
    fi
done
is "six sandboxes created through A and B, each running" "${#ids[@]}" "6"
if [ "${#ids[@]}" -lt 3 ]; then
    fail "too few sandboxes to go on"
    done_testing
fi

spread=$(for s in "${ids[@]}"; do echo "${node_of[$s]}"; done | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')
is "spread over the three nodes ($spread)" "$(for s in "${ids[@]}"; do echo "${node_of[$s]}"; done | sort -u | xargs)" \
    "h1 h2 h3"
s=${ids[0]}
call B GET "/v1/sandboxes/$s"
is "a sandbox made through A, read through B: its node" "$(bj 'o["node"]')" "${node_of[$s]}"
is "the answer names the node (Runtime-Node)" "$(hdr Runtime-Node)" "${node_of[$s]}"
is "the node's own runtime holds it" \
    "$(on "${node_of[$s]}" runtime sandbox ls --json | json_get 'len([x for x in o if x["id"] == "'"$s"'"])')" "1"

for r in A B; do
    call $r POST "/v1/sandboxes/$s:exec" '{"argv":["python3","-c","print(6*7)"]}'
    is "exec through $r: $status, 42" "$status $(bj 'o["stdout"].strip()')" "200 42"
done
s2=${ids[1]}
call A PUT "/v1/sandboxes/$s2/files/content?path=/workspace/c.txt" "" --data-binary 'from A' \
    -H 'Content-Type: application/octet-stream'
is "a file written through A: $status" "$status" "200"
call B GET "/v1/sandboxes/$s2/files/content?path=/workspace/c.txt"
is "read back through B" "$status $body" "200 from A"
call B PUT "/v1/sandboxes/$s2/network" '{"internet":false}'
is "network set through B: $status" "$status" "200"
call A GET "/v1/sandboxes/$s2/network"
is "read through A: internet off, version 2" "$(bj 'o["internet"], o["version"]')" "False 2"
call B POST "/v1/sandboxes/$s2:exec" '{"argv":["python3","-c","import socket; socket.create_connection((\"1.1.1.1\", 80), timeout=3)"]}'
check "and the guest has no internet (exit $(bj 'o["exitCode"]'))" test "$(bj 'o["exitCode"]')" != 0

# --- bad input ---
call A GET /v1/sandboxes/sb-nosuchsandbox0000
is "GET of an unknown id: 404" "$status $(bj 'o["error"]["code"]')" "404 not_found"
TOKEN=$tok_b call B GET "/v1/sandboxes/$s"
is "another tenant's sandbox: 404" "$status $(bj 'o["error"]["code"]')" "404 not_found"
TOKEN=$tok_b call A POST "/v1/sandboxes/$s:exec" '{"argv":["true"]}'
is "nor can it exec there: 404" "$status" "404"
TOKEN='' call A GET /v1/nodes
is "/v1/nodes without a token: 401" "$status $(bj 'o["error"]["code"]')" "401 unauthorized"

# --- a node lost ---
# The victim: h3; one sandbox kept on each other node (fewer VMs on this
# small machine for what follows).
victim=h3
[ -n "$(for s in "${ids[@]}"; do [ "${node_of[$s]}" = h3 ] && echo y; done)" ] || victim=${node_of[${ids[0]}]}
declare -A kept=()
live=()
lost=()
for s in "${ids[@]}"; do
    nd=${node_of[$s]}
    if [ "$nd" = "$victim" ]; then
        lost+=("$s")
    elif [ -z "${kept[$nd]:-}" ]; then
        kept[$nd]=$s
        live+=("$s")
    else
        call B DELETE "/v1/sandboxes/$s"
        [ "$status" = 200 ] || diag "DELETE $s: $status $body"
    fi
done
is "the sandboxes beyond one a surviving node deleted through B" "${#live[@]}" "2"
[ "${#live[@]}" -gt 0 ] || { fail "no sandbox on a surviving node to go on with"; done_testing; }
t0=$(date +%s.%N)
stop "$victim" KILL
# Meanwhile, a sandbox made on the victim host behind the cluster's back.
direct=$(on "$victim" runtime sandbox create --vcpu 1 --memory 512 2>"$tmp/err")
check "a sandbox made directly on $victim while its node is down" test -n "$direct"
[ -n "$direct" ] || diag "$(cat "$tmp/err")"
gone=
for _ in $(seq 60); do
    call A GET "/v1/sandboxes/${lost[0]}"
    if [ "$(bj 'o["state"], o.get("stopReason")')" = "stopped host_lost" ]; then
        gone=$(python3 -c "import time; print('%.1f' % (time.time() - $t0))")
        break
    fi
    sleep 0.5
done
check "kill -9 of node $victim: its sandbox GETs stopped, host_lost, within 20 s (${gone:-not in 30} s)" \
    python3 -c "import sys; sys.exit(not ('$gone' and float('$gone') <= 20))"
for s in "${lost[@]}"; do
    call B GET "/v1/sandboxes/$s"
    is "$s through B: stopped, host_lost" "$(bj 'o["state"], o.get("stopReason")')" "stopped host_lost"
done
nodes_state >/dev/null
is "/v1/nodes: $victim lost, with lostAt" \
    "$(bj '[(x["state"], bool(x.get("lostAt"))) for x in o["data"] if x["name"] == "'"$victim"'"]')" "[('lost', True)]"
create B
is "a create after the loss: $status, not on $victim ($snode)" "$status $([ "$snode" != "$victim" ] && [ -n "$snode" ] && echo elsewhere)" "201 elsewhere"
[ "$status" = 201 ] || diag "$body"
[ "$status" = 201 ] && live+=("$sid") && node_of[$sid]=$snode

# --- a NATS server lost ---
# The server the surviving nodes are connected to (most of them), so that
# they must reconnect; the create right after goes through a replica
# connected elsewhere when there is one (its request then reaches the
# cluster at once, before they are back).
for nd in "${!kept[@]}"; do server_of "${pid[$nd]}"; done | sort | uniq -c | sort -rn >"$tmp/servers"
k=$(awk 'NR == 1 { print $2 }' "$tmp/servers")
[ -n "$k" ] || { diag "no node's NATS server seen: server 1 it is"; k=1; }
r=A
server_of "${pid[rA]}" | grep -qx "$k" && ! server_of "${pid[rB]}" | grep -qx "$k" && r=B
kill -9 "$(cat "$nats/pid.$k")"
create $r
is "NATS server $k killed (the nodes' own): a create through $r at once goes on: $status" \
    "$status $(bj 'o["state"]')" "201 running"
[ "$status" = 201 ] || diag "$body"
[ "$status" = 201 ] && live+=("$sid") && node_of[$sid]=$snode
for r in A B; do
    call $r POST "/v1/sandboxes/${live[0]}:exec" '{"argv":["echo","still"]}'
    is "exec through $r goes on" "$status $(bj 'o["stdout"].strip()')" "200 still"
done
call B GET "/v1/sandboxes?limit=100"
is "the list through B has every live sandbox" \
    "$(bj '" ".join(sorted(x["id"] for x in o["data"] if x["state"] == "running"))')" \
    "$(printf '%s\n' "${live[@]}" | sort | xargs)"

# --- a replica lost mid-stream ---
s=${live[0]}
call A POST "/v1/sandboxes/$s/processes" \
    '{"argv":["python3","-c","import time\nfor i in range(1, 61):\n    print(\"line %03d\" % i, flush=True)\n    time.sleep(0.2)"]}'
proc=$(bj 'o["id"]')
is "a process spawned through A: $status" "$status" "201"
out_url=/v1/sandboxes/$s/processes/$proc/output
curl -sSN --max-time 60 -H "Authorization: Bearer $tok_a" \
    "http://127.0.0.1:${port[A]}$out_url?cursor=0&follow=true" >"$tmp/s1" 2>/dev/null &
curl_pid=$!
for _ in $(seq 150); do
    [ "$(grep -c '"stdout"' "$tmp/s1")" -ge 10 ] && break
    sleep 0.1
done
check "its output streams through A while it runs ($(grep -c '"stdout"' "$tmp/s1") events)" \
    test "$(grep -c '"stdout"' "$tmp/s1")" -ge 10
stop rA KILL
wait "$curl_pid" 2>/dev/null
# The client's cursor: the end of the last whole event it read.
cursor=$(python3 - "$tmp/s1" <<'PY'
import base64, json, sys
end = 0
for line in open(sys.argv[1], "rb").read().split(b"\n")[:-1]:
    e = json.loads(line)
    if e.get("type") in ("stdout", "stderr"):
        n = len(base64.b64decode(e["dataBase64"])) if "dataBase64" in e else len(e["data"].encode())
        end = e["offset"] + n
print(end)
PY
)
curl -sSN --max-time 60 -H "Authorization: Bearer $tok_a" \
    "http://127.0.0.1:${port[B]}$out_url?cursor=$cursor&follow=true" >"$tmp/s2" 2>"$tmp/err"
joined=$(python3 - "$tmp/s1" "$tmp/s2" <<'PY'
import json, sys
out, want = [], 0
for i, f in enumerate(sys.argv[1:]):
    lines = open(f, "rb").read().split(b"\n")
    for line in lines[:-1] if i == 0 else lines:
        if not line.strip():
            continue
        e = json.loads(line)
        if e.get("type") == "stdout":
            if e["offset"] != want:
                print("offset %d, want %d" % (e["offset"], want))
            want = e["offset"] + len(e["data"].encode())
            out.append(e["data"])
        elif e.get("type") == "exit":
            out.append("exit=%s" % e["exitCode"])
sys.stdout.write("".join(out))
PY
)
is "replica A killed at byte $cursor, resumed through B: every line once, then the exit" "$joined" \
    "$(for i in $(seq 60); do printf 'line %03d\n' "$i"; done; echo exit=0)"
check "replica A back on its port" start_replica A

# --- the lost node back ---
start_node "$victim"
took=$(wait_nodes "h1=up h2=up h3=up" 20)
check "$victim restarted: up again (${took:-not in 20} s)" test -n "$took"
# ls_states NAME IDS…: each id's state in NAME's own runtime (gone: absent).
ls_states() {
    local h=$1; shift
    on "$h" runtime sandbox ls --all --json |
        json_get '" ".join({x["id"]: x["state"] for x in o}.get(i, "absent") for i in "'"$*"'".split())'
}
want=$(for _ in "${lost[@]}" "$direct"; do printf 'stopped '; done | xargs)
for _ in $(seq 60); do
    [ "$(ls_states "$victim" "${lost[@]}" "$direct")" = "$want" ] && break
    sleep 0.5
done
is "its host_lost sandboxes stopped on it" "$(ls_states "$victim" "${lost[@]}")" \
    "$(for _ in "${lost[@]}"; do printf 'stopped '; done | xargs)"
is "and the one made behind the cluster's back" "$(ls_states "$victim" "$direct")" "stopped"
is "no QEMU left on $victim" "$(RUNTIME_STATE_DIR=$tmp/$victim/state our_qemus)" ""
call A GET "/v1/sandboxes/${lost[0]}"
is "a host_lost sandbox stays ended" "$(bj 'o["state"], o.get("stopReason")')" "stopped host_lost"
call B GET "/v1/sandboxes/$direct"
is "the direct one is no tenant's: 404" "$status" "404"

# --- an idempotent create retried across replicas ---
key=cluster-$$-$RANDOM
call A POST /v1/sandboxes "$small" -H "Idempotency-Key: $key"
first=$(bj 'o["id"]') fstatus=$status
call B POST /v1/sandboxes "$small" -H "Idempotency-Key: $key"
is "Idempotency-Key: through A ($fstatus), again through B: the same sandbox" "$(bj 'o["id"]')" "$first"
is "B's answer replayed" "$(hdr Idempotency-Replayed) $(bj 'o.get("replayed")')" "true True"
[ -n "$first" ] && live+=("$first")
call A GET "/v1/sandboxes?limit=100"
is "one sandbox made: the live ones are those made" \
    "$(bj '" ".join(sorted(x["id"] for x in o["data"] if x["state"] == "running"))')" \
    "$(printf '%s\n' "${live[@]}" | sort | xargs)"
running=0
for h in $hosts; do
    running=$((running + $(on "$h" runtime sandbox ls --state running --json | json_get 'len(o)')))
done
is "and the hosts run as many" "$running" "${#live[@]}"

# --- the end: deleted through the API, nothing left on any host ---
for s in "${live[@]}" "${lost[@]}"; do
    call B DELETE "/v1/sandboxes/$s"
    [ "$status" = 200 ] || fail "DELETE $s through B: $status $body"
done
on "$victim" runtime sandbox rm "$direct" >/dev/null
stop rA; is "replica A ends with 0 on SIGTERM" "$rc" "0"
stop rB; is "replica B too" "$rc" "0"
for h in $hosts; do stop "$h"; is "node $h ends with 0 on SIGTERM" "$rc" "0"; done
for h in $hosts; do
    RUNTIME_STATE_DIR=$tmp/$h/state RUNTIME_DATA_DIR=$tmp/$h/data check_no_leaks "$h"
done
done_testing
