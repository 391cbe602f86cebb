#!/bin/bash
# procs.sh - spawn/ps/logs/kill and cat/files on one long-lived sandbox.
. "$(dirname "$0")/libtest.sh"

id=$(runtime sandbox create --timeout 600)
id2=
trap 'runtime sandbox rm "$id" $id2 >/dev/null 2>&1; cleanup' EXIT

# -- background processes
p1=$(runtime sandbox spawn "$id" -- bash -c 'for i in 1 2 3; do echo tick $i; echo tock $i >&2; sleep 0.5; done; exit 2')
is "spawn prints a process number" "$p1" 1
p2=$(runtime sandbox spawn "$id" -- sleep 300)
is "a second spawn gets the next number" "$p2" 2
# Numbers are the spawns' own, per sandbox: execs (and the streams the
# docs' first exec takes) do not use them up.
runtime sandbox exec "$id" -- true
is "an exec between spawns takes no number: the next spawn is 3" "$(runtime sandbox spawn "$id" -- true)" 3
printf 'FROM_FILE=yes\n' >"$tmp/sb.env"
id2=$(runtime sandbox create --timeout 600 --env-file "$tmp/sb.env")
runtime sandbox exec "$id2" -- true; runtime sandbox exec "$id2" -- true
is "another sandbox, after two execs, numbers its own from 1" "$(runtime sandbox spawn "$id2" -- sleep 300)" 1
is "… as the docs show it: logs, kill and ps by that number" \
    "$(runtime sandbox kill "$id2" 1 --signal KILL; runtime sandbox ps "$id2" --json | json_get '[p["process"] for p in o]')" \
    "$(printf '1\n[1]')"
is "create --env-file: the sandbox's variables" "$(runtime sandbox exec "$id2" -- printenv FROM_FILE)" "yes"
printf 'FROM_FILE=exec\n' >"$tmp/cmd.env"
is "exec --env-file: the command's, over the sandbox's" \
    "$(runtime sandbox exec "$id2" --env-file "$tmp/cmd.env" -- printenv FROM_FILE)" "exec"
pe=$(runtime sandbox spawn "$id2" --env-file "$tmp/cmd.env" -- printenv FROM_FILE)
for _ in $(seq 50); do runtime sandbox ps "$id2" | grep -qE "^$pe +exited" && break; sleep 0.1; done
is "spawn --env-file too" "$pe $(runtime sandbox logs "$id2" "$pe")" "2 exec"
runtime sandbox rm "$id2" >/dev/null; id2=
runtime sandbox ps "$id" >"$tmp/ps"
check "ps has its header" grep -q "^PROCESS  *STATE  *EXIT  *COMMAND" "$tmp/ps"
check "ps shows the sleeper running" grep -qE "^2 +running +- +sleep 300" "$tmp/ps"
runtime sandbox logs "$id" "$p1" -f >"$tmp/out" 2>"$tmp/err"
is "logs -f follows stdout to the end" "$(cat "$tmp/out")" "$(printf 'tick 1\ntick 2\ntick 3')"
is "… and stderr, kept apart" "$(cat "$tmp/err")" "$(printf 'tock 1\ntock 2\ntock 3')"
is "ps --json shows its exit code" "$(runtime sandbox ps "$id" --json | json_get '[(p["process"], p["state"], p["exitCode"]) for p in o if p["process"] == 1]')" "[(1, 'exited', 2)]"
is "logs of an ended process still works" "$(runtime sandbox logs "$id" "$p1" 2>/dev/null)" "$(printf 'tick 1\ntick 2\ntick 3')"
is "kill prints the process" "$(runtime sandbox kill "$id" "$p2" --signal KILL)" "$p2"
for _ in $(seq 50); do runtime sandbox ps "$id" | grep -qE "^2 +exited" && break; sleep 0.1; done
check "the killed process shows 137" grep -qE "^2 +exited +137 " <(runtime sandbox ps "$id")
p3=$(runtime sandbox spawn "$id" -- bash -c 'trap "echo got-int; exit 0" INT; while :; do sleep 0.1; done')
sleep 1
runtime sandbox kill "$id" "$p3" --signal INT >/dev/null
is "kill --signal INT reaches the process's trap" "$(runtime sandbox logs "$id" "$p3" -f)" "got-int"
# Nobody reads: the latest 1 MiB is kept and the rest is reported dropped.
p4=$(runtime sandbox spawn "$id" -- bash -c 'head -c 3000000 /dev/zero | tr "\0" x; echo; echo END')
for _ in $(seq 100); do runtime sandbox ps "$id" | grep -qE "^$p4 +exited" && break; sleep 0.2; done
runtime sandbox logs "$id" "$p4" >"$tmp/big" 2>"$tmp/note"
check "an unread process keeps about its latest 1 MiB" test "$(stat -c %s "$tmp/big")" -le $((1024 * 1024 + 65536))
is "… ending with its last line" "$(tail -n 1 "$tmp/big")" "END"
check "… and says it dropped the rest" grep -q "bytes of older output were dropped" "$tmp/note"
expect_error "logs of an unknown process is not_found" not_found runtime sandbox logs "$id" 99
expect_error "a process that is not a number is a usage error" usage runtime sandbox logs "$id" abc
expect_error "an unknown signal is a usage error" usage runtime sandbox kill "$id" 1 --signal BOGUS
expect_error "spawn without a command is a usage error" usage runtime sandbox spawn "$id"

# -- stdin for background processes: spawn --stdin, write with offsets
mon() { curl -s --unix-socket "$RUNTIME_STATE_DIR/$id/api.sock" -d "$2" "http://x/v1/sandboxes/$id:$1"; }
ps_of() { runtime sandbox ps "$id" --json | json_get "[[p.get(k) for k in $2] for p in o if p['process'] == $1][0]"; }
pc=$(runtime sandbox spawn "$id" --stdin -- cat)
is "spawn --stdin: its stdin open at offset 0, no pty" "$(ps_of "$pc" '["state","stdinOpen","stdinOffset","pty"]')" "['running', True, 0, None]"
printf 'one\n' | runtime sandbox write "$id" "$pc"; is "write sends what it reads, printing nothing" "$?" 0
printf 'two\n' | runtime sandbox write "$id" "$pc"
is "write --json names the accepted end" "$(printf 'three\n' | runtime sandbox write "$id" "$pc" --json)" \
    "{\"process\":$pc,\"offset\":14}"
is "a retry at an old offset is taken without repeating a byte" \
    "$(mon write "{\"process\":$pc,\"data\":\"$(printf 'two\nthree\n' | base64 -w0)\",\"offset\":4}" | json_get 'o')" \
    "{'process': $pc, 'offset': 14, 'stdinOpen': True}"
is "other bytes at an old offset (a second writer's, its offset stale): invalid_offset, nothing taken" \
    "$(mon write "{\"process\":$pc,\"data\":\"$(printf 'TWO\n' | base64 -w0)\",\"offset\":4}" | json_get '[o["error"]["code"], "other bytes" in o["error"]["message"]]')" \
    "['invalid_offset', True]"
is "an offset past the end is invalid_offset, naming where it ends" \
    "$(mon write "{\"process\":$pc,\"data\":\"eA==\",\"offset\":20}" | json_get '[o["error"]["code"], "at 14" in o["error"]["message"]]')" \
    "['invalid_offset', True]"
is "data that is not base64 is refused" "$(mon write "{\"process\":$pc,\"data\":\"%%%\",\"offset\":14}" | json_get 'o["error"]["code"]')" \
    "invalid_request"
runtime sandbox write "$id" "$pc" --eof </dev/null; is "write --eof with nothing more closes it" "$?" 0
for _ in $(seq 50); do runtime sandbox ps "$id" | grep -qE "^$pc +exited" && break; sleep 0.1; done
is "… cat saw every byte once, then its end" "$(runtime sandbox logs "$id" "$pc")" "$(printf 'one\ntwo\nthree')"
is "… and ended 0, its stdin closed at 14" "$(ps_of "$pc" '["state","exitCode","stdinOpen","stdinOffset"]')" "['exited', 0, False, 14]"
expect_error "a write to an ended process is stdin_closed" stdin_closed runtime sandbox write "$id" "$pc" <<<"late"
ps_=$(runtime sandbox spawn "$id" -- sleep 300)
expect_error "a write to a process spawned without --stdin is stdin_closed" stdin_closed runtime sandbox write "$id" "$ps_" <<<"x"
runtime sandbox kill "$id" "$ps_" --signal KILL >/dev/null
expect_error "a write to an unknown process is not_found" not_found runtime sandbox write "$id" 99 </dev/null
# 3 MB into a process that reads only after 2 s: the sandbox holds 1 MiB,
# write goes on as it takes more, nothing lost or doubled.
pw=$(runtime sandbox spawn "$id" --stdin -- bash -c 'sleep 2; sha256sum')
head -c 3000000 /dev/urandom >"$tmp/in3"
runtime sandbox write "$id" "$pw" --eof <"$tmp/in3"; is "write of 3 MB with --eof" "$?" 0
for _ in $(seq 100); do runtime sandbox ps "$id" | grep -qE "^$pw +exited" && break; sleep 0.1; done
is "… arrives whole, once (held back while the process did not read)" "$(runtime sandbox logs "$id" "$pw" | cut -d' ' -f1)" \
    "$(sha256sum <"$tmp/in3" | cut -d' ' -f1)"
# keepStdin and a pty are :spawn's: on :exec nothing would write to its
# stdin, end it or resize the pty.
is ":exec with keepStdin: 400 invalid_request, naming it" \
    "$(mon exec '{"argv":["cat"],"keepStdin":true}' | json_get '[o["error"]["code"], "keepStdin" in o["error"]["message"]]')" \
    "['invalid_request', True]"
is ":exec with a pty: 400 invalid_request, naming it" \
    "$(mon exec '{"argv":["cat"],"pty":{"cols":80,"rows":24}}' | json_get '[o["error"]["code"], "pty" in o["error"]["message"]]')" \
    "['invalid_request', True]"
# Two writers at once: the second reads the offset, then its stdin for
# 3 s, while the first writes there; its offset stale, it is refused, not
# dropped unsaid or interleaved.
pr=$(runtime sandbox spawn "$id" --stdin -- cat)
head -c 200000 /dev/zero | tr '\0' a >"$tmp/wa"
head -c 200000 /dev/zero | tr '\0' b >"$tmp/wb"
{ sleep 3; cat "$tmp/wb"; } | runtime sandbox write "$id" "$pr" 2>"$tmp/eb" & wb=$!
sleep 1
runtime sandbox write "$id" "$pr" <"$tmp/wa"; ra=$?
wait $wb; rb=$?
is "two writers at once: the first's bytes taken (exit 0), the stale second refused (exit 1)" "$ra $rb" "0 1"
check "… with invalid_offset, saying another writer wrote there" grep -q "^Error \[invalid_offset\]: .*another writer" "$tmp/eb"
runtime sandbox write "$id" "$pr" --eof </dev/null
for _ in $(seq 100); do runtime sandbox ps "$id" | grep -qE "^$pr +exited" && break; sleep 0.1; done
is "… the process read the first's bytes only, once" "$(runtime sandbox logs "$id" "$pr" | sha256sum)" "$(sha256sum <"$tmp/wa")"
# A pty (through the monitor's API: the CLI's terminal is exec -it).
pt=$(mon spawn '{"argv":["bash","-c","stty size; read l; stty size; echo got $l"],"pty":{"cols":80,"rows":24},"keepStdin":true}' | json_get 'o["process"]')
is "a process on a pty shows its size" "$(ps_of "$pt" '["pty","stdinOpen"]')" "[{'cols': 80, 'rows': 24}, True]"
for _ in $(seq 100); do runtime sandbox logs "$id" "$pt" | grep -q '24 80' && break; sleep 0.1; done
is ":resize answers its new size" "$(mon resize "{\"process\":$pt,\"cols\":100,\"rows\":30}" | json_get 'o["pty"]')" "{'cols': 100, 'rows': 30}"
is ":resize of a process without a pty is a usage error" "$(mon resize "{\"process\":$pw,\"cols\":10,\"rows\":10}" | json_get 'o["error"]["code"]')" "usage"
is ":resize out of range is a usage error" "$(mon resize "{\"process\":$pt,\"cols\":0,\"rows\":10}" | json_get 'o["error"]["code"]')" "usage"
printf 'hi\n' | runtime sandbox write "$id" "$pt"
for _ in $(seq 50); do runtime sandbox ps "$id" | grep -qE "^$pt +exited" && break; sleep 0.1; done
is "… the program saw 24 80, then the resize, then the line" "$(runtime sandbox logs "$id" "$pt" | tr -d '\r' | grep -v '^hi$')" \
    "$(printf '24 80\n30 100\ngot hi')"
# Across a pause to disk: what was written stays written (1.5 MiB to a
# process that does not read yet: some in the guest, some still held by
# the monitor), the offset goes on.
pp=$(runtime sandbox spawn "$id" --stdin -- bash -c 'while [ ! -e /tmp/go ]; do sleep 0.2; done; sha256sum')
head -c 1572864 /dev/urandom >"$tmp/in15"
runtime sandbox write "$id" "$pp" <"$tmp/in15"
runtime sandbox pause "$id" >/dev/null && runtime sandbox wake "$id" >/dev/null
is "after pause and wake its stdin is still open where it was" "$(ps_of "$pp" '["state","stdinOpen","stdinOffset"]')" \
    "['running', True, 1572864]"
pn=$(runtime sandbox spawn "$id" -- true)
is "… and the next spawn after the wake goes on from its number" "$pn" "$((pp + 1))"
is "… and a stale writer's other bytes before its end are still invalid_offset" \
    "$(mon write "{\"process\":$pp,\"data\":\"$(printf 'TWO\n' | base64 -w0)\",\"offset\":1572860}" | json_get 'o["error"]["code"]')" \
    "invalid_offset"
printf 'after\n' | runtime sandbox write "$id" "$pp" --eof
runtime sandbox exec "$id" -- touch /tmp/go
for _ in $(seq 300); do runtime sandbox ps "$id" | grep -qE "^$pp +exited" && break; sleep 0.1; done
is "… and the process read every byte once, in order" "$(runtime sandbox logs "$id" "$pp" | cut -d' ' -f1)" \
    "$( (cat "$tmp/in15"; printf 'after\n') | sha256sum | cut -d' ' -f1)"
# Forked: each child goes on with the same stdin, then its own.
pf=$(runtime sandbox spawn "$id" --stdin -- cat)
printf 'both\n' | runtime sandbox write "$id" "$pf"
kid=$(runtime sandbox fork "$id")
check "fork with a process's stdin open" test -n "$kid"
printf 'parent\n' | runtime sandbox write "$id" "$pf" --eof
printf 'child\n' | runtime sandbox write "$kid" "$pf" --eof
for _ in $(seq 100); do runtime sandbox ps "$kid" | grep -qE "^$pf +exited" && break; sleep 0.1; done
is "… the child's process got the shared bytes, then its own" "$(runtime sandbox logs "$kid" "$pf")" "$(printf 'both\nchild')"
is "… the parent's, its own" "$(runtime sandbox logs "$id" "$pf")" "$(printf 'both\nparent')"
is "… the child keeps its parent's numbers and goes on from them" "$(runtime sandbox spawn "$kid" -- true)" "$((pf + 1))"
runtime sandbox rm "$kid" >/dev/null

# -- files
runtime sandbox exec "$id" -- bash -c 'mkdir -p d/e; echo hello > d/a.txt; printf 0123456789 > "d/sp ace"; ln -s a.txt d/link; head -c 2000000 /dev/urandom > /tmp/blob; sha256sum < /tmp/blob > /tmp/blob.sum'
is "files lists one level, sorted, d|l|- SIZE PATH" "$(runtime sandbox files "$id" /workspace/d)" \
    "$(printf -- '- 6 /workspace/d/a.txt\nd 4096 /workspace/d/e\nl 5 /workspace/d/link\n- 10 /workspace/d/sp ace')"
check "files defaults to /workspace" grep -q "^d 4096 /workspace/d$" <(runtime sandbox files "$id")
check "--depth 2 goes deeper" grep -q "/workspace/d/a.txt" <(runtime sandbox files "$id" --depth 2)
is "files --json" "$(runtime sandbox files "$id" /workspace/d/a.txt --json | json_get 'o')" "[{'type': '-', 'size': 6, 'path': '/workspace/d/a.txt'}]"
is "cat prints a file" "$(runtime sandbox cat "$id" /workspace/d/a.txt)" "hello"
is "cat is byte for byte (2 MB of binary)" "$(runtime sandbox cat "$id" /tmp/blob | sha256sum)" "$(runtime sandbox cat "$id" /tmp/blob.sum)"
expect_error "cat of a directory is is_a_directory" is_a_directory runtime sandbox cat "$id" /workspace/d
expect_error "cat of a missing file is file_not_found" file_not_found runtime sandbox cat "$id" /workspace/nope
expect_error "a relative sandbox path is a usage error" usage runtime sandbox cat "$id" d/a.txt
expect_error "files of a missing path is file_not_found" file_not_found runtime sandbox files "$id" /nope
expect_error "files --depth 0 is a usage error" usage runtime sandbox files "$id" --depth 0

# -- cp, both ways
mkdir -p "$tmp/src/sub"; echo hi > "$tmp/src/a.txt"; chmod 750 "$tmp/src/a.txt"
head -c 3000000 /dev/urandom > "$tmp/src/sub/big.bin"; ln -s a.txt "$tmp/src/link"; printf x > "$tmp/src/sp ace"
runtime sandbox cp "$tmp/src" "$id:/workspace/"; is "cp a directory in" "$?" 0
is "… whole, modes and links kept, owned by the user" \
    "$(runtime sandbox exec "$id" -- bash -c 'cd /workspace/src && stat -c "%A %U %n" a.txt link "sp ace" sub/big.bin && readlink link')" \
    "$(printf -- '-rwxr-x--- runtime a.txt\nlrwxrwxrwx runtime link\n-rw-r--r-- runtime sp ace\n-rw-r--r-- runtime sub/big.bin\na.txt')"
is "… byte for byte" "$(runtime sandbox exec "$id" -- sha256sum < /dev/null /workspace/src/sub/big.bin | cut -d' ' -f1)" "$(sha256sum "$tmp/src/sub/big.bin" | cut -d' ' -f1)"
runtime sandbox cp "$id:/workspace/src" "$tmp/back"; is "cp a directory out under a new name" "$?" 0
check "… identical to the original" diff -r "$tmp/src" "$tmp/back"
is "… modes kept" "$(stat -c %A "$tmp/back/a.txt")" "-rwxr-x---"
mkdir "$tmp/into"
runtime sandbox cp "$id:/workspace/src/a.txt" "$tmp/into"; is "cp a file out into a directory" "$(cat "$tmp/into/a.txt")" "hi"
runtime sandbox cp "$tmp/src/a.txt" "$id:/workspace/renamed.txt"; is "cp a file in under a new name" "$(runtime sandbox cat "$id" /workspace/renamed.txt)" "hi"
expect_error "cp needs exactly one sandbox side" usage runtime sandbox cp "$tmp/a" "$tmp/b"
expect_error "… not two" usage runtime sandbox cp "$id:/a" "$id:/b"
expect_error "cp of a missing sandbox file is file_not_found" file_not_found runtime sandbox cp "$id:/workspace/nope" "$tmp/"
expect_error "cp of a missing host file is file_not_found" file_not_found runtime sandbox cp "$tmp/nope" "$id:/workspace/"
expect_error "cp into a missing sandbox dir is file_not_found" file_not_found runtime sandbox cp "$tmp/src/a.txt" "$id:/nope/dir/x"
expect_error "a relative sandbox path is a usage error" usage runtime sandbox cp "$id:workspace/x" "$tmp/"
ln -s "$tmp/src/a.txt" "$tmp/alias"
expect_error "a link named as the source is refused without --follow" invalid_request runtime sandbox cp "$tmp/alias" "$id:/workspace/"
runtime sandbox cp --follow "$tmp/alias" "$id:/workspace/"
is "a link copied in keeps its own name, with its target's bytes" "$(runtime sandbox cat "$id" /workspace/alias)" "hi"
head -c 5000000 /dev/zero > "$tmp/five"
expect_error "a big file into a missing sandbox dir is file_not_found" file_not_found runtime sandbox cp "$tmp/five" "$id:/nope/dir/x"
expect_error "extend by an absurd number is a usage error" usage runtime sandbox extend "$id" 99999999999
is "… and the API refuses it too, without overflowing into a past lease end" \
    "$(curl -s --unix-socket "$RUNTIME_STATE_DIR/$id/api.sock" -d '{"seconds":9999999999999999}' "http://x/v1/sandboxes/$id:extend" | python3 -c 'import json,sys; print(json.load(sys.stdin)["error"]["code"])')" "invalid_request"
is "… the sandbox still runs" "$(runtime sandbox exec "$id" -- echo alive)" "alive"
runtime sandbox exec "$id" -- bash -c 'cp /bin/true /tmp/suid && chmod 4755 /tmp/suid'
runtime sandbox cp "$id:/tmp/suid" "$tmp/suid"
is "cp out drops setuid bits (the guest's files are untrusted)" "$(stat -c %a "$tmp/suid")" "755"
check "no temporary dirs left on the host" test -z "$(ls -A "$tmp" | grep rt-cp)"
is "no temporary dirs left in the sandbox" "$(runtime sandbox exec "$id" -- bash -c 'ls -A /workspace | grep -c rt-cp')" 0

# Ctrl-C during a copy: exit 130, nothing half-written left anywhere.
runtime sandbox exec "$id" -- bash -c 'head -c 200000000 /dev/zero > /tmp/huge'
runtime sandbox cp "$id:/tmp/huge" "$tmp/huge" 2>"$tmp/cperr" &
cp_pid=$!
sleep 2
kill -INT $cp_pid
wait $cp_pid; rc=$?
is "Ctrl-C during cp exits 130" "$rc" 130
check "… leaving nothing under the real name" test ! -e "$tmp/huge"
check "… nor a temporary dir" test -z "$(ls -A "$tmp" | grep rt-cp)"
is "… and the sandbox still runs" "$(runtime sandbox exec "$id" -- echo alive)" "alive"

# A copy cut short (the sandbox stops mid-stream) never lands under its name.
runtime sandbox cp "$id:/tmp/huge" "$tmp/huge" 2>"$tmp/cperr" &
cp_pid=$!
sleep 2
runtime sandbox stop "$id" >/dev/null
wait $cp_pid; rc=$?
is "a copy cut short exits 1" "$rc" 1
check "… with download_incomplete" grep -q "download_incomplete" "$tmp/cperr"
check "… and nothing under the real name" test ! -e "$tmp/huge"
check "… nor a temporary dir" test -z "$(ls -A "$tmp" | grep rt-cp)"

runtime sandbox rm "$id" >/dev/null
check_no_leaks "after procs and files"
done_testing
