# 28-tunnel.sh - GET /v1/sandboxes/{id}/tunnel as a WebSocket on the shared
# sandbox $SB (the withruntime SDK's sandbox.tunnel() and forwardPort();
# docs/API.md "Tunnel"), with tests/fixtures/wsclient.py speaking the
# SDK's stream frames: a page fetched from python3 -m http.server in the
# sandbox, two streams at once, a port nobody listens on ("closed"), an
# ssh stream and a bad target refused, the data taken acknowledged; then
# seventeen streams at once (one too many); then an unknown query
# parameter refused before the upgrade.
X=/v1/sandboxes/$SB
api POST "$X:exec" '{"argv":["sh","-c","mkdir -p /tmp/www && echo tunnel-page-ok >/tmp/www/index.html"]}' >/dev/null
api POST "$X/processes" '{"argv":["python3","-m","http.server","8017","--bind","127.0.0.1","--directory","/tmp/www"]}' >/dev/null
www=$(bj 'o["id"]')
is "a web server spawned in the sandbox" "$status" 201

cat >"$tmp/tunnel.py" <<'PY'
import json, os, struct, sys, time
sys.path.insert(0, os.environ["RTAPI_DIR"])
import wsclient

X = "/v1/sandboxes/%s/tunnel" % os.environ["SB"]
out = []

def frame(kind, sid, payload=b""):
    return bytes([ord(kind)]) + struct.pack(">I", sid) + payload

def recv(ws):
    m = ws.recv()
    if m[0] != "binary":
        return (m[0],)
    return (chr(m[1][0]), struct.unpack(">I", m[1][1:5])[0], m[1][5:])

ws = wsclient.WS(os.environ["API"], X, os.environ["TOKEN_A"])
out.append(json.loads(ws.recv()[1]))

def fetch(sid):
    """GET / on stream @sid: until its close, the body and the frames' kinds."""
    ws.send(frame("o", sid, b"tcp 8017"))
    got, kinds, acked = b"", [], 0
    while True:
        m = recv(ws)
        if m[0] == "a":
            acked = struct.unpack(">Q", m[2])[0]
            continue
        kinds.append(m[0])
        if m[0] == "o":
            req = b"GET / HTTP/1.0\r\nHost: x\r\n\r\n"
            ws.send(frame("d", sid, req))
            ws.send(frame("e", sid))
        elif m[0] == "d":
            got += m[2]
        elif m[0] == "c":
            return [b"tunnel-page-ok" in got, kinds[0], kinds[-2:], m[2].decode(), acked >= 28]
        elif m[0] != "e":
            return ["unexpected", m]

# Retried while the server starts listening (the spawn answered first).
for i in range(100):
    r = fetch(1 + i)
    if r[0]:
        break
    time.sleep(0.2)
out.append(r)
ws.send(frame("o", 500, b"tcp 1"))
m = recv(ws)
while m[0] == "a":
    m = recv(ws)
out.append([m[0], m[1], m[2].decode()] if m[0] != "o" else ["opened", m[1]])
if m[0] == "o":
    m = recv(ws)
    out.append([m[0], m[2].decode()])
for target in (b"ssh ssh-ed25519 AAAA", b"tcp 0", b"tcp 70000", b"udp 53", b"tcp 80x"):
    ws.send(frame("o", 600, target))
    m = recv(ws)
    out.append([m[0], m[2].decode()])
# Seventeen at once: the sixteenth is the last a tunnel holds.
for sid in range(700, 717):
    ws.send(frame("o", sid, b"tcp 8017"))
kinds = []
while len(kinds) < 17:
    m = recv(ws)
    if m[0] != "a":
        kinds.append(m[0] + (":" + m[2].decode() if m[0] == "c" else ""))
out.append(sorted(set((k, kinds.count(k)) for k in kinds)))
ws.close()
m = ws.after_data()
out.append(m[:2])
print(json.dumps(out))
PY
is "a tunnel: ready; a page through it (open, data, end, close done); a port nobody listens on closed; bad targets refused" \
    "$(SB=$SB python3 "$tmp/tunnel.py" 2>&1)" \
    '[{"type": "ready"}, [true, "o", ["e", "c"], "done", true], ["opened", 500], ["c", "closed"], ["c", "unsupported"], ["c", "invalid"], ["c", "invalid"], ["c", "invalid"], ["c", "invalid"], [["c:too-many", 1], ["o", 16]], ["close", 1000]]'

cat >"$tmp/tunnel-refused.py" <<'PY'
import json, os, sys
sys.path.insert(0, os.environ["RTAPI_DIR"])
import wsclient
try:
    wsclient.WS(os.environ["API"], "/v1/sandboxes/%s/tunnel?port=80" % os.environ["SB"], os.environ["TOKEN_A"])
    print("upgraded")
except wsclient.Refused as e:
    print(e.status, json.loads(e.body)["error"]["code"])
PY
is "an unknown parameter: 400 before the upgrade" "$(SB=$SB python3 "$tmp/tunnel-refused.py" 2>&1)" "400 invalid_request"
api POST "$X/processes/$www:signal" '{"signal":"SIGKILL"}' >/dev/null
is "the web server killed" "$status" 200
