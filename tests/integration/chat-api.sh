#!/bin/bash
# chat-api.sh - `runtime chat deepseek` against a fake API that fails
# (tests/fixtures/fake_deepseek.py): each HTTP error, retry, timeout and a
# --base-url that is no URL is one error line with its code, before any
# sandbox is needed.  Boots nothing: run in the unit suite.
. "$(dirname "$0")/libtest.sh"
. "$(dirname "$0")/chatlib.sh"
export RUNTIME_DATA_DIR="$tmp/data"
trap 'stop_server; cleanup' EXIT

# -- HTTP errors
serve '[{"status": 401}]'
chat "Hello."
chat_fails "401: exit 1, the error is about the key" "key"
serve '[{"status": 400, "body": {"error": {"message": "bad model", "type": "invalid_request_error"}}}]'
chat "Hello."
chat_fails "400: exit 1 with the API's message" "bad model"
is "… not retried" "$(qj 'len(L)')" "1"
check "… nothing was spent: no cost line" sh -c "! grep -q 'tokens: ' '$tmp/err'"
serve '[{"status": 429, "headers": {"Retry-After": "1"}}, {"answer": "after 429"}]'
chat "Hello."
chat_ok "429 with Retry-After: 1, then an answer: retried, succeeds" "after 429"
is "… the retry waited Retry-After" "$(qj '[len(L), L[1]["time"] - L[0]["time"] >= 0.95]')" "[2, true]"
serve '[{"status": 429, "headers": {"Retry-After": "100"}}, {"answer": "after a capped wait"}]'
RUNTIME_CHAT_RETRY_AFTER_MAX=1 chat "Hello."
chat_ok "429 with Retry-After: 100, the cap at 1 s: waits 1 s" "after a capped wait"
check "… says so" grep -qx 'runtime: the API answered 429; retrying in 1 s' "$tmp/err"
is "… waited about 1 s" "$(qj '0.95 <= L[1]["time"] - L[0]["time"] < 5')" "true"
date=$(LC_ALL=C date -u -d '+1 hour' '+%a, %d %b %Y %H:%M:%S GMT')
serve '[{"status": 429, "headers": {"Retry-After": "'"$date"'"}}, {"answer": "after a date"}]'
RUNTIME_CHAT_RETRY_AFTER_MAX=2 chat "Hello."
chat_ok "429 with Retry-After an HTTP-date an hour away: parsed, capped (2 s)" "after a date"
check "… retrying in 2 s" grep -qx 'runtime: the API answered 429; retrying in 2 s' "$tmp/err"
r0='{"status": 429, "headers": {"Retry-After": "0"}}'
serve "[$r0, $r0, $r0, $r0, $r0, {\"answer\": \"never\"}]"
chat "Hello."
chat_fails "429 for ever: gives up" \
    '^Error \[quota_exceeded\]: the API is rate limiting \(HTTP 429\) after 4 retries: Rate Limit Reached$'
is "… after 5 requests" "$(qj 'len(L)')" "5"
serve '[{"status": 500}, {"status": 500}, {"answer": "after 500s"}]'
RUNTIME_CHAT_RETRY_AFTER_MAX=1 chat "Hello."
chat_ok "500, 500, then an answer: retried, succeeds" "after 500s"
is "… in three requests" "$(qj 'len(L)')" "3"
serve '[]'
RUNTIME_CHAT_RETRY_AFTER_MAX=1 chat "Hello."
chat_fails "500 for ever: gives up with an error (backoff capped at 1 s here)" \
    '^Error \[unavailable\]: the API failed \(HTTP 500\) after 4 retries: scenario exhausted$'
check "… each backoff said" test "$(grep -c '^runtime: the API answered 500; retrying in 1 s$' "$tmp/err")" = 4
check "… after a bounded number of retries" test "$(qj 'len(L)')" -le 10
serve '[{"hang": 2, "then": {"answer": "slow but fine"}}]'
chat "Hello."
chat_ok "an answer taking 2 s is waited for" "slow but fine"
serve '[{"hang": 6, "then": {"answer": "too slow"}}]'
start=$(date +%s%N)
RUNTIME_CHAT_READ_TIMEOUT=1 chat "Hello."
took_ms=$((($(date +%s%N) - start) / 1000000))
chat_fails "an API silent past the read timeout (1 s): a read timeout, not 'cannot reach'" \
    '^Error \[unavailable\]: the API at http://127\.0\.0\.1:[0-9]+/chat/completions sent nothing for 1 s \(read timeout\)$'
check "… after 1 to 4 s (took $took_ms ms)" test "$took_ms" -ge 1000 -a "$took_ms" -lt 4000
stop_server
# A listener whose backlog is full: the kernel drops the SYN, connect hangs.
python3 -c '
import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(0)
held = []
for _ in range(4):
    c = socket.socket(); c.setblocking(False)
    try: c.connect(s.getsockname())
    except BlockingIOError: pass
    held.append(c)
print(s.getsockname()[1], flush=True)
time.sleep(60)' >"$tmp/full.port" &
full=$!
for _ in $(seq 50); do [ -s "$tmp/full.port" ] && break; sleep 0.1; done
start=$SECONDS
DEEPSEEK_API_KEY=$KEY RUNTIME_CHAT_CONNECT_TIMEOUT=1 timeout 60 runtime chat deepseek \
    --base-url "http://127.0.0.1:$(cat "$tmp/full.port")" "Hello." >"$tmp/out" 2>"$tmp/err"; rc=$?
took=$((SECONDS - start))
kill $full; wait $full 2>/dev/null
chat_fails "connect timeout (1 s; a listener with a full backlog): a clear error" \
    '^Error \[unavailable\]: cannot connect to the API at .*: no answer within 1 s$'
check "… within 5 s (took $took s)" test "$took" -lt 5
closed=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
DEEPSEEK_API_KEY=$KEY timeout 300 runtime chat deepseek --base-url "http://127.0.0.1:$closed" "Hello." >"$tmp/out" 2>"$tmp/err"; rc=$?
cat "$tmp/out" "$tmp/err" >>"$tmp/seen"
chat_fails "connection refused: exit 1 with a clear error" "connect|refused|reach"
check "… unavailable, not internal" grep -q '^Error \[unavailable\]: cannot reach the API at ' "$tmp/err"

# -- statuses that answer the same every time: not retried
for st in 404 422 501; do
    serve "[{\"status\": $st}, {\"answer\": \"never\"}]"
    RUNTIME_CHAT_RETRY_AFTER_MAX=1 chat "Hello."
    chat_fails "HTTP $st: one error line" "HTTP $st"
    is "… not retried" "$(qj 'len(L)')" "1"
    check "… no retry said" sh -c "! grep -q 'retrying' '$tmp/err'"
done
check "… 501 is unavailable" grep -q '^Error \[unavailable\]: the API failed (HTTP 501): ' "$tmp/err"
for st in 502 503 504; do
    serve "[{\"status\": $st}, {\"answer\": \"after $st\"}]"
    RUNTIME_CHAT_RETRY_AFTER_MAX=1 chat "Hello."
    chat_ok "HTTP $st, then an answer: retried" "after $st"
done

# -- a proxy's HTML page: its status and a short excerpt, on one line
page='<!DOCTYPE html>\n<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n<center><h1>502 Bad Gateway</h1></center>\n<hr><center>nginx</center>\n</body>\n</html>\n'
serve "[{\"status\": 502, \"body\": \"$page\"}, {\"status\": 502, \"body\": \"$page\"}, {\"status\": 502, \"body\": \"$page\"}, {\"status\": 502, \"body\": \"$page\"}, {\"status\": 502, \"body\": \"$page\"}]"
RUNTIME_CHAT_RETRY_AFTER_MAX=1 chat "Hello."
chat_fails "an HTML 502: one error line" \
    '^Error \[unavailable\]: the API failed \(HTTP 502\) after 4 retries: 502 Bad Gateway$'
is "… and nothing else but the retries said" "$(grep -vc '^runtime: the API answered 502; retrying in 1 s$' "$tmp/err")" "1"
long=$(python3 -c 'print("<html><body><p>" + "overloaded " * 100 + "</p></body></html>")')
serve "[{\"status\": 418, \"body\": \"$long\"}]"
chat "Hello."
chat_fails "a long page without a title: its text, cut" '^Error \[invalid_request\]: .*\(HTTP 418\): overloaded overloaded .*…$'
check "… to a short excerpt" test "$(grep -c . "$tmp/err")" = 1 -a "$(wc -c <"$tmp/err")" -lt 250

# -- --base-url must be an http or https URL with a host: said before any
# request, and before the missing key
for url in ftp://127.0.0.1/ http:// 'http:///v1' api.deepseek.com 'https://exa mple.com'; do
    env -u DEEPSEEK_API_KEY runtime chat deepseek --base-url "$url" "Hello." >"$tmp/out" 2>"$tmp/err"; rc=$?
    chat_fails "--base-url '$url' is refused" "^Error \[invalid_request\]: --base-url '.*' is not an http or https URL with a host$"
done
check "… with an example" grep -q '^Hint: for example --base-url https://api.deepseek.com' "$tmp/err"
is "no sandbox was made by any of these" "$(sandboxes_made)" "0"

done_testing
