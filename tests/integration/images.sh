#!/bin/bash
# images.sh - runtime image build/ls/get/rm/export/import: every kind of
# step (apt through Debian's archive, pip from the test PyPI, npm from the
# npm registry, run, file), the cache, versions and tags, sandboxes from
# images, and archives that must be refused.
. "$(dirname "$0")/libtest.sh"
. "$(dirname "$0")/testnet.sh"

# A private image store: these builds must not touch the shared one
# (but the default image comes from the shared cache, so no debootstrap).
export RUNTIME_DATA_DIR="$tmp/data"
mkdir -p "$RUNTIME_DATA_DIR"
if [ -d "${RUNTIME_TEST_DATA:-}/images" ]; then cp -al "$RUNTIME_TEST_DATA/images" "$RUNTIME_DATA_DIR/"; fi
# The first --apt build below must fetch apt's lists itself.
rm -rf "$RUNTIME_DATA_DIR/images/cache/apt-lists"

id=
trap 'runtime sandbox rm "$id" >/dev/null 2>&1; testnet_down; cleanup' EXIT
if ! testnet_up; then
    echo "Bail out! cannot make the test network"
    exit 1
fi

# -- bad input, refused before anything boots
expect_error "a bad apt package name" invalid_request runtime image build --apt 'jq;rm -rf /'
expect_error "a bad pip package name" invalid_request runtime image build --pip '../x'
expect_error "a missing --file source" file_not_found runtime image build --file /nonexistent:/x
expect_error "a relative --file destination" invalid_request runtime image build --file /etc/hostname:x
expect_error "nothing to build" usage runtime image build
expect_error "an unknown base" image_not_found runtime image build --from nosuch --run true
expect_error "a bad image name" invalid_request runtime image build --run true --name 'Bad Name'

# -- run and file steps; versions
echo "v1" >"$tmp/hello.txt"
runtime image build --run 'echo built >/built; rm -rf /usr/share/doc' --file "$tmp/hello.txt:/opt/" \
    --env GREETING=hi --workdir /opt --name demo >"$tmp/id1" 2>"$tmp/log1"
check "build --run --file prints an id" grep -qE '^[0-9a-f]{64}$' "$tmp/id1"
check "… and a progress line per step" test "$(grep -c '^runtime: step [12]/2: ' "$tmp/log1")" = 2
is "… and leaves no sandbox record" "$(runtime sandbox ls -a | tail -n +2)" ""
out=$(runtime sandbox run --image demo -- bash -c 'cat /built /opt/hello.txt; echo $GREETING; pwd; ls /usr/share/doc 2>&1 | wc -l')
is "a sandbox from the image has its files, env and workdir (and the deletion)" "$out" "$(printf 'built\nv1\nhi\n/opt\n1')"
runtime image build --run 'echo built >/built; rm -rf /usr/share/doc' --file "$tmp/hello.txt:/opt/" \
    --env GREETING=hi --workdir /opt --name demo >"$tmp/id1b" 2>"$tmp/log1b"
is "an identical build answers with the same image" "$(cat "$tmp/id1b")" "$(cat "$tmp/id1")"
is "… with every step cached" "$(grep -c '(cached)$' "$tmp/log1b")" "2"
check "… and no build sandbox" sh -c "! grep -q 'starting the build sandbox' '$tmp/log1b'"
runtime image build --quiet --run 'echo built >/built; rm -rf /usr/share/doc' --file "$tmp/hello.txt:/opt/" \
    --env GREETING=hi --workdir /opt --name demo >"$tmp/id1q" 2>"$tmp/log1q"
is "--quiet prints the id" "$(cat "$tmp/id1q")" "$(cat "$tmp/id1")"
is "… and nothing on stderr" "$(cat "$tmp/log1q")" ""
runtime image build --run 'echo built >/built; rm -rf /usr/share/doc' --file "$tmp/hello.txt:/opt/" \
    --env GREETING=bye --workdir /opt --name envdemo >/dev/null 2>"$tmp/log1c"
is "another --env keeps the --file step cached" "$(grep -c '(cached)$' "$tmp/log1c")" "1"
check "… but reruns the --run step (it sees the env)" grep -qx 'runtime: step 2/2: run echo built >/built; rm -rf /usr/share/doc' "$tmp/log1c"
echo "v2" >"$tmp/hello.txt"
runtime image build --run 'echo built >/built; rm -rf /usr/share/doc' --file "$tmp/hello.txt:/opt/" \
    --env GREETING=hi --workdir /opt --name demo:beta >"$tmp/id2" 2>"$tmp/log2"
check "a changed input file reruns its step and what follows" \
    test "$(grep -c '(cached)$' "$tmp/log2")" = 0
is "demo@1 keeps the first file" "$(runtime sandbox run --image demo@1 -- cat /opt/hello.txt)" "v1"
is "demo (latest) has the second" "$(runtime sandbox run --image demo -- cat /opt/hello.txt)" "v2"
is "demo:beta is the second too" "$(runtime image get demo:beta --json | json_get 'o["id"]')" "$(cat "$tmp/id2")"
is "image ls lists both versions" "$(runtime image ls --json | json_get 'sorted(i["version"] for i in o if i["name"] == "demo")')" "[1, 2]"
runtime image build --run 'echo built >/built; rm -rf /usr/share/doc' --file "$tmp/hello.txt:/opt/" \
    --env GREETING=hi --workdir /opt --name demo --no-cache >/dev/null 2>"$tmp/log3"
is "--no-cache runs every step" "$(grep -c '(cached)$' "$tmp/log3")" "0"
runtime image build --run 'echo oops >&2; exit 3' --name broken >"$tmp/out" 2>"$tmp/err"; rc=$?
check "a failing step fails the build" test "$rc" = 1
check "… naming the step and its exit code" grep -q "^Error \[build_failed\]: step 1/1 (run echo oops >&2; exit 3) failed with exit code 3" "$tmp/err"
# The error line names the command (and so "oops"): the output is on the
# hint's one line.
is "… with its last output, on the hint's one line" "$(grep '^Hint: ' "$tmp/err")" "Hint: its last output: oops"
expect_error "… and leaves no image" image_not_found runtime image get broken

# -- a recipe folder
mkdir -p "$tmp/recipe" "$tmp/bad"
echo recipe-file >"$tmp/recipe/data.txt"
cat >"$tmp/recipe/runtime.json" <<'EOF'
{"files": ["data.txt:/srv/data.txt"], "commands": ["echo from-recipe >/srv/made"],
 "env": {"RECIPE": "yes"}, "workdir": "/srv"}
EOF
echo '{"aptt": ["jq"]}' >"$tmp/bad/runtime.json"
runtime image build "$tmp/recipe" --name fromdir >/dev/null 2>"$tmp/log"
is "a folder with runtime.json builds" "$(runtime sandbox run --image fromdir -- bash -c 'cat data.txt made; echo $RECIPE')" \
    "$(printf 'recipe-file\nfrom-recipe\nyes')"
expect_error "a recipe with an unknown key is refused" invalid_request runtime image build "$tmp/bad"
expect_error "a folder without runtime.json is refused" file_not_found runtime image build "$tmp/recipe/none"

# -- pip from the test PyPI, only PyPI reachable
runtime image build --file "$TESTNET_CA:/etc/rt-test-ca.pem" --env PIP_CERT=/etc/rt-test-ca.pem \
    --pip rtdemo --run 'curl -fsS -m 5 http://http.test/ || printf "no-\\156etwork\\n"' --name pyimg >"$tmp/id" 2>"$tmp/log"; rc=$?
is "build --pip installs from the index" "$rc" "0"
is "the package is baked in" "$(runtime sandbox run --image pyimg --no-internet -- python3 -c 'import rtdemo; print(rtdemo.answer())')" "42"
# The step's own output: its progress line shows "no-\156etwork".
check "a --run step has no network" grep -qx "no-network" "$tmp/log"

# -- apt from Debian's archive
runtime image build --apt tree --name aptimg >/dev/null 2>"$tmp/log"; rc=$?
is "build --apt installs a Debian package" "$rc" "0"
[ "$rc" = 0 ] || diag "$(tail -5 "$tmp/log")"
is "… which the image runs" "$(runtime sandbox run --image aptimg -- bash -c 'tree --version | cut -c1-4')" "tree"
check "… and no apt lists are left in the image" test "$(runtime sandbox run --image aptimg -- bash -c 'ls /var/lib/apt/lists | grep -vc -e lock -e partial')" = 0
check "… fetching apt's lists (apt-get update)" grep -q 'InRelease' "$tmp/log"
# The same base: apt's lists come from the cache, and the unknown name is
# found before anything is installed.
runtime image build --apt tree --apt nosuch-rt-pkg --name aptbad >"$tmp/out" 2>"$tmp/err"; rc=$?
is "an unknown --apt name fails the build" "$rc" "1"
is "… in one error line naming it" "$(grep -v '^Hint: ' "$tmp/err" | grep -c '^Error')" "1"
check "… that line" grep -qx "Error \[invalid_request\]: no package 'nosuch-rt-pkg' in the image's apt sources" "$tmp/err"
check "… on the cached apt lists" grep -q '^runtime: apt lists of .* reused' "$tmp/err"
check "… without apt-get update" sh -c "! grep -q InRelease '$tmp/err'"
check "… before installing anything" sh -c "! grep -q '^Unpacking' '$tmp/err'"
expect_error "… and leaves no image" image_not_found runtime image get aptbad
is "… nor a sandbox record" "$(runtime sandbox ls -a | tail -n +2)" ""

# -- npm from the npm registry (Node.js from Debian, npm from the registry)
runtime image build --from aptimg --apt nodejs --npm is-number --name npmimg >/dev/null 2>"$tmp/log"; rc=$?
is "build --npm installs an npm package" "$rc" "0"
[ "$rc" = 0 ] || diag "$(tail -5 "$tmp/log")"
is "… which node finds" "$(runtime sandbox run --image npmimg -- bash -c 'NODE_PATH=$(npm root -g) node -e "console.log(require(\"is-number\")(7))"')" "true"

# -- a recipe with base, apt and npm: the same steps as npmimg, so cached
mkdir -p "$tmp/recipe2"
echo '{"base": "aptimg", "apt": ["nodejs"], "npm": ["is-number"]}' >"$tmp/recipe2/runtime.json"
rid=$(runtime image build "$tmp/recipe2" -t recipeimg:v1 2>"$tmp/log")
is "a recipe's base, apt and npm keys make npmimg's steps (all cached)" \
    "$(grep -c '^runtime: step [12]/2: \(apt nodejs\|npm is-number\) (cached)$' "$tmp/log")" "2"
is "… and its layers" "$(runtime image get recipeimg:v1 --json | json_get 'o["layers"]')" \
    "$(runtime image get npmimg --json | json_get 'o["layers"]')"
is "-t NAME:TAG names and tags it" "$(runtime image get recipeimg:v1 --json | json_get '(o["name"], o["tags"])')" \
    "('recipeimg', ['latest', 'v1'])"
is "an id prefix is a ref" "$(runtime image get "${rid:0:12}" --json | json_get 'o["id"]')" "$rid"
is "image ls shows ID NAME VERSION TAGS MIB CREATED" "$(runtime image ls | head -1 | tr -s ' ')" \
    "ID NAME VERSION TAGS MIB CREATED"
check "… the id first, shortened" sh -c "runtime image ls | grep -q '^${rid:0:12} *recipeimg *1 '"

# -- Ctrl-C (SIGINT from a script) mid-build: nothing of it stays.  The
# --file step is demo's (cached), so the build boots a disk of it.
disks=$(ls "$RUNTIME_CACHE_DIR/disks")
runtime image build --file "$tmp/hello.txt:/opt/" --run 'echo started; sleep 600' --name intr >"$tmp/out" 2>"$tmp/err" &
pid=$!
for _ in $(seq 3000); do grep -q '^started' "$tmp/err" 2>/dev/null && break; sleep 0.1; done
check "the interrupted build's step started" grep -q '^started' "$tmp/err"
check "… on a boot disk named after the image" grep -q '^runtime: Making the boot disk of image intr ' "$tmp/err"
kill -INT $pid
wait $pid; rc=$?
is "SIGINT stops a build with exit 130" "$rc" "130"
check "… saying it was interrupted" grep -q '^runtime: interrupted; the build stopped at step 2/2' "$tmp/err"
is "… leaving no sandbox record" "$(runtime sandbox ls -a | tail -n +2)" ""
for _ in $(seq 50); do [ -z "$(our_qemus)" ] && break; sleep 0.1; done
is "… no QEMU" "$(our_qemus)" ""
is "… no temporary layer" "$(ls "$RUNTIME_DATA_DIR/images/layers" | grep -c tmp)" "0"
is "… no disk or temporary file in the disk cache" "$(ls "$RUNTIME_CACHE_DIR/disks")" "$disks"
expect_error "… and no image" image_not_found runtime image get intr

# -- images in use, export, rm, import
id=$(runtime sandbox create --image demo@1 --timeout 600)
expect_error "rm refuses an image a live sandbox runs" image_in_use runtime image rm demo@1
runtime sandbox rm "$id" >/dev/null; id=
is "export prints the archive's path" "$(runtime image export demo@1 "$tmp/demo.tar")" "$tmp/demo.tar"
check "export writes an archive" bash -c "tar -tf '$tmp/demo.tar' manifest.json >/dev/null"
runtime image rm demo@1 >/dev/null
expect_error "rm removes the version" image_not_found runtime image get demo@1
latest=$(runtime image get demo --json | json_get 'o["id"]')
new=$(runtime image import "$tmp/demo.tar" 2>"$tmp/err")
is "import gives back the same id" "$new" "$(cat "$tmp/id1")"
is "… and the image runs" "$(runtime sandbox run --image "$new" -- cat /opt/hello.txt)" "v1"
# An old export comes back as the next version; latest stays on the newer.
is "… as demo's next version" "$(runtime image get "$new" --json | json_get '(o["version"], o["tags"])')" \
    "($(runtime image ls --json | json_get 'max(i["version"] for i in o if i["name"] == "demo")'), [])"
is "… without moving demo:latest back to old content" "$(runtime image get demo --json | json_get 'o["id"]')" "$latest"
check "… saying so" grep -q "latest stays on a newer version" "$tmp/err"
store=$(runtime image ls --json)
is "importing an image already there prints its id" "$(runtime image import "$tmp/demo.tar" 2>"$tmp/err")" "$new"
is "… and changes nothing" "$(runtime image ls --json)" "$store"
check "… saying so" grep -q "already in the store" "$tmp/err"

# -- archives that must be refused, the store unchanged
before=$(runtime image ls --json)
python3 - "$tmp/demo.tar" "$tmp" <<'EOF'
import hashlib, io, json, sys, tarfile
src, out = sys.argv[1], sys.argv[2]
with tarfile.open(src) as t:
    members = {m.name: t.extractfile(m).read() for m in t.getmembers()}
# 1: one byte of a layer changed
layer = [n for n in members if n.startswith("layers/")][-1]
bad = dict(members)
data = bytearray(bad[layer]); data[len(data) // 2] ^= 1; bad[layer] = bytes(data)
def write(path, entries):
    with tarfile.open(path, "w") as t:
        for name, data in entries.items():
            ti = tarfile.TarInfo(name); ti.size = len(data); t.addfile(ti, io.BytesIO(data))
write(out + "/tampered.tar", bad)
# 2: a layer whose digests are right but which climbs out with ../
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w:gz") as t:
    ti = tarfile.TarInfo("../../etc/evil"); ti.size = 4; t.addfile(ti, io.BytesIO(b"evil"))
evil = buf.getvalue(); digest = hashlib.sha256(evil).hexdigest()
m = json.loads(members["manifest.json"]); m["layers"] = m["layers"] + [digest]; m["name"] = "evil"
del m["id"]
plain = json.dumps(m, separators=(",", ":"), ensure_ascii=False)
m = {"id": hashlib.sha256(plain.encode()).hexdigest(), **m}
entries = {"manifest.json": json.dumps(m).encode()}
entries.update({n: d for n, d in members.items() if n.startswith("layers/")})
entries["layers/%s.tar.gz" % digest] = evil
write(out + "/traversal.tar", entries)
# 3: not an archive at all
open(out + "/garbage.tar", "wb").write(b"this is not a tar file\n" * 50)
# 4: a manifest naming a layer the archive does not hold (ids consistent)
m = json.loads(members["manifest.json"]); m["layers"] = m["layers"] + ["ab" * 32]; m["name"] = "holey"
del m["id"]
plain = json.dumps(m, separators=(",", ":"), ensure_ascii=False)
m = {"id": hashlib.sha256(plain.encode()).hexdigest(), **m}
entries = {"manifest.json": json.dumps(m).encode()}
entries.update({n: d for n, d in members.items() if n.startswith("layers/")})
write(out + "/missing.tar", entries)
# 5, 6: manifests naming a layer "layers" (the archive's folder) or ""
def with_manifest(path, change):
    m = json.loads(members["manifest.json"]); change(m); m["name"] = "crafted"
    del m["id"]
    plain = json.dumps(m, separators=(",", ":"), ensure_ascii=False)
    m = {"id": hashlib.sha256(plain.encode()).hexdigest(), **m}
    entries = {"manifest.json": json.dumps(m).encode()}
    entries.update({n: d for n, d in members.items() if n.startswith("layers/")})
    return entries
write(out + "/layers-dir.tar", with_manifest(out, lambda m: m["layers"].append("layers")))
write(out + "/layer-empty.tar", with_manifest(out, lambda m: m["layers"].append("")))
write(out + "/env-type.tar", with_manifest(out, lambda m: m.__setitem__("env", "A=1")))
# 7-9: layers (right digests) with an absolute path, a device node, and a
# symlink out of the image that the next layer writes through
def layer(*members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for ti in members:
            t.addfile(ti, io.BytesIO(b"evil") if ti.isreg() else None)
    return buf.getvalue()
def member(name, kind=tarfile.REGTYPE, **kw):
    ti = tarfile.TarInfo(name); ti.type = kind; ti.size = 4 if kind == tarfile.REGTYPE else 0
    for k, v in kw.items(): setattr(ti, k, v)
    return ti
def with_layers(path, *layers):
    digests = [hashlib.sha256(l).hexdigest() for l in layers]
    entries = with_manifest(path, lambda m: m["layers"].extend(digests))
    entries.update({"layers/%s.tar.gz" % d: l for d, l in zip(digests, layers)})
    write(path, entries)
with_layers(out + "/absolute.tar", layer(member("/etc/evil")))
with_layers(out + "/device.tar", layer(member("opt/disk", tarfile.BLKTYPE, devmajor=8, devminor=0)))
with_layers(out + "/symlink.tar", layer(member("opt/out", tarfile.SYMTYPE, linkname="/etc")),
            layer(member("opt/out/evil")))
# 10: a hard link to that symlink, written through in the same layer
with_layers(out + "/hardlink.tar", layer(member("opt/out", tarfile.SYMTYPE, linkname="/etc"),
                                         member("opt/also", tarfile.LNKTYPE, linkname="opt/out"),
                                         member("opt/also/evil")))
EOF
expect_error "a tampered layer is refused" invalid_request runtime image import "$tmp/tampered.tar"
check "… saying so" grep -q "tampered" "$tmp/err"
expect_error "a layer with ../ is refused" invalid_request runtime image import "$tmp/traversal.tar"
check "… naming the path" grep -q "unsafe path" "$tmp/err"
expect_error "garbage is refused" invalid_request runtime image import "$tmp/garbage.tar"
expect_error "a manifest naming a missing layer is refused" invalid_request runtime image import "$tmp/missing.tar"
check "… naming it" grep -q "abababab" "$tmp/err"
expect_error "a manifest naming a layer \"layers\" is refused" invalid_request runtime image import "$tmp/layers-dir.tar"
expect_error "a manifest naming a layer \"\" is refused" invalid_request runtime image import "$tmp/layer-empty.tar"
expect_error "a manifest whose env is not a list is refused" invalid_request runtime image import "$tmp/env-type.tar"
expect_error "a layer with an absolute path is refused" invalid_request runtime image import "$tmp/absolute.tar"
check "… naming it" grep -q "unsafe path '/etc/evil'" "$tmp/err"
expect_error "a layer with a device node is refused" invalid_request runtime image import "$tmp/device.tar"
check "… naming it" grep -q "device node 'opt/disk'" "$tmp/err"
expect_error "a layer writing through an earlier layer's symlink is refused" invalid_request \
    runtime image import "$tmp/symlink.tar"
check "… naming both" grep -q "writes 'opt/out/evil' through the symlink 'opt/out'" "$tmp/err"
expect_error "a layer writing through a hard link to a symlink is refused" invalid_request \
    runtime image import "$tmp/hardlink.tar"
check "… naming it" grep -q "writes 'opt/also/evil' through the symlink 'opt/also'" "$tmp/err"
is "the store is unchanged after the refusals" "$(runtime image ls --json)" "$before"
is "no temporary layer is left" "$(ls "$RUNTIME_DATA_DIR/images/layers" | grep -c tmp)" "0"
check "nothing escaped to /etc" test ! -e /etc/evil
check_no_leaks "images"
done_testing
