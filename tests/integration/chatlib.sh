# chatlib.sh - sourced by chat.sh and chat-api.sh after libtest.sh: a fake
# DeepSeek API (tests/fixtures/fake_deepseek.py) to serve a scenario, `runtime
# chat deepseek` against it, and checks of what both saw.
FIXTURES=$(cd "$(dirname "$0")/../fixtures" && pwd)
KEY=sk-test-secret
unset DEEPSEEK_API_KEY

srv=
nsrv=0
stop_server() {
    if [ -n "$srv" ]; then
        kill "$srv" 2>/dev/null
        wait "$srv" 2>/dev/null
        srv=
    fi
}

# serve SCENARIO: a fresh fake API playing SCENARIO (the name of a file in
# tests/fixtures/chat/ without .json, or inline JSON); exports BASE, sets
# LOG (its request log) and SRVERR (its own log).
serve() {
    local port= scenario
    stop_server
    nsrv=$((nsrv + 1))
    LOG=$tmp/api.$nsrv.jsonl
    SRVERR=$tmp/api.$nsrv.err
    : >"$LOG"
    case $1 in
    \[*) scenario=$tmp/scenario.$nsrv.json; printf '%s\n' "$1" >"$scenario" ;;
    *) scenario=$FIXTURES/chat/$1.json ;;
    esac
    python3 "$FIXTURES/fake_deepseek.py" "$scenario" "$LOG" \
        </dev/null >"$tmp/api.$nsrv.out" 2>"$SRVERR" &
    srv=$!
    for _ in $(seq 100); do
        port=$(sed -n 's/^port \([0-9][0-9]*\)$/\1/p' "$tmp/api.$nsrv.out" 2>/dev/null)
        [ -n "$port" ] && break
        kill -0 "$srv" 2>/dev/null || break
        sleep 0.05
    done
    if [ -z "$port" ]; then
        echo "Bail out! fake_deepseek.py did not start: $(cat "$SRVERR")"
        exit 1
    fi
    export BASE=http://127.0.0.1:$port
}

# chat ARGS…: runtime chat deepseek with the key, against the fake API.
# stdout in $tmp/out, stderr in $tmp/err, the exit code in $rc.
chat() {
    DEEPSEEK_API_KEY=$KEY timeout 600 runtime chat deepseek --base-url "$BASE" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    cat "$tmp/out" "$tmp/err" >>"$tmp/seen"
}

why() { diag "exit $rc" "stdout: $(head -c 500 "$tmp/out")" "stderr: $(tail -c 1500 "$tmp/err")" "api: $(cat "$SRVERR" 2>/dev/null)"; }

# chat_ok DESC ANSWER: the last chat exited 0 with ANSWER on stdout.
chat_ok() {
    if [ "$rc" = 0 ] && [ "$(cat "$tmp/out")" = "$2" ]; then ok "$1"; else fail "$1"; why; fi
}

# chat_fails DESC REGEX: the last chat exited 1, nothing on stdout, one
# "Error [code]: …" line on stderr, and REGEX (grep -iE) there.
chat_fails() {
    if [ "$rc" = 1 ] && [ ! -s "$tmp/out" ] && [ "$(grep -cE '^Error \[[a-z_]+\]: ' "$tmp/err")" = 1 ] &&
        grep -qiE -- "$2" "$tmp/err"; then
        ok "$1"
    else
        fail "$1"
        why
    fi
}

# qj EXPR: EXPR over the requests the fake API got, as JSON. L: the log
# entries ({"path", "headers", "body", "time"}); B(i): the body of request i
# (from 1); M(i): its messages; T(i): the content of its last tool message,
# parsed; P(i): its tool's parameters schema.
qj() {
    python3 - "$LOG" "$1" <<'EOF'
import json, sys
L = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def B(i): return L[i - 1]["body"]
def M(i): return B(i)["messages"]
def T(i): return json.loads([m for m in M(i) if m.get("role") == "tool"][-1]["content"])
def P(i): return B(i)["tools"][0]["function"]["parameters"]
try:
    print(json.dumps(eval(sys.argv[2])))
except Exception as e:
    print("%s: %s" % (type(e).__name__, e))
EOF
}

# Sandboxes ever started with this data dir: every monitor writes the
# ledger as it starts.
sandboxes_made() {
    python3 - "$RUNTIME_DATA_DIR/ledger/ledger.jsonl" <<'EOF'
import json, sys
ids = set()
try:
    for line in open(sys.argv[1]):
        try:
            ids.add(json.loads(line)["id"])
        except (ValueError, KeyError, TypeError):
            pass
except FileNotFoundError:
    pass
print(len(ids))
EOF
}
