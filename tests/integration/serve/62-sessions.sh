# 62-sessions.sh - sandbox sessions (docs/API.md "Sessions") called as the
# withruntime SDK calls them: `sbx.sessions.create/list/revoke` and a
# sandbox reached by `Sandbox.fromSession({token, sandboxId})` (its
# sandbox.ts: SandboxSessions, Sandbox, Files, Processes), by a client
# written here from the SDK's wire shapes (the paths, bodies, query
# parameters and answer fields it uses), not from its code; then what a
# session must be refused: another sandbox, every other route, another
# page's origin, after it expired, after its revoke, after its token's
# removal, and after the server's restart.

cat >"$tmp/sdk62.py" <<'EOF'
"""sdk62.py CALL ARGS…: one call as the SDK makes it; prints
{"status", "body", "h": {header: value}} (a JSON body parsed)."""
import json, os, sys, urllib.error, urllib.parse, urllib.request

API = os.environ["API"]


def call(method, path, key, body=None, query=None, raw=None, accept="application/json", headers=()):
    url = API + path + ("?" + urllib.parse.urlencode(query) if query else "")
    data = json.dumps(body).encode() if body is not None else raw
    req = urllib.request.Request(url, method=method, data=data)
    if key:
        req.add_header("Authorization", "Bearer " + key)
    req.add_header("Accept", accept)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    if raw is not None:
        req.add_header("Content-Type", "application/octet-stream")
    for k, v in headers:
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            status, h, text = r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        status, h, text = e.code, e.headers, e.read()
    try:
        parsed = json.loads(text) if text else None
    except ValueError:
        parsed = text.decode(errors="replace")
    return {"status": status, "body": parsed, "h": {k.lower(): v for k, v in h.items()}}


def sb(i):
    return "/v1/sandboxes/" + urllib.parse.quote(i, safe="")


args = sys.argv[1:]
what = args.pop(0)
origin = os.environ.get("ORIGIN")
extra = [("Origin", origin)] if origin else []
if os.environ.get("IDEM"):
    extra.append(("Idempotency-Key", os.environ["IDEM"]))
if what == "create":  # sbx.sessions.create(input): POST …/sessions, the input as the body
    key, i, inp = args
    out = call("POST", sb(i) + "/sessions", key, json.loads(inp), headers=extra)
elif what == "list":  # sbx.sessions.list(): GET …/sessions, reads .data
    key, i = args
    out = call("GET", sb(i) + "/sessions", key, headers=extra)
elif what == "revoke":  # sbx.sessions.revoke(id): POST …/sessions/{id}:revoke with {}
    key, i, sid = args
    out = call("POST", sb(i) + "/sessions/" + urllib.parse.quote(sid, safe="") + ":revoke", key, {}, headers=extra)
elif what == "exec":  # fromSession(…).exec("cmd"): POST …:exec {command}, reads exitCode, stdout
    key, i, cmd = args
    out = call("POST", sb(i) + ":exec", key, {"command": cmd}, headers=extra)
elif what == "write":  # files.write(path, text) up to 1 MiB: PUT …/files/content?path=, raw bytes
    key, i, path, text = args
    out = call("PUT", sb(i) + "/files/content", key, query={"path": path}, raw=text.encode(), headers=extra)
elif what == "read":  # files.read(path): GET …/files/content?path=, octet-stream
    key, i, path = args
    out = call("GET", sb(i) + "/files/content", key, query={"path": path}, accept="application/octet-stream",
               headers=extra)
elif what == "processes":  # processes.list(): GET …/processes, reads .data
    key, i = args
    out = call("GET", sb(i) + "/processes", key, headers=extra)
elif what == "refresh":  # sbx.refresh(): GET /v1/sandboxes/{id}
    key, i = args
    out = call("GET", sb(i), key, headers=extra)
elif what == "raw":  # any other call: METHOD PATH [JSON]
    key, method, path = args[:3]
    out = call(method, path, key, json.loads(args[3]) if len(args) > 3 else None, headers=extra)
elif what == "preflight":  # a browser's: OPTIONS, no token
    path, method = args
    out = call("OPTIONS", path, None, headers=extra + [("Access-Control-Request-Method", method),
                                                        ("Access-Control-Request-Headers", "authorization,content-type")])
else:
    sys.exit("no call " + what)
if isinstance(out["body"], dict) and isinstance(out["body"].get("token"), str):
    open(os.environ["TOKEN_FILE"], "w").write(out["body"]["token"]) if os.environ.get("TOKEN_FILE") else None
print(json.dumps(out))
EOF
sdk() { python3 "$tmp/sdk62.py" "$@" >"$tmp/sdk.out"; }
sj() { json_get "$1" <"$tmp/sdk.out"; }
APP=https://app.example.com
DEV=http://localhost:5173

# Sessions live in the server's memory: started again, it lets them expire
# within seconds (RUNTIME_SERVE_SESSION_MIN_TTL), for the expiry below.
serve_stop TERM
export RUNTIME_SERVE_SESSION_MIN_TTL=1
serve_start
unset RUNTIME_SERVE_SESSION_MIN_TTL
SB2=$(sandboxes 2 | sed -n 2p)

# -- the SDK's calls
TOKEN_FILE=$tmp/sess.token sdk create "$TOKEN_A" "$SB" '{"ttlSeconds": 600, "origins": ["'$APP'", "'$DEV'"], "name": "page"}'
SESS=$(cat "$tmp/sess.token" 2>/dev/null)
SID=$(sj 'o["body"]["id"]')
is "sessions.create: 201, an rtsess_ token, the session's fields and apiUrl" \
    "$(sj 'o["status"], o["body"]["token"][:7], len(o["body"]["token"]), o["body"]["sandboxId"] == "'"$SB"'", o["body"]["name"], o["body"]["origins"], o["body"]["createdBy"], o["body"]["revokedAt"], o["body"]["state"], o["body"]["apiUrl"] == "'"$API"'"')" \
    "201 rtsess_ 47 True page ['$APP', '$DEV'] tenant-a None active True"
is "… it lasts ttlSeconds" \
    "$(sj '(lambda p: (p(o["body"]["expiresAt"]) - p(o["body"]["createdAt"])).total_seconds())(lambda s: __import__("datetime").datetime.fromisoformat(s.replace("Z", "+00:00")))')" "600.0"
check "… the token is written nowhere on the server" sh -c '! grep -rqF "$1" "$2" "$3"' sh "$SESS" "$RUNTIME_DATA_DIR" "$SERVE_LOG"
sdk exec "$SESS" "$SB" 'echo "from a page: $((6 * 7))"'
is "fromSession(…).exec: runs in its sandbox" "$(sj 'o["status"], o["body"]["exitCode"], o["body"]["stdout"] == "from a page: 42\n"')" "200 0 True"
sdk write "$SESS" "$SB" /workspace/sess62.txt "session bytes"
is "… files.write" "$(sj 'o["status"]')" 200
sdk read "$SESS" "$SB" /workspace/sess62.txt
is "… files.read" "$(sj 'o["status"], o["body"]')" "200 session bytes"
sdk processes "$SESS" "$SB"
is "… processes.list" "$(sj 'o["status"], type(o["body"]["data"]).__name__')" "200 list"
sdk refresh "$SESS" "$SB"
is "… refresh (GET the sandbox)" "$(sj 'o["status"], o["body"]["id"] == "'"$SB"'"')" "200 True"
sdk list "$TOKEN_A" "$SB"
is "sessions.list: it, active, without its token" \
    "$(sj 'o["status"], [s["id"] for s in o["body"]["data"]] == ["'"$SID"'"], o["body"]["data"][0]["state"], "token" in o["body"]["data"][0]')" \
    "200 True active False"

# -- CORS: only for its own origins
ORIGIN=$APP sdk exec "$SESS" "$SB" true
is "a request from one of its pages: answered with that origin" \
    "$(sj 'o["status"], o["h"].get("access-control-allow-origin"), o["h"].get("vary")')" "200 $APP Origin"
ORIGIN=https://evil.example.com sdk exec "$SESS" "$SB" true
is "from a page not in its origins: 403, no CORS" \
    "$(sj 'o["status"], o["body"]["error"]["code"], o["h"].get("access-control-allow-origin")')" "403 forbidden None"
ORIGIN=https://app.example.com.evil.example sdk exec "$SESS" "$SB" true
is "… nor one that only starts like it" "$(sj 'o["status"], o["h"].get("access-control-allow-origin")')" "403 None"
ORIGIN=$APP sdk exec "$TOKEN_A" "$SB" true
is "a request with the token itself carries no CORS" "$(sj 'o["status"], o["h"].get("access-control-allow-origin")')" "200 None"
ORIGIN=$DEV sdk preflight "/v1/sandboxes/$SB:exec" POST
is "a preflight from its page: 204 with the origin, methods and headers" \
    "$(sj 'o["status"], o["h"].get("access-control-allow-origin"), "Authorization" in o["h"].get("access-control-allow-headers", ""), "POST" in o["h"].get("access-control-allow-methods", "")')" \
    "204 $DEV True True"
ORIGIN=https://evil.example.com sdk preflight "/v1/sandboxes/$SB:exec" POST
is "a preflight from another page: 403, no CORS" "$(sj 'o["status"], o["h"].get("access-control-allow-origin")')" "403 None"
ORIGIN=$APP sdk preflight "/v1/sandboxes/$SB:stop" POST
is "a preflight for a route no session has: 403" "$(sj 'o["status"], o["h"].get("access-control-allow-origin")')" "403 None"
ORIGIN=$APP sdk preflight "/v1/sandboxes/$SB2:exec" POST
is "a preflight for a sandbox none of whose sessions lists it: 403" "$(sj 'o["status"], o["h"].get("access-control-allow-origin")')" "403 None"

# -- what a session may not reach: 403 forbidden
refused=
for call in "POST /v1/sandboxes/$SB2:exec {\"command\":\"true\"}" "GET /v1/sandboxes/$SB2" "GET /v1/sandboxes/$SB2/files/list?path=/" \
    "GET /v1/sandboxes" "POST /v1/sandboxes {}" "GET /v1/me" "GET /v1/usage" "GET /v1/egress-secrets" \
    "PUT /v1/egress-secrets/S62 {\"value\":\"x\",\"hosts\":[\"a.example.com\"]}" "GET /v1/images" "GET /v1/snapshots" \
    "GET /v1/sandboxes/$SB/network" "PUT /v1/sandboxes/$SB/network {}" "GET /v1/sandboxes/$SB/metrics" \
    "POST /v1/sandboxes/$SB:stop {}" "POST /v1/sandboxes/$SB:extend {\"seconds\":60}" "POST /v1/sandboxes/$SB:snapshot {}" \
    "DELETE /v1/sandboxes/$SB" "POST /v1/sandboxes/$SB/sessions {}" "GET /v1/sandboxes/$SB/sessions" \
    "POST /v1/sandboxes/$SB/sessions/$SID:revoke {}"; do
    set -- $call
    sdk raw "$SESS" "$@"
    [ "$(sj 'o["status"], o["body"]["error"]["code"]')" = "403 forbidden" ] || refused="$refused [$call: $(head -c 200 "$tmp/sdk.out")]"
done
is "a session on another sandbox, and on every route but its sandbox's exec, files and processes: 403" "$refused" ""
api GET "/v1/sandboxes/$SB" >/dev/null
is "… the sandbox is still running" "$status $(bj 'o["state"]')" "200 running"

# -- bad bodies, named
sdk create "$TOKEN_A" "$SB" '{"origins": ["http://app.example.com", "https://a.example.com/path", "https://A.example.com", "*", "https://a.example.com:99999"], "ttlSeconds": 86401}'
is "a plain-http origin, a path, upper case, a wildcard, a bad port, a ttl over a day: each named" \
    "$(sj 'o["status"], sorted(i["path"] for i in o["body"]["error"]["details"]["issues"])')" \
    "400 ['origins[0]', 'origins[1]', 'origins[2]', 'origins[3]', 'origins[4]', 'ttlSeconds']"
sdk create "$TOKEN_A" "$SB" "{\"origins\": $(python3 -c 'import json; print(json.dumps(["https://o%d.example.com" % i for i in range(9)]))')}"
is "nine origins: the ninth named" "$(sj 'o["status"], [i["path"] for i in o["body"]["error"]["details"]["issues"]]')" "400 ['origins[8]']"
sdk create "$TOKEN_B" "$SB" '{}'
is "B's session on A's sandbox: 404" "$(sj 'o["status"], o["body"]["error"]["code"]')" "404 not_found"
sdk list "$TOKEN_B" "$SB"
is "B's list of A's sandbox's sessions: 404" "$(sj 'o["status"]')" 404
sdk revoke "$TOKEN_B" "$SB" "$SID"
is "B's revoke of A's session: 404" "$(sj 'o["status"]')" 404
sdk exec "$SESS" "$SB" true
is "… which still works" "$(sj 'o["status"]')" 200

# -- a create replayed by its Idempotency-Key: the token is shown once
K=k62-$RANDOM$RANDOM
IDEM=$K sdk create "$TOKEN_A" "$SB" '{"name": "replayed"}'
first=$(sj 'o["body"]["id"]')
is "a create with an Idempotency-Key: 201 with its token" "$(sj 'o["status"], o["body"]["token"][:7]')" "201 rtsess_"
IDEM=$K sdk create "$TOKEN_A" "$SB" '{"name": "replayed"}'
is "… replayed: the same session, replayed, token null" \
    "$(sj 'o["status"], o["body"]["id"] == "'"$first"'", o["body"].get("replayed"), o["body"]["token"]')" "201 True True None"
sdk revoke "$TOKEN_A" "$SB" "$first"
is "… which the SDK then revokes: 200, revoked" "$(sj 'o["status"], o["body"]["state"], bool(o["body"]["revokedAt"])')" "200 revoked True"
sdk create "$TOKEN_A" "$SB" '{}'
first=$(sj 'o["body"]["id"]')
api DELETE "/v1/sandboxes/$SB/sessions/$first" >/dev/null
is "DELETE …/sessions/{id} revokes too" "$status $(bj 'o["state"]')" "200 revoked"

# -- at most SRV_SESSIONS_PER_SANDBOX (32) active in a sandbox
python3 - "$SB" >"$tmp/cap.out" <<'EOF'
import json, os, sys, urllib.request, urllib.error
def create():
    req = urllib.request.Request(os.environ["API"] + "/v1/sandboxes/%s/sessions" % sys.argv[1], method="POST", data=b"{}",
                                 headers={"Authorization": "Bearer " + os.environ["TOKEN_A"], "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)
got = [create() for _ in range(40)]
made = [b["id"] for s, b in got if s == 201]
print(len(made), sorted({b["error"]["code"] for s, b in got if s != 201}))
EOF
is "40 creates in a sandbox with one active: 31 made, then 429 quota_exceeded" "$(cat "$tmp/cap.out")" "31 ['quota_exceeded']"

# -- revoked
sdk revoke "$TOKEN_A" "$SB" "$SID"
is "sessions.revoke: 200, its state revoked" "$(sj 'o["status"], o["body"]["id"] == "'"$SID"'", o["body"]["state"]')" "200 True revoked"
ORIGIN=$APP sdk exec "$SESS" "$SB" true
is "… its next request: 401, CORS still for its page" \
    "$(sj 'o["status"], o["body"]["error"]["code"], o["h"].get("access-control-allow-origin")')" "401 unauthorized $APP"
sdk list "$TOKEN_A" "$SB"
is "… still listed, revoked" "$(sj '[s["state"] for s in o["body"]["data"] if s["id"] == "'"$SID"'"]')" "['revoked']"

# -- expired
TOKEN_FILE=$tmp/short.token sdk create "$TOKEN_A" "$SB2" '{"ttlSeconds": 1}'
SHORT=$(cat "$tmp/short.token")
until_s=$(sj '__import__("datetime").datetime.fromisoformat(o["body"]["expiresAt"].replace("Z", "+00:00")).timestamp()')
until python3 -c "import sys, time; sys.exit(time.time() <= $until_s + 1)"; do sleep 0.2; done
sdk exec "$SHORT" "$SB2" true
is "a session past its expiresAt: 401" "$(sj 'o["status"], o["body"]["error"]["code"], "expired" in o["body"]["error"]["message"]')" "401 unauthorized True"
sdk list "$TOKEN_A" "$SB2"
is "… listed as expired" "$(sj '[s["state"] for s in o["body"]["data"]]')" "['expired']"

# -- its token removed
TOKEN_C=$(runtime token create tenant-c62 2>"$tmp/err" | tail -1)
sdk raw "$TOKEN_C" POST /v1/sandboxes '{"vcpu": 1, "memoryMiB": 512, "timeoutSeconds": 600}'
SBC=$(sj 'o["body"]["id"]')
TOKEN_FILE=$tmp/c.token sdk create "$TOKEN_C" "$SBC" '{}'
SESS_C=$(cat "$tmp/c.token")
API_TIMEOUT=60 API_TOKEN=$TOKEN_C api GET "/v1/sandboxes/$SBC?waitFor=running&timeoutSeconds=60" >/dev/null
sdk exec "$SESS_C" "$SBC" true
is "a session of token C: works" "$(sj 'o["status"]')" 200
runtime token rm tenant-c62 >/dev/null 2>&1
sdk exec "$SESS_C" "$SBC" true
is "… after runtime token rm: 401, its token removed" \
    "$(sj 'o["status"], "removed" in o["body"]["error"]["message"]')" "401 True"

sdk exec "rtsess_$(head -c 40 /dev/zero | tr '\0' a)" "$SB" true
is "a made-up session token: 401" "$(sj 'o["status"], o["body"]["error"]["code"]')" "401 unauthorized"

# -- the server restarted: every session ended
TOKEN_FILE=$tmp/live.token sdk create "$TOKEN_A" "$SB2" '{}'
LIVE=$(cat "$tmp/live.token")
serve_stop TERM
serve_start
sdk exec "$LIVE" "$SB2" true
is "a live session after the server restarted: 401" "$(sj 'o["status"]')" 401
sdk exec "$TOKEN_A" "$SB2" true
is "… the token itself still works" "$(sj 'o["status"]')" 200
