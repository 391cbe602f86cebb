#!/bin/bash
# chat.sh - `runtime chat deepseek` against a scripted fake of the API
# (tests/fixtures/fake_deepseek.py): the key, the requests it sends (tools,
# messages, reasoning kept), tool calls run in sandboxes (packages from the
# test PyPI, internet off for the code, bad names, install failures, the
# 60 s limit), HTTP errors and retries, --max-turns, --strict, --json,
# --stream, and no sandbox left behind.
. "$(dirname "$0")/libtest.sh"
. "$(dirname "$0")/testnet.sh"

FIXTURES=$(cd "$(dirname "$0")/../fixtures" && pwd)
KEY=sk-test-secret
unset DEEPSEEK_API_KEY

# A private image store and ledger (the default image from the shared cache).
export RUNTIME_DATA_DIR="$tmp/data"
mkdir -p "$RUNTIME_DATA_DIR"
if [ -d "${RUNTIME_TEST_DATA:-}/images" ]; then cp -al "$RUNTIME_TEST_DATA/images" "$RUNTIME_DATA_DIR/"; fi

srv=
nsrv=0
stop_server() {
    if [ -n "$srv" ]; then
        kill "$srv" 2>/dev/null
        wait "$srv" 2>/dev/null
        srv=
    fi
}
trap 'stop_server; testnet_down; cleanup' EXIT

# serve SCENARIO_JSON: a fresh fake API playing it; exports BASE, sets LOG
# (its request log) and SRVERR (its own log).
serve() {
    local port=
    stop_server
    nsrv=$((nsrv + 1))
    LOG=$tmp/api.$nsrv.jsonl
    SRVERR=$tmp/api.$nsrv.err
    : >"$LOG"
    printf '%s\n' "$1" >"$tmp/scenario.$nsrv.json"
    python3 "$FIXTURES/fake_deepseek.py" "$tmp/scenario.$nsrv.json" "$LOG" \
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

if ! testnet_up; then
    echo "Bail out! cannot make the test network"
    exit 1
fi

# -- no key: refused before anything is asked or started
serve '[{"answer": "unused"}]'
env -u DEEPSEEK_API_KEY runtime chat deepseek --base-url "$BASE" "What is 6*7?" >"$tmp/out" 2>"$tmp/err"; rc=$?
chat_fails "no DEEPSEEK_API_KEY: exit 1 and one error line" "DEEPSEEK_API_KEY"
check "… invalid_request: DEEPSEEK_API_KEY is not set" grep -q '^Error \[invalid_request\]: DEEPSEEK_API_KEY is not set' "$tmp/err"
is "… no request made" "$(qj 'len(L)')" "0"
is "… no sandbox made" "$(runtime sandbox ls --all --json)" "[]"
is "… none ever started" "$(sandboxes_made)" "0"

# -- --strict (and --model): the beta endpoint, the function strict; no tool call
serve '[{"answer": "strict ok"}]'
chat --strict --model deepseek-test "Say ok."
chat_ok "--strict: the answer" "strict ok"
is "--strict: POST /beta/chat/completions, the model given, strict: true" \
    "$(qj '[L[0]["method"], L[0]["path"], B(1)["model"], B(1)["tools"][0]["function"].get("strict")]')" \
    '["POST", "/beta/chat/completions", "deepseek-test", true]'

# -- a bad package name: an error result, no sandbox
before=$(sandboxes_made)
serve '[{"tool_call": {"code": "print(1)", "packages": ["rtdemo; rm -rf /"]}},
        {"answer": "That package name was refused."}]'
chat "Install a package."
chat_ok "a bad package name: the chat goes on to the answer" "That package name was refused."
is "… the model is told: a tool message with an error" \
    "$(qj '[[m["role"] for m in M(2)], M(2)[2].get("tool_call_id"), "error" in T(2), "exit_code" in T(2)]')" \
    '[["user", "assistant", "tool"], "call_1", true, false]'
is "… and no sandbox was made" "$(sandboxes_made)" "$before"

# -- --max-turns: three tool calls (refused names, no VM) but two turns allowed
bad='{"tool_call": {"code": "print(1)", "packages": ["bad name!"]}}'
serve "[$bad, $bad, $bad, {\"answer\": \"too late\"}]"
chat --max-turns 2 "Loop."
chat_fails "--max-turns 2 without a final answer: exit 1 with an error" "."
is "… after exactly 2 requests" "$(qj 'len(L)')" "2"

# -- HTTP errors
serve '[{"status": 401}]'
chat "Hello."
chat_fails "401: exit 1, the error is about the key" "key"
serve '[{"status": 400, "body": {"error": {"message": "bad model", "type": "invalid_request_error"}}}]'
chat "Hello."
chat_fails "400: exit 1 with the API's message" "bad model"
is "… not retried" "$(qj 'len(L)')" "1"
serve '[{"status": 429, "headers": {"Retry-After": "1"}}, {"answer": "after 429"}]'
chat "Hello."
chat_ok "429 with Retry-After: 1, then an answer: retried, succeeds" "after 429"
is "… the retry waited Retry-After" "$(qj '[len(L), L[1]["time"] - L[0]["time"] >= 0.95]')" "[2, true]"
serve '[{"status": 500}, {"status": 500}, {"answer": "after 500s"}]'
chat "Hello."
chat_ok "500, 500, then an answer: retried, succeeds" "after 500s"
is "… in three requests" "$(qj 'len(L)')" "3"
serve '[]'
chat "Hello."
chat_fails "500 for ever: gives up with an error" "."
check "… after a bounded number of retries" test "$(qj 'len(L)')" -le 10
serve '[{"hang": 2, "then": {"answer": "slow but fine"}}]'
chat "Hello."
chat_ok "an answer taking 2 s is waited for" "slow but fine"
stop_server
closed=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
DEEPSEEK_API_KEY=$KEY timeout 300 runtime chat deepseek --base-url "http://127.0.0.1:$closed" "Hello." >"$tmp/out" 2>"$tmp/err"; rc=$?
cat "$tmp/out" "$tmp/err" >>"$tmp/seen"
chat_fails "connection refused: exit 1 with a clear error" "connect|refused|reach"
is "no sandbox was made by any of these" "$(sandboxes_made)" "$before"

# -- the seed flow: a tool call run in a sandbox, then the answer
before=$(sandboxes_made)
serve '[{"tool_call": {"code": "print(6*7)", "packages": []}, "reasoning": "I should run 6*7."},
        {"answer": "The answer is 42.", "reasoning": "It printed 42."}]'
chat "What is 6*7? Use Python."
chat_ok "the seed flow: stdout is the answer" "The answer is 42."
is "… two requests to /chat/completions" "$(qj '[len(L), L[0]["path"], L[1]["path"]]')" \
    '[2, "/chat/completions", "/chat/completions"]'
is "… with Authorization: Bearer KEY" "$(qj 'L[0]["headers"].get("authorization")')" '"Bearer sk-test-secret"'
is "… the first has the user's prompt only" "$(qj 'M(1)')" '[{"role": "user", "content": "What is 6*7? Use Python."}]'
is "… one tool, run_python, not strict, not streamed" \
    "$(qj '[len(B(1)["tools"]), B(1)["tools"][0]["type"], B(1)["tools"][0]["function"]["name"], bool(B(1)["tools"][0]["function"].get("strict")), bool(B(1).get("stream"))]')" \
    '[1, "function", "run_python", false, false]'
is "… its parameters: code (string) and packages (string array), both required, nothing else" \
    "$(qj '[P(1)["type"], sorted(P(1)["properties"]), P(1)["properties"]["code"]["type"], P(1)["properties"]["packages"]["type"], P(1)["properties"]["packages"]["items"]["type"], sorted(P(1)["required"]), P(1)["additionalProperties"]]')" \
    '["object", ["code", "packages"], "string", "array", "string", ["code", "packages"], false]'
is "… the second: user, the assistant's message, the tool result" "$(qj '[m["role"] for m in M(2)]')" \
    '["user", "assistant", "tool"]'
is "… the assistant's message whole: reasoning_content, the call as made" \
    "$(qj '[M(2)[1].get("reasoning_content"), M(2)[1]["tool_calls"][0]["id"], M(2)[1]["tool_calls"][0]["function"]["name"], json.loads(M(2)[1]["tool_calls"][0]["function"]["arguments"])]')" \
    '["I should run 6*7.", "call_1", "run_python", {"code": "print(6*7)", "packages": []}]'
is "… the tool result: exit 0, stdout 42, not timed out" \
    "$(qj '[M(2)[2]["tool_call_id"], T(2).get("exit_code"), T(2).get("stdout"), T(2).get("timed_out")]')" \
    '["call_1", 0, "42\n", false]'
check "… stderr has the usage (200 prompt, 40 completion tokens)" grep -qE '200.*40|40.*200' "$tmp/err"
check "… the key is not printed" sh -c "! grep -qF -- '$KEY' '$tmp/out' '$tmp/err'"
is "… one sandbox for the one call" "$(($(sandboxes_made) - before))" "1"
is "… and none is left" "$(runtime sandbox ls --all --json)" "[]"

# -- --stream: the same flow over server-sent events
before=$(sandboxes_made)
serve '[{"tool_call": {"code": "print(6*7)", "packages": []}, "reasoning": "Run it."},
        {"answer": "Streamed: the answer is 42.", "reasoning": "Got 42."}]'
chat --stream "What is 6*7?"
chat_ok "--stream: stdout is the answer" "Streamed: the answer is 42."
is "… both requests have stream: true" "$(qj '[B(1).get("stream"), B(2).get("stream")]')" '[true, true]'
is "… the streamed call put back together" \
    "$(qj '[M(2)[1].get("reasoning_content"), M(2)[1]["tool_calls"][0]["id"], M(2)[1]["tool_calls"][0]["function"]["name"], json.loads(M(2)[1]["tool_calls"][0]["function"]["arguments"]), M(2)[2].get("tool_call_id")]')" \
    '["Run it.", "call_1", "run_python", {"code": "print(6*7)", "packages": []}, "call_1"]'
is "… and run: stdout 42" "$(qj '[T(2).get("exit_code"), T(2).get("stdout")]')" '[0, "42\n"]'
is "… in one sandbox" "$(($(sandboxes_made) - before))" "1"

# -- --stream with two calls in one message: put back together by index
before=$(sandboxes_made)
serve '[{"tool_calls": [{"code": "print(1+1)", "packages": []}, {"code": "print(2+2)", "packages": []}]},
        {"answer": "Two and four."}]'
chat --stream "Add, twice."
chat_ok "--stream, two calls in one message: the answer" "Two and four."
is "… both calls put back together, each with its own id and arguments" \
    "$(qj '[[c["id"], json.loads(c["function"]["arguments"])["code"]] for c in M(2)[1]["tool_calls"]]')" \
    '[["call_1", "print(1+1)"], ["call_2", "print(2+2)"]]'
is "… each answered by its own tool message" \
    "$(qj '[[m["tool_call_id"], json.loads(m["content"])["stdout"]] for m in M(2) if m["role"] == "tool"]')" \
    '[["call_1", "2\n"], ["call_2", "4\n"]]'
is "… in a sandbox each" "$(($(sandboxes_made) - before))" "2"

# -- --json, with the one slow case: code past the 60 s limit
serve '[{"tool_call": {"code": "import time; time.sleep(120)", "packages": []}},
        {"answer": "It timed out.", "usage": {"prompt_tokens": 150, "completion_tokens": 30}}]'
start=$SECONDS
chat --json "Sleep for two minutes."
took=$((SECONDS - start))
is "--json: exit 0" "$rc" "0"
is "… one JSON object with the answer" "$(json_get 'o["answer"]' <"$tmp/out")" "It timed out."
is "… the messages: user, assistant, tool, assistant" "$(json_get '[m["role"] for m in o["messages"]]' <"$tmp/out")" \
    "['user', 'assistant', 'tool', 'assistant']"
is "… usage summed over the turns" "$(json_get '[o["usage"]["prompt_tokens"], o["usage"]["completion_tokens"]]' <"$tmp/out")" \
    "[250, 50]"
is "… and a cost object" "$(json_get 'type(o["cost"]).__name__' <"$tmp/out")" "dict"
is "the timeout: the tool result says timed_out" "$(qj 'T(2).get("timed_out")')" "true"
is "… and so does the transcript" "$(json_get 'json.loads(o["messages"][2]["content"])["timed_out"]' <"$tmp/out")" "True"
check "… cut at the limit, not after the 120 s sleep (took ${took} s)" test "$took" -lt 110
is "… no sandbox left" "$(runtime sandbox ls --all --json)" "[]"

# -- packages from the test PyPI, then the internet off for the code
runtime image build --file "$TESTNET_CA:/etc/rt-test-ca.pem" --env PIP_CERT=/etc/rt-test-ca.pem \
    --name chatimg >/dev/null 2>"$tmp/build.log"; rc=$?
is "an image with the test CA builds" "$rc" "0"
[ "$rc" = 0 ] || diag "$(tail -5 "$tmp/build.log")"
code='import os, ssl, sys, urllib.request\nimport rtdemo\nprint(rtdemo.answer())\ntry:\n    urllib.request.urlopen(\"https://pypi.org/simple/\", timeout=10, context=ssl.create_default_context(cafile=\"/etc/rt-test-ca.pem\"))\n    print(\"reached\")\nexcept Exception as e:\n    print(\"blocked\")\n    print(repr(e), file=sys.stderr)\nprint(\"leaked\" if any(\"sk-test\" in v for v in os.environ.values()) else \"clean\")'
before=$(sandboxes_made)
serve '[{"tool_call": {"code": "'"$code"'", "packages": ["rtdemo"]}},
        {"tool_call": {"code": "print(1)", "packages": ["nosuchpkg"]}},
        {"answer": "rtdemo says 42."}]'
chat --image chatimg "Install rtdemo and call answer()."
chat_ok "packages: the chat ends with the answer" "rtdemo says 42."
is "… rtdemo installed from the index and run; PyPI blocked for the code; no key in its env" \
    "$(qj '[T(2).get("exit_code"), T(2).get("stdout")]')" '[0, "42\nblocked\nclean\n"]'
[ "$(qj 'T(2).get("exit_code")')" = 0 ] || diag "tool result: $(qj 'T(2)')"
is "… a package not on the index: an install-stage result" \
    "$(qj '[T(3).get("stage"), "nosuchpkg" in (T(3).get("stderr") or "")]')" '["install", true]'
is "… one sandbox per call" "$(($(sandboxes_made) - before))" "2"
is "… and none left" "$(runtime sandbox ls --all --json)" "[]"

stop_server
check "the key was never printed, by any run" sh -c "! grep -qF -- '$KEY' '$tmp/seen'"
check_no_leaks "chat"
done_testing
