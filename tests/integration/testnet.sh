# testnet.sh - the tests' own "internet", sourced by integration tests (after
# libtest.sh) and by benchmarks. Needs root, `ip`, `openssl` and python3.
#
#   testnet_up    a network namespace (rt-testnet-$$) joined to the host by a
#                 veth pair (host side rtn$$, 198.51.100.1/24; namespace side
#                 eth0, 198.51.100.2-6/24), a test CA and server certificates,
#                 and tests/fixtures/testnet/servers.py running in the namespace:
#                   198.51.100.2  :443 :80  fake PyPI (pypi.org, files.pythonhosted.org)
#                   198.51.100.3  :80       HTTP echo, /bytes/N, /drip
#                   198.51.100.4  :443      HTTPS echo (echo.test, secure.test)
#                   198.51.100.5  :7777     raw TCP echo
#                   198.51.100.6  :25       SMTP banner
#                   198.51.100.7  :443      HTTPS echo, self-signed (rogue.test)
#                 The echo servers' /record appends each request to
#                 $TESTNET_DIR/requests.jsonl (see servers.py).
#                 Exports TESTNET_NS, TESTNET_IF, TESTNET_DIR, TESTNET_CA,
#                 TESTNET_PID and RUNTIME_RESOLVE (the runtime resolves the test
#                 names through it; /etc/hosts is never touched).
#   testnet_down  stops the servers, deletes the namespace and the veth, removes
#                 $TESTNET_DIR. Idempotent; safe in an EXIT trap even when
#                 testnet_up failed half way or never ran.
#
# Only one testnet can be up on a machine at a time (the addresses are fixed);
# testnet_up waits up to $TESTNET_WAIT seconds (default 60) for another to go,
# and first takes down any whose shell is gone (_testnet_reclaim).
# Other endpoints of the echo servers: /bytes/N (N bytes, N <= 1 GiB, 64 KiB
# writes, Content-Length set), /drip (a line every 100 ms until the client
# goes; chunked, or close-delimited for HTTP/1.0), /missing/X (a 404 quoting
# X), /redirect (a 302 to a Location carrying the Authorization header),
# /transformed (that header in base64 and upper case),
# /chunked and /split (the echo in 7-byte pieces, chunked or length-framed,
# paced so that they arrive in many reads). The echo body is the request
# line, headers and body as received (bodies over 16 MiB are counted, not
# echoed).

TESTNET_FIXTURE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures/testnet" && pwd)
TESTNET_HOST_ADDR=198.51.100.1
TESTNET_ADDRS="198.51.100.2 198.51.100.3 198.51.100.4 198.51.100.5 198.51.100.6 198.51.100.7"

_testnet_err() { echo "testnet: $*" >&2; }

_testnet_names() {
    _testnet_ns=rt-testnet-$$
    _testnet_if=rtn$$
    _testnet_if=${_testnet_if:0:15}
}

# _testnet_cert NAME DNS... : NAME.key and NAME.pem signed by the test CA.
_testnet_cert() {
    local name=$1 san="" d
    shift
    for d in "$@"; do san+=${san:+,}DNS:$d; done
    cat >"$TESTNET_DIR/$name.ext" <<EOF
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = $san
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid, issuer
EOF
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$TESTNET_DIR/$name.key" -out "$TESTNET_DIR/$name.csr" \
        -subj "/CN=$1" 2>"$TESTNET_DIR/openssl.err" &&
    openssl x509 -req -in "$TESTNET_DIR/$name.csr" -days 30 -sha256 \
        -CA "$TESTNET_CA" -CAkey "$TESTNET_DIR/ca.key" -CAcreateserial \
        -extfile "$TESTNET_DIR/$name.ext" -out "$TESTNET_DIR/$name.pem" \
        2>"$TESTNET_DIR/openssl.err"
}

_testnet_certs() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$TESTNET_DIR/ca.key" -out "$TESTNET_CA" -days 30 -sha256 \
        -subj "/CN=runtime test CA $$" \
        -addext "basicConstraints = critical, CA:TRUE" \
        -addext "keyUsage = critical, keyCertSign, cRLSign" \
        -addext "subjectKeyIdentifier = hash" 2>"$TESTNET_DIR/openssl.err" &&
    _testnet_cert pypi pypi.org files.pythonhosted.org &&
    _testnet_cert echo echo.test secure.test &&
    # Signed by nobody anyone trusts.
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$TESTNET_DIR/rogue.key" -out "$TESTNET_DIR/rogue.pem" -days 30 -sha256 \
        -subj "/CN=rogue.test" -addext "subjectAltName = DNS:rogue.test" 2>"$TESTNET_DIR/openssl.err"
}

# Take the machine-wide slot: fail if another testnet holds 198.51.100.1.
_testnet_slot_free() {
    [ -z "$(ip -4 -o addr show to "$TESTNET_HOST_ADDR/32" 2>/dev/null)" ]
}

# A testnet whose shell is gone (killed before its EXIT trap ran, as when a
# session or a CI job is stopped) holds the addresses for ever: its name
# carries that shell's pid, so take it down when no such process is left.
_testnet_reclaim() {
    local pid pids
    for pid in $({ ip -br link 2>/dev/null | awk '{print $1}' | sed -n 's/@.*//; s/^rtn\([0-9][0-9]*\)$/\1/p'
                   ip netns list 2>/dev/null | awk '{print $1}' | sed -n 's/^rt-testnet-\([0-9][0-9]*\)$/\1/p'; } | sort -u); do
        [ "$pid" != "$$" ] && ! kill -0 "$pid" 2>/dev/null || continue
        _testnet_err "taking down the test network of pid $pid, which is gone"
        pids=$(ip netns pids "rt-testnet-$pid" 2>/dev/null || true)
        [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
        ip netns del "rt-testnet-$pid" 2>/dev/null || true
        ip link del "rtn$pid" 2>/dev/null || true
    done
    return 0
}

testnet_up() {
    local c i a
    for c in ip openssl python3; do
        if ! command -v "$c" >/dev/null 2>&1; then
            _testnet_err "'$c' is not installed (needed for the test network)"
            return 1
        fi
    done
    if [ "$(id -u)" != 0 ]; then
        _testnet_err "must run as root (network namespaces, veth, ports 25/80/443)"
        return 1
    fi
    _testnet_names
    if [ -e "/run/netns/$_testnet_ns" ] || ip link show "$_testnet_if" >/dev/null 2>&1; then
        _testnet_err "$_testnet_ns or $_testnet_if already exists; call testnet_down first"
        return 1
    fi
    _testnet_reclaim
    for ((i = 0; i < ${TESTNET_WAIT:-60} * 10; i++)); do
        _testnet_slot_free && break
        [ "$i" != 0 ] || _testnet_err "another test network holds $TESTNET_HOST_ADDR; waiting"
        sleep 0.1
    done
    if ! _testnet_slot_free; then
        _testnet_err "$TESTNET_HOST_ADDR is still in use on the host: $(ip -4 -o addr show to "$TESTNET_HOST_ADDR/32" | awk '{print $2}')"
        return 1
    fi

    export TESTNET_NS=$_testnet_ns TESTNET_IF=$_testnet_if
    TESTNET_DIR=$(mktemp -d /tmp/rt-testnet.XXXXXX) || { _testnet_err "mktemp failed"; return 1; }
    export TESTNET_DIR TESTNET_CA=$TESTNET_DIR/ca.pem

    if ! _testnet_certs; then
        _testnet_err "openssl failed to make the test certificates:"
        cat "$TESTNET_DIR/openssl.err" >&2
        testnet_down
        return 1
    fi

    if ! { ip netns add "$TESTNET_NS" &&
           ip -n "$TESTNET_NS" link set lo up &&
           ip link add "$TESTNET_IF" type veth peer name eth0 netns "$TESTNET_NS"; }; then
        _testnet_err "cannot create the namespace $TESTNET_NS and veth $TESTNET_IF"
        testnet_down
        return 1
    fi
    # No IPv6 chatter (router solicitations, DAD) across the pair.
    { echo 1 >"/proc/sys/net/ipv6/conf/$TESTNET_IF/disable_ipv6"; } 2>/dev/null || true
    ip netns exec "$TESTNET_NS" sh -c 'echo 1 >/proc/sys/net/ipv6/conf/eth0/disable_ipv6' 2>/dev/null || true
    if ! { ip addr add "$TESTNET_HOST_ADDR/24" dev "$TESTNET_IF" &&
           ip link set "$TESTNET_IF" up; }; then
        _testnet_err "cannot configure $TESTNET_IF"
        testnet_down
        return 1
    fi
    for a in $TESTNET_ADDRS; do
        if ! ip -n "$TESTNET_NS" addr add "$a/24" dev eth0; then
            _testnet_err "cannot add $a to eth0 in $TESTNET_NS"
            testnet_down
            return 1
        fi
    done
    if ! ip -n "$TESTNET_NS" link set eth0 up; then
        _testnet_err "cannot bring eth0 up in $TESTNET_NS"
        testnet_down
        return 1
    fi

    # `ip netns exec` execs (no fork), so $! is the server's pid. Disowned:
    # a bare `wait` in a test must not wait for it (bash still reaps it).
    ip netns exec "$TESTNET_NS" python3 "$TESTNET_FIXTURE_DIR/servers.py" "$TESTNET_DIR" \
        </dev/null >"$TESTNET_DIR/servers.out" 2>"$TESTNET_DIR/servers.err" &
    export TESTNET_PID=$!
    disown "$TESTNET_PID" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
        grep -qx ready "$TESTNET_DIR/servers.out" 2>/dev/null && break
        kill -0 "$TESTNET_PID" 2>/dev/null || break
        sleep 0.1
    done
    if ! grep -qx ready "$TESTNET_DIR/servers.out" 2>/dev/null; then
        if kill -0 "$TESTNET_PID" 2>/dev/null; then
            _testnet_err "servers.py did not say ready within 10 s"
        else
            _testnet_err "servers.py exited before it was ready"
        fi
        sed 's/^/testnet: servers.py: /' "$TESTNET_DIR/servers.err" >&2
        testnet_down
        return 1
    fi

    export RUNTIME_RESOLVE=pypi.org=198.51.100.2,files.pythonhosted.org=198.51.100.2,http.test=198.51.100.3,echo.test=198.51.100.4,secure.test=198.51.100.4,tcp.test=198.51.100.5,smtp.test=198.51.100.6,rogue.test=198.51.100.7,private.test=10.1.2.3,loop.test=127.0.0.1
    return 0
}

# The servers.py process started by this shell, if it still runs.
_testnet_our_pid() {
    [ -n "${TESTNET_PID:-}" ] && [ -r "/proc/$TESTNET_PID/cmdline" ] &&
        tr '\0' ' ' <"/proc/$TESTNET_PID/cmdline" 2>/dev/null | grep -qF "testnet/servers.py ${TESTNET_DIR:-/nonexistent}" &&
        echo "$TESTNET_PID"
    return 0
}

# Our server and anything else still running in our namespace.
_testnet_pids() {
    local p
    p="$(_testnet_our_pid || true) $(ip netns pids "$_testnet_ns" 2>/dev/null || true)"
    echo ${p}
}

testnet_down() {
    local pids i
    _testnet_names
    pids=$(_testnet_pids)
    if [ -n "$pids" ]; then
        kill -TERM $pids 2>/dev/null || true
        for ((i = 0; i < 30; i++)); do
            pids=$(_testnet_pids)
            [ -n "$pids" ] || break
            sleep 0.1
        done
        if [ -n "$pids" ]; then kill -KILL $pids 2>/dev/null || true; fi
    fi
    if [ -e "/run/netns/$_testnet_ns" ]; then
        ip netns del "$_testnet_ns" 2>/dev/null || true
    fi
    # Deleting the namespace deletes the pair; this is for a half-made one.
    for ((i = 0; i < 20; i++)); do
        ip link show "$_testnet_if" >/dev/null 2>&1 || break
        ip link del "$_testnet_if" 2>/dev/null || true
        sleep 0.05
    done
    case ${TESTNET_DIR:-} in
        /tmp/rt-testnet.*) rm -rf "$TESTNET_DIR" ;;
    esac
    unset TESTNET_NS TESTNET_IF TESTNET_DIR TESTNET_CA TESTNET_PID RUNTIME_RESOLVE
    return 0
}
