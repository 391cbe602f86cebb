#!/usr/bin/env python3
"""remote-stub.py - a scripted stand-in for `runtime serve` on 127.0.0.1,
for test-remote.c: it answers a few fixed routes the way docs/API.md says
(and some the way a failing server would) and records what it was sent.
Prints its port on stdout, then serves until stdin closes.  Processes 5
and 6 (spawned as "hang-all" and "hang-write") are of a server that stopped
answering: their output, :write and :resize never answer, nor 5's
:signal."""
import base64
import hashlib
import io
import json
import sys
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit, parse_qs

SB = "sb-000000000001"
seen = []          # every request: method, path, the headers that matter
tries = {}         # per path: how many times it was asked
uploads = {}       # upload id: [declared size, declared sha256, bytes]
stdin9 = [0]       # process 9's accepted stdin end (it takes 4 bytes a call)
lock = threading.Lock()
done = threading.Event()  # set at the end: the calls held forever give up


def ndjson(events):
    return b"".join(json.dumps(e).encode() + b"\n" for e in events)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", ctype="application/json", headers=(), length=None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        if length is not None:
            # A stream cut before its end: the client must resume.
            self.close_connection = True

    def obj(self, status, o, headers=()):
        self.reply(status, json.dumps(o).encode(), headers=headers)

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        url = urlsplit(self.path)
        q = parse_qs(url.query)
        with lock:
            tries[self.path] = tries.get(self.path, 0) + 1
            count = tries[self.path]
            if url.path != "/seen":
                seen.append({"method": self.command, "path": self.path,
                             "auth": self.headers.get("Authorization"),
                             "client": self.headers.get("X-Runtime-Client"),
                             "key": self.headers.get("Idempotency-Key"),
                             "prefer": self.headers.get("Prefer"),
                             "body": body[:4096].decode("utf-8", "replace").replace("\0", "")})
        p = url.path
        if p == "/seen":
            with lock:
                out = list(seen)
                seen.clear()
            return self.obj(200, out)
        if self.headers.get("Authorization") != "Bearer tok-good":
            return self.obj(401, {"error": {"code": "unauthorized", "status": 401,
                                            "message": "no such token", "hint": None}})
        if p == "/v1/sandboxes/" + SB and self.command == "GET":
            return self.obj(200, {"id": SB, "kind": "sandbox", "state": "running", "name": "a/b"})
        if p == "/v1/sandboxes/gone":
            return self.obj(200, {"id": "sb-00000000000f", "state": "stopped"})
        if p == "/v1/sandboxes/missing":
            return self.obj(404, {"error": {"code": "not_found", "status": 404,
                                            "message": "no sandbox missing", "hint": "runtime sandbox ls"}})
        if p == "/v1/sandboxes/" + SB + ":stop":
            if count <= 2:
                return self.obj(503, {"error": {"code": "unavailable", "message": "busy"}})
            return self.obj(200, {"id": SB, "state": "stopped", "replayed": True})
        if p == "/v1/sandboxes/limited":
            if count == 1:
                return self.obj(429, {"error": {"code": "rate_limited", "message": "slow down"}},
                                headers=[("Retry-After", "1")])
            return self.obj(200, {"id": "sb-000000000002", "state": "running"})
        if p == "/v1/sandboxes/overquota":
            return self.obj(429, {"error": {"code": "quota_exceeded", "message": "token t's maxSandboxes is 1",
                                            "hint": "stop or delete a sandbox of this token first"}},
                            headers=[("Retry-After", "30")])
        if p == "/v1/sandboxes/broken":
            return self.reply(502, b"<html>bad gateway</html>", ctype="text/html")
        if p == "/v1/sandboxes" and self.command == "GET":
            if "cursor" not in q:
                return self.obj(200, {"data": [{"id": "sb-a"}], "nextCursor": "c 2"})
            if q["cursor"] == ["c 2"]:
                return self.obj(200, {"data": [{"id": "sb-b"}], "nextCursor": None})
            return self.obj(400, {"error": {"code": "invalid_request", "message": "bad cursor"}})
        if p == "/v1/sandboxes/" + SB + ":exec":
            data = ndjson([{"type": "start", "processId": "7"},
                           {"type": "stdout", "data": "hello ", "offset": 0}])
            return self.reply(200, data, ctype="application/x-ndjson", length=len(data) + 100)
        if p == "/v1/sandboxes/" + SB + "/processes/7/output":
            cur = int(q.get("cursor", ["0"])[0])
            if cur == 6:
                ev = [{"type": "stdout", "data": "lo world\n", "offset": 3},
                      {"type": "continue", "processId": "7", "cursor": 12}]
            elif cur == 12:
                ev = [{"type": "stderr", "data": "err", "offset": 12},
                      {"type": "exit", "exitCode": 3, "state": "exited", "timedOut": False, "durationMs": 5}]
            else:
                ev = [{"type": "error", "error": {"code": "invalid_request", "message": "cursor %d" % cur}}]
            return self.reply(200, ndjson(ev), ctype="application/x-ndjson")
        if p == "/v1/sandboxes/" + SB + "/processes/7:signal":
            return self.obj(200, {})
        if p.startswith("/v1/sandboxes/" + SB + "/processes/5") or (
                p.startswith("/v1/sandboxes/" + SB + "/processes/6") and not p.endswith(":signal")):
            done.wait()
            self.close_connection = True
            return None
        if p == "/v1/sandboxes/" + SB + "/processes/6:signal":
            return self.obj(200, {})
        if p == "/v1/sandboxes/" + SB + "/processes" and self.command == "POST":
            pid = {"hang-all": "5", "hang-write": "6"}.get(json.loads(body)["argv"][0], "9")
            return self.obj(201, {"id": pid, "kind": "process", "state": "running", "stdinOpen": True,
                                  "stdinOffset": 0, "pty": None})
        if p == "/v1/sandboxes/" + SB + "/processes/9:write":
            return self.write9(json.loads(body))
        if p == "/v1/sandboxes/" + SB + "/processes/9:resize":
            return self.obj(200, {})
        if p == "/v1/sandboxes/" + SB + "/processes":
            return self.obj(200, {"data": [{"id": "3", "kind": "process", "state": "killed", "exitCode": 137,
                                            "command": "sleep 9", "firstOffset": 5}]})
        if p == "/v1/sandboxes/" + SB + "/files/list":
            return self.obj(200, {"data": [
                {"name": "b", "path": "/w/b", "type": "directory", "size": 4096, "mode": "755"},
                {"name": "a", "path": "/w/a", "type": "file", "size": 3, "mode": "644"},
                {"name": "l", "path": "/w/l", "type": "symlink", "size": 1, "mode": "777"}]})
        if p.startswith("/v1/images"):
            return self.images(p, q, body)
        return self.files(p[len("/v1/sandboxes/" + SB):], q, body)

    def write9(self, b):
        """Offsets as docs/API.md says; it holds 4 bytes a call at most."""
        data = base64.b64decode(b.get("base64", ""))
        with lock:
            if b["offset"] > stdin9[0]:
                return self.obj(409, {"error": {"code": "invalid_offset", "message": "the end is %d" % stdin9[0]}})
            skip = min(len(data), stdin9[0] - b["offset"])
            stdin9[0] += min(4, len(data) - skip)
            return self.obj(200, {"offset": stdin9[0]})

    def images(self, p, q, body):
        if p == "/v1/images" and self.command == "POST":
            with lock:
                seen[-1]["recipe"] = json.loads(body).get("recipe")
            return self.obj(202, {"id": "bld-1", "kind": "image", "state": "queued"})
        if p == "/v1/images/bld-1/logs":
            cur = int(q.get("cursor", ["0"])[0])
            if cur == 0:
                ev = [{"type": "log", "data": "step 1\n", "offset": 0},
                      {"type": "continue", "cursor": 7}]
                data = ndjson(ev)
                # The first answer is cut short: the client goes on from 7.
                return self.reply(200, data, ctype="application/x-ndjson", length=len(data) + 50)
            if cur == 7:
                ev = [{"type": "log", "data": "step 2\n", "offset": 7},
                      {"type": "end", "state": "ready", "imageId": "img-abc", "error": None}]
                return self.reply(200, ndjson(ev), ctype="application/x-ndjson")
        if p == "/v1/images/bld-2/logs":
            ev = [{"type": "end", "state": "failed", "imageId": None,
                   "error": {"code": "build_failed", "message": "step 'pip' failed"}}]
            return self.reply(200, ndjson(ev), ctype="application/x-ndjson")
        return self.obj(404, {"error": {"code": "image_not_found", "message": "no image " + p}})

    def files(self, p, q, body):
        path = q.get("path", [""])[0]
        if p == "/files/stat":
            if path in ("/w", "/w/", "/"):
                return self.obj(200, {"exists": True, "path": path, "type": "directory"})
            return self.obj(200, {"exists": False, "path": path})
        if p == "/files/content" and self.command == "GET":
            if path == "/w/a":
                return self.reply(200, b"abc\x00\xff", ctype="application/octet-stream")
            return self.obj(404, {"error": {"code": "file_not_found", "message": "no such file: " + path}})
        if p == "/files/content" and self.command == "PUT":
            return self.obj(200, {"path": path, "size": len(body)})
        if p == "/files/archive" and self.command == "GET":
            if path != "/w/dir":
                return self.obj(404, {"error": {"code": "file_not_found", "message": "no such file: " + path}})
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
                for name, data in (("dir", None), ("dir/a.txt", b"A\n")):
                    i = tarfile.TarInfo(name)
                    i.mtime = 0
                    if data is None:
                        i.type, i.mode = tarfile.DIRTYPE, 0o755
                        t.addfile(i)
                    else:
                        i.size, i.mode = len(data), 0o4755
                        t.addfile(i, io.BytesIO(data))
                i = tarfile.TarInfo("dir/evil")
                i.type, i.linkname = tarfile.SYMTYPE, "/etc/passwd"
                t.addfile(i)
            return self.reply(200, buf.getvalue(), ctype="application/x-tar")
        if p == "/files/archive" and self.command == "PUT":
            names = sorted(m.name for m in tarfile.open(fileobj=io.BytesIO(body)))
            with lock:
                seen[-1]["names"] = names
            return self.obj(200, {"names": names})
        if p == "/uploads":
            b = json.loads(body)
            uploads["u1"] = [b["size"], b["sha256"], bytearray()]
            return self.obj(200, {"uploadId": "u1", "chunkBytes": 1048576})
        if p == "/uploads/u1" and self.command == "PUT":
            u = uploads["u1"]
            if int(q["offset"][0]) != len(u[2]):
                return self.obj(400, {"error": {"code": "invalid_request", "message": "offset"}})
            u[2] += body
            return self.obj(200, {"offset": len(u[2])})
        if p == "/uploads/u1:commit":
            u = uploads["u1"]
            if len(u[2]) != u[0] or hashlib.sha256(u[2]).hexdigest() != u[1]:
                return self.obj(400, {"error": {"code": "upload_incomplete", "message": "size or sha256"}})
            return self.obj(200, {"path": "/w/big"})
        return self.obj(404, {"error": {"code": "not_found", "message": "no route " + p}})

    do_GET = do_POST = do_PUT = do_DELETE = handle_any


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    print(srv.server_address[1], flush=True)
    sys.stdin.read()
    done.set()
    srv.shutdown()


if __name__ == "__main__":
    main()
