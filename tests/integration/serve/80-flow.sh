# 80-flow.sh - the LLM tool-call handler (libruntime/llm/python.c, what
# `runtime chat deepseek` runs) done over HTTP as a program written for the
# hosted SDK does it: create with the PyPI allow-list, exec pip against the
# test index, network set internet off, files write main.py, exec with a
# timeout, delete.  The same code then goes through `runtime chat deepseek`
# (a fake model asking for it, tests/fixtures/fake_deepseek.py): both
# results must be the same.  The test CA is put at /etc/rt-test-ca.pem as
# root before pip, as chat.sh bakes it into the image.

flow_code=$(json_get 'o[0]["tool_call"]["code"]' <"$RTAPI_DIR/chat/packages.json")
if ! testnet_up; then
    fail "the test internet is up"
else
    # RUNTIME_RESOLVE (the test names) reaches the sandboxes through the server.
    serve_stop TERM
    serve_start
    FLOW_CODE=$flow_code python3 - >"$tmp/flow.json" 2>"$tmp/flow.err" <<'EOF'
import json, os, sys, time
sys.path.insert(0, os.environ["RTAPI_DIR"])
import rtapi
c = rtapi.Client(os.environ["API"], os.environ["TOKEN_A"])
out = {}
sb = c.call("POST", "/v1/sandboxes", {
    "vcpu": 1, "memoryMiB": 512, "timeoutSeconds": 600, "labels": {"suite": "serve"},
    "env": {"PIP_CERT": "/etc/rt-test-ca.pem"},
    "network": {"internet": True, "allow": ["pypi.org", "*.pythonhosted.org"]}})
sid = sb["id"]
out["created"] = [sb["state"], sb["network"]]
try:
    ca = c.call("POST", "/v1/sandboxes/%s:exec" % sid, {
        "argv": ["sh", "-c", "cat >/etc/rt-test-ca.pem"], "user": "root",
        "stdin": open(os.environ["TESTNET_CA"]).read(), "timeoutMs": 30000})
    out["ca"] = ca["exitCode"]
    pip = c.call("POST", "/v1/sandboxes/%s:exec" % sid, {
        "argv": ["python3", "-m", "pip", "install", "--quiet", "rtdemo"], "cwd": "/workspace",
        "timeoutMs": 180000})
    out["pip"] = [pip["exitCode"], pip["timedOut"], pip["stderr"][-500:]]
    net = c.call("PUT", "/v1/sandboxes/%s/network" % sid, {"internet": False})
    out["network"] = [net.get("internet"), net.get("allow"), net.get("enforced")]
    out["network_get"] = c.call("GET", "/v1/sandboxes/%s/network" % sid).get("internet")
    c.call("PUT", "/v1/sandboxes/%s/files/content" % sid, os.environ["FLOW_CODE"].encode(),
           query={"path": "/workspace/main.py"})
    run = c.call("POST", "/v1/sandboxes/%s:exec" % sid, {
        "argv": ["python3", "main.py"], "cwd": "/workspace", "timeoutMs": 60000})
    # What the handler returns (python.c: run_main).
    out["result"] = {"exit_code": 124 if run["timedOut"] else run["exitCode"], "timed_out": run["timedOut"],
                     "stdout": run["stdout"], "stderr": run["stderr"]}
    t = time.monotonic()
    slow = c.call("POST", "/v1/sandboxes/%s:exec" % sid, {
        "argv": ["python3", "-c", "import time; print('started', flush=True); time.sleep(60)"],
        "cwd": "/workspace", "timeoutMs": 2000})
    out["timeout"] = [slow["timedOut"], slow["stdout"], round(time.monotonic() - t)]
finally:
    d = c.call("DELETE", "/v1/sandboxes/%s" % sid)
    out["deleted"] = d["status"]
    try:
        out["after"] = c.call("GET", "/v1/sandboxes/%s" % sid)["state"]
    except rtapi.ApiError as e:
        out["after"] = e.status
print(json.dumps(out))
EOF
    rc=$?
    is "the flow over HTTP ran through" "$rc" 0
    [ "$rc" = 0 ] || diag "$(tail -5 "$tmp/flow.err")" "$(tail -3 "$SERVE_LOG")"
    fj() { json_get "$1" <"$tmp/flow.json" 2>/dev/null; }
    is "… created running with internet on and PyPI allowed" \
        "$(fj '[o["created"][0], o["created"][1].get("internet"), sorted(o["created"][1].get("allow") or [])]')" \
        "['running', True, ['*.pythonhosted.org', 'pypi.org']]"
    is "… the test CA written as root" "$(fj 'o["ca"]')" 0
    is "… pip installed rtdemo from the test index" "$(fj 'o["pip"][:2]')" "[0, False]"
    [ "$(fj 'o["pip"][0]')" = 0 ] || diag "pip: $(fj 'o["pip"][2]')"
    is "… network PUT {internet: false}: the whole set replaced, enforced" "$(fj 'o["network"]')" "[False, [], True]"
    is "… and GET says so" "$(fj 'o["network_get"]')" False
    is "… main.py ran: 42, PyPI blocked, no secret in its env" "$(fj 'o["result"]["stdout"]')" "$(printf '42\nblocked\nclean')"
    is "… an exec with timeoutMs 2000 of a longer one: timedOut, its output kept, after ~2 s" \
        "$(fj 'o["timeout"][:2] + [2 <= o["timeout"][2] < 10]')" "[True, 'started\\n', True]"
    is "… DELETE: status deleted; then stopped (or gone)" "$(fj '[o["deleted"], o["after"] in ("stopped", 404)]')" "['deleted', True]"

    # The same code through `runtime chat deepseek`'s handler.
    runtime image build --file "$TESTNET_CA:/etc/rt-test-ca.pem" --env PIP_CERT=/etc/rt-test-ca.pem \
        --name flowimg >/dev/null 2>"$tmp/build.log"
    is "an image with the test CA for the handler (as chat.sh)" "$?" 0
    python3 -c 'import json, sys; print(json.dumps([{"tool_call": {"code": sys.argv[1], "packages": ["rtdemo"]}},
        {"answer": "done"}]))' "$flow_code" >"$tmp/flow-scenario.json"
    python3 "$RTAPI_DIR/fake_deepseek.py" "$tmp/flow-scenario.json" "$tmp/flow-chat.jsonl" \
        </dev/null >"$tmp/fake.out" 2>"$tmp/fake.err" &
    fake=$!
    for _ in $(seq 100); do grep -q '^port ' "$tmp/fake.out" && break; sleep 0.05; done
    DEEPSEEK_API_KEY=sk-test-flow timeout 600 runtime chat deepseek \
        --base-url "http://127.0.0.1:$(sed -n 's/^port //p' "$tmp/fake.out")" --image flowimg \
        "Install rtdemo and call answer()." >"$tmp/chat.out" 2>"$tmp/chat.err"
    is "runtime chat deepseek ran the same code" "$?" 0
    kill "$fake" 2>/dev/null
    wait "$fake" 2>/dev/null
    python3 - "$tmp/flow-chat.jsonl" >"$tmp/chat-result.json" <<'EOF'
import json, sys
L = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(json.dumps(json.loads([m for m in L[1]["body"]["messages"] if m.get("role") == "tool"][-1]["content"])))
EOF
    same=$(python3 - "$tmp/flow.json" "$tmp/chat-result.json" <<'EOF'
import json, sys
a = json.load(open(sys.argv[1]))["result"]
b = json.load(open(sys.argv[2]))
print("same" if a == b else "HTTP %r\nchat %r" % (a, b))
EOF
)
    is "… the handler's result and the one over HTTP are the same (exit_code, timed_out, stdout, stderr)" \
        "$(head -1 <<<"$same")" same
    [ "$(head -1 <<<"$same")" = same ] || diag "$same"
    runtime image rm flowimg >/dev/null 2>&1
    testnet_down
    serve_stop TERM
    serve_start
fi
