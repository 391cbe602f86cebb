#!/usr/bin/env python3
"""serve-limits.py - what clients without a token cost a real `runtime
serve` on 127.0.0.1 (libruntime/serve/gate.h): a 401 or 413 at the
request's head, before its body is sent, so its memory stays small; a head
dribbled past the header timeout closed; each status line has its
reason phrase ("401 Unauthorized", not "Error"); 800 half-sent requests from one
source (127.0.0.2) neither starve /v1/health nor a token's calls from
another (127.0.0.1) under a 1024-fd limit, while 60 connections at once
with a token from one source are all answered.  Keep-alive, pipelining, an
upload's Expect and TLS still work; the systemd unit raises the fd limit.
Boots nothing.  Usage: serve-limits.py RUNTIME UNIT.service.in"""
import json
import os
import resource
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from taplib import done, ok

RUNTIME, UNIT = sys.argv[1], sys.argv[2]
HEADER_TIMEOUT = 2
rest = {}  # per socket: bytes read past an answer


def start(data, extra=(), fds=1024):
    env = dict(os.environ, RUNTIME_DATA_DIR=data, RUNTIME_STATE_DIR=data + "/state",
               RUNTIME_SERVE_HEADER_TIMEOUT=str(HEADER_TIMEOUT))
    log = open(data + "/serve.log", "w+")
    p = subprocess.Popen([RUNTIME, "serve", "--listen", "127.0.0.1:0", *extra], env=env, stderr=log,
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (fds, fds)))
    for _ in range(100):
        log.seek(0)
        for line in log.read().splitlines():
            if "listening on" in line:
                return p, int(line.rsplit(":", 1)[1])
        time.sleep(0.05)
    p.kill()
    raise SystemExit("Bail out! runtime serve did not start")


def conn(port, src="127.0.0.1"):
    s = socket.socket()
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s


def answer(s, timeout):
    """The status and JSON body of one answer, (None, None) without one;
    what it read past that answer kept for the next."""
    s.settimeout(timeout)
    buf = rest.pop(s, b"")
    try:
        while b"\r\n\r\n" not in buf:
            got = s.recv(65536)
            if not got:
                return None, None
            buf += got
        top, body = buf.split(b"\r\n\r\n", 1)
        length = int([h.split(b":")[1] for h in top.split(b"\r\n") if h.lower().startswith(b"content-length:")][0])
        while len(body) < length:
            got = s.recv(65536)
            if not got:
                break
            body += got
        rest[s] = body[length:]
        return int(top.split()[1]), json.loads(body[:length] or b"null")
    except (socket.timeout, ConnectionError, ValueError, IndexError):
        return None, None


def head(method, path, token=None, extra=""):
    auth = "Authorization: Bearer %s\r\n" % token if token else ""
    return ("%s %s HTTP/1.1\r\nHost: x\r\n%s%s\r\n" % (method, path, auth, extra)).encode()


def closed(s, within):
    """True when the server closes @s within @within s."""
    s.settimeout(within)
    try:
        return s.recv(65536) == b""
    except ConnectionError:
        return True
    except socket.timeout:
        return False


def vm(pid, key):
    for line in open("/proc/%d/status" % pid):
        if line.startswith(key + ":"):
            return int(line.split()[1]) // 1024
    return -1


def bodies_first(port, pid):
    """Tokenless heads of big bodies: a 401 each before any body, RSS low."""
    big = 48 << 20
    socks = [conn(port) for _ in range(6)]
    for s in socks:
        s.sendall(head("PUT", "/v1/sandboxes/sb-x/files/archive?path=/tmp", extra="Content-Length: %d\r\n" % big))
    got = [answer(s, 1.5) for s in socks]
    ok(all(g[0] == 401 and g[1]["error"]["code"] == "unauthorized" for g in got),
       "6 tokenless heads of 48 MiB archives: each answered 401 (JSON) before its body is sent", got)
    # Without an early answer, the bodies go: the server would hold them.
    chunk = b"x" * (1 << 20)
    for s in socks:
        if got[socks.index(s)][0] is None:
            try:
                for _ in range(big >> 20):
                    s.sendall(chunk)
            except OSError:
                pass
    for s in socks:
        answer(s, 5)
        s.close()
    hwm = vm(pid, "VmHWM")
    ok(0 < hwm < 64, "… the server's peak RSS stays small (%d MiB)" % hwm)


def small_limit(port, token):
    s = conn(port)
    s.sendall(head("POST", "/v1/sandboxes", token, "Content-Type: application/json\r\nContent-Length: %d\r\n" % (2 << 20)))
    st, body = answer(s, 1.5)
    ok(st == 413 and body["error"]["code"] == "payload_too_large",
       "a token's 2 MiB body to a JSON route: 413 payload_too_large before it is sent", (st, body))
    s.close()
    s = conn(port)
    s.sendall(head("POST", "/v1/sandboxes", None, "Content-Length: %d\r\n" % (2 << 20)))
    st, body = answer(s, 1.5)
    ok(st == 401, "… without a token: 401 before it is sent", (st, body))
    s.close()
    s = conn(port)
    s.sendall(head("POST", "/v1/sandboxes", token, "Expect: 100-continue\r\nContent-Length: %d\r\n" % (2 << 20)))
    st, body = answer(s, 1.5)
    ok(st == 413, "… with Expect: 100-continue, 413 instead of 100", (st, body))
    s.close()
    s = conn(port)
    s.sendall(head("POST", "/v1/sandboxes", token, "Transfer-Encoding: chunked\r\n") + b"5\r\nhello\r\n0\r\n\r\n")
    st, body = answer(s, 1.5)
    ok(st == 400 and "chunked" in body["error"]["message"], "… a chunked body to a JSON route: 400", (st, body))
    s.close()


def status_line(port, req):
    s = conn(port)
    s.sendall(req)
    s.settimeout(2)
    buf = b""
    try:
        while b"\r\n" not in buf:
            got = s.recv(4096)
            if not got:
                break
            buf += got
    except (socket.timeout, ConnectionError):
        pass
    s.close()
    return buf.split(b"\r\n", 1)[0].decode("latin-1")


def reasons(port, token):
    """The status line's reason phrase is the status's, not "Error"."""
    for req, want in ((head("GET", "/v1/health"), "HTTP/1.1 200 OK"),
                      (head("GET", "/v1/me"), "HTTP/1.1 401 Unauthorized"),
                      (head("GET", "/v1/no-such-route", token), "HTTP/1.1 404 Not Found"),
                      (head("POST", "/v1/sandboxes", token, "Content-Length: %d\r\n" % (2 << 20)),
                       "HTTP/1.1 413 Content Too Large")):
        got = status_line(port, req)
        ok(got == want, "status line %r" % want, got)


def keep_alive(port, token):
    s = conn(port)
    s.sendall(head("GET", "/v1/me", token) * 3 + head("GET", "/v1/health") + head("GET", "/v1/me"))
    got = [answer(s, 2)[0] for _ in range(5)]
    ok(got == [200, 200, 200, 200, 401], "5 pipelined on one connection: a token's, health, then one without", got)
    ok(closed(s, 2), "… and the connection closed after that 401")
    s.close()


def dribbled(s, start, desc):
    """Sends @start then a byte every 0.4 s: ok when the server closes @s
    after the header timeout."""
    s.sendall(start)
    t0, shut = time.time(), False
    while time.time() - t0 < HEADER_TIMEOUT + 3 and not shut:
        try:
            s.sendall(b"X")
        except OSError:
            shut = True
            break
        shut = closed(s, 0.4)
    took = time.time() - t0
    ok(shut and took < HEADER_TIMEOUT + 1.5,
       "%s: closed after the %d s header timeout (%.1f s)" % (desc, HEADER_TIMEOUT, took))
    s.close()


def dribble(port):
    dribbled(conn(port), b"GET /v1/health HTTP/1.1\r\n", "a head dribbled a byte every 0.4 s")


def tokenless_bodies(port):
    """A body without a token (to no route, to health) is small and timed."""
    s = conn(port)
    s.sendall(head("POST", "/v1/health", None, "Content-Length: %d\r\n" % ((1 << 20) - 1)))
    st, body = answer(s, 1.5)
    ok(st == 413, "a tokenless 1 MiB body to a route that needs no token: 413 before it is sent", (st, body))
    s.close()
    dribbled(conn(port), head("POST", "/v1/no-such-route", None, "Content-Length: 4000\r\n") + b"x" * 100,
             "… a tokenless body dribbled")
    s = conn(port)
    s.sendall(b"\r\n\r\n" + head("GET", "/v1/health"))
    ok(answer(s, 2)[0] == 200, "empty lines before a request line are skipped (RFC 9112, 2.2)")
    s.close()


def flood(port, token, pid):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), hard))
    socks = []
    for _ in range(800):
        s = socket.socket()
        s.bind(("127.0.0.2", 0))
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        socks.append(s)
    time.sleep(0.3)
    for s in socks:
        try:
            s.send(b"POST /v1/sandboxes HTTP/1.1\r\nContent-Length: 10\r\n")
        except OSError:
            pass
    time.sleep(1.5)
    t0 = time.time()
    h = conn(port)
    h.sendall(head("GET", "/v1/health"))
    st, _ = answer(h, 3)
    took = time.time() - t0
    h.close()
    ok(st == 200 and took < 1, "800 half-sent heads from 127.0.0.2: /v1/health from 127.0.0.1 answers 200 (%.2f s)" % took)
    m = conn(port)
    m.sendall(head("GET", "/v1/me", token))
    st, _ = answer(m, 3)
    m.close()
    ok(st == 200, "… and a token's GET /v1/me too")
    # Those the paused listener left in the backlog have their second later.
    shut, left, t0 = 0, list(socks), time.time()
    while left and shut < 800 - 32 and time.time() - t0 < 3:
        r, _, _ = select.select(left, [], [], 0.5)
        shut += sum(1 for s in r if closed(s, 0))
        left = [s for s in left if s not in r]
    ok(shut >= 800 - 32 - 8, "… its connections over 32 were closed within a second (%d of 800)" % shut)
    fds = len(os.listdir("/proc/%d/fd" % pid))
    ok(fds < 150, "… the server holds %d fds" % fds)
    for s in socks:
        s.close()
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def burst(port, data):
    """Many connections at once from one source, each with its token (one
    whose rate allows them)."""
    env = dict(os.environ, RUNTIME_DATA_DIR=data)
    token = subprocess.run([RUNTIME, "token", "create", "burst", "--rate", "1000"], env=env, capture_output=True,
                           text=True, check=True).stdout.strip()
    # 60: over the cap of 32, under the 64 a token may have in flight.
    socks = [conn(port, "127.0.0.3") for _ in range(60)]
    for s in socks:
        s.sendall(head("GET", "/v1/me", token))
    got = [answer(s, 3)[0] for s in socks]
    ok(got.count(200) == 60, "60 connections at once from 127.0.0.3, each with a token: all answered 200 (%d)"
       % got.count(200), got)
    for s in socks:
        s.close()
    socks = [conn(port, "127.0.0.3") for _ in range(40)]
    for s in socks:
        s.sendall(head("GET", "/v1/health"))
    got = [answer(s, 3)[0] for s in socks]
    ok(got.count(200) == 32 and got.count(429) == 8,
       "40 tokenless at once from there: 32 answered, 8 refused 429 (%d, %d)" % (got.count(200), got.count(429)))
    for s in socks:
        s.close()


def tls(data, token):
    if shutil.which("openssl") is None or shutil.which("curl") is None:
        ok(True, "# SKIP no openssl or curl")
        return
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-keyout", data + "/key.pem", "-out", data + "/cert.pem"], check=True, capture_output=True)
    p, port = start(data, ["--tls-cert", data + "/cert.pem", "--tls-key", data + "/key.pem"])
    try:
        url = "https://127.0.0.1:%d" % port
        r = subprocess.run(["curl", "-sk", "--noproxy", "*", "-m", "5", "-H", "Authorization: Bearer " + token,
                            url + "/v1/me", url + "/v1/me", url + "/v1/health"], capture_output=True, text=True)
        ok(r.stdout.count('"name":"t"') == 2 and '"ok":true' in r.stdout, "over TLS: keep-alive calls answered",
           r.stdout + r.stderr)
        # With Expect, as curl sends it for a large body: the 401 comes
        # before the body, so no reset of a closed connection can hide it.
        r = subprocess.run(["curl", "-sk", "--noproxy", "*", "-m", "5", "-X", "PUT", "--data-binary", "@" + RUNTIME,
                            "-H", "Expect: 100-continue",
                            url + "/v1/sandboxes/sb-x/files/archive?path=/tmp"], capture_output=True, text=True)
        ok('"unauthorized"' in r.stdout, "… and a tokenless upload refused 401", r.stdout + r.stderr)
    finally:
        p.terminate()
        p.wait()


def main():
    data = tempfile.mkdtemp(prefix="rt-serve-limits.")
    try:
        env = dict(os.environ, RUNTIME_DATA_DIR=data)
        token = subprocess.run([RUNTIME, "token", "create", "t"], env=env, capture_output=True, text=True,
                               check=True).stdout.strip()
        p, port = start(data)
        try:
            s = conn(port)
            s.sendall(head("GET", "/v1/health"))
            ok(answer(s, 2)[0] == 200, "the server answers /v1/health")
            s.close()
            bodies_first(port, p.pid)
            small_limit(port, token)
            reasons(port, token)
            keep_alive(port, token)
            dribble(port)
            tokenless_bodies(port)
            flood(port, token, p.pid)
            burst(port, data)
        finally:
            p.terminate()
            p.wait()
        tls(data, token)
        limit = [l.split("=", 1)[1].strip() for l in open(UNIT) if l.startswith("LimitNOFILE=")]
        ok(limit and int(limit[0]) >= 65536, "the systemd unit sets LimitNOFILE=65536 or more", limit)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    done()


main()
