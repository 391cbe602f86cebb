#!/bin/bash
# token.sh - `runtime token`: bad input refused with one line and nothing
# made, a token printed once and stored only as its hash (0600), listed
# without it, removed.  Boots nothing: run in the unit suite.
. "$(dirname "$0")/libtest.sh"
export RUNTIME_DATA_DIR="$tmp/data"
store="$RUNTIME_DATA_DIR/tokens.json"

expect_error "a name with capitals is refused" invalid_request runtime token create Dev
expect_error "a name with a slash is refused" invalid_request runtime token create a/b
expect_error "a name of 33 characters is refused" invalid_request runtime token create "$(printf 'a%.0s' $(seq 33))"
expect_error "no name" usage runtime token create
expect_error "two names" usage runtime token create a b
expect_error "--max-vcpu 0" usage runtime token create a --max-vcpu 0
expect_error "--max-sandboxes not a number" usage runtime token create a --max-sandboxes many
expect_error "--max-cost negative" usage runtime token create a --max-cost -1
expect_error "--max-cost not dollars" usage runtime token create a --max-cost 5usd
expect_error "--rate 0" usage runtime token create a --rate 0
expect_error "--max-snapshots 0" usage runtime token create a --max-snapshots 0
expect_error "an unknown option" usage runtime token create a --max-cpu 2
expect_error "an unknown command" usage runtime token make a
is "nothing was stored by refused commands" "$(ls "$RUNTIME_DATA_DIR" 2>/dev/null | grep -c tokens.json)" "0"

umask 000
tok=$(runtime token create ci --max-sandboxes 2 --max-vcpu 4 --max-cost 1.5 --rate 20 --max-snapshots 5 2>"$tmp/said")
check "the token on stdout: rt_ and 40 base32 characters" grep -qxE 'rt_[a-z2-7]{40}' <<<"$tok"
check "stderr says it will not be shown again" grep -q "will not be shown again" "$tmp/said"
is "tokens.json is 0600 under umask 000" "$(stat -c %a "$store")" "600"
umask 022
check "the token is nowhere in the store" sh -c '! grep -q "$1" "$2" && ! grep -q "${1#rt_}" "$2"' sh "$tok" "$store"
expect_error "the same name again: name_taken" name_taken runtime token create ci
json=$(runtime token create ci2 --json 2>/dev/null)
is "--json: the name and the token" "$(json_get 'o["name"], len(o["token"])' <<<"$json")" "ci2 43"

ls_json=$(runtime token ls --json)
is "ls --json: both, oldest first" "$(json_get '[t["name"] for t in o]' <<<"$ls_json")" "['ci', 'ci2']"
is "ls --json: the limits" "$(json_get '[o[0][k] for k in ("maxSandboxes", "maxVcpu", "maxCostMicros", "rate", "maxSnapshots")]' <<<"$ls_json")" \
    "[2, 4, 1500000, 20, 5]"
is "ls --json: the prefix, first 7 characters" "$(json_get 'o[0]["prefix"]' <<<"$ls_json")" "${tok:0:7}"
check "ls never shows a hash" bash -c '! grep -qi sha256 <<<"$1"' bash "$ls_json"
check "ls: a table with the name" sh -c 'runtime token ls | grep -q "^ci  "'

expect_error "rm of an unknown token: not_found" not_found runtime token rm nope
is "rm prints the name" "$(runtime token rm ci)" "ci"
is "rm: gone from ls" "$(runtime token ls --json | json_get '[t["name"] for t in o]')" "['ci2']"
runtime token rm ci --json >/dev/null 2>"$tmp/err"
is "--json errors: one object on stderr" "$(json_get 'o["error"]["code"]' <"$tmp/err")" "not_found"

chmod 644 "$store"
expect_error "a store others may read is refused" invalid_request runtime token ls
chmod 600 "$store"
done_testing
