# 95-limits.sh - one token cannot hold every worker: 70 requests of
# tenant A that each wait (waitFor=stopped on a running sandbox, 4 s) sent
# at once get exactly 64 answers after their wait (200, still running)
# and 6 refusals at once (429 rate_limited, Retry-After), while tenant B
# is answered at once meanwhile; after the waits A is served again.

python3 - "$SB" >"$tmp/limits.json" 2>"$tmp/limits.err" <<'EOF2'
import concurrent.futures, json, os, sys, threading, time
sys.path.insert(0, os.environ["RTAPI_DIR"])
import rtapi

sb = sys.argv[1]
start = threading.Barrier(70)


def waiter(_):
    c = rtapi.Client(os.environ["API"], os.environ["TOKEN_A"], retries=0, timeout=60)
    start.wait()
    t = time.monotonic()
    r = c.send("GET", "/v1/sandboxes/" + sb, query={"waitFor": "stopped", "timeoutSeconds": 4})
    body = r.json()
    return {"status": r.status, "s": time.monotonic() - t, "retry": r.headers.get("retry-after"),
            "code": body.get("error", {}).get("code"), "state": body.get("state")}


with concurrent.futures.ThreadPoolExecutor(71) as pool:
    futs = [pool.submit(waiter, i) for i in range(70)]
    time.sleep(1.5)
    b = rtapi.Client(os.environ["API"], os.environ["TOKEN_B"], retries=0, timeout=60)
    t = time.monotonic()
    rb = b.send("GET", "/v1/sandboxes", query={"limit": 1})
    b_s = time.monotonic() - t
    res = [f.result() for f in futs]
a = rtapi.Client(os.environ["API"], os.environ["TOKEN_A"], retries=0, timeout=60)
after = a.send("GET", "/v1/sandboxes/" + sb).status
print(json.dumps({"res": res, "b_status": rb.status, "b_s": b_s, "after": after}))
EOF2
limits=$(cat "$tmp/limits.json")
[ -n "$limits" ] || diag "$(tail -5 "$tmp/limits.err")"
lim() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); print($2)" "$limits" 2>/dev/null; }
is "64 of A's 70 waiting requests are let in and answered after their wait" \
    "$(lim "$limits" "sum(1 for r in d['res'] if r['status'] == 200 and r['state'] == 'running' and r['s'] > 3)")" "64"
is "the other 6 are refused at once: 429 rate_limited with Retry-After" \
    "$(lim "$limits" "sum(1 for r in d['res'] if r['status'] == 429 and r['code'] == 'rate_limited' and r['retry'] and r['s'] < 3)")" "6"
is "tenant B is answered meanwhile, at once" "$(lim "$limits" "d['b_status'] == 200 and d['b_s'] < 3")" "True"
is "A is served again once its waits ended" "$(lim "$limits" "d['after']")" "200"
