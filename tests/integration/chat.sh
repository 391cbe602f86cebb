#!/bin/bash
# chat.sh - `runtime chat deepseek` against a scripted fake of the API
# (tests/fixtures/fake_deepseek.py, conversations in tests/fixtures/chat/):
# the fake's own checks, the key, the requests it sends (tools, messages,
# reasoning kept), tool calls run in sandboxes (packages from the test
# PyPI, internet off for the code, bad names, install failures, exit codes,
# the script timeout), the turn cap, prices at peak and off-peak, --strict,
# --json, --stream, Ctrl-C, and no sandbox left behind (HTTP errors,
# retries and timeouts need no VM: chat-api.sh, in the unit suite).  The
# RUNTIME_CHAT_* variables shorten the limits.
. "$(dirname "$0")/libtest.sh"
. "$(dirname "$0")/testnet.sh"

. "$(dirname "$0")/chatlib.sh"

# A private image store and ledger (the default image from the shared cache).
export RUNTIME_DATA_DIR="$tmp/data"
mkdir -p "$RUNTIME_DATA_DIR"
if [ -d "${RUNTIME_TEST_DATA:-}/images" ]; then cp -al "$RUNTIME_TEST_DATA/images" "$RUNTIME_DATA_DIR/"; fi

trap 'stop_server; testnet_down; cleanup' EXIT

# raw PATH EXPR: POSTs EXPR (Python, evaluated) as JSON to the fake API
# straight, not through runtime; prints "STATUS" or "STATUS TYPE: MESSAGE"
# for an error.  In EXPR: tool(f) is a copy of the tool `runtime chat`
# sends (saved in $tmp/tool.json), changed by f; P(t) its parameters;
# body(msgs, tools) a request (default: one user message and tool()).
raw() {
    python3 - "$BASE" "$1" "$2" "$tmp/tool.json" <<'EOF'
import copy, json, sys, urllib.error, urllib.request
base, path, expr, toolf = sys.argv[1:]
TOOL = json.load(open(toolf))
def tool(f=None):
    t = copy.deepcopy(TOOL)
    if f:
        f(t)
    return t
def P(t): return t["function"]["parameters"]
def body(msgs=None, tools=None):
    return {"model": "deepseek-flash", "messages": msgs or [{"role": "user", "content": "hi"}],
            "tools": [tool()] if tools is None else tools}
req = urllib.request.Request(base + path, data=json.dumps(eval(expr)).encode(),
                             headers={"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, timeout=10) as r:
        print(r.status)
except urllib.error.HTTPError as e:
    o = json.load(e)["error"]
    ok = sorted(o) == ["code", "message", "param", "type"]
    print(e.code, "%s: %s" % (o["type"], o["message"]) if ok else "not an OpenAI-style error body: %s" % o)
EOF
}

# cost_line: the last line with tokens and money runtime printed on stderr.
cost_line() { grep '^runtime: .*tokens: ' "$tmp/err" | tail -1; }

# charged: what this data dir's sandboxes were charged in all, in µ$.
charged() { runtime usage --json | json_get 'o["chargedMicros"]'; }

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
# The tool as runtime sends it, strict taken off, for the checks below.
qj 'dict(B(1)["tools"][0], function={k: v for k, v in B(1)["tools"][0]["function"].items() if k != "strict"})' \
    >"$tmp/tool.json"

# -- the fake's own checks, straight at it: each must fire, or the tests
# that rely on them prove nothing
serve '[{"tool_call": {"code": "print(1)", "packages": []}, "reasoning": "Think first."},
        {"answer": "a"}, {"answer": "b"}, {"answer": "c"}]'
is "fake API: the tool as runtime sends it is accepted" "$(raw /chat/completions 'body()')" "200"
call='{"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "run_python", "arguments": "{}"}}]'
result='{"role": "tool", "tool_call_id": "call_1", "content": "{}"}'
got=$(raw /chat/completions "body([{'role': 'user', 'content': 'hi'}, $call}, $result])")
is "fake API: reasoning_content dropped after a tool call: 400, an OpenAI-style error, DeepSeek's words" \
    "${got%% (*}" "400 invalid_request_error: fake_deepseek: Missing \`reasoning_content\` field in the assistant message at message index 1"
is "… changed: 400" \
    "$(raw /chat/completions "body([{'role': 'user', 'content': 'hi'}, $call, 'reasoning_content': 'other'}, $result])" | cut -c1-3)" "400"
is "… sent back: 200" \
    "$(raw /chat/completions "body([{'role': 'user', 'content': 'hi'}, $call, 'reasoning_content': 'Think first.'}, $result])")" "200"
is "… a tool call left unanswered: 400" \
    "$(raw /chat/completions "body([{'role': 'user', 'content': 'hi'}, $call, 'reasoning_content': 'Think first.'}])" | cut -c1-3)" "400"
is "fake API: packages not an array of strings: 400" \
    "$(raw /chat/completions 'body(tools=[tool(lambda t: P(t)["properties"]["packages"]["items"].update(type="integer"))])')" \
    "400 invalid_request_error: fake_deepseek: run_python's packages must be an array of strings"
is "… code not a string: 400" \
    "$(raw /chat/completions 'body(tools=[tool(lambda t: P(t)["properties"]["code"].update(type="object"))])' | cut -c1-3)" "400"
is "… packages not required: 400" "$(raw /chat/completions 'body(tools=[tool(lambda t: P(t).update(required=["code"]))])' | cut -c1-3)" "400"
is "… a property too many: 400" \
    "$(raw /chat/completions 'body(tools=[tool(lambda t: P(t)["properties"].update(x={"type": "string"}))])' | cut -c1-3)" "400"
is "… another tool name: 400" "$(raw /chat/completions 'body(tools=[tool(lambda t: t["function"].update(name="run"))])' | cut -c1-3)" "400"
is "… no tools: 400" "$(raw /chat/completions 'body(tools=[])' | cut -c1-3)" "400"
is "fake API: strict: true outside /beta: 400" "$(raw /chat/completions 'body(tools=[tool(lambda t: t["function"].update(strict=True))])')" \
    "400 invalid_request_error: fake_deepseek: strict mode is only available on the beta endpoint (base_url https://api.deepseek.com/beta)"
is "… under /beta without additionalProperties: false: 400" \
    "$(raw /beta/chat/completions 'body(tools=[tool(lambda t: (t["function"].update(strict=True), P(t).pop("additionalProperties")))])' | cut -c1-3)" "400"
is "… under /beta, as runtime sends it: 200" \
    "$(raw /beta/chat/completions 'body(tools=[tool(lambda t: t["function"].update(strict=True))])')" "200"
is "… 14 requests, 3 accepted; a refused one takes no step of the script" \
    "$(qj 'len(L)') $(grep -c -- '-> 200' "$SRVERR") $(grep -c '#14 POST /beta/chat/completions -> 200 answer' "$SRVERR")" "14 3 1"

# -- a bad package name: an error result, no sandbox
before=$(sandboxes_made)
serve bad-package
chat "Install a package."
chat_ok "a bad package name: the chat goes on to the answer" "That package name was refused."
is "… the model is told: a tool message with an error" \
    "$(qj '[[m["role"] for m in M(2)], M(2)[2].get("tool_call_id"), "error" in T(2), "exit_code" in T(2)]')" \
    '[["user", "assistant", "tool"], "call_1", true, false]'
check "… one line on stderr says so" \
    grep -qxF "runtime: run_python #1: refused: invalid package name 'rtdemo; rm -rf /': names only, optionally ==VERSION" "$tmp/err"
is "… and no sandbox was made" "$(sandboxes_made)" "$before"

# -- --max-turns: three tool calls (refused names, no VM) but two turns allowed
bad='{"tool_call": {"code": "print(1)", "packages": ["bad name!"]}}'
serve "[$bad, $bad, $bad, {\"answer\": \"too late\"}]"
chat --max-turns 2 "Loop."
chat_fails "--max-turns 2 without a final answer: exit 1 with an error" "no answer after 2 turns"
is "… after exactly 2 requests" "$(qj 'len(L)')" "2"

# -- the default cap: a model that always calls the tool gets 8 requests;
# each call's line comes as it happens; what was spent is still said
serve always-tool
DEEPSEEK_API_KEY=$KEY RUNTIME_CHAT_NOW=2025-01-06T12:00:00Z timeout 60 runtime chat deepseek --base-url "$BASE" "Loop." \
    >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 100); do [ "$(qj 'len(L)')" = 8 ] && break; sleep 0.1; done
is "the default turn cap: while the 8th request waits, 7 tool-call lines are already out" \
    "$(kill -0 $pid 2>/dev/null && grep -c '^runtime: run_python #[0-9]*: refused: ' "$tmp/err")" "7"
wait $pid; rc=$?
chat_fails "… then exit 1 with one error line" '^Error \[invalid_request\]: no answer after 8 turns: the model still calls run_python$'
check "… and a hint" grep -qx 'Hint: raise --max-turns (at most 64), or ask for less' "$tmp/err"
is "… after exactly 8 requests" "$(qj 'len(L)')" "8"
is "… one line per call, in order" "$(grep -o '^runtime: run_python #[0-9]*' "$tmp/err" | tr -d '\n')" \
    "$(for i in $(seq 8); do printf 'runtime: run_python #%d' "$i"; done)"
is "… the tokens and money spent before stopping (8 × 100 in, 20 out, off-peak)" "$(cost_line)" \
    'runtime: spent before stopping: 800 input and 160 output tokens: $0.000216 for deepseek-flash; sandboxes $0.000000'

# -- an API error after a turn: the error, and what was spent
serve '[{"tool_call": {"code": "print(1)", "packages": ["bad name!"]}, "usage": {"prompt_tokens": 1000, "completion_tokens": 100}},
        {"status": 400, "body": {"error": {"message": "context too long", "type": "invalid_request_error", "param": null, "code": null}}}]'
RUNTIME_CHAT_NOW=2025-01-06T02:00:00Z chat "Hello."
chat_fails "400 after a turn: exit 1 with the API's message" "context too long"
is "… and what the first turn cost (peak)" "$(cost_line)" \
    'runtime: spent before stopping: 1000 input and 100 output tokens: $0.000420 for deepseek-flash; sandboxes $0.000000'

# -- prices: DeepSeek's table, peak by the UTC weekday and hour
one='{"answer": "priced", "usage": {"prompt_tokens": 1000000, "completion_tokens": 500000}}'
serve "[$one, $one, $one, $one, $one, $one, $one]"
# price NOW MODEL [--json]: the cost line (or the JSON cost) of one answer.
price() {
    RUNTIME_CHAT_NOW=$1 chat --model "$2" ${3:-} "Price it."
    if [ -n "${3:-}" ]; then json_get '[o["cost"]["model_micros"], o["cost"]["sandbox_micros"]]' <"$tmp/out"; else cost_line; fi
}
is "price: deepseek-flash, Monday 02:30 UTC (peak): 1M in + 0.5M out" "$(price 2025-01-06T02:30:00Z deepseek-flash)" \
    'runtime: 1000000 input and 500000 output tokens: $0.900000 for deepseek-flash; sandboxes $0.000000'
is "… Monday 04:30 UTC (between the peaks)" "$(price 2025-01-06T04:30:00Z deepseek-flash)" \
    'runtime: 1000000 input and 500000 output tokens: $0.450000 for deepseek-flash; sandboxes $0.000000'
is "… Saturday 02:30 UTC (weekend)" "$(price 2025-01-04T02:30:00Z deepseek-flash)" \
    'runtime: 1000000 input and 500000 output tokens: $0.450000 for deepseek-flash; sandboxes $0.000000'
is "… deepseek-v4-pro, Friday 09:59 UTC (peak)" "$(price 2025-01-10T09:59:00Z deepseek-v4-pro)" \
    'runtime: 1000000 input and 500000 output tokens: $3.300000 for deepseek-v4-pro; sandboxes $0.000000'
is "… deepseek-v4-pro, Friday 10:00 UTC (off-peak)" "$(price 2025-01-10T10:00:00Z deepseek-v4-pro)" \
    'runtime: 1000000 input and 500000 output tokens: $1.650000 for deepseek-v4-pro; sandboxes $0.000000'
is "… --json: the cost in µ\$, peak (Monday 06:00)" "$(price 2025-01-06T06:00:00Z deepseek-flash --json)" "[900000, 0]"
is "… a model of unknown price says so" "$(price 2025-01-06T06:00:00Z deepseek-other)" \
    'runtime: 1000000 input and 500000 output tokens: unknown price for deepseek-other; sandboxes $0.000000'
RUNTIME_CHAT_NOW=yesterday chat "Hello."
chat_fails "RUNTIME_CHAT_NOW not RFC 3339: a usage error" '^Error \[usage\]: RUNTIME_CHAT_NOW'


# -- the tool flow: a tool call run in a sandbox, then the answer
before=$(sandboxes_made)
charged0=$(charged)
serve seed
chat "What is 6*7? Use Python."
chat_ok "the tool flow: stdout is the answer" "The answer is 42."
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
check "… stderr: the call in one line" grep -qE '^runtime: run_python #1 \(0 packages\): exit 0 in [0-9]+\.[0-9] s$' "$tmp/err"
d=$(($(charged) - charged0))
is "… the cost line: 200 in, 40 out, the sandbox as charged in the ledger (trial: \$0)" \
    "$(cost_line | sed 's/: \$0\.[0-9]\{6\} for/: $X for/')" \
    "runtime: 200 input and 40 output tokens: \$X for deepseek-flash; sandboxes \$$((d / 1000000)).$(printf %06d $((d % 1000000)))"
check "… the key is not printed" sh -c "! grep -qF -- '$KEY' '$tmp/out' '$tmp/err'"
is "… one sandbox for the one call" "$(($(sandboxes_made) - before))" "1"
is "… and none is left" "$(runtime sandbox ls --all --json)" "[]"

# -- --stream: the same flow over server-sent events
before=$(sandboxes_made)
serve stream
chat --stream "What is 6*7?"
chat_ok "--stream: stdout is the answer" "Streamed: the answer is 42."
is "… both requests have stream: true" "$(qj '[B(1).get("stream"), B(2).get("stream")]')" '[true, true]'
is "… the streamed call put back together" \
    "$(qj '[M(2)[1].get("reasoning_content"), M(2)[1]["tool_calls"][0]["id"], M(2)[1]["tool_calls"][0]["function"]["name"], json.loads(M(2)[1]["tool_calls"][0]["function"]["arguments"]), M(2)[2].get("tool_call_id")]')" \
    '["Run it.", "call_1", "run_python", {"code": "print(6*7)", "packages": []}, "call_1"]'
is "… and run: stdout 42" "$(qj '[T(2).get("exit_code"), T(2).get("stdout")]')" '[0, "42\n"]'
is "… in one sandbox" "$(($(sandboxes_made) - before))" "1"

# -- --stream with two calls in one message, the second exiting 3
before=$(sandboxes_made)
serve stream-two-calls
chat --stream "Add, twice."
chat_ok "--stream, two calls in one message: the answer" "Two and four."
is "… both calls put back together, each with its own id and arguments" \
    "$(qj '[[c["id"], json.loads(c["function"]["arguments"])["code"][-11:]] for c in M(2)[1]["tool_calls"]]')" \
    '[["call_1", "print(1+1)"], ["call_2", "sys.exit(3)"]]'
is "… each answered by its own tool message; the script's exit code in exit_code" \
    "$(qj '[[m["tool_call_id"], json.loads(m["content"])["stdout"], json.loads(m["content"])["exit_code"]] for m in M(2) if m["role"] == "tool"]')" \
    '[["call_1", "2\n", 0], ["call_2", "4\n", 3]]'
check "… stderr: exit 3 in the second call's line" grep -qE '^runtime: run_python #2 \(0 packages\): exit 3 in ' "$tmp/err"
is "… in a sandbox each" "$(($(sandboxes_made) - before))" "2"

# -- --json, with the script timeout shortened to 3 s
serve sleep
start=$SECONDS
RUNTIME_CHAT_SCRIPT_TIMEOUT=3 chat --json "Sleep for two minutes."
took=$((SECONDS - start))
is "--json: exit 0" "$rc" "0"
is "… one JSON object with the answer" "$(json_get 'o["answer"]' <"$tmp/out")" "It timed out."
is "… the messages: user, assistant, tool, assistant" "$(json_get '[m["role"] for m in o["messages"]]' <"$tmp/out")" \
    "['user', 'assistant', 'tool', 'assistant']"
is "… usage summed over the turns" "$(json_get '[o["usage"]["prompt_tokens"], o["usage"]["completion_tokens"]]' <"$tmp/out")" \
    "[250, 50]"
is "… and a cost object" "$(json_get 'sorted(o["cost"])' <"$tmp/out")" "['model_micros', 'sandbox_micros']"
is "the script timeout: the tool result has timed_out true, exit_code 124, stdout and stderr" \
    "$(qj '[T(2).get("timed_out"), T(2).get("exit_code"), sorted(T(2))]')" \
    '[true, 124, ["exit_code", "stderr", "stdout", "timed_out"]]'
is "… and so does the transcript" "$(json_get 'json.loads(o["messages"][2]["content"])["timed_out"]' <"$tmp/out")" "True"
check "… stderr says it timed out" grep -qE '^runtime: run_python #1 \(0 packages\): timed out, exit 124 in [0-9.]+ s$' "$tmp/err"
check "… cut at 3 s, not at the 60 s default (took ${took} s)" test "$took" -lt 45
is "… no sandbox left" "$(runtime sandbox ls --all --json)" "[]"

# -- Ctrl-C while a script runs: exit 130, its sandbox removed, not left stopped
# interrupt_chat ARGS…: starts the chat, sends SIGINT once main.py runs.
interrupt_chat() {
    serve interrupt
    DEEPSEEK_API_KEY=$KEY runtime chat deepseek --base-url "$BASE" "$@" "Sleep." >"$tmp/out" 2>"$tmp/err" &
    pid=$!
    running=
    for _ in $(seq 300); do
        id=$(runtime sandbox ls --json 2>/dev/null | json_get 'o[0]["id"] if o else ""' 2>/dev/null)
        if [ -n "$id" ] && runtime sandbox exec "$id" -- sh -c 'grep -ls main.py /proc/[0-9]*/cmdline' >/dev/null 2>&1; then
            running=1
            break
        fi
        sleep 0.2
    done
    is "Ctrl-C ${*:-}: main.py was running" "$running" "1"
    start=$SECONDS
    kill -INT $pid
    wait $pid; rc=$?
    is "… the chat exits 130" "$rc" "130"
    check "… soon ($((SECONDS - start)) s)" test $((SECONDS - start)) -lt 20
    is "… the tool call's sandbox is gone, not left stopped" "$(runtime sandbox ls --all --json)" "[]"
    is "… no request after it" "$(qj 'len(L)')" "1"
}
interrupt_chat
check "… says it was interrupted" grep -q '^runtime: interrupted' "$tmp/err"
interrupt_chat --json
is "… with --json, stderr is one error object" "$(json_get 'o["error"]["code"]' <"$tmp/err")" "interrupted"

# -- packages from the test PyPI, then the internet off for the code
runtime image build --file "$TESTNET_CA:/etc/rt-test-ca.pem" --env PIP_CERT=/etc/rt-test-ca.pem \
    --name chatimg >/dev/null 2>"$tmp/build.log"; rc=$?
is "an image with the test CA builds" "$rc" "0"
[ "$rc" = 0 ] || diag "$(tail -5 "$tmp/build.log")"
before=$(sandboxes_made)
serve packages
chat --image chatimg "Install rtdemo and call answer()."
chat_ok "packages: the chat ends with the answer" "rtdemo says 42."
is "… rtdemo installed from the index and run; PyPI blocked for the code; no key in its env" \
    "$(qj '[T(2).get("exit_code"), T(2).get("stdout")]')" '[0, "42\nblocked\nclean\n"]'
[ "$(qj 'T(2).get("exit_code")')" = 0 ] || diag "tool result: $(qj 'T(2)')"
is "… a package not on the index: an install-stage result" \
    "$(qj '[T(3).get("stage"), "nosuchpkg" in (T(3).get("stderr") or "")]')" '["install", true]'
check "… stderr: one line per call" test "$(grep -cE '^runtime: run_python #[12] \(1 package\): ' "$tmp/err")" = 2
is "… one sandbox per call" "$(($(sandboxes_made) - before))" "2"
is "… and none left" "$(runtime sandbox ls --all --json)" "[]"

stop_server
check "the key was never printed, by any run" sh -c "! grep -qF -- '$KEY' '$tmp/seen'"
check_no_leaks "chat"
done_testing
