# 20-images.sh - a hostile image: an imported archive whose layer carries a
# setuid-root program (a copy of id), made into a boot disk while another
# user (nobody) watches the cache; and a layer bomb.  Nothing of an image
# may be reachable by another user, and a bomb is refused before it is
# unpacked.  Sourced by hostile.sh; one VM boots (the disk is made by the
# sandbox that uses it).

img_cache=${RUNTIME_CACHE_DIR:-/var/cache/runtime}
img_data="$tmp/img-data"
img_suid=usr/local/bin/rt-rootme
mkdir -p "$img_data"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups -- "$@"; }

# The default image is in the test store once the shared sandbox runs.
hostile_sandbox >/dev/null
# The archives: the default image plus a layer with the setuid-root file
# (ids and digests right, as an attacker would make them); a layer that
# claims 17 GiB of zeros and holds them, in 17 MB of gzip.
runtime image export runtime "$tmp/img-base.tar" >/dev/null
python3 - "$tmp/img-base.tar" "$tmp" "$img_suid" <<'EOF'
import hashlib, io, json, sys, tarfile, zlib
src, out, suid = sys.argv[1:4]
with tarfile.open(src) as t:
    members = {m.name: t.extractfile(m).read() for m in t.getmembers()}
base = json.loads(members["manifest.json"])
def image(path, name, layers, keep_base):
    m = {k: v for k, v in base.items() if k != "id"}
    m["name"] = name
    m["layers"] = (base["layers"] if keep_base else []) + [hashlib.sha256(l).hexdigest() for l in layers]
    plain = json.dumps(m, separators=(",", ":"), ensure_ascii=False)
    m = {"id": hashlib.sha256(plain.encode()).hexdigest(), **m}
    with tarfile.open(path, "w") as t:
        def add(name, data):
            ti = tarfile.TarInfo(name); ti.size = len(data); t.addfile(ti, io.BytesIO(data))
        add("manifest.json", json.dumps(m).encode())
        for n, d in members.items():
            if keep_base and n.startswith("layers/"):
                add(n, d)
        for l in layers:
            add("layers/%s.tar.gz" % hashlib.sha256(l).hexdigest(), l)
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w:gz") as t:
    data = open("/usr/bin/id", "rb").read()
    ti = tarfile.TarInfo(suid); ti.size = len(data); ti.mode = 0o4755; ti.uid = ti.gid = 0
    t.addfile(ti, io.BytesIO(data))
image(out + "/img-suid.tar", "rootme", [buf.getvalue()], True)
# The bomb: gzip members one after the other are one stream: a header for
# a 17 GiB file, 17 GiB of zeros (272 members of 64 MiB), the tar's end.
def gz(data):
    c = zlib.compressobj(9, zlib.DEFLATED, 31); return c.compress(data) + c.flush()
ti = tarfile.TarInfo("zeros"); ti.size = 17 << 30; ti.mode = 0o644
c = zlib.compressobj(9, zlib.DEFLATED, 31); chunk = bytes(1 << 20)
member = b"".join(c.compress(chunk) for _ in range(64)) + c.flush()
bomb = gz(ti.tobuf(tarfile.PAX_FORMAT)) + member * (17 * 16) + gz(bytes(1024))
image(out + "/img-bomb.tar", "bomb", [bomb], False)
EOF
check "the crafted archives are made" test -s "$tmp/img-suid.tar" -a -s "$tmp/img-bomb.tar"

# -- the bomb
expect_error "a layer bomb (17 GiB of zeros in $(($(stat -c %s "$tmp/img-bomb.tar") / 1000000)) MB) is refused" \
    invalid_request env RUNTIME_DATA_DIR="$img_data" runtime image import "$tmp/img-bomb.tar"
check "… saying it unpacks past the limit" grep -q "a layer unpacks past 16384 MiB" "$tmp/err"
is "… and leaves nothing in the store" \
    "$(RUNTIME_DATA_DIR="$img_data" runtime image ls --json; find "$img_data/images" -type f)" "[]"

# -- the setuid-root file, while nobody watches the cache
img_id=$(RUNTIME_DATA_DIR="$img_data" runtime image import "$tmp/img-suid.tar" 2>"$tmp/err")
check "the image with a setuid-root file is imported (its layers pass the checks)" \
    grep -qE '^[0-9a-f]{64}$' <<<"$img_id"
# A watcher polls the cache for the tree being made into the disk (at any
# depth in a .tmp-* dir of disks/); once the setuid file is in it, nobody
# tries to list the dirs, stat the file and run it.
(
    for _ in $(seq 6000); do
        for f in "$img_cache"/disks/.tmp-*/"$img_suid" "$img_cache"/disks/.tmp-*/*/"$img_suid"; do
            # Complete: libarchive sets the setuid bit last.
            [ "$(stat -c %a "$f" 2>/dev/null)" = 4755 ] || continue
            w=${f#"$img_cache"/disks/}; w="$img_cache/disks/${w%%/*}"
            echo "work dir $(stat -c '%a %U' "$w"), file $(stat -c '%a %U' "$f")"
            as_nobody ls "$img_cache/disks" >/dev/null 2>&1 && echo "nobody lists the disks dir"
            as_nobody ls "$w" >/dev/null 2>&1 && echo "nobody lists the work dir"
            as_nobody stat "$f" >/dev/null 2>&1 && echo "nobody stats the file"
            # Through a shell: setpriv itself still holds root's capabilities
            # when it execs its command.
            out=$(as_nobody sh -c '"$1" -u' sh "$f" 2>/dev/null) && echo "nobody runs the file: euid $out"
            exit 0
        done
        sleep 0.05
    done
    echo "the tree was never seen"
) >"$tmp/img-watch" 2>&1 &
img_watcher=$!
img_out=$(RUNTIME_DATA_DIR="$img_data" runtime sandbox run --image "$img_id" -- stat -c '%a %u' "/$img_suid" 2>"$tmp/err")
is "the setuid-root file reaches the guest's disk (the guest's own business)" "$img_out" "4755 0"
kill "$img_watcher" 2>/dev/null
wait "$img_watcher"
is "while the disk is made, its tree is in a root-only 0700 dir (others cannot list, stat or run anything)" \
    "$(cat "$tmp/img-watch")" "work dir 700 root, file 4755 root"
img_open=$(find "$img_cache/disks" "$img_cache/base" "$img_data/images" \
    \( -type d ! -perm 0700 \) -o \( -type f ! -perm 0600 \) -o \( ! -user root \) 2>/dev/null)
is "after it, every dir of the image store and the disk cache is 0700, every file 0600, all root's" "$img_open" ""
check "another user (nobody) cannot read the boot disk" \
    sh -c '! setpriv --reuid=nobody --regid=nogroup --clear-groups -- head -c1 "$1" >/dev/null 2>&1' sh "$img_cache/disks/$img_id.ext4"
check "no work dir or temporary disk is left in the cache" \
    test -z "$(ls -A "$img_cache/disks" | grep -e '^\.tmp-' -e '\.tmp\.')"
RUNTIME_DATA_DIR="$img_data" runtime image rm "$img_id" >/dev/null
check "image rm takes its disk away" test ! -e "$img_cache/disks/$img_id.ext4"
rm -rf "$img_data" "$tmp/img-base.tar" "$tmp/img-suid.tar" "$tmp/img-bomb.tar"
