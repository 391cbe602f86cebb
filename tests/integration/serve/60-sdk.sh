# 60-sdk.sh - the calls Runtime Cloud's TypeScript SDK (withruntime/
# runtime, packages/cloud-sdk/src/) makes that this server once got wrong
# (issue 34, items 1-8), written from the SDK's wire shapes, not its code:
# the same methods, paths, query parameters and bodies, and the answer
# fields it reads.  docs/API.md ("The SDK") names each call's route.
# Works under /workspace/t60 of the shared $SB and removes it at the end;
# boots one small sandbox of its own (snapshot, stop, state filter).

f60=/v1/sandboxes/$SB/files
sha60() { sha256sum "$1" | cut -d' ' -f1; }
put60() { # PATH FILE: files.write of at most 1 MiB (PUT files/content)
    api PUT "$f60/content?path=$1" "@$2" >/dev/null
}
printf 'a\n' >"$tmp/t60-a"
for p in a.txt b.py .hidden.txt sub/c.txt sub/deep/d.py; do put60 "/workspace/t60/$p" "$tmp/t60-a"; done
is "setup: five small files written with files.write" "$status" 200

# -- 1. files.list / files.glob: GET files/list?path=&glob=&hidden=&limit=
names60() { bj 'sorted(e["path"].replace("/workspace/t60/", "") for e in o["data"] if e["type"] == "file")'; }
api GET "$f60/list?path=/workspace/t60&glob=*.txt" >/dev/null
is "files.glob('*.txt'): only the .txt entries of the directory (a leading dot is not matched by *)" \
    "$status $(names60)" "200 ['a.txt']"
api GET "$f60/list?path=/workspace/t60&glob=**/*.py" >/dev/null
is "files.glob('**/*.py'): at any depth, the top one too" "$status $(names60)" "200 ['b.py', 'sub/deep/d.py']"
api GET "$f60/list?path=/workspace/t60&glob=sub/*.txt" >/dev/null
is "files.glob('sub/*.txt'): one level down" "$status $(names60)" "200 ['sub/c.txt']"
# A glob of 300 "**" parts was exponential (a worker's CPU for ever): its
# runs are one, matched by a table.  33 other parts are too many.
many=$(printf '**/%.0s' $(seq 300))
api GET "$f60/list?path=/workspace/t60&glob=${many}*.py" >/dev/null
is "a glob of 300 '**' parts answers as '**/*.py'" "$status $(names60)" "200 ['b.py', 'sub/deep/d.py']"
api GET "$f60/list?path=/workspace/t60&glob=$(printf 'a/%.0s' $(seq 32))a" >/dev/null
is "… 33 parts: 400" "$status $(bj 'o["error"]["code"]')" "400 invalid_request"
api GET "$f60/list?path=/workspace/t60&hidden=false" >/dev/null
is "files.list(path, {hidden: false}): no dot entries" "$status $(names60)" "200 ['a.txt', 'b.py']"
api GET "$f60/list?path=/workspace/t60&hidden=true&depth=1" >/dev/null
is "… {hidden: true, depth: 1}: them too" "$status $(names60)" "200 ['.hidden.txt', 'a.txt', 'b.py']"
api GET "$f60/list?path=/workspace/t60&limit=2" >/dev/null
is "… {limit: 2}: two entries, marked truncated" "$status $(bj 'len(o["data"]), o.get("truncated")')" "200 2 True"
api GET "$f60/list?path=/workspace/t60&hidden=maybe" >/dev/null
is "… hidden=maybe: 400 naming hidden" "$status $(bj 'o["error"]["code"], "hidden" in o["error"]["message"]')" \
    "400 invalid_request True"
api GET "$f60/list?path=/workspace/t60&pattern=*.txt" >/dev/null
is "an unknown query parameter: 400 invalid_request naming it, not ignored" \
    "$status $(bj 'o["error"]["code"], "pattern" in o["error"]["message"], "glob" in o["error"]["hint"]')" \
    "400 invalid_request True True"
for q in "/v1/sandboxes?status=running" "/v1/sandboxes/$SB?wait=running" "/v1/snapshots?filter=x" \
    "/v1/images?page=2" "/v1/me?verbose=1" "$f60/stat?path=/workspace&follow=1"; do
    api GET "$q" >/dev/null
    printf '%s ' "$status"
done >"$tmp/t60-unknown"
is "… on the other GET routes too (list, get, me, stat)" "$(cat "$tmp/t60-unknown")" "400 400 400 400 400 400 "

# -- 2. files.write over 1 MiB: POST uploads, PUT chunks of chunkBytes, :commit
head -c $((2 << 20)) /dev/urandom >"$tmp/t60-big"
printf 'end' >>"$tmp/t60-big"
size=$(stat -c %s "$tmp/t60-big")
api POST "/v1/sandboxes/$SB/uploads" \
    "{\"path\": \"/workspace/t60/big.bin\", \"size\": $size, \"sha256\": \"$(sha60 "$tmp/t60-big")\", \"mode\": \"640\"}" >/dev/null
up=$(bj 'o["uploadId"]')
chunk=$(bj 'o["chunkBytes"]')
is "POST uploads: {uploadId, chunkBytes} with chunkBytes at most the SDK's 1,048,576" \
    "$status $([ -n "$up" ] && [ "$chunk" -gt 0 ] && [ "$chunk" -le 1048576 ] && echo ok)" "201 ok"
got=
for off in $(seq 0 "$chunk" $((size - 1))); do
    tail -c +$((off + 1)) "$tmp/t60-big" | head -c "$chunk" >"$tmp/t60-chunk"
    api PUT "/v1/sandboxes/$SB/uploads/$up?offset=$off" "@$tmp/t60-chunk" >/dev/null
    got="$got $status:$(bj 'o["received"]')/$(stat -c %s "$tmp/t60-chunk")"
done
is "each chunk: 200 and {received} its byte count" "$(tr ' ' '\n' <<<"$got" | sed -n 's/^200:\([0-9]*\)\/\1$/ok/p' | sort -u) $(wc -w <<<"$got")" \
    "ok $(( (size + chunk - 1) / chunk ))"
api POST "/v1/sandboxes/$SB/uploads/$up:commit" '{}' >/dev/null
is ":commit: {path, size, mode} (the SDK compares mode with what it sent)" \
    "$status $(bj '[o["path"], o["size"], o["mode"]]')" "200 ['/workspace/t60/big.bin', $size, '640']"
api GET "$f60/stat?path=/workspace/t60/big.bin" >/dev/null
is "… it is there, whole" "$(bj '[o["size"], o["mode"]]')" "[$size, '640']"

# -- 3. files.download(dir) and files.upload(dir): symmetric archives
api GET "$f60/stat?path=/workspace/t60/sub" >/dev/null
is "files.download first stats: a directory" "$(bj '[o["exists"], o["type"]]')" "[True, 'directory']"
status=$(curl -sS --noproxy '*' -o "$tmp/t60.tgz" -w '%{http_code}' -H "Authorization: Bearer $TOKEN_A" \
    -H 'Accept: application/gzip' "$API$f60/archive?path=/workspace/t60/sub&gzip=true")
is "GET files/archive?path=DIR&gzip=true: entries relative to DIR, as the SDK unpacks them" \
    "$status $(tar -tzf "$tmp/t60.tgz" | sort | tr '\n' ' ')" "200 ./ ./c.txt ./deep/ ./deep/d.py "
api PUT "$f60/archive?path=/workspace/t60/copy" "@$tmp/t60.tgz" >/dev/null
api GET "$f60/list?path=/workspace/t60/copy&depth=2" >/dev/null
is "… and files.upload(dir)'s PUT files/archive takes the same back: the same tree" \
    "$(bj 'sorted(e["path"].replace("/workspace/t60/copy/", "") for e in o["data"])')" "['c.txt', 'deep', 'deep/d.py']"

# -- 4. spawn(argv, {stdin: 'text'}): given once, then closed
api POST "/v1/sandboxes/$SB/processes" '{"argv": ["sh", "-c", "cat; echo end"], "stdin": "from the SDK\n"}' >/dev/null
pid=$(bj 'o["id"]')
is "POST processes with stdin text: 201 ProcessInfo, its input not kept open" "$status $(bj 'o["stdinOpen"]')" "201 False"
api GET "/v1/sandboxes/$SB/processes/$pid/output?follow=true" >/dev/null
out60=$(python3 -c '
import json, sys
evs = [json.loads(l) for l in sys.stdin if l.strip()]
print(repr("".join(e["data"] for e in evs if e["type"] == "stdout")), evs[-1]["type"], evs[-1].get("exitCode"))' <<<"$body")
is "… it read the text, then EOF, and exited 0" "$status $out60" "200 'from the SDK\\nend\\n' exit 0"
api POST "/v1/sandboxes/$SB/processes" '{"argv": ["cat"], "stdin": "x", "stdinMode": "pipe"}' >/dev/null
is "… stdin with stdinMode pipe: 400, refused" "$status $(bj 'o["error"]["code"]')" "400 invalid_request"
api POST "/v1/sandboxes/$SB/processes" '{"argv": ["cat"], "stdin": 5}' >/dev/null
is "… stdin that is no string: 400 naming it" "$status $(bj '[i["path"] for i in o["error"]["details"]["issues"]]')" \
    "400 ['stdin']"

# -- 6. exec with a string command: bash -c, as the SDK documents
api POST "/v1/sandboxes/$SB:exec" '{"command": "[[ -n $BASH_VERSION ]] && echo bash; echo ${0##*/}"}' >/dev/null
is "exec {command}: run by bash (its [[ ]] and \$BASH_VERSION)" "$status $(bj '[o["exitCode"], o["stdout"]]')" \
    "200 [0, 'bash\\nbash\\n']"
api POST "/v1/sandboxes/$SB:exec" '{"command": "printf %s \"$1\"; exit 3"}' >/dev/null
is "… its exit code and positional parameters are the command's own" "$status $(bj '[o["exitCode"], o["stdout"]]')" \
    "200 [3, '']"
api POST "/v1/sandboxes/$SB:exec" '{"argv": ["sh", "-c", "echo $0"]}' >/dev/null
is "… argv still runs without a shell of ours" "$(bj 'o["stdout"]')" "sh"

# -- 8. sudo for the sandbox user (the E2B layer's sudo ln -s …)
api POST "/v1/sandboxes/$SB:exec" '{"argv": ["sudo", "-n", "sh", "-c", "id -u; ln -sfn /workspace /home/user"]}' >/dev/null
is "sudo -n as the sandbox user: root, without a password" "$status $(bj '[o["exitCode"], o["stdout"]]')" "200 [0, '0\\n']"
api POST "/v1/sandboxes/$SB:exec" '{"argv": ["sudo", "-n", "rm", "-f", "/home/user"]}' >/dev/null

# -- 5. snapshots.delete: POST /v1/snapshots/{id}:delete;
# -- 7. list({state: ['stopped']}) without includeStopped
api -H 'Prefer: wait=120' POST /v1/sandboxes '{"vcpu": 1, "memoryMiB": 512, "name": "srv60", "labels": {"part": "60"}}' >/dev/null
P60=$(bj 'o["id"]')
is "a sandbox of this part: running" "$status $(bj 'o["state"]')" "201 running"
# 6 again, in an image without bash (this sandbox's, bash moved away): sh -c.
api POST "/v1/sandboxes/$P60:exec" '{"argv": ["mv", "/usr/bin/bash", "/usr/bin/bash.away"], "user": "root"}' >/dev/null
api POST "/v1/sandboxes/$P60:exec" '{"command": "echo ${BASH_VERSION:-no bash}; echo $((6*7))"}' >/dev/null
is "exec {command} where the image has no bash: sh -c runs it" "$status $(bj '[o["exitCode"], o["stdout"]]')" \
    "200 [0, 'no bash\\n42\\n']"
api POST "/v1/sandboxes/$P60:exec" '{"argv": ["mv", "/usr/bin/bash.away", "/usr/bin/bash"], "user": "root"}' >/dev/null
api POST "/v1/sandboxes/$P60:snapshot" '{"name": "srv60-snap"}' >/dev/null
S60=$(bj 'o["id"]')
is ":snapshot: ready" "$status $(bj 'o["state"]')" "200 ready"
api GET "/v1/snapshots?sandboxId=$P60&state=ready" >/dev/null
is "snapshots.list({sandboxId, state}): it" "$status $(bj '[s["id"] == "'"$S60"'" for s in o["data"]]')" "200 [True]"
api GET "/v1/snapshots?sandboxId=sb-none&name=srv60-snap" >/dev/null
is "… of another sandbox: none" "$status $(bj 'o["data"]')" "200 []"
api GET "/v1/images?state=ready&name=no-such-image" >/dev/null
is "images.list({state, name}): filtered (none of that name)" "$status $(bj 'o["data"]')" "200 []"
API_TOKEN=$TOKEN_B api POST "/v1/snapshots/$S60:delete" >/dev/null
is "B's POST :delete of A's snapshot: 404" "$status" 404
api POST "/v1/snapshots/$S60:delete" >/dev/null
is "snapshots.delete: POST /v1/snapshots/{id}:delete, 200 deleted" "$status $(bj '[o["id"] == "'"$S60"'", o["status"]]')" \
    "200 [True, 'deleted']"
api GET "/v1/snapshots/$S60" >/dev/null
is "… then GET: 404" "$status" 404
api POST "/v1/snapshots/$S60:delete" >/dev/null
is "… POST :delete again: 404" "$status" 404
api -H 'Prefer: wait=60' POST "/v1/sandboxes/$P60:stop" '{}' >/dev/null
is ":stop: stopped" "$status $(bj 'o["state"]')" "200 stopped"
api GET "/v1/sandboxes?state=stopped&label=part:60" >/dev/null
is "list({state: ['stopped']}): the stopped one, without includeStopped" \
    "$status $(bj '[s["id"] == "'"$P60"'" and s["state"] for s in o["data"]]')" "200 ['stopped']"
api GET "/v1/sandboxes?state=running&state=stopped&label=part:60" >/dev/null
is "… state repeated (running, stopped): it too" "$(bj '[s["state"] for s in o["data"]]')" "['stopped']"
api GET "/v1/sandboxes?label=part:60" >/dev/null
is "… no state filter, no includeStopped: live ones only" "$(bj 'o["data"]')" "[]"
api GET "/v1/sandboxes?includeStopped=true&label=part:60" >/dev/null
is "… includeStopped=true: it" "$(bj '[s["state"] for s in o["data"]]')" "['stopped']"
api DELETE "/v1/sandboxes/$P60" >/dev/null

api POST "$f60:remove" '{"path": "/workspace/t60", "recursive": true}' >/dev/null
is "cleanup: /workspace/t60 removed" "$status $(bj 'o["removed"]')" "200 True"
