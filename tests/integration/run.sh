#!/bin/bash
# run.sh - `runtime sandbox run`: output, exit codes, argv, stdin, --json.
. "$(dirname "$0")/libtest.sh"

out=$(runtime sandbox run -- python3 -c 'print(6*7)'); rc=$?
is "prints 42" "$out" "42"
is "exit 0" "$rc" 0
# As docker run --rm: no record left, yet usage (the ledger) still has it.
before=$(runtime sandbox ls --all --json | json_get 'len(o)')
runtime sandbox run -- true
is "run leaves no record" "$(runtime sandbox ls --all --json | json_get 'len(o)')" "$before"
runtime sandbox run --keep-record --label t=keeprec -- true
is "--keep-record keeps it, stopped" "$(runtime sandbox ls --all --label t=keeprec --json | json_get '[s["state"] for s in o]')" "['stopped']"
kept=$(runtime sandbox ls --all --label t=keeprec --json | json_get 'o[0]["id"]')
check "usage still counts what run removed" bash -c "runtime usage --json | grep -q '\"resourceId\"'"
runtime sandbox rm "$kept" >/dev/null

runtime sandbox run -- false; is "exit 1 passed through" "$?" 1
runtime sandbox run -- bash -c 'exit 3'; is "exit 3 passed through" "$?" 3

runtime sandbox run -- bash -c 'kill -USR1 $$'; is "killed by SIGUSR1 (10) gives 138" "$?" 138

start=$(date +%s)
runtime sandbox run --timeout 2 -- sleep 60 2>"$tmp/err"; rc=$?
is "timeout gives 124" "$rc" 124
check "timeout message on stderr" grep -q "runtime: timed out after 2 s; the command's process group was killed." "$tmp/err"
check "timeout did not wait for the command" test $(( $(date +%s) - start )) -lt 40

# --paid here and below: without it, run says its funding on stderr first.
runtime sandbox run --paid -- bash -c 'echo out1; echo err1 >&2; echo out2; echo err2 >&2' >"$tmp/o" 2>"$tmp/e"
is "stdout kept apart" "$(cat "$tmp/o")" "$(printf 'out1\nout2')"
is "stderr kept apart" "$(cat "$tmp/e")" "$(printf 'err1\nerr2')"

# 1 MiB (and more) of output arrives intact.
runtime sandbox run --paid -- bash -c 'head -c 1500000 /dev/urandom > /tmp/blob; sha256sum < /tmp/blob >&2; cat /tmp/blob' >"$tmp/blob" 2>"$tmp/sum"
is "1.5 MB of binary output intact" "$(sha256sum < "$tmp/blob")" "$(cat "$tmp/sum")"

# argv passes through unmangled; one argument runs under bash -c.
out=$(runtime sandbox run -- printf '[%s]' 'a b' '"q"' "it's" '$HOME' '*' '')
is "argv with spaces, quotes, \$ and globs unmangled" "$out" "[a b][\"q\"][it's][\$HOME][*][]"
out=$(runtime sandbox run -- 'echo $((6*7)) | tr 4 X; echo $0')
is "one argument runs under bash -c" "$out" "$(printf 'X2\nbash')"

out=$(printf 'from the host\n' | runtime sandbox run -- tr a-z A-Z)
is "piped stdin reaches the command" "$out" "FROM THE HOST"

is "run --cwd and --user as exec has them" "$(runtime sandbox run --cwd /tmp --user root -- sh -c 'pwd; id -un' | tr '\n' ' ')" "/tmp root "
out=$(runtime sandbox run -- bash -c 'id -un; pwd; echo $HOME')
is "runs as user runtime in /workspace" "$out" "$(printf 'runtime\n/workspace\n/workspace')"

out=$(runtime sandbox run --vcpu 1 --memory 512 -- bash -c 'nproc; awk "/MemTotal/ {print (\$2 > 400000 && \$2 < 530000)}" /proc/meminfo')
is "--vcpu and --memory shape the VM" "$out" "$(printf '1\n1')"

out=$(runtime sandbox run --disk 8192 -- bash -c 'df -m --output=size / | tail -1')
check "--disk 8192 gives a root file system of about 8 GiB" test "$out" -gt 7800 -a "$out" -le 8192
runtime sandbox run --disk 2048 -- true 2>"$tmp/err"; rc=$?
is "--disk below the image's 4 GiB is refused" "$rc" 1
check "… as a usage error" grep -q "Error \[usage\].*disk" "$tmp/err"

json=$(runtime sandbox run --json -- bash -c 'echo hi; echo oops >&2; exit 5'); rc=$?
is "--json keeps the exit code" "$rc" 5
is "--json result" "$(printf '%s' "$json" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r["exitCode"], repr(r["stdout"]), repr(r["stderr"]), r["timedOut"], r["stdoutTruncated"], r["stderrTruncated"], type(r["durationMs"]).__name__)')" "5 'hi\\n' 'oops\\n' False False False int"

# --json sets no timeout of its own (the cap follows --timeout): 100 kB
# whole without one, 64 KiB kept with --timeout 60.
json=$(runtime sandbox run --json -- head -c 100000 /dev/zero)
is "--json without --timeout keeps 100 kB whole (no 60 s default)" "$(printf '%s' "$json" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(len(r["stdout"]), r["stdoutTruncated"], r["timedOut"])')" "100000 False False"
json=$(runtime sandbox run --json --timeout 60 -- head -c 100000 /dev/zero)
is "--json caps stdout at 64 KiB with --timeout 60" "$(printf '%s' "$json" | python3 -c 'import json,sys; r=json.load(sys.stdin); print(len(r["stdout"]), r["stdoutTruncated"])')" "65536 True"
json=$(runtime sandbox run --json --timeout 2 -- sleep 60)
is "--json --timeout 2: timedOut, 124" "$(printf '%s' "$json" | json_get '[o["timedOut"], o["exitCode"]]')" "[True, 124]"

# -i and -t, as exec has them.
head -c 3000000 /dev/urandom >"$tmp/in3"
is "run -i streams stdin past 1 MiB, whole" "$(runtime sandbox run -i -- sha256sum <"$tmp/in3" | cut -d' ' -f1)" \
    "$(sha256sum <"$tmp/in3" | cut -d' ' -f1)"
is "… and keeps the exit code" "$(runtime sandbox run -i -- sh -c 'cat >/dev/null; exit 4' </dev/null; echo $?)" 4
out=$(script -qec "runtime sandbox run --paid -t -- sh -c 'tty; test -t 0 && echo on-a-terminal; exit 3'" /dev/null </dev/null); rc=$?
is "run -t: the command is on a terminal in the guest" "$(printf '%s' "$out" | tr -d '\r' | grep -v '^$' | sed 's#/dev/pts/[0-9]*#/dev/pts/N#')" \
    "$(printf '/dev/pts/N\non-a-terminal')"
is "… its exit code passed through" "$rc" 3
out=$(script -qec "runtime sandbox run --paid -it -- sh -c 'read l; echo got \$l'" /dev/null <<<"typed"); rc=$?
check "run -it: typed input reaches it" grep -q "got typed" <<<"$out"

# --env-file: docker's format; --env and later files win.
printf '# the app\n\nMODE=test\r\n  LEVEL=3\nQUOTED="kept as is"\nFROM_HOST\nUNSET_HERE\nEMPTY=\n' >"$tmp/app.env"
printf 'LEVEL=4\n' >"$tmp/more.env"
out=$(FROM_HOST=yes runtime sandbox run --env-file "$tmp/app.env" --env-file "$tmp/more.env" --env MODE=cli -- \
    sh -c 'echo "$MODE|$LEVEL|$QUOTED|$FROM_HOST|${UNSET_HERE-unset}|${EMPTY-unset}"')
is "run --env-file: comments, blanks, CRLF, host values; later files and --env win" "$out" \
    'cli|4|"kept as is"|yes|unset|'

out=$(runtime sandbox run -- nosuchprogram 2>"$tmp/err"); rc=$?
is "a missing program exits 127" "$rc" 127
check "and says so" grep -q "nosuchprogram" "$tmp/err"

check_no_leaks "after every run"
done_testing
