# 48-flood.sh - a flood of idle connections cannot take every fd of the
# server (libruntime/serve/conns.c): with a limit of 400 fds it stops
# accepting while fewer than 256 are free, does not spin on EMFILE, and
# serves again once they are gone.  Restarts the server (with that
# limit, then as before).  Boots nothing.

serve_stop TERM
( ulimit -n 400 && serve_start )
serve_pid=$(cat "$tmp/serve.pid")
out=$(timeout 120 python3 - "$serve_pid" "${API#http://}" <<'PY'
import os, resource, socket, subprocess, sys, time
pid, hostport = sys.argv[1], sys.argv[2]
host, port = hostport.rsplit(":", 1)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(4096, hard), hard))
def cpu():
    f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
socks = []
for i in range(600):
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect((host, int(port)))
    except BlockingIOError:
        pass
    socks.append(s)
time.sleep(2)
fds = len(os.listdir("/proc/%s/fd" % pid))
c0 = cpu(); time.sleep(2); c1 = cpu()
for s in socks:
    s.close()
t = time.time()
up = False
while time.time() - t < 30 and not up:
    r = subprocess.run(["curl", "-s", "--noproxy", "*", "-m", "2", "http://%s/v1/health" % hostport], capture_output=True, text=True)
    up = '"ok":true' in r.stdout
print(fds, "%.2f" % (c1 - c0), up, "%.0f" % (time.time() - t))
PY
)
read -r fds cpu up secs <<<"$out"
check "600 idle connections against a 400-fd limit: the server holds at most 150 fds (has ${fds:-?})" test "${fds:-999}" -le 150
check "… and does not spin meanwhile (${cpu:-?} s of CPU in 2 s)" python3 -c "import sys; sys.exit(not float('${cpu:-9}') < 0.5)"
is "… it serves again once they are gone (in ${secs:-?} s)" "${up:-False}" True
check "… and said why it paused" grep -q "few fds left" "$SERVE_LOG"
serve_stop TERM
serve_start
is "the server as before: answers" "$(api GET /v1/me | json_get 'o["name"]')" tenant-a
