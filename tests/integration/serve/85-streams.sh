# 85-streams.sh - exec streams (NDJSON) that break: cut mid-way and resumed
# by cursor with no byte lost or repeated (by hand at a cursor inside an
# event, and by rtapi through a proxy that cuts the connection mid-line);
# the server killed -9 mid-stream and started again; SIGTERM mid-stream
# (a `continue` event, exit 0, sandboxes left running, a new server serving
# them).  All on the shared sandbox $SB.

# The guest's program: stdout and stderr lines, paced; what it writes is
# known here, so every byte is checked.
cat >"$tmp/stream.py" <<'EOF'
import json, os, socket, sys, threading, time
sys.path.insert(0, os.environ["RTAPI_DIR"])
import rtapi

SB, API, TOKEN = os.environ["SB"], os.environ["API"], os.environ["TOKEN_A"]
N = int(os.environ.get("LINES", "300"))
PROG = ("import sys, time\n"
        "for i in range(%d):\n"
        "    print('line %%05d' %% i, flush=True)\n"
        "    if i %% 3 == 0:\n"
        "        print('err %%05d' %% i, file=sys.stderr, flush=True)\n"
        "    time.sleep(%s)\n" % (N, os.environ.get("PACE", "0.02")))
OUT = "".join("line %05d\n" % i for i in range(N)).encode()
ERR = "".join("err %05d\n" % i for i in range(N) if i % 3 == 0).encode()
BODY = {"argv": ["python3", "-c", PROG], "timeoutMs": 120000}


def check(evs):
    """[stdout ok, stderr ok, offsets contiguous from 0, exit code, gaps]."""
    out = b"".join(e["bytes"] for e in evs if e["type"] == "stdout")
    err = b"".join(e["bytes"] for e in evs if e["type"] == "stderr")
    pos, contiguous = 0, True
    for e in evs:
        if e["type"] in ("stdout", "stderr"):
            contiguous &= e["offset"] == pos
            pos = e["offset"] + len(e["bytes"])
    ex = [e for e in evs if e["type"] == "exit"]
    return [out == OUT, err == ERR, contiguous, ex[0].get("exitCode") if ex else None,
            sum(e["type"] == "gap" for e in evs)]


def by_hand():
    """Read the stream raw to about 600 bytes, drop the connection, follow
    from 7 bytes before the last byte seen (inside an event)."""
    c = rtapi.Client(API, TOKEN)
    r = c.send("POST", "/v1/sandboxes/%s:exec" % SB, dict(BODY, stream=True), accept=rtapi.NDJSON, stream=True)
    first, pid, seen, head = [], None, 0, None
    for ev in rtapi._lines(r.raw):
        first.append(ev)
        if ev["type"] == "start":
            pid = ev["processId"]
            head = ev
        elif ev["type"] in ("stdout", "stderr"):
            seen = ev["offset"] + len(ev["data"].encode())
            if seen >= 600:
                break
    r.close()
    cursor = seen - 7
    kept = []
    for ev in first:
        if ev["type"] in ("stdout", "stderr"):
            b = ev["data"].encode()[: max(0, cursor - ev["offset"])]
            if b:
                kept.append(dict(ev, bytes=b))
    r = c.send("GET", "/v1/sandboxes/%s/processes/%s/output" % (SB, pid),
               query={"cursor": cursor, "follow": "true"}, accept=rtapi.NDJSON, stream=True)
    rest = []
    for ev in rtapi._lines(r.raw):
        if ev["type"] in ("stdout", "stderr"):
            ev = dict(ev, bytes=ev["data"].encode())
        rest.append(ev)
        if ev["type"] == "exit":
            break
    r.close()
    firstdata = [e for e in rest if e["type"] in ("stdout", "stderr")][:1]
    print(json.dumps({"start": head is not None and bool(pid), "cut_at": seen, "cursor": cursor,
                      "resumed_at": firstdata[0]["offset"] if firstdata else None,
                      "check": check(kept + rest)}))


def proxy(port_file, cut_after):
    """A loopback proxy to the server; the first connection's answer is cut
    after @cut_after bytes (mid-line), later ones pass whole."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(8)
    host, port = API.split("//")[1].split(":")
    conns = [0]

    def pipe(a, b, limit):
        n = 0
        try:
            while True:
                d = a.recv(4096)
                if not d:
                    break
                if limit is not None and n + len(d) >= limit:
                    b.sendall(d[: limit - n])
                    break
                b.sendall(d)
                n += len(d)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def serve():
        while True:
            cl, _ = ls.accept()
            conns[0] += 1
            up = socket.create_connection((host, int(port)))
            threading.Thread(target=pipe, args=(cl, up, None), daemon=True).start()
            threading.Thread(target=pipe, args=(up, cl, cut_after if conns[0] == 1 else None), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return "http://127.0.0.1:%d" % ls.getsockname()[1], conns


def follow(base, progress=None):
    """rtapi's exec stream, resumed by rtapi itself; progress: a file the
    bytes seen are written to as they come."""
    c = rtapi.Client(base, TOKEN)
    evs = []
    for ev in c.exec_stream(SB, BODY):
        evs.append(ev)
        if progress and ev["type"] in ("stdout", "stderr"):
            with open(progress, "w") as f:
                f.write("%d\n" % (ev["offset"] + len(ev["bytes"])))
    return evs


mode = sys.argv[1]
if mode == "by-hand":
    by_hand()
elif mode == "proxy":
    base, conns = proxy(None, int(sys.argv[2]))
    evs = follow(base)
    print(json.dumps({"check": check(evs), "connections": conns[0],
                      "resumed": sum(1 for e in evs if e.get("resumed"))}))
else:  # follow PROGRESS: through the server straight, while the test kills it
    evs = follow(API, sys.argv[2])
    print(json.dumps({"check": check(evs), "resumed": sum(1 for e in evs if e.get("resumed")),
                      "continue": sum(1 for e in evs if e["type"] == "continue")}))
EOF
stream() { SB=$SB python3 "$tmp/stream.py" "$@"; }
sj() { json_get "$1" <"$tmp/stream.out" 2>&1; }
# whole DESC: the last stream's stdout and stderr were whole, its offsets
# contiguous, no gap, exit 0.
whole() {
    is "$1" "$(sj 'o["check"]')" "[True, True, True, 0, 0]"
    [ "$(sj 'o["check"]')" = "[True, True, True, 0, 0]" ] || diag "$(tail -5 "$tmp/stream.out" "$tmp/stream.err")"
}

# -- by hand: the server's cursor
stream by-hand >"$tmp/stream.out" 2>"$tmp/stream.err"
is "exec stream: a start event with the processId" "$(sj 'o["start"]')" True
is "… cut after $(sj 'o["cut_at"]') bytes, followed from 7 bytes before: the first event starts at the cursor" \
    "$(sj 'o["resumed_at"] == o["cursor"]')" True
whole "… stdout and stderr whole, offsets contiguous, no gap, exit 0"

# -- rtapi through a proxy that cuts the first answer mid-line
stream proxy 1500 >"$tmp/stream.out" 2>"$tmp/stream.err"
whole "rtapi, the stream cut mid-line by a proxy: resumed, nothing lost or repeated"
check "… over a second connection ($(sj 'o["connections"]') in all, $(sj 'o["resumed"]') events after the cut)" \
    test "$(sj 'o["connections"] >= 2 and o["resumed"] > 0')" = True

# mid_stream SIGNAL WHAT: rtapi follows an exec stream (in the background,
# $client) while the server gets SIGNAL once 500 bytes came.
mid_stream() {
    local i
    rm -f "$tmp/progress"
    LINES=400 PACE=0.03 stream follow "$tmp/progress" >"$tmp/stream.out" 2>"$tmp/stream.err" &
    client=$!
    for i in $(seq 600); do
        [ "$(cat "$tmp/progress" 2>/dev/null || echo 0)" -ge 500 ] 2>/dev/null && break
        sleep 0.1
    done
    check "$2 mid-stream: the client had bytes first" test "$i" -lt 600
    serve_stop "$1"
}

# -- kill -9 of the server mid-stream, then a new one
api GET "/v1/sandboxes?limit=100" >/dev/null
before=$(bj 'sorted((s["id"], s["state"]) for s in o["data"])')
mid_stream KILL "kill -9"
is "… the server died of SIGKILL" "$serve_rc" 137
sleep 1
serve_start
wait "$client"
whole "… the client resumed from the new server: every byte once, in order"
check "… after a reconnect ($(sj 'o["resumed"]') events after it)" test "$(sj 'o["resumed"] > 0')" = True
api GET "/v1/sandboxes?limit=100" >/dev/null
is "… the same sandboxes, in the same states" "$(bj 'sorted((s["id"], s["state"]) for s in o["data"])')" "$before"

# -- SIGTERM mid-stream: a continue event, exit 0, sandboxes left running
mid_stream TERM SIGTERM
is "… the server exits 0" "$serve_rc" 0
is "… its sandbox still runs without it (the CLI says)" "$(runtime sandbox get "$SB" --json 2>&1 | json_get 'o["state"]' 2>&1)" running
serve_start
wait "$client"
is "… the stream ended with a continue event" "$(sj 'o["continue"]')" 1
whole "… followed on the new server: every byte once, in order"
api POST "/v1/sandboxes/$SB:exec" '{"argv": ["echo", "still here"]}' >/dev/null
is "… and it serves the sandbox: exec" "$status $(bj 'o["stdout"]')" "200 still here"
