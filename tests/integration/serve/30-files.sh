# 30-files.sh - a sandbox's files over the API (docs/API.md): content put
# and get (mode, parents, 413, sha256), list, stat, mkdir/remove/rename,
# chunked uploads (out of order, a wrong checksum, missing chunks, abort,
# bounds), archives out and in (tar and tar.gz), another tenant's sandbox.
# Hostile input is contained: paths with shell syntax reach the guest as
# names, a tar with absolute and ../ members or garbage stays the guest's
# business, upload ids that are not ours never name a host path.  Works
# under /workspace/t30 of the shared $SB and removes it at the end.

f30=/v1/sandboxes/$SB/files
u30=/v1/sandboxes/$SB/uploads
q30() { python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe="/"))' "$1"; }
sha30() { sha256sum "$1" | cut -d' ' -f1; }
# get30 PATH FILE: a GET of raw bytes into FILE, its headers for h30 NAME.
get30() {
    status=$(curl -sS --noproxy '*' -o "$2" -D "$tmp/f30-h" -w '%{http_code}' -H "Authorization: Bearer $TOKEN_A" "$API$1")
}
h30() { tr -d '\r' <"$tmp/f30-h" | sed -n "s/^$1: *//Ip" | tail -1; }

# -- content
printf 'hello, files\n' >"$tmp/f30-small"
api PUT "$f30/content?path=/workspace/t30/small.txt" "@$tmp/f30-small" >/dev/null
is "PUT content: 200 with {path, size, mode 644 by default}" \
    "$status $(bj '[o["path"], o["size"], o["mode"]]')" "200 ['/workspace/t30/small.txt', 13, '644']"
get30 "$f30/content?path=/workspace/t30/small.txt" "$tmp/f30-back"
check "GET content: the same bytes back" cmp -s "$tmp/f30-small" "$tmp/f30-back"
is "… x-content-length and x-content-sha256 say so" "$(h30 x-content-length) $(h30 x-content-sha256)" \
    "13 $(sha30 "$tmp/f30-small")"
is "… as application/octet-stream" "$(h30 content-type)" "application/octet-stream"

printf '#!/bin/sh\necho hi\n' >"$tmp/f30-run"
api PUT "$f30/content?path=/workspace/t30/a/b/c/run.sh&mode=750" "@$tmp/f30-run" >/dev/null
is "PUT with mode=750 into missing parents: 200, the parents made" "$status $(bj 'o["mode"]')" "200 750"
api GET "$f30/stat?path=/workspace/t30/a/b/c/run.sh" >/dev/null
is "… stat says file, mode 750, its size, exists" "$(bj '[o["type"], o["mode"], o["size"], o["exists"], o["name"]]')" \
    "['file', '750', 18, True, 'run.sh']"
check "… and a modifiedAt in ISO 8601" grep -qE '^20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z$' <<<"$(bj 'o["modifiedAt"]')"

head -c $((2 << 20)) /dev/urandom >"$tmp/f30-2m"
api PUT "$f30/content?path=/workspace/t30/big.bin" "@$tmp/f30-2m" >/dev/null
is "PUT of 2 MiB: 413 payload_too_large" "$status $(bj 'o["error"]["code"]')" "413 payload_too_large"
api GET "$f30/stat?path=/workspace/t30/big.bin" >/dev/null
is "… and nothing was written" "$(bj 'o["exists"]')" "False"
api PUT "$f30/content?path=/workspace/t30/x&mode=9z" "@$tmp/f30-small" >/dev/null
is "a mode that is not octal: 400" "$status" 400
api PUT "$f30/content?path=workspace/x" "@$tmp/f30-small" >/dev/null
is "a relative path: 400 invalid_request" "$status $(bj 'o["error"]["code"]')" "400 invalid_request"
api PUT "$f30/content?path=/workspace/t30/small.txt/under" "@$tmp/f30-small" >/dev/null
is "a file under a file: 404 file_not_found" "$status $(bj 'o["error"]["code"]')" "404 file_not_found"

# A name full of shell syntax is a name: the scripts take paths as arguments.
evil='/workspace/t30/$(touch pwned) `id` ;x "q'"'"'.txt'
api PUT "$f30/content?path=$(q30 "$evil")" "@$tmp/f30-small" >/dev/null
is "PUT to a name with \$( ), backquotes, quotes and ;: 200" "$status" 200
api GET "$f30/list?path=/workspace/t30" >/dev/null
is "… listed under exactly that name" "$(bj 'sorted(e["name"] for e in o["data"])')" \
    "$(python3 -c 'import sys; print(sorted([sys.argv[1], "a", "small.txt"]))' "${evil##*/}")"
for p in /pwned /workspace/pwned /workspace/t30/pwned /root/pwned; do
    api GET "$f30/stat?path=$p" >/dev/null
    bj 'o["exists"]'
done >"$tmp/f30-pwned"
is "… and no command in it ran" "$(sort -u "$tmp/f30-pwned")" "False"

api GET "$f30/content?path=/workspace/t30/nope" >/dev/null
is "GET a missing file: 404 file_not_found" "$status $(bj 'o["error"]["code"]')" "404 file_not_found"
api GET "$f30/content?path=/workspace/t30/a" >/dev/null
is "GET a directory: 400 is_a_directory" "$status $(bj 'o["error"]["code"]')" "400 is_a_directory"
api GET "$f30/content?path=/dev/zero" >/dev/null
is "GET a device (endless): 400, not read" "$status" 400
api GET "$f30/content" >/dev/null
is "GET without path: 400" "$status" 400

# -- list, stat
api GET "$f30/list?path=/workspace/t30&depth=2" >/dev/null
is "list depth=2: the entries two levels down, with types" \
    "$(bj '[(e["path"].split("/t30/")[1], e["type"]) for e in o["data"] if "pwned" not in e["path"]]')" \
    "[('a', 'directory'), ('a/b', 'directory'), ('small.txt', 'file')]"
api GET "$f30/list?path=/workspace/t30&depth=0" >/dev/null
is "list depth=0: 400" "$status" 400
api GET "$f30/list?path=/workspace/t30/none" >/dev/null
is "list of a missing dir: 404 file_not_found" "$status $(bj 'o["error"]["code"]')" "404 file_not_found"
api GET "$f30/stat?path=/workspace/t30/none" >/dev/null
is "stat of a missing path: 200 {exists: false, path}" "$status $(bj '[o["exists"], o["path"]]')" \
    "200 [False, '/workspace/t30/none']"
api GET "$f30/stat?path=/workspace/t30/a" >/dev/null
is "stat of a directory: type directory" "$(bj 'o["type"]')" "directory"

# -- mkdir, remove, rename
api POST "$f30:mkdir" '{"path": "/workspace/t30/m/n/o", "parents": true}' >/dev/null
is "mkdir with parents: 200 {}" "$status $body" "200 {}"
api POST "$f30:mkdir" '{"path": "/workspace/t30/m/n/o", "parents": true}' >/dev/null
is "… again with parents: still 200" "$status" 200
api POST "$f30:mkdir" '{"path": "/workspace/t30/m/n/o"}' >/dev/null
is "… again without parents: 409 conflict" "$status $(bj 'o["error"]["code"]')" "409 conflict"
api POST "$f30:mkdir" '{"path": "/workspace/t30/p/q"}' >/dev/null
is "mkdir without parents under a missing dir: 404" "$status" 404
api POST "$f30:mkdir" '{"path": "/workspace/t30/z", "mode": "700", "colour": 1}' >/dev/null
is "mkdir with unknown fields: 400 naming both" "$status $(bj 'sorted(i["path"] for i in o["error"]["details"]["issues"])')" \
    "400 ['colour', 'mode']"
api POST "$f30:chmod" '{"path": "/workspace/t30"}' >/dev/null
is "an unknown verb: 404" "$status" 404
api POST "$f30:remove" '{"path": "/workspace/t30/m"}' >/dev/null
is "remove a non-empty dir without recursive: 409 conflict" "$status $(bj 'o["error"]["code"]')" "409 conflict"
api POST "$f30:remove" '{"path": "/workspace/t30/m", "recursive": true}' >/dev/null
is "… with recursive: {removed: true}" "$status $(bj 'o["removed"]')" "200 True"
api POST "$f30:remove" '{"path": "/workspace/t30/m", "recursive": true}' >/dev/null
is "… again: {removed: false}" "$status $(bj 'o["removed"]')" "200 False"
api POST "$f30:remove" '{"path": "/", "recursive": true}' >/dev/null
is "remove / : 400" "$status" 400
api POST "$f30:remove" "{\"path\": \"$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1])[1:-1])' "$evil")\"}" >/dev/null
is "remove the shell-syntax name: removed" "$(bj 'o["removed"]')" "True"
api POST "$f30:rename" '{"from": "/workspace/t30/small.txt", "to": "/workspace/t30/moved.txt"}' >/dev/null
is "rename: 200 {}" "$status $body" "200 {}"
api GET "$f30/stat?path=/workspace/t30/small.txt" >/dev/null
is "… the old name is gone" "$(bj 'o["exists"]')" "False"
api PUT "$f30/content?path=/workspace/t30/other.txt" "@$tmp/f30-run" >/dev/null
api POST "$f30:rename" '{"from": "/workspace/t30/other.txt", "to": "/workspace/t30/moved.txt"}' >/dev/null
is "rename onto an existing file without overwrite: 409 conflict" "$status $(bj 'o["error"]["code"]')" "409 conflict"
api POST "$f30:rename" '{"from": "/workspace/t30/other.txt", "to": "/workspace/t30/moved.txt", "overwrite": true}' >/dev/null
is "… with overwrite: 200" "$status" 200
get30 "$f30/content?path=/workspace/t30/moved.txt" "$tmp/f30-back"
check "… and it holds the other file's bytes" cmp -s "$tmp/f30-run" "$tmp/f30-back"
api POST "$f30:rename" '{"from": "/workspace/t30/none", "to": "/workspace/t30/x"}' >/dev/null
is "rename a missing file: 404" "$status" 404

# -- uploads: a few MiB in chunks, sent out of order and at once
head -c $((9 << 20)) /dev/urandom >"$tmp/f30-up"
printf 'tail' >>"$tmp/f30-up"
size=$(stat -c %s "$tmp/f30-up")
api POST "$u30" "{\"path\": \"/workspace/t30/up/data.bin\", \"size\": $size, \"sha256\": \"$(sha30 "$tmp/f30-up")\", \"mode\": \"600\"}" >/dev/null
up=$(bj 'o["uploadId"]')
chunk=$(bj 'o["chunkBytes"]')
is "POST uploads: 201 {uploadId, chunkBytes}" "$status $([ -n "$up" ] && [ "$chunk" -gt 0 ] && echo ok)" "201 ok"
# put_chunks ID FILE OFFSET…: the chunks at those offsets, all at once; prints their statuses.
put_chunks() {
    local id=$1 file=$2 off pids=()
    shift 2
    for off in "$@"; do
        head -c $((off + chunk)) "$file" | tail -c +$((off + 1)) | head -c "$chunk" >"$tmp/f30-chunk-$off"
        curl -sS --noproxy '*' -o /dev/null -w '%{http_code}\n' -X PUT -H "Authorization: Bearer $TOKEN_A" \
            -H 'Content-Type: application/octet-stream' --data-binary "@$tmp/f30-chunk-$off" \
            "$API$u30/$id?offset=$off" >"$tmp/f30-st-$off" &
        pids+=($!)
    done
    wait "${pids[@]}"
    for off in "$@"; do cat "$tmp/f30-st-$off"; rm -f "$tmp/f30-chunk-$off" "$tmp/f30-st-$off"; done | sort -u | tr '\n' ' '
}
offsets=$(seq 0 "$chunk" $((size - 1)) | sort -rn | tr '\n' ' ')
is "the chunks in reverse order, all at once: 200 each" "$(put_chunks "$up" "$tmp/f30-up" $offsets)" "200 "
api PUT "$u30/$up?offset=$size" "@$tmp/f30-small" >/dev/null
is "a chunk past the size: 400, refused" "$status" 400
api PUT "$u30/$up?offset=100" "@$tmp/f30-small" >/dev/null
is "a chunk at an offset not on a block: 400" "$status" 400
api POST "$u30/$up:commit" >/dev/null
is "commit: 200 {path, size, mode}" "$status $(bj '[o["path"], o["size"], o["mode"]]')" "200 ['/workspace/t30/up/data.bin', $size, '600']"
get30 "$f30/content?path=/workspace/t30/up/data.bin" "$tmp/f30-back"
check "… GET streams the same $size bytes back (over 1 MiB: no sha256 header)" \
    test "$(sha30 "$tmp/f30-back")" = "$(sha30 "$tmp/f30-up")" -a -z "$(h30 x-content-sha256)" -a "$(h30 x-content-length)" = "$size"
api POST "$u30/$up:commit" >/dev/null
is "… the upload is gone after its commit: 404" "$status" 404
is "… and nothing of it is left on the host" "$(ls -A "$RUNTIME_DATA_DIR/serve/uploads/"*/ 2>/dev/null | grep -v '^\.lock$')" ""

# -- open uploads reserve the host's disk: 10 GiB uploads (sparse until
# their chunks come) are refused 507 once their sizes pass the free room
free=$(df -B1 --output=avail "$RUNTIME_DATA_DIR" | tail -1)
if [ "$free" -lt $((70 << 30)) ]; then
    ups=() sts=
    for i in 1 2 3 4 5 6 7 8; do
        api POST "$u30" "{\"path\": \"/workspace/t30/big$i\", \"size\": $((10 << 30)), \"sha256\": \"$(printf '0%.0s' $(seq 64))\"}" >/dev/null
        sts="$sts $status"
        [ "$status" = 201 ] && ups+=("$(bj 'o["uploadId"]')")
        [ "$status" = 201 ] || break
    done
    is "10 GiB uploads begun until their sizes pass the $((free >> 30)) GiB free: then 507" \
        "${#ups[@]} ${sts##* }" "$(( (free - (256 << 20)) / (10 << 30) )) 507"
    for id in "${ups[@]}"; do api POST "$u30/$id:abort" >/dev/null; done
    is "… aborted, nothing left" "$(ls -A "$RUNTIME_DATA_DIR/serve/uploads/"*/ 2>/dev/null | grep -v '^\.lock$')" ""
else
    ok "open uploads reserve the disk # SKIP over 70 GiB free"
fi

api POST "$u30" "{\"path\": \"/workspace/t30/up/bad.bin\", \"size\": $size, \"sha256\": \"$(printf '0%.0s' $(seq 64))\"}" >/dev/null
up=$(bj 'o["uploadId"]')
put_chunks "$up" "$tmp/f30-up" $offsets >/dev/null
api POST "$u30/$up:commit" >/dev/null
is "a whole upload with the wrong sha256: 400 checksum_mismatch" "$status $(bj 'o["error"]["code"]')" "400 checksum_mismatch"
api GET "$f30/stat?path=/workspace/t30/up/bad.bin" >/dev/null
is "… nothing landed in the sandbox" "$(bj 'o["exists"]')" "False"
api POST "$u30/$up:abort" >/dev/null
is "abort: 200" "$status" 200
api PUT "$u30/$up?offset=0" "@$tmp/f30-small" >/dev/null
is "… a chunk after the abort: 404" "$status" 404

api POST "$u30" "{\"path\": \"/workspace/t30/up/half.bin\", \"size\": $size, \"sha256\": \"$(sha30 "$tmp/f30-up")\"}" >/dev/null
up=$(bj 'o["uploadId"]')
put_chunks "$up" "$tmp/f30-up" 0 >/dev/null
api POST "$u30/$up:commit" >/dev/null
is "commit with chunks missing: 409 upload_incomplete, naming where" \
    "$status $(bj '[o["error"]["code"], o["error"]["details"]["missingOffset"]]')" "409 ['upload_incomplete', $chunk]"
api POST "$u30/$up:abort" >/dev/null

api POST "$u30" '{"path": "/workspace/t30/huge", "size": 1099511627776, "sha256": "'"$(sha30 "$tmp/f30-up")"'"}' >/dev/null
is "an upload of 1 TiB: 400 (10 GiB at most)" "$status" 400
api POST "$u30" '{"path": "/workspace/t30/x", "size": 1, "sha256": "zz"}' >/dev/null
is "a sha256 that is not hex: 400" "$status" 400
for id in up-..%2F..%2F..%2Fetc up-0000000000000000 up-%2e%2e; do
    api PUT "$u30/$id?offset=0" "@$tmp/f30-small" >/dev/null
    printf '%s ' "$status"
done >"$tmp/f30-ids"
is "upload ids that are not ours (../ included): 404 each" "$(cat "$tmp/f30-ids")" "404 404 404 "
opened=
for i in $(seq 9); do
    api POST "$u30" '{"path": "/workspace/t30/n", "size": 1, "sha256": "'"$(sha30 "$tmp/f30-up")"'"}' >/dev/null
    [ "$status" = 201 ] && opened="$opened $(bj 'o["uploadId"]')"
done
is "a ninth open upload of a tenant: 429 quota_exceeded" "$status $(bj 'o["error"]["code"]')" "429 quota_exceeded"
for id in $opened; do api POST "$u30/$id:abort" >/dev/null; done

# -- archives
get30 "$f30/archive?path=/workspace/t30/a" "$tmp/f30-rel.tar"
is "GET archive of a directory: 200, a tar of entries relative to it (as PUT archive takes them)" \
    "$status $(tar -tf "$tmp/f30-rel.tar" 2>&1 | sort | tr '\n' ' ')" "200 ./ ./b/ ./b/c/ ./b/c/run.sh "
api PUT "$f30/archive?path=/workspace/t30/again" "@$tmp/f30-rel.tar" >/dev/null
api GET "$f30/stat?path=/workspace/t30/again/b/c/run.sh" >/dev/null
is "… PUT back under another directory: the same tree there" "$(bj '[o["exists"], o["size"]]')" "[True, 18]"
get30 "$f30/archive?path=/workspace/t30/a/b/c/run.sh" "$tmp/f30-one.tar"
is "… of a file: its own name" "$status $(tar -tf "$tmp/f30-one.tar" 2>&1 | tr '\n' ' ')" "200 run.sh "
get30 "$f30/archive?path=/workspace/t30/a&named=true" "$tmp/f30.tar"
is "… named=true (the CLI's cp): named from the path's last component" \
    "$status $(tar -tf "$tmp/f30.tar" 2>&1 | sort | tr '\n' ' ')" "200 a/ a/b/ a/b/c/ a/b/c/run.sh "
get30 "$f30/archive?path=/workspace/t30/a&gzip=true&named=true" "$tmp/f30.tgz"
is "… gzip=true: a tar.gz of the same" "$(h30 content-type) $(tar -tzf "$tmp/f30.tgz" 2>&1 | sort | tr '\n' ' ')" \
    "application/gzip a/ a/b/ a/b/c/ a/b/c/run.sh "
api GET "$f30/archive?path=/workspace/t30/none" >/dev/null
is "GET archive of a missing path: 404" "$status" 404
api PUT "$f30/archive?path=/workspace/t30/in" "@$tmp/f30.tar" >/dev/null
is "PUT archive (tar): 200, unpacked under the path" "$status $body" "200 {}"
get30 "$f30/content?path=/workspace/t30/in/a/b/c/run.sh" "$tmp/f30-back"
check "… its file has the same bytes" cmp -s "$tmp/f30-run" "$tmp/f30-back"
api PUT "$f30/archive?path=/workspace/t30/ingz" "@$tmp/f30.tgz" >/dev/null
api GET "$f30/stat?path=/workspace/t30/ingz/a/b/c/run.sh" >/dev/null
is "PUT archive (tar.gz): unpacked too" "$(bj '[o["exists"], o["size"]]')" "[True, 18]"
# A hostile tar: an absolute symlink and members with ../ and an absolute name.
python3 - "$tmp/f30-evil.tar" <<'EOF'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    link = tarfile.TarInfo("link")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    t.addfile(link)
    for name in ("../../escape-up", "/escape-abs", "ok.txt"):
        data = b"x\n"
        i = tarfile.TarInfo(name)
        i.size = len(data)
        t.addfile(i, io.BytesIO(data))
EOF
api PUT "$f30/archive?path=/workspace/t30/evil" "@$tmp/f30-evil.tar" >/dev/null
is "a tar with a ../ member: 400 invalid_request (the guest's tar refused it)" "$status $(bj 'o["error"]["code"]')" \
    "400 invalid_request"
api GET "$f30/stat?path=/workspace/t30/evil/link" >/dev/null
is "a tar with an absolute symlink: the link lands in the guest as a link" "$(bj '[o["type"], o["symlinkTarget"]]')" \
    "['symlink', '/etc/passwd']"
api GET "$f30/stat?path=/workspace/escape-up" >/dev/null
is "… its ../ member did not climb out of the path" "$(bj 'o["exists"]')" "False"
check "… and nothing of it reached the host" test ! -e /escape-abs -a ! -e "$tmp/escape-up"
head -c 3000 /dev/urandom >"$tmp/f30-junk"
api PUT "$f30/archive?path=/workspace/t30/junk" "@$tmp/f30-junk" >/dev/null
is "PUT archive of garbage: 400 invalid_request" "$status $(bj 'o["error"]["code"]')" "400 invalid_request"

# -- another tenant
API_TOKEN=$TOKEN_B api GET "$f30/content?path=/workspace/t30/moved.txt" >/dev/null
s1=$status
API_TOKEN=$TOKEN_B api PUT "$f30/content?path=/workspace/t30/b.txt" "@$tmp/f30-small" >/dev/null
s2=$status
API_TOKEN=$TOKEN_B api GET "$f30/list?path=/workspace" >/dev/null
s3=$status
API_TOKEN=$TOKEN_B api POST "$u30" '{"path": "/workspace/t30/b", "size": 1, "sha256": "'"$(sha30 "$tmp/f30-up")"'"}' >/dev/null
s4=$status
API_TOKEN=$TOKEN_B api GET "$f30/archive?path=/workspace/t30" >/dev/null
is "tenant B on A's sandbox: content, put, list, uploads, archive all 404" "$s1 $s2 $s3 $s4 $status" "404 404 404 404 404"
api GET "$f30/stat?path=/workspace/t30/b.txt" >/dev/null
is "… and B wrote nothing there" "$(bj 'o["exists"]')" "False"

api POST "$f30:remove" '{"path": "/workspace/t30", "recursive": true}' >/dev/null
is "the part's files removed" "$(bj 'o["removed"]')" "True"
