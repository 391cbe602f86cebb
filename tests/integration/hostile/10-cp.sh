# 10-cp.sh - cp out: the guest, as root, answers with device nodes, a FIFO,
# setuid and world-writable files, symlinks leading out, a symlink as the
# copied item, then (its tar replaced) with archives it crafted: a 1 TiB
# header, names outside the item, a flood of entries, a pax hard link
# carrying data.  Nothing of it lands on the host; cp in of a host symlink
# needs --follow.  Leaves the shared sandbox usable (its tar restored).

# The shared sandbox (made once, its id kept by hostile.sh).
sb=$(hostile_sandbox)
cpd=$tmp/cp
mkdir -p "$cpd"
no_temp() { test -z "$(ls -A "$cpd" | grep rt-cp)"; }

# The copies run with umask 022: group and world lose write.
hcp() { (umask 022; runtime sandbox cp "$@"); }

if [ -z "$sb" ]; then
    fail "cp: the shared hostile sandbox starts"
else
    runtime sandbox exec "$sb" --user root -- sh -c '
        set -e; rm -rf /workspace/x /workspace/report.txt /workspace/big
        mkdir -p /workspace/x/sub; cd /workspace/x
        mknod disk b 8 0; mknod kmsg c 1 11; chmod 0666 disk kmsg
        mkfifo fifo
        cp /bin/true suid; chown root:root suid; chmod 4755 suid
        printf secret > sgid; chmod 2777 sgid
        mkdir open sticky; chmod 0777 open; chmod 1777 sticky
        ln -s /etc/shadow abs; ln -s ../../../../etc/passwd up; ln -s ../suid sub/ok
        ln -s /etc/shadow /workspace/report.txt
        head -c 3000000 /dev/zero > /workspace/big' </dev/null
    is "cp: the guest made its hostile tree as root" "$?" 0

    hcp "$sb:/workspace/x" "$cpd/out" 2>"$cpd/err"
    is "cp out of a tree with devices, a FIFO, setuid files and links out: what is safe lands" "$?" 0
    is "… no block or character device on the host" "$(find "$cpd/out" -type b -o -type c)" ""
    is "… no FIFO" "$(find "$cpd/out" -type p)" ""
    is "… no setuid, setgid or sticky bit (was 4755, 2777, 1777)" "$(find "$cpd/out" -perm /7000)" ""
    is "… nothing group- or world-writable (was 0777, 2777, 1777)" "$(find "$cpd/out" ! -type l -perm /022)" ""
    is "… modes masked, not lost: 4755 -> 755, 2777 -> 755, 0777 dir -> 755" \
        "$(stat -c %a "$cpd/out/suid" "$cpd/out/sgid" "$cpd/out/open" | tr '\n' ' ')" "755 755 755 "
    check "… no symlink leading out (-> /etc/shadow, -> ../../../../etc/passwd)" \
        test ! -L "$cpd/out/abs" -a ! -L "$cpd/out/up" -a -z "$(find "$cpd/out" -lname '/*')"
    is "… a symlink inside the copy is kept" "$(readlink "$cpd/out/sub/ok")" "../suid"
    is "… the skipped entries named on stderr" "$(cat "$cpd/err")" \
        "runtime: skipped 5 entries: device nodes (2), FIFOs (1), symlinks leading out of the copy (2)"
    json=$(hcp --json "$sb:/workspace/x" "$cpd/out2" 2>/dev/null)
    is "… and counted in --json" \
        "$(echo "$json" | json_get 'o["skipped"], o["skippedKinds"]["devices"], o["skippedKinds"]["fifos"], o["skippedKinds"]["links"]')" \
        "5 2 1 2"
    check "… no temporary dir left" no_temp

    expect_error "cp out of a symlink as the item (report.txt -> /etc/shadow) is refused" invalid_request \
        hcp "$sb:/workspace/report.txt" "$cpd/r"
    check "… nothing at the destination, not even a link" test ! -e "$cpd/r" -a ! -L "$cpd/r"
    check "… the error says how to copy the link itself" grep -q -- "--keep-links" "$tmp/err"
    hcp --keep-links "$sb:/workspace/report.txt" "$cpd/r"
    is "with --keep-links the item lands as the link itself" "$(readlink "$cpd/r")" "/etc/shadow"

    expect_error "a copy past --max-size 1M is download_incomplete" download_incomplete \
        hcp --max-size 1M "$sb:/workspace/big" "$cpd/big"
    check "… and nothing lands" test ! -e "$cpd/big"
    check "… no temporary dir left" no_temp

    # cp in: a host symlink named as the source is followed only when asked.
    echo plain > "$cpd/plain.txt"
    expect_error "cp in of a host symlink (-> /etc/shadow) is refused without --follow" invalid_request \
        runtime sandbox cp "$cpd/r" "$sb:/workspace/leak"
    is "… nothing reaches the guest" "$(runtime sandbox exec "$sb" -- sh -c 'test -e /workspace/leak && echo yes || echo no' </dev/null)" "no"
    check "… the error names --follow" grep -q -- "--follow" "$tmp/err"
    ln -s "$cpd/plain.txt" "$cpd/alias"
    runtime sandbox cp --follow "$cpd/alias" "$sb:/workspace/alias"
    is "with --follow it copies what the link points to" "$(runtime sandbox cat "$sb" /workspace/alias)" "plain"

    # The guest's tar replaced by one that sends crafted archives.
    python3 - "$cpd" <<'EOF'
import io, sys, tarfile
d = sys.argv[1]
def add(t, name, size=0, data=None, kind=tarfile.REGTYPE):
    i = tarfile.TarInfo(name); i.size = size; i.type = kind; i.mode = 0o644
    t.addfile(i, io.BytesIO(data) if data is not None else None)
with open(d + "/huge.tar", "wb") as f:
    t = tarfile.open(fileobj=f, mode="w", format=tarfile.PAX_FORMAT)
    add(t, "x", kind=tarfile.DIRTYPE)
    add(t, "../escape.txt", 3, b"bad")
    add(t, "/tmp/rt-hostile-abs.txt", 3, b"bad")
    add(t, "x/small", 2, b"ok")
    t.fileobj.flush()
    # A header whose 1 TiB never follows: no end-of-archive either.
    i = tarfile.TarInfo("x/huge"); i.size = 1 << 40
    f.seek(t.offset); f.write(i.tobuf(tarfile.PAX_FORMAT))
with open(d + "/many.tar", "wb") as f:
    t = tarfile.open(fileobj=f, mode="w", format=tarfile.GNU_FORMAT)
    add(t, "x", kind=tarfile.DIRTYPE)
    for n in range(20000):
        add(t, "x/f%d" % n)
    t.close()
# A pax hard link carrying data, mode 06777, owner root: it would rewrite
# and chmod its target.
with open(d + "/hl.tar", "wb") as f:
    t = tarfile.open(fileobj=f, mode="w", format=tarfile.PAX_FORMAT)
    add(t, "x", kind=tarfile.DIRTYPE)
    add(t, "x/f", 5, b"hello")
    i = tarfile.TarInfo("x/h"); i.type = tarfile.LNKTYPE; i.linkname = "x/f"; i.size = 5; i.mode = 0o6777
    i.pax_headers = {"comment": "a pax header: the size is obeyed"}
    t.addfile(i, io.BytesIO(b"EVIL!"))
    t.close()
EOF
    runtime sandbox cp "$cpd/huge.tar" "$sb:/tmp/huge.tar" && runtime sandbox cp "$cpd/many.tar" "$sb:/tmp/many.tar" &&
        runtime sandbox cp "$cpd/hl.tar" "$sb:/tmp/hl.tar"
    is "cp: the crafted archives reach the guest" "$?" 0
    runtime sandbox exec "$sb" --user root -- sh -c 't=$(command -v tar); mv "$t" "$t.real"
        printf "#!/bin/sh\ncat /tmp/\$(cat /tmp/which).tar\n" > "$t"; chmod 755 "$t"; echo huge > /tmp/which' </dev/null
    start=$(date +%s)
    expect_error "a 1 TiB entry (and names outside the item) is download_incomplete under the 10 GiB default" \
        download_incomplete hcp "$sb:/workspace/x" "$cpd/bomb"
    check "… refused at its header, within 60 s" test $(($(date +%s) - start)) -lt 60
    check "… nothing lands: not the item, not ../escape.txt, not /tmp/rt-hostile-abs.txt" \
        test ! -e "$cpd/bomb" -a ! -e "$tmp/escape.txt" -a ! -e "$cpd/escape.txt" -a ! -e /tmp/rt-hostile-abs.txt
    check "… no temporary dir left" no_temp
    runtime sandbox exec "$sb" --user root -- sh -c 'echo many > /tmp/which' </dev/null
    expect_error "20000 entries under --max-size 1M are download_incomplete" download_incomplete \
        hcp --max-size 1M "$sb:/workspace/x" "$cpd/bomb"
    check "… nothing lands" test ! -e "$cpd/bomb"
    check "… no temporary dir left" no_temp
    runtime sandbox exec "$sb" --user root -- sh -c 'echo hl > /tmp/which' </dev/null
    hcp "$sb:/workspace/x" "$cpd/hl"
    is "a pax hard link with data (06777, root) is skipped: its target keeps its bytes and 0644" \
        "$(cat "$cpd/hl/f" 2>&1) $(stat -c %a "$cpd/hl/f" 2>&1) $(find "$cpd/hl" -perm /7002 | wc -l)" "hello 644 0"
    runtime sandbox exec "$sb" --user root -- sh -c 't=$(command -v tar); mv "$t.real" "$t"; rm -f /tmp/which /tmp/*.tar' </dev/null
    hcp "$sb:/workspace/x/sgid" "$cpd/sgid"
    is "the guest's tar restored, the shared sandbox copies again" "$(cat "$cpd/sgid")" "secret"
    runtime sandbox exec "$sb" --user root -- rm -rf /workspace/x /workspace/report.txt /workspace/big \
        /workspace/alias </dev/null
fi
rm -rf "$cpd"
