# 27-terminal.sh - GET /v1/sandboxes/{id}/terminal as a WebSocket on the
# shared sandbox $SB (the withruntime SDK's sandbox.terminal(); docs/API.md
# "Terminal"), with tests/fixtures/wsclient.py: ready, typing `echo hi`,
# the size the pty has and a resize, the exit message and close; then
# what is refused before the upgrade (no token, not a WebSocket, a bad
# key or version, bad sizes, unknown parameters, another tenant's
# sandbox) and hostile frames after it (unmasked, a bad opcode, a frame
# of 2^40 bytes, bytes after a close), each closed with its code while
# the server goes on serving.
X=/v1/sandboxes/$SB

cat >"$tmp/term.py" <<'PY'
import json, os, sys
sys.path.insert(0, os.environ["RTAPI_DIR"])
import wsclient

X = "/v1/sandboxes/%s" % os.environ["SB"]
out = []

def until(ws, needle):
    """Output until @needle is in it (what came, or the end that came instead)."""
    seen = b""
    while needle.encode() not in seen:
        m = ws.recv()
        if m[0] == "binary":
            seen += m[1]
        elif m[0] != "text":
            return ("ended", m, seen.decode("utf-8", "replace"))
    return seen.decode("utf-8", "replace")

ws = wsclient.WS(os.environ["API"], X + "/terminal?cols=100&rows=30", os.environ["TOKEN_A"])
ready = json.loads(ws.recv()[1])
out.append([ready["type"], ready["cols"], ready["rows"]])
# The quotes keep the typed line (echoed by the pty) from matching.
ws.send(b"echo h''i-there\n")
out.append("hi-there\r\n" in until(ws, "hi-there\r\n"))
ws.send(b"echo size=$(stty size)=\n")
out.append("size=30 100=" in until(ws, "size=30 100="))
ws.send(json.dumps({"type": "resize", "cols": 120, "rows": 50}))
ws.send(b"echo size=$(stty size)=\n")
out.append("size=50 120=" in until(ws, "size=50 120="))
ws.send(json.dumps({"type": "dance"}))
m = ws.after_data()
out.append(json.loads(m[1])["error"]["code"])
ws.send(b"exit 3\n")
m = ws.after_data()
out.append(json.loads(m[1]))
out.append(ws.recv()[:2])
print(json.dumps(out))
PY
is "a terminal: ready, typed, sized, resized, exit 3, close 1000" \
    "$(SB=$SB python3 "$tmp/term.py" 2>&1)" \
    '[["ready", 100, 30], true, true, true, "invalid_request", {"type": "exit", "exitCode": 3}, ["close", 1000]]'

cat >"$tmp/term-refused.py" <<'PY'
import json, os, sys
sys.path.insert(0, os.environ["RTAPI_DIR"])
import wsclient

X = "/v1/sandboxes/%s" % os.environ["SB"]
api, a = os.environ["API"], os.environ["TOKEN_A"]

def refused(path, token, **headers):
    try:
        wsclient.WS(api, path, token, headers)
        return "upgraded"
    except wsclient.Refused as e:
        body = json.loads(e.body or b"{}")
        return [e.status, body.get("error", {}).get("code")]

print(json.dumps([
    refused(X + "/terminal", None),
    refused(X + "/terminal", "rt_not_a_token"),
    refused(X + "/terminal", a, **{"Sec-WebSocket-Version": "8"}),
    refused(X + "/terminal", a, **{"Sec-WebSocket-Key": "c2hvcnQ="}),
    refused(X + "/terminal", a, Upgrade="h2c"),
    refused(X + "/terminal?cols=0", a),
    refused(X + "/terminal?rows=1001", a),
    refused(X + "/terminal?cols=8x", a),
    refused(X + "/terminal?colour=red", a),
    refused(X + "/terminal?processId=p1", a),
    refused(X + "/terminal", os.environ["TOKEN_B"]),
    refused("/v1/sandboxes/sb_nothere/terminal", a),
]))
PY
is "refused before the upgrade: 401, 401, 426, 426, 400, 426, 400 ×5, 404 ×2" \
    "$(SB=$SB python3 "$tmp/term-refused.py" 2>&1)" \
    '[[401, "unauthorized"], [401, "unauthorized"], [426, "upgrade_required"], [400, "invalid_request"], [426, "upgrade_required"], [400, "invalid_request"], [400, "invalid_request"], [400, "invalid_request"], [400, "invalid_request"], [400, "invalid_request"], [404, "not_found"], [404, "not_found"]]'
api GET "$X/terminal" >/dev/null
is "a plain GET (curl): 426 with Upgrade: websocket" "$status $(bj 'o["error"]["code"]') $(hdr upgrade)" \
    "426 upgrade_required websocket"

cat >"$tmp/term-hostile.py" <<'PY'
import json, os, struct, sys
sys.path.insert(0, os.environ["RTAPI_DIR"])
import wsclient

X = "/v1/sandboxes/%s/terminal" % os.environ["SB"]
out = []

def closed_with(send):
    ws = wsclient.WS(os.environ["API"], X, os.environ["TOKEN_A"])
    assert json.loads(ws.recv()[1])["type"] == "ready"
    send(ws)
    m = ws.recv()
    while m[0] in ("binary", "text"):
        m = ws.recv()
    # After its close, the server ends the connection.
    end = ws.recv()
    return [m[0], m[1] if len(m) > 1 else None, end[0]]

out.append(closed_with(lambda ws: ws.raw(ws.frame(2, b"ls\n", mask=False))))
out.append(closed_with(lambda ws: ws.raw(ws.frame(3, b""))))
out.append(closed_with(lambda ws: ws.raw(bytes([0x82, 0xFF]) + struct.pack(">Q", 1 << 40) + b"\0\0\0\0")))
out.append(closed_with(lambda ws: ws.raw(ws.frame(1, b"\xff\xfe"))))
out.append(closed_with(lambda ws: ws.raw(ws.frame(9, b"x" * 126))))
out.append(closed_with(lambda ws: ws.close(4000)))
print(json.dumps(out))
PY
is "hostile frames: unmasked 1002, opcode 3 1002, 2^40 bytes 1009, bad UTF-8 1007, a long ping 1002; a close echoed" \
    "$(SB=$SB python3 "$tmp/term-hostile.py" 2>&1)" \
    '[["close", 1002, "eof"], ["close", 1002, "eof"], ["close", 1009, "eof"], ["close", 1007, "eof"], ["close", 1002, "eof"], ["close", 4000, "eof"]]'
api GET /v1/health >/dev/null
is "… and the server still answers" "$status" 200
api POST "$X:exec" '{"argv": ["true"]}' >/dev/null
is "… and runs commands in the sandbox" "$status $(bj 'o["exitCode"]')" "200 0"
