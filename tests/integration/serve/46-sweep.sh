# 46-sweep.sh - the server's files of sandboxes long gone are removed (at
# its start and hourly, libruntime/serve/sweep.c): a deleted sandbox's
# answer and a sandbox's network version once a day old and the sandbox is
# no more; a live sandbox's, and recent ones, stay.  Boots nothing.

sw=$RUNTIME_DATA_DIR/serve
mkdir -p "$sw/deleted/tenant-a" "$sw/network" "$sw/idempotency"
echo '{}' >"$sw/deleted/tenant-a/sb-0000000000a1"
echo '{}' >"$sw/deleted/tenant-a/sb-0000000000a2"
echo '2 1' >"$sw/network/sb-0000000000a1"
[ -e "$sw/network/$SB" ] && cp -p "$sw/network/$SB" "$tmp/sb-network"
echo '2 1' >"$sw/network/$SB"
echo '{}' >"$sw/idempotency/00aa.json"
touch -d '2 days ago' "$sw/deleted/tenant-a/sb-0000000000a1" "$sw/network/sb-0000000000a1" "$sw/network/$SB" \
    "$sw/idempotency/00aa.json"
serve_stop TERM
serve_start
for i in $(seq 100); do
    [ -e "$sw/network/sb-0000000000a1" ] || break
    sleep 0.1
done
check "a day-old answer of a deleted sandbox: removed at the server's start" \
    test ! -e "$sw/deleted/tenant-a/sb-0000000000a1"
check "… a gone sandbox's day-old network version too" test ! -e "$sw/network/sb-0000000000a1"
check "… and a day-old Idempotency-Key answer" test ! -e "$sw/idempotency/00aa.json"
check "a recent deleted answer stays (a repeat DELETE still gets it)" test -e "$sw/deleted/tenant-a/sb-0000000000a2"
check "a live sandbox's old network version stays" test -e "$sw/network/$SB"
rm -f "$sw/deleted/tenant-a/sb-0000000000a2"
api GET "/v1/sandboxes/$SB/network" >/dev/null
is "… and is still its version" "$status $(bj 'o["version"]')" "200 2"
rm -f "$sw/network/$SB"
[ -e "$tmp/sb-network" ] && mv "$tmp/sb-network" "$sw/network/$SB"
