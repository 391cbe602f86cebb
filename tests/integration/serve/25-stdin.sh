# 25-stdin.sh - a background process's stdin and pty over HTTP on the
# shared sandbox $SB: stdinMode "pipe" with :write at offsets (text and
# base64, a retry never repeated, the end), ProcessInfo's stdinOpen and
# stdinOffset, a pty with :resize seen by `stty size`, and hostile input
# (offsets past the end or missing, a pid of no process, another tenant's
# process, a write to a process without a pipe).
X=/v1/sandboxes/$SB

# The flow through rtapi (its retries and idempotency keys on every call).
cat >"$tmp/stdin-flow.py" <<'PY'
import base64, json, os, sys
sys.path.insert(0, os.environ["RTAPI_DIR"])
import rtapi

c = rtapi.Client(os.environ["API"], os.environ["TOKEN_A"])
X = "/v1/sandboxes/%s" % os.environ["SB"]
p = c.call("POST", X + "/processes", {"argv": ["cat"], "stdinMode": "pipe"})
pid = p["id"]
out = [p["stdinOpen"], p["stdinOffset"], p["pty"]]
out.append(c.call("POST", X + "/processes/%s:write" % pid, {"data": "one\n", "offset": 0}))
out.append(c.call("POST", X + "/processes/%s:write" % pid,
                  {"base64": base64.b64encode("two\né\n".encode()).decode(), "offset": 4}))
# The same bytes again and some more: only the new ones are taken.
out.append(c.call("POST", X + "/processes/%s:write" % pid, {"data": "two\n", "offset": 4}))
out.append(c.call("POST", X + "/processes/%s:write" % pid,
                  {"base64": base64.b64encode("é\nthree\n".encode()).decode(), "offset": 8}))
info = c.call("GET", X + "/processes/%s" % pid)
out.append([info["stdinOpen"], info["stdinOffset"]])
out.append(c.call("POST", X + "/processes/%s:write" % pid, {"offset": 17, "eof": True}))
seen = b"".join(e.get("bytes", b"") for e in c.output(os.environ["SB"], pid) if e["type"] == "stdout")
info = c.call("GET", X + "/processes/%s" % pid)
out += [seen.decode("utf-8", "replace"), info["state"], info["exitCode"], info["stdinOpen"], info["stdinOffset"]]
print(json.dumps(out))
PY
is "pipe: three writes (one retried with more), then the end; every byte once" \
    "$(SB=$SB python3 "$tmp/stdin-flow.py" 2>&1)" \
    '[true, 0, null, {"offset": 4}, {"offset": 11}, {"offset": 11}, {"offset": 17}, [true, 17], {"offset": 17}, "one\ntwo\n\u00e9\nthree\n", "exited", 0, false, 17]'

api POST "$X/processes" '{"argv":["sleep","300"],"stdinMode":"pipe"}' >/dev/null
pid=$(bj 'o["id"]')
is "spawn with a pipe: stdinOpen at 0" "$status $(bj '[o["stdinOpen"], o["stdinOffset"], o["pty"]]')" "201 [True, 0, None]"
api POST "$X/processes/$pid:write" '{"data":"abc","offset":0}' >/dev/null
api POST "$X/processes/$pid:write" '{"data":"x","offset":9}' >/dev/null
is "an offset past the end: 409 invalid_offset naming where it is" \
    "$status $(bj '[o["error"]["code"], "at 3" in o["error"]["message"]]')" "409 ['invalid_offset', True]"
api POST "$X/processes/$pid:write" '{"data":"x"}' >/dev/null
is "no offset: 400, named" "$status $(bj '[o["error"]["code"], "offset" in o["error"]["message"]]')" \
    "400 ['invalid_request', True]"
api POST "$X/processes/$pid:write" '{"data":"x","base64":"eA==","offset":3}' >/dev/null
is "data and base64 both: 400" "$status" "400"
api POST "$X/processes/$pid:write" '{"base64":"!!","offset":3}' >/dev/null
is "base64 that is not: 400" "$status" "400"
api POST "$X/processes/$pid:write" '{"data":"x","offset":-1}' >/dev/null
is "a negative offset: 400" "$status" "400"
api POST "$X/processes/$pid:write" '{"data":"x","offset":3,"bogus":1}' >/dev/null
is "an unknown field: 400, named" "$status $(bj '[i["path"] for i in o["error"]["details"]["issues"]]')" "400 ['bogus']"
api POST "$X/processes/99999:write" '{"data":"x","offset":0}' >/dev/null
is "a pid of no process: 404" "$status $(bj 'o["error"]["code"]')" "404 not_found"
{
    API_TOKEN=$TOKEN_B api POST "$X/processes/$pid:write" '{"data":"x","offset":3}' >/dev/null
    echo "$status $(bj 'o["error"]["code"]')"
    API_TOKEN=$TOKEN_B api POST "$X/processes/$pid:resize" '{"cols":10,"rows":10}' >/dev/null
    echo "$status $(bj 'o["error"]["code"]')"
} >"$tmp/other"
is "another tenant's process: 404 for :write and :resize" "$(sort -u "$tmp/other")" "404 not_found"
api GET "$X/processes/$pid" >/dev/null
is "… which took nothing from it" "$(bj 'o["stdinOffset"]')" 3
api POST "$X/processes/$pid:resize" '{"cols":10,"rows":10}' >/dev/null
is ":resize of a process without a pty: 400" "$status $(bj 'o["error"]["code"]')" "400 usage"
api POST "$X/processes/$pid:signal" '{"signal":"SIGKILL"}' >/dev/null
for _ in $(seq 50); do api GET "$X/processes/$pid" >/dev/null; [ "$(bj 'o["state"]')" = running ] || break; sleep 0.1; done
api POST "$X/processes/$pid:write" '{"data":"x","offset":3}' >/dev/null
is "a write to an ended process: 409 stdin_closed" "$status $(bj 'o["error"]["code"]')" "409 stdin_closed"

# A pty: its size at start, then a resize, seen by stty; input echoed.
api POST "$X/processes" '{"argv":["bash","-c","stty size; read l; stty size; echo got $l"],"stdinMode":"pipe","pty":{"cols":80,"rows":24}}' >/dev/null
pt=$(bj 'o["id"]')
is "spawn on a pty: ProcessInfo's pty" "$status $(bj '[o["pty"], o["stdinOpen"]]')" "201 [{'cols': 80, 'rows': 24}, True]"
for _ in $(seq 100); do api GET "$X/processes/$pt/output" >/dev/null; grep -q '24 80' <<<"$body" && break; sleep 0.1; done
api POST "$X/processes/$pt:resize" '{"cols":100,"rows":30}' >/dev/null
is ":resize: {}" "$status $body" "200 {}"
api POST "$X/processes/$pt:resize" '{"cols":1001,"rows":30}' >/dev/null
is ":resize out of range: 400" "$status" "400"
api GET "$X/processes/$pt" >/dev/null
is "… ProcessInfo shows the new size" "$(bj 'o["pty"]')" "{'cols': 100, 'rows': 30}"
api POST "$X/processes/$pt:write" '{"data":"hi\n","offset":0}' >/dev/null
api GET "$X/processes/$pt/output?follow=true" >/dev/null
is "… the program saw 24 80, then 30 100, then the line" \
    "$(python3 -c '
import json, sys
print("".join(json.loads(l).get("data", "") for l in sys.stdin if l.strip()).replace("\r", ""), end="")' <<<"$body" | grep -v "^hi$")" \
    "$(printf '24 80\n30 100\ngot hi')"
api POST "/v1/sandboxes/$SB/processes" '{"argv":["true"],"pty":{"cols":80}}' >/dev/null
is "a pty without rows: 400" "$status" "400"
api POST "/v1/sandboxes/$SB/processes" '{"argv":["true"],"pty":{"cols":80,"rows":24,"x":1}}' >/dev/null
is "a pty with an unknown field: 400, named as the body's are" \
    "$status $(bj '[i["path"] for i in o["error"]["details"]["issues"]]')" "400 ['pty.x']"
api POST "/v1/sandboxes/$SB/processes" '{"argv":["true"],"pty":{"cols":1001,"rows":24}}' >/dev/null
is "a pty past 1000 columns: 400" "$status" "400"
api POST "/v1/sandboxes/$SB/processes" '{"argv":["true"],"pty":{"cols":4294967376,"rows":24}}' >/dev/null
is "a pty of 2^32+80 columns (80 once narrowed): 400" "$status" "400"
