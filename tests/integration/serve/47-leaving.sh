# 47-leaving.sh - a client that leaves while its request waits is noticed
# at once (the connection's close, libruntime/serve/server.c watch_peer),
# and the worker let go, not at the wait's end.  Uses the shared sandbox,
# unchanged.

# logged ID: "STATUS MS" of the request's log line, once written (10 s).
logged() {
    local i line
    for i in $(seq 100); do
        line=$(grep " $1\$" "$SERVE_LOG" | tail -1)
        [ -n "$line" ] && break
        sleep 0.1
    done
    awk '{ sub(/ms$/, "", $6); print $5, $6 }' <<<"$line"
}

curl -sS --noproxy '*' --max-time 1 -o /dev/null -H "Authorization: Bearer $TOKEN_A" -H 'x-request-id: leave-wait-1' \
    "$API/v1/sandboxes/$SB?waitFor=stopped&timeoutSeconds=60" 2>/dev/null
read -r st ms <<<"$(logged leave-wait-1)"
is "a client gone 1 s into a 60 s waitFor: logged 499" "${st:-none}" 499
check "… within 5 s, not at the wait's end (${ms:-?} ms)" test "${ms:-99999}" -lt 5000
api GET "/v1/sandboxes/$SB" >/dev/null
is "… and the sandbox is as it was" "$status $(bj 'o["state"]')" "200 running"
