# 90-load.sh - 100 concurrent clients (4 processes of 25 threads, each
# with its own keep-alive connection, tenant A's token, no retries) for
# LOAD_SECONDS (30) against 8 shared sandboxes (fewer when the machine has
# not ~8 GiB free: said in a diag), on loopback only.  A mix of
# GET /v1/sandboxes/{id} (85 %), the list (10 %) and exec of echo (5 %);
# every answer is checked: 200 with the right body, or 429 rate_limited
# with Retry-After (then the client waits it, as a client should).

avail_mib=$(($(sed -n 's/^MemAvailable:[[:space:]]*\([0-9]*\) kB/\1/p' /proc/meminfo) / 1024))
nload=8
if [ "$avail_mib" -lt 8192 ]; then
    nload=4
    diag "only $avail_mib MiB available: the load runs against $nload sandboxes, not 8"
fi
load_ids=$(sandboxes "$nload" | tr '\n' ' ')
is "$nload shared sandboxes running for the load" "$(wc -w <<<"$load_ids")" "$nload"
rss_idle=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$serve_pid/status")

LOAD_IDS=$load_ids python3 - "${LOAD_SECONDS:-30}" >"$tmp/load.json" 2>"$tmp/load.err" <<'EOF'
import concurrent.futures, json, os, random, sys, threading, time, uuid
sys.path.insert(0, os.environ["RTAPI_DIR"])
import rtapi

IDS = os.environ["LOAD_IDS"].split()
SECONDS = float(sys.argv[1])
PROCS, THREADS = 4, 25


def client(deadline, res, lock):
    c = rtapi.Client(os.environ["API"], os.environ["TOKEN_A"], retries=0, timeout=60)
    rnd = random.Random()
    while time.monotonic() < deadline:
        sid, p = rnd.choice(IDS), rnd.random()
        t = time.monotonic()
        try:
            if p < 0.85:
                kind = "get"
                r = c.send("GET", "/v1/sandboxes/" + sid)
                good = lambda o: o["id"] == sid and o["kind"] == "sandbox" and o["state"] == "running"
            elif p < 0.95:
                kind = "list"
                r = c.send("GET", "/v1/sandboxes", query={"limit": 100})
                good = lambda o: set(IDS) <= {s["id"] for s in o["data"]}
            else:
                kind, word = "exec", uuid.uuid4().hex
                r = c.send("POST", "/v1/sandboxes/%s:exec" % sid, {"argv": ["echo", word], "timeoutMs": 60000})
                good = lambda o: o["exitCode"] == 0 and o["stdout"] == word + "\n"
        except Exception as e:
            with lock:
                res["transport"] += 1
                res["samples"].append("%s: %r" % (kind, e))
            c = c.clone()
            continue
        ms = (time.monotonic() - t) * 1000
        wait = 0
        with lock:
            if r.status == 200:
                try:
                    fine = good(r.json())
                except Exception:
                    fine = False
                res["ok"] += fine
                if not fine:
                    res["wrong"] += 1
                    res["samples"].append("%s 200: %.300r" % (kind, r.body))
                if kind == "get":
                    res["get_ms"].append(ms)
                res[kind] += 1
            elif r.status == 429:
                ra = r.headers.get("retry-after", "")
                code = (r.json() or {}).get("error", {}).get("code")
                if ra.isdigit() and int(ra) >= 1 and code == "rate_limited":
                    res["429"] += 1
                    wait = int(ra)
                else:
                    res["wrong"] += 1
                    res["samples"].append("%s 429 Retry-After %r code %r" % (kind, ra, code))
            else:
                res["wrong"] += 1
                res["samples"].append("%s %d: %.300r" % (kind, r.status, r.body))
        if wait:
            time.sleep(min(wait, max(0, deadline - time.monotonic())))
    c.close()


def proc(deadline):
    res = {"ok": 0, "wrong": 0, "transport": 0, "429": 0, "get": 0, "list": 0, "exec": 0, "get_ms": [],
           "samples": []}
    lock = threading.Lock()
    ts = [threading.Thread(target=client, args=(deadline, res, lock)) for _ in range(THREADS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return res


start = time.monotonic()
deadline = start + SECONDS
with concurrent.futures.ProcessPoolExecutor(PROCS) as pool:
    parts = list(pool.map(proc, [deadline] * PROCS))
took = time.monotonic() - start
tot = {k: sum(p[k] for p in parts) for k in ("ok", "wrong", "transport", "429", "get", "list", "exec")}
ms = sorted(x for p in parts for x in p["get_ms"])
tot["rps"] = round((tot["ok"] + tot["429"]) / took)
tot["get_p50_ms"] = round(ms[len(ms) // 2], 1) if ms else None
tot["get_p99_ms"] = round(ms[int(len(ms) * 0.99)], 1) if ms else None
tot["samples"] = [s for p in parts for s in p["samples"]][:5]
tot["clients"] = PROCS * THREADS
print(json.dumps(tot))
EOF
rss_load=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$serve_pid/status" 2>/dev/null)
lj() { json_get "$1" <"$tmp/load.json" 2>&1; }
diag "load: $(lj 'o["clients"]') clients, ${LOAD_SECONDS:-30} s: $(lj 'o["ok"]') right 200s (get $(lj 'o["get"]'), list $(lj 'o["list"]'), exec $(lj 'o["exec"]')), $(lj 'o["429"]') 429s, $(lj 'o["rps"]') answers/s, GET p50 $(lj 'o["get_p50_ms"]') ms p99 $(lj 'o["get_p99_ms"]') ms; server RSS ${rss_idle:-?} kB idle, ${rss_load:-?} kB after"
is "load: every answer a right 200 or a 429 with Retry-After (wrong, transport errors)" \
    "$(lj '[o["wrong"], o["transport"]]')" "[0, 0]"
[ "$(lj '[o["wrong"], o["transport"]]')" = "[0, 0]" ] || diag "$(lj 'o["samples"]')" "$(tail -3 "$tmp/load.err")"
check "… and work got done: at least 1000 right 200s, execs among them" \
    test "$(lj 'o["ok"] >= 1000 and o["exec"] > 0')" = True
check "… the server still runs" kill -0 "$serve_pid"
api GET "/v1/sandboxes?limit=100" >/dev/null
is "… its sandboxes all still running" "$(bj "sorted(s['state'] for s in o['data'] if s['id'] in '$load_ids'.split())" 2>&1)" \
    "$(python3 -c "print(['running'] * $nload)")"
