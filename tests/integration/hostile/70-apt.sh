# 70-apt.sh - an image whose apt sources name another host: the apt step's
# network is the host's (the sources of the base this host built, recorded
# beside it in the cache, or the user's --apt-mirror), never the guest's
# sources.list.  The other host is the test internet's HTTP echo, which
# would answer if it were allowed.
. "$(dirname "$0")/testnet.sh"

# The build sandbox and its egress log go when the build ends: a copy is
# kept while it runs, joined into $tmp/apt-egress.jsonl.
apt_watch() {
    rm -f "$tmp"/apt-egress.*
    ( while :; do
        for f in "$RUNTIME_DATA_DIR"/sandboxes/*.egress.jsonl; do
            [ -s "$f" ] && cp "$f" "$tmp/apt-egress.$(basename "$f")"
        done
        sleep 0.2
    done ) &
    apt_poller=$!
}
apt_unwatch() {
    kill "$apt_poller" 2>/dev/null
    wait "$apt_poller" 2>/dev/null
    cat "$tmp"/apt-egress.* >"$tmp/apt-egress.jsonl.all" 2>/dev/null
    mv "$tmp/apt-egress.jsonl.all" "$tmp/apt-egress.jsonl"
}

apt_saved_data=$RUNTIME_DATA_DIR
export RUNTIME_DATA_DIR="$tmp/apt-data"
mkdir -p "$RUNTIME_DATA_DIR"
if [ -d "${RUNTIME_TEST_DATA:-}/images" ]; then cp -al "$RUNTIME_TEST_DATA/images" "$RUNTIME_DATA_DIR/"; fi
trap 'testnet_down; cleanup' EXIT

if testnet_up; then
    runtime image build --name aptsrc \
        --run 'rm -f /etc/apt/sources.list.d/*; echo "deb [trusted=yes] http://http.test/debian bookworm main" >/etc/apt/sources.list' \
        >/dev/null 2>"$tmp/apt-log"; rc=$?
    is "an image whose sources.list names http.test builds" "$rc" "0"

    apt_watch
    runtime image build --from aptsrc --apt tree --name aptevil >/dev/null 2>"$tmp/apt-log"; rc=$?
    apt_unwatch
    is "an apt step on it fails" "$rc" "1"
    check "… as a failed build step" grep -q "^Error \[build_failed\]: step 1/1 (apt tree)" "$tmp/apt-log"
    check "… its egress log refuses http.test (not_allowed), never allows it" python3 -c '
import json, sys
log = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
mine = [e for e in log if (e.get("name") or "").rstrip(".") == "http.test"]
assert mine, log
assert all(e["decision"] == "refused" and e["reason"] == "not_allowed" for e in mine), mine' "$tmp/apt-egress.jsonl"
    check "… and no image was made" sh -c '! runtime image get aptevil >/dev/null 2>&1'
    rec=$(ls "${RUNTIME_CACHE_DIR:-/nonexistent}"/base/rootfs-*.tar.*.apt-hosts 2>/dev/null | head -1)
    check "the base's apt hosts are recorded beside it, without http.test" \
        sh -c "[ -s '$rec' ] && ! grep -q http.test '$rec'"

    # --apt-mirror: the user's mirror is the one host the step reaches, and
    # apt uses it (the echo server is no mirror: the step fails).
    expect_error "a malformed --apt-mirror is refused before anything boots" invalid_request \
        runtime image build --no-cache --apt tree --apt-mirror 'http://a b/debian'
    expect_error "… and one that is not http(s)" invalid_request \
        runtime image build --no-cache --apt tree --apt-mirror 'ftp://x/'
    apt_watch
    runtime image build --apt tree --apt-mirror http://http.test/debian --name aptmirror >/dev/null 2>"$tmp/apt-log"
    apt_unwatch
    check "--apt-mirror http.test: the step reached http.test, allowed, and nothing else" python3 -c '
import json, sys
log = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
names = {(e.get("name") or "").rstrip(".") for e in log}
assert names == {"http.test"}, log
assert all(e["decision"] == "allowed" for e in log), log' "$tmp/apt-egress.jsonl"
    runtime image rm aptsrc >/dev/null 2>&1
else
    fail "70-apt: cannot make the test network"
fi
testnet_down
trap cleanup EXIT
export RUNTIME_DATA_DIR=$apt_saved_data
