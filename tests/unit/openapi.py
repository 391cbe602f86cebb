#!/usr/bin/env python3
"""openapi.py - GET /v1/openapi.json of a real `runtime serve` (no VM)
against the server itself: every route of libruntime/api/routes.c is in
the document and every path of the document is a route; every GET and
PUT refuses a query parameter it does not document and takes those it
does; and for each
documented body the server refuses what the schema refuses (an unknown
field, each field of the wrong type) and takes each documented field.
Bodies are checked before anything is looked up or made, so the
sandboxes named need not exist.  Usage: openapi.py RUNTIME ROUTES_C"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from taplib import done, ok

RUNTIME, ROUTES = sys.argv[1], sys.argv[2]


def call(port, method, path, body=None, token=None):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method,
                                 data=None if body is None else json.dumps(body).encode())
    if token:
        req.add_header("Authorization", "Bearer " + token)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def routes_of_source():
    """(METHOD, pattern) of each row of the route table."""
    text = open(ROUTES).read()
    sb = re.search(r'#define SB "([^"]+)"', text).group(1)
    rows = re.findall(r'\{ EVHTTP_REQ_(\w+), (SB)?\s*(?:"([^"]*)")?', text)
    return [(m.lower(), (sb if s else "") + (p or "")) for m, s, p in rows]


def matches(pattern, path):
    rx = "^" + re.sub(r"\\\{[a-z]+\\\}", "[^/:]+", re.escape(pattern)) + "$"
    return re.match(rx, path) is not None


WRONG = {"string": 5, "integer": "x", "number": "x", "boolean": "x", "array": 5, "object": 5}
RIGHT = {"string": "s", "integer": 1, "number": 1.5, "boolean": True, "array": [], "object": {}}


def concrete(path):
    return path.replace("{id}", "sb-000000000000").replace("{name}", "OPENAPI_T").replace("{pid}", "1")


def issues(ans):
    return sorted(i["path"] for i in (((ans or {}).get("error") or {}).get("details") or {}).get("issues", []))


def main():
    data = tempfile.mkdtemp(prefix="rt-openapi.")
    env = dict(os.environ, RUNTIME_DATA_DIR=data, RUNTIME_STATE_DIR=data + "/state")
    try:
        # Every route's query check is a request: past the default 50 a second.
        token = subprocess.run([RUNTIME, "token", "create", "t", "--rate", "1000"], env=env, capture_output=True, text=True,
                               check=True).stdout.strip()
        log = open(data + "/serve.log", "w+")
        p = subprocess.Popen([RUNTIME, "serve", "--listen", "127.0.0.1:0"], env=env, stderr=log)
        port = None
        for _ in range(100):
            log.seek(0)
            got = [l for l in log.read().splitlines() if "listening on" in l]
            if got:
                port = int(got[0].rsplit(":", 1)[1])
                break
            time.sleep(0.05)
        if port is None:
            p.kill()
            raise SystemExit("Bail out! runtime serve did not start")
        try:
            st, doc = call(port, "GET", "/v1/openapi.json")
            ok(st == 200 and doc.get("openapi") == "3.1.0", "GET /v1/openapi.json without a token: OpenAPI 3.1", st)
            paths = doc.get("paths", {})
            table = routes_of_source()
            ok(len(table) > 30, "the route table read from routes.c (%d routes)" % len(table))
            missing = [(m, pat) for m, pat in table
                       if not any(m in ops and (path == pat or ("{verb}" in pat and matches(pat, path)))
                                  for path, ops in paths.items())]
            ok(not missing, "every route is in the document", missing)
            stray = [(m, path) for path, ops in paths.items() for m in ops
                     if not any(tm == m and matches(tp, path) for tm, tp in table)]
            ok(not stray, "every operation of the document is a route", stray)
            ok(paths.get("/v1/health", {}).get("get", {}).get("security") == []
               and doc.get("security") == [{"token": []}], "health and the document need no token, the rest one")
            bodies = [(m, path, op["requestBody"]["content"]["application/json"]["schema"])
                      for path, ops in paths.items() for m, op in ops.items() if "requestBody" in op]
            ok(len(bodies) >= 15, "bodies documented: %d" % len(bodies))
            for m, path, schema in bodies:
                where = "%s %s" % (m.upper(), path)
                ok(schema.get("additionalProperties") is False, where + ": no other fields")
                st, ans = call(port, m.upper(), concrete(path), {"zzUnknown": 1}, token)
                ok(st == 400 and issues(ans) == ["zzUnknown"], where + ": the server refuses an unknown field", ans)
                props = schema.get("properties", {})
                typed = {k: v["type"] for k, v in props.items() if "type" in v}
                if typed:
                    st, ans = call(port, m.upper(), concrete(path), {k: WRONG[t] for k, t in typed.items()}, token)
                    ok(st == 400 and issues(ans) == sorted(typed), where + ": each field of the wrong type refused",
                       (sorted(typed), ans))
                right = {k: RIGHT.get(v.get("type"), None) for k, v in props.items()}
                right["zzUnknown"] = 1
                st, ans = call(port, m.upper(), concrete(path), right, token)
                ok(st == 400 and issues(ans) == ["zzUnknown"], where + ": each documented field taken", ans)
            # Query parameters: those documented are taken, any other refused
            # by name (docs/API.md, "Transport"), on every GET and PUT.
            queried = [(m, path, [q["name"] for q in op.get("parameters", []) if q["in"] == "query"])
                       for path, ops in paths.items() for m, op in ops.items() if m in ("get", "put")]
            ok(sum(1 for _, _, qs in queried if qs) >= 12, "query parameters documented on %d routes"
               % sum(1 for _, _, qs in queried if qs))
            for m, path, qs in queried:
                where = "%s %s" % (m.upper(), path)
                st, ans = call(port, m.upper(), concrete(path) + "?zzUnknown=1", None, token)
                msg = ((ans or {}).get("error") or {}).get("message", "")
                ok(st == 400 and "unknown query parameter 'zzUnknown'" in msg, where + ": an unknown one refused", ans)
                if qs:
                    st, ans = call(port, m.upper(), concrete(path) + "?" + "&".join(q + "=1" for q in qs), None, token)
                    msg = ((ans or {}).get("error") or {}).get("message", "")
                    ok("unknown query parameter" not in msg, where + ": each documented one taken", ans)
        finally:
            p.terminate()
            p.wait()
    finally:
        shutil.rmtree(data, ignore_errors=True)
    done()


main()
