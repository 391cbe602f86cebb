# 20-exec.sh - exec (JSON and NDJSON) and background processes on the
# shared sandbox $SB: output kept whole or bounded, streams whose offsets
# add up, a stream cut by its client and resumed by cursor with every byte
# once, spawn/list/get/output/follow/signal, and hostile input (unknown
# fields, bad pids and cursors, another tenant's sandbox).
X=/v1/sandboxes/$SB

api POST "$X:exec" '{"argv":["sh","-c","echo out; echo err >&2; exit 3"]}' >/dev/null
is "exec: exit code, stdout and stderr apart" \
    "$status $(bj '[o["exitCode"], o["stdout"], o["stderr"], o["timedOut"], o["stdoutTruncated"], o["processId"]]')" \
    "200 [3, 'out\\n', 'err\\n', False, False, None]"
api POST "$X:exec" '{"command":"echo $FOO; pwd; id -u","env":{"FOO":"b a r"},"cwd":"/tmp","user":"root"}' >/dev/null
is "exec: command runs in a shell, with env, cwd and user" "$status $(bj 'o["stdout"]')" "$(printf '200 b a r\n/tmp\n0\n')"
api POST "$X:exec" '{"argv":["cat"],"stdin":"hello\n"}' >/dev/null
is "exec: stdin as text" "$(bj 'o["stdout"]')" "hello"
api POST "$X:exec" '{"argv":["cat"],"stdinBase64":"AGhp/w=="}' >/dev/null
is "exec: stdinBase64, and bytes that are not UTF-8 come back as U+FFFD" "$(bj 'o["stdout"].encode("utf-8")')" \
    "b'\\x00hi\\xef\\xbf\\xbd'"
api POST "$X:exec" '{"argv":["sleep","30"],"timeoutMs":1000}' >/dev/null
is "exec: a timeout is timedOut and 124" "$status $(bj '[o["timedOut"], o["exitCode"], o["durationMs"] < 10000]')" \
    "200 [True, 124, True]"
# A flood: 6 MiB on stdout, some on stderr; the answer keeps 1 MiB of each.
api POST "$X:exec" '{"command":"head -c 6000000 /dev/zero | tr \"\\0\" a; echo tail >&2","timeoutMs":120000}' >/dev/null
is "exec: a flood is kept to 1 MiB and marked truncated" \
    "$status $(bj '[len(o["stdout"]), o["stdoutTruncated"], o["stderr"], o["stderrTruncated"], o["exitCode"]]')" \
    "200 [1048576, True, 'tail\\n', False, 0]"

# The guest's program for streams: stdout and stderr lines, paced, known
# here byte for byte.
cat >"$tmp/exec-stream.py" <<'EOF'
import http.client, json, os, sys, urllib.parse

API, TOKEN, SB = os.environ["API"], os.environ["TOKEN_A"], os.environ["SB"]
N = 300
PROG = ("import sys, time\n"
        "for i in range(%d):\n"
        "    print('line %%04d \\u00e9' %% i, flush=True)\n"
        "    if i %% 4 == 0:\n"
        "        print('err %%04d' %% i, file=sys.stderr, flush=True)\n"
        "    time.sleep(0.01)\n" % N)
OUT = "".join("line %04d \u00e9\n" % i for i in range(N)).encode()
ERR = "".join("err %04d\n" % i for i in range(N) if i % 4 == 0).encode()


def request(method, path, body=None):
    u = urllib.parse.urlsplit(API)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    c.request(method, path, json.dumps(body) if body is not None else None,
              {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json",
               "Accept": "application/x-ndjson"})
    return c, c.getresponse()


def events(resp, until=None):
    for line in resp:
        ev = json.loads(line)
        yield ev
        if until and until(ev):
            return


def check(evs):
    """Every byte once, offsets contiguous, the exit last."""
    out = b"".join(e["data"].encode() for e in evs if e["type"] == "stdout")
    err = b"".join(e["data"].encode() for e in evs if e["type"] == "stderr")
    pos, contiguous = None, True
    for e in evs:
        if e["type"] in ("stdout", "stderr"):
            contiguous &= pos is None or e["offset"] == pos
            pos = e["offset"] + len(e["data"].encode())
    return {"out": out == OUT, "err": err == ERR, "contiguous": contiguous,
            "last": [evs[-1]["type"], evs[-1].get("exitCode"), evs[-1].get("state")]}


body = {"argv": ["python3", "-c", PROG], "stream": True, "timeoutMs": 120000}
conn, r = request("POST", "/v1/sandboxes/%s:exec" % SB, body)
if sys.argv[1] == "whole":
    evs = list(events(r))
    res = check(evs)
    print(json.dumps([res, evs[0]["type"], evs[0]["processId"].isdigit(),
                      [e["offset"] for e in evs if "offset" in e][:1], r.getheader("Content-Type")], sort_keys=True))
    sys.exit(0)
# Cut: read about 2 KB, drop the connection, resume from the bytes seen.
seen, first = 0, []
for ev in events(r):
    first.append(ev)
    if ev["type"] in ("stdout", "stderr"):
        seen = ev["offset"] + len(ev["data"].encode())
        if seen >= 2000:
            break
pid = first[0]["processId"]
conn.close()
conn, r = request("GET", "/v1/sandboxes/%s/processes/%s/output?cursor=%d&follow=true" % (SB, pid, seen))
rest = list(events(r))
res = check([e for e in first if e["type"] != "start"] + rest)
res["resumed_at"] = [e["offset"] for e in rest if "offset" in e][:1] == [seen]
print(json.dumps(res, sort_keys=True))
EOF
want='{"contiguous": true, "err": true, "last": ["exit", 0, "exited"], "out": true'
is "exec stream: start, then every byte with contiguous offsets from 0, then exit" \
    "$(SB=$SB python3 "$tmp/exec-stream.py" whole 2>&1)" \
    "[$want}, \"start\", true, [0], \"application/x-ndjson\"]"
is "exec stream cut by its client mid-way: it runs on, and resumes from its cursor with every byte once" \
    "$(SB=$SB python3 "$tmp/exec-stream.py" cut 2>&1)" "$want, \"resumed_at\": true}"

# Background processes.
api POST "$X/processes" '{"command":"echo started; exec sleep 300","cwd":"/tmp","timeoutMs":600000}' >/dev/null
pid=$(bj 'o["id"]')
is "spawn: a ProcessInfo, id a decimal string" \
    "$status $(bj '[o["kind"], o["state"], o["id"].isdigit(), o["cwd"], o["timeoutMs"], o["stdinOpen"], o["startedAt"][:2]]')" \
    "201 ['process', 'running', True, '/tmp', 600000, False, '20']"
api GET "$X/processes" >/dev/null
is "list: it is there, running" "$status $(bj "[p['state'] for p in o['data'] if p['id'] == '$pid']")" "200 ['running']"
for _ in $(seq 50); do
    api GET "$X/processes/$pid" >/dev/null
    [ "$(bj 'o["outputBytes"]')" = 8 ] && break
    sleep 0.1
done
is "get: its output counted" "$status $(bj '[o["id"], o["outputBytes"], o["firstOffset"], o["endedAt"]]')" \
    "200 ['$pid', 8, 0, None]"
api GET "$X/processes/$pid/output" >/dev/null
is "output without follow: the kept bytes with offsets, no exit yet" "$status $body" \
    '200 {"type":"stdout","data":"started\n","offset":0}'
api GET "$X/processes/$pid/output?cursor=3" >/dev/null
is "output from a cursor inside a chunk" "$body" '{"type":"stdout","data":"rted\n","offset":3}'
api POST "$X/processes/$pid:signal" '{"signal":"SIGTERM"}' >/dev/null
is "signal SIGTERM: {}" "$status $body" "200 {}"
api GET "$X/processes/$pid/output?cursor=8&follow=true" >/dev/null
is "follow on a killed process ends with its exit" \
    "$status $(json_get '[o["type"], o["state"], o["signal"], o["timedOut"]]' <<<"$body")" \
    "200 ['exit', 'killed', 15, False]"
api GET "$X/processes/$pid" >/dev/null
is "get: killed, ended" "$(bj '[o["state"], o["endedAt"] is not None]')" "['killed', True]"

api POST "$X:exec" '{"argv":["true"]}' >/dev/null
api POST "$X/processes" '{"argv":["sh","-c","sleep 1; echo done; exit 4"]}' >/dev/null
pid2=$(bj 'o["id"]')
is "an :exec between two spawns takes no process number: the next is one more" "$pid2" "$((pid + 1))"
api GET "$X/processes" >/dev/null
is "… and the list has them in that order, numbered so" "$(bj "[p['id'] for p in o['data']][-2:]")" "['$pid', '$pid2']"
api GET "$X/processes/$pid2/output?follow=true" >/dev/null
is "follow from 0: the output as it comes, then exit" "$status $body" \
    "$(printf '200 {"type":"stdout","data":"done\\n","offset":0}\n{"type":"exit","exitCode":4,"state":"exited","timedOut":false,"durationMs":%s,"signal":null,"interrupted":false}' \
        "$(tail -1 <<<"$body" | json_get 'o["durationMs"]')")"

# A flood in the background: the monitor keeps its latest 1 MiB; a cursor
# older than that gets a truncated event, then the kept bytes.
api POST "$X/processes" '{"command":"head -c 3000000 /dev/urandom | base64 -w 0"}' >/dev/null
pid3=$(bj 'o["id"]')
for _ in $(seq 100); do
    api GET "$X/processes/$pid3" >/dev/null
    [ "$(bj 'o["state"]')" = exited ] && break
    sleep 0.2
done
first=$(bj 'o["firstOffset"]')
total=$(bj 'o["outputBytes"]')
api GET "$X/processes/$pid3/output?cursor=0" | python3 -c '
import json, sys
evs = [json.loads(l) for l in sys.stdin]
t = evs[0]
data = [e for e in evs if e["type"] == "stdout"]
pos, ok = t["resumeAt"], True
for e in data:
    ok &= e["offset"] == pos
    pos += len(e["data"])
print(t["type"], t["droppedBytes"] == t["resumeAt"] == '"$first"', ok, pos == '"$total"', evs[-1]["type"])' >"$tmp/flood" 2>&1
is "a flood: 4 MB made, about 1 MiB kept" "$((${total:-0} == 4000000 && ${first:-0} > 2900000))" 1
is "a cursor older than what is kept: truncated, then the kept bytes to the end" "$(cat "$tmp/flood")" \
    "truncated True True True exit"

# Hostile input.
api POST "$X:exec" '{"argv":["true"],"bogus":1,"stdin":7}' >/dev/null
is "unknown fields and wrong types: 400, each named" "$status $(bj '[i["path"] for i in o["error"]["details"]["issues"]]')" \
    "400 ['bogus', 'stdin']"
api POST "$X:exec" '{"argv":["cat"],"stdinMode":"pipe","keepStdin":true,"pty":{"cols":80,"rows":24}}' >/dev/null
is ":spawn's stdinMode, keepStdin and pty on :exec: 400, each named" \
    "$status $(bj '[i["path"] for i in o["error"]["details"]["issues"]]')" "400 ['stdinMode', 'keepStdin', 'pty']"
api POST "$X:exec" '{"argv":[]}' >/dev/null
is "an empty argv: 400" "$status $(bj 'o["error"]["code"]')" "400 invalid_request"
api POST "$X:exec" '{"argv":["true"],"command":"true"}' >/dev/null
is "both argv and command: 400" "$status $(bj 'o["error"]["code"]')" "400 invalid_request"
api POST "$X:exec" '{"argv":["true",3]}' >/dev/null
is "a non-string argument: 400" "$status" "400"
api POST "$X:exec" '{"argv":["true"],"stdinBase64":"!!!"}' >/dev/null
is "stdinBase64 that is not base64: 400" "$status" "400"
api POST "$X:exec" '{"argv":["true"],"env":{"BAD NAME":"x"}}' >/dev/null
is "a bad env name: 400 invalid_env" "$status $(bj 'o["error"]["code"]')" "400 invalid_env"
for p in abc 0 -1 99999 4294967296 "$pid%2F..%2F1"; do
    api GET "$X/processes/$p" >/dev/null
    echo "$status"
done >"$tmp/pids"
is "bad pids: 404 each" "$(sort -u "$tmp/pids")" "404"
api GET "$X/processes/$pid/output?cursor=99999999999999999999999999" >/dev/null
is "a huge cursor: 400" "$status $(bj 'o["error"]["code"]')" "400 invalid_request"
api GET "$X/processes/$pid/output?cursor=9" >/dev/null
is "a cursor past the output's end: 400" "$status $(bj 'o["error"]["code"]')" "400 invalid_request"
api GET "$X/processes/$pid/output?cursor=-1" >/dev/null
is "a negative cursor: 400" "$status" "400"
api POST "$X/processes/$pid:signal" '{"signal":"SIGBOGUS"}' >/dev/null
is "an unknown signal: 400" "$status" "400"
api POST "$X/processes" '{"argv":["cat"],"stdinMode":"socket"}' >/dev/null
is "an unknown stdinMode: 400, named" "$status $(bj '[o["error"]["code"], "stdinMode" in o["error"]["message"]]')" \
    "400 ['invalid_request', True]"
api POST "$X/processes" '{"argv":["sh"],"pty":{"cols":0,"rows":24}}' >/dev/null
is "a pty of 0 columns: 400" "$status" "400"
api POST "$X/processes/$pid:write" '{"data":"x","offset":0}' >/dev/null
is ":write to a process without a pipe: 409 stdin_closed" "$status $(bj 'o["error"]["code"]')" "409 stdin_closed"
{
    API_TOKEN=$TOKEN_B api POST "$X:exec" '{"argv":["true"]}' >/dev/null
    echo "$status $(bj 'o["error"]["code"]')"
    for path in "$X/processes" "$X/processes/$pid" "$X/processes/$pid/output?cursor=0&follow=true"; do
        API_TOKEN=$TOKEN_B api GET "$path" >/dev/null
        echo "$status $(bj 'o["error"]["code"]')"
    done
    API_TOKEN=$TOKEN_B api POST "$X/processes/$pid:signal" '{"signal":"SIGKILL"}' >/dev/null
    echo "$status $(bj 'o["error"]["code"]')"
} >"$tmp/other"
is "another tenant's sandbox: 404 not_found for exec and every process route" "$(sort -u "$tmp/other")" "404 not_found"
api GET "$X/processes/$pid" >/dev/null
is "its process was not touched" "$(bj 'o["state"]')" "killed"
api POST "/v1/sandboxes/sb-nope:exec" '{"argv":["true"]}' >/dev/null
is "exec in a missing sandbox: 404" "$status" "404"
