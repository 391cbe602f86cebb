#!/bin/bash
# serve.sh - `runtime serve` (docs/API.md) over HTTP: one server on a free
# loopback port, two tenants, a few small shared sandboxes, then every part
# in serve/ sourced in name order (like hostile.sh).  Parts check their
# endpoints with curl (api) and with tests/fixtures/rtapi.py, a client of
# our own written from the API's rules.
#
# What a part may use (besides libtest.sh's ok/fail/check/is/diag/
# expect_error/json_get and $tmp, a private temp dir):
#   $API              the server's base URL, http://127.0.0.1:PORT
#   $TOKEN_A $TOKEN_B tokens of tenants A and B, named tenant-a and tenant-b
#                     (--rate 1000: rate limits do not get in the way)
#   $SB               a running sandbox of tenant A (1 vCPU, 512 MiB);
#                     shared: leave it running, put back what you change
#   sandboxes N       prints N shared running sandboxes of A, one a line
#                     ($SB first), booting the missing ones at once
#   shared_add ID     adds a running sandbox of A (1 vCPU, 512 MiB) to them
#   api [CURLOPT VALUE…] METHOD PATH [JSON|@FILE]
#                     one request with tenant A's token (API_TOKEN=T api …
#                     for another, API_TOKEN='' api … for none); no retries,
#                     no Idempotency-Key unless given (-H 'Idempotency-Key:
#                     k'); @FILE is sent as raw bytes.  Prints the body and
#                     sets $status and $body; also kept in files, so a call
#                     inside $(…) still leaves them: last_status, bj EXPR
#                     (json_get over the last body), hdr NAME (a header of
#                     the last answer)
#   rtapi METHOD PATH [JSON|@FILE]
#                     tests/fixtures/rtapi.py as a command, tenant A's
#                     token; $RTAPI_DIR holds rtapi.py for Python parts
#                     (sys.path.insert(0, os.environ["RTAPI_DIR"]); API,
#                     TOKEN_A and TOKEN_B are exported)
#   serve_start       starts the server on $API's port (returns once it
#                     answers; $serve_pid); serve_stop [SIGNAL] stops it
#                     (TERM by default) and sets $serve_rc to its exit
#                     code; the server is no job of this shell, so a bare
#                     `wait` in a part waits only for the part's own jobs
#   $SERVE_LOG        the server's stderr (one line per request)
#   testnet_up        tests/integration/testnet.sh, downed at the end; the
#                     server must be restarted after it to see
#                     RUNTIME_RESOLVE
# SERVE_PARTS="10 85" runs only the parts whose names start so (while
# writing one).
. "$(dirname "$0")/libtest.sh"
. "$(dirname "$0")/testnet.sh"
here=$(cd "$(dirname "$0")" && pwd)
RTAPI_DIR=$(cd "$here/../fixtures" && pwd)
export RTAPI_DIR
exec </dev/null
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY

# A data dir of its own: tokens, idempotency keys and the ledger start empty
# (the default image from the shared cache, as chat.sh does).
export RUNTIME_DATA_DIR="$tmp/data"
mkdir -p "$RUNTIME_DATA_DIR"
if [ -d "${RUNTIME_TEST_DATA:-}/images" ]; then cp -al "$RUNTIME_TEST_DATA/images" "$RUNTIME_DATA_DIR/"; fi

SERVE_LOG=$tmp/serve.log
serve_pid=
serve_rc=
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export API=http://127.0.0.1:$port

# The server runs outside this shell's jobs (a part's bare `wait` must not
# wait for it): a disowned wrapper keeps its pid and, once it ends, its
# exit code in files.
serve_start() {
    local i
    rm -f "$tmp/serve.pid" "$tmp/serve.rc"
    bash -c 'runtime serve --listen "$1" </dev/null >>"$2/serve.out" 2>>"$3" & echo $! >"$2/serve.pid"
             wait $!; echo $? >"$2/serve.rc"' _ "127.0.0.1:$port" "$tmp" "$SERVE_LOG" </dev/null 2>>"$SERVE_LOG" &
    disown $!
    for i in $(seq 200); do
        [ -s "$tmp/serve.pid" ] && break
        sleep 0.01
    done
    serve_pid=$(cat "$tmp/serve.pid")
    for i in $(seq 200); do
        curl -s --noproxy '*' -o /dev/null --max-time 2 "$API/v1/health" && return 0
        [ -e "$tmp/serve.rc" ] && break
        sleep 0.05
    done
    diag "runtime serve did not answer on $API" "$(tail -5 "$SERVE_LOG")"
    return 1
}
serve_stop() {
    local i
    serve_rc=
    [ -n "$serve_pid" ] || return 0
    kill "-${1:-TERM}" "$serve_pid" 2>/dev/null
    for i in $(seq 600); do
        [ -s "$tmp/serve.rc" ] && break
        sleep 0.05
    done
    serve_rc=$(cat "$tmp/serve.rc" 2>/dev/null)
    serve_pid=
}

api() {
    local opts=() data=() tok=${API_TOKEN-$TOKEN_A}
    while [ "${1#-}" != "$1" ]; do
        opts+=("$1" "$2")
        shift 2
    done
    if [ $# -ge 3 ]; then
        case $3 in
        @*) data=(--data-binary "$3" -H 'Content-Type: application/octet-stream') ;;
        *) data=(--data-binary "$3" -H 'Content-Type: application/json') ;;
        esac
    fi
    [ -n "$tok" ] && opts+=(-H "Authorization: Bearer $tok")
    status=$(curl -sS --noproxy '*' --max-time "${API_TIMEOUT:-150}" -o "$tmp/api.body" -D "$tmp/api.headers" \
        -w '%{http_code}' -X "$1" -H 'X-Runtime-Client: serve.sh' -H 'Accept: application/json' \
        "${data[@]}" "${opts[@]}" "$API$2" 2>"$tmp/api.err")
    echo "$status" >"$tmp/api.status"
    body=$(cat "$tmp/api.body")
    cat "$tmp/api.body"
}
last_status() { cat "$tmp/api.status"; }
bj() { json_get "$1" <"$tmp/api.body"; }
hdr() { tr -d '\r' <"$tmp/api.headers" | sed -n "s/^$1: *//Ip" | tail -1; }
rtapi() { RUNTIME_API_URL=$API RUNTIME_API_KEY=$TOKEN_A python3 "$RTAPI_DIR/rtapi.py" "$@"; }

# The shared sandboxes of A, one id a line in $tmp/shared.
: >"$tmp/shared"
shared_add() { echo "$1" >>"$tmp/shared"; }
sandboxes() {
    local want=$1 have
    have=$(wc -l <"$tmp/shared")
    if [ "$have" -lt "$want" ]; then
        python3 - "$((want - have))" >>"$tmp/shared" 2>>"$tmp/shared.err" <<'EOF'
import concurrent.futures, os, sys
sys.path.insert(0, os.environ["RTAPI_DIR"])
import rtapi
def make(_):
    c = rtapi.Client(os.environ["API"], os.environ["TOKEN_A"])
    return c.call("POST", "/v1/sandboxes", {"vcpu": 1, "memoryMiB": 512, "timeoutSeconds": 1800,
                  "labels": {"suite": "serve"}}, headers={"Prefer": "wait=120"})
with concurrent.futures.ThreadPoolExecutor(8) as pool:
    for sb in pool.map(make, range(int(sys.argv[1]))):
        if sb.get("state") != "running":
            sys.exit("not running: %s" % sb)
        print(sb["id"], flush=True)
EOF
    fi
    head -n "$want" "$tmp/shared"
}

finish() {
    local id
    if [ -n "$serve_pid" ]; then
        for id in $(cat "$tmp/shared" 2>/dev/null); do
            API_TIMEOUT=60 api DELETE "/v1/sandboxes/$id" >/dev/null
        done
        serve_stop TERM
    fi
    # Whatever a failed part left: removed by the CLI, which sees every tenant.
    for id in $(timeout 60 runtime sandbox ls --all --json 2>/dev/null | json_get '" ".join(s["id"] for s in o)' 2>/dev/null); do
        timeout 60 runtime sandbox rm "$id" >/dev/null 2>&1
    done
    testnet_down
    cleanup
}
trap finish EXIT

if ! runtime serve --help >/dev/null 2>&1; then
    echo "Bail out! this runtime has no serve command"
    exit 1
fi
TOKEN_A=$(runtime token create tenant-a --rate 1000 2>"$tmp/err" | tail -1)
TOKEN_B=$(runtime token create tenant-b --rate 1000 2>>"$tmp/err" | tail -1)
export TOKEN_A TOKEN_B
if [ -z "$TOKEN_A" ] || [ -z "$TOKEN_B" ]; then
    echo "Bail out! runtime token create failed: $(cat "$tmp/err")"
    exit 1
fi
if ! serve_start; then
    echo "Bail out! runtime serve did not start: $(tail -3 "$SERVE_LOG")"
    exit 1
fi
SB=$(sandboxes 1)
if [ -z "$SB" ]; then
    echo "Bail out! no shared sandbox: $(tail -3 "$tmp/shared.err")"
    exit 1
fi
ok "a server on $API, tokens A and B, a shared sandbox of A"

for part in "$here"/serve/*.sh; do
    [ -e "$part" ] || continue
    if [ -n "${SERVE_PARTS:-}" ] && ! grep -qw "$(basename "$part" | cut -d- -f1)" <<<"$SERVE_PARTS"; then
        continue
    fi
    echo "# part: $(basename "$part" .sh)"
    . "$part"
done

finish_ok=1
for id in $(cat "$tmp/shared"); do
    api DELETE "/v1/sandboxes/$id" >/dev/null
    [ "$status" = 200 ] || { finish_ok=; diag "DELETE $id: $status $body"; }
done
: >"$tmp/shared"
check "the shared sandboxes deleted through the API" test -n "$finish_ok"
serve_stop TERM
is "the server ends on SIGTERM with exit 0" "$serve_rc" 0
testnet_down
# DELETE leaves a stopped sandbox's record (its answer is the same every
# time); the CLI removes them, as `runtime sandbox rm` does after a stop.
for id in $(runtime sandbox ls --all --json 2>/dev/null | json_get '" ".join(s["id"] for s in o if s["state"] == "stopped")'); do
    runtime sandbox rm "$id" >/dev/null 2>&1
done
is "nothing but stopped records was left by the parts" "$(runtime sandbox ls --all --json | json_get '[s["id"] for s in o]')" "[]"
check_no_leaks "serve"
done_testing
