# libremote.sh - sourced after libtest.sh by a suite that runs a second time
# in client mode (RUNTIME_TEST_REMOTE=1: meson test lifecycle-remote).
# start_server runs `runtime serve` over this test's own state and data
# dirs on a free loopback port with a fresh token, and exports
# RUNTIME_API_URL and RUNTIME_API_KEY: every `runtime` command after it is a
# client of that server.  The server is on this machine, so checks of QEMU
# processes and of the state and data dirs still see what it made.
serve_token="remote$$"
serve_pid=""

# local CMD…: a command of this machine, never through the server.
local_runtime() { env -u RUNTIME_API_URL -u RUNTIME_API_KEY runtime "$@"; }

start_server() {
    local port token
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    token=$(local_runtime token create "$serve_token" 2>"$tmp/token.err") || {
        diag "runtime token create failed:" "$(cat "$tmp/token.err")"
        return 1
    }
    # Not through local_runtime: $! must be the server itself (env execs
    # it), not a subshell that a SIGTERM would end without it.
    env -u RUNTIME_API_URL -u RUNTIME_API_KEY runtime serve --listen "127.0.0.1:$port" 2>"$tmp/serve.log" &
    serve_pid=$!
    export RUNTIME_API_URL="http://127.0.0.1:$port" RUNTIME_API_KEY="$token"
    if python3 - "$RUNTIME_API_URL/v1/me" "$token" "$serve_pid" <<'PY'
import os, sys, time, urllib.request
url, token, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
for _ in range(300):
    try:
        urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": "Bearer " + token}), timeout=2)
        sys.exit(0)
    except Exception:
        try:
            os.kill(pid, 0)
        except OSError:
            sys.exit(1)
        time.sleep(0.1)
sys.exit(1)
PY
    then
        diag "client mode: runtime serve on $RUNTIME_API_URL"
        return 0
    fi
    diag "runtime serve did not answer:" "$(cat "$tmp/serve.log")"
    return 1
}

# Ends the server (SIGTERM: a clean stop that leaves sandboxes alone) and
# forgets the token; the commands after it are local again.
stop_server() {
    [ -n "$serve_pid" ] || return 0
    kill -TERM "$serve_pid" 2>/dev/null
    wait "$serve_pid"
    serve_pid=""
    local_runtime token rm "$serve_token" >/dev/null 2>&1
    unset RUNTIME_API_URL RUNTIME_API_KEY
}
