#!/bin/bash
# tty.sh - `sandbox shell` and `exec -it` as a person uses them: typed into
# a terminal (a tmux pane on a private server), read off its screen.  One
# sandbox for everything; every wait polls the screen against a deadline.
. "$(dirname "$0")/libtest.sh"
. "$(dirname "$0")/libremote.sh"

# The server's socket in $tmp: nothing of it outlives the test.
sock="$tmp/tmux.sock"
T() { tmux -S "$sock" -f /dev/null "$@"; }
id=
rid=
trap 'stop_server; T kill-server 2>/dev/null; for s in $id $rid; do runtime sandbox rm "$s" >/dev/null 2>&1; done; cleanup' EXIT

# screen: what the pane shows now, trailing blanks dropped.
screen() { T capture-pane -p -t tty | sed 's/ *$//'; }
# wait_for DESC REGEX [S]: ok once a line of the screen matches (grep -E).
wait_for() {
    local deadline=$((SECONDS + ${3:-30}))
    while [ $SECONDS -lt $deadline ]; do
        screen | grep -qE -- "$2" && { ok "$1"; return 0; }
        sleep 0.2
    done
    fail "$1"
    diag "no line matching '$2' on the screen:" "$(screen)"
    return 1
}
# wait_outer DESC: ok once the outer shell prompts again (its prompt the
# screen's last line): typed text then goes to it, not to the CLI.
wait_outer() {
    local deadline=$((SECONDS + 30))
    while [ $SECONDS -lt $deadline ]; do
        [ "$(screen | grep . | tail -n 1)" = "OUTER>" ] && { ok "$1"; return 0; }
        sleep 0.2
    done
    fail "$1"
    diag "the outer prompt is not the screen's last line:" "$(screen)"
    return 1
}
# The terminal's settings but its size (the window's, not the CLI's).
settings() { sed 's/rows [0-9]*; columns [0-9]*; //' "$1"; }
# type_line TEXT: typed, then Enter.
type_line() { T send-keys -t tty -l -- "$1"; T send-keys -t tty Enter; }
# until_true S CMD…: CMD until it succeeds, for at most S seconds.
until_true() {
    local deadline=$((SECONDS + $1)); shift
    until "$@"; do [ $SECONDS -lt $deadline ] || return 1; sleep 0.2; done
}
# The pid of what the pane's shell runs now (the CLI), if anything.
pane_child() { pgrep -P "$(T display -p -t tty '#{pane_pid}')" | head -n 1; }

id=$(runtime sandbox create --timeout 900)
check "a sandbox to type into" test -n "$id"

# -- without a terminal
echo x | runtime sandbox exec -t "$id" -- cat >"$tmp/out" 2>"$tmp/err"
is "-t without a terminal on stdin: exit 1" "$?" 1
check "… one usage error line, nothing run" grep -qx "Error \[usage\]: -t needs a terminal on standard input" "$tmp/err"
check "… and a hint to use -i" grep -q "^Hint: .*-i" "$tmp/err"
expect_error "shell without a terminal is refused" usage runtime sandbox shell "$id" </dev/null
runtime sandbox exec -it "$id" --json -- true >"$tmp/out" 2>"$tmp/err"
is "--json with -t is refused: exit 1" "$?" 1
check "… as a usage error in JSON, nothing on stdout" sh -c 'grep -q "\"code\":\"usage\"" "$1" && ! test -s "$2"' sh "$tmp/err" "$tmp/out"
head -c $((5 * 1024 * 1024 + 7)) /dev/urandom >"$tmp/in"
want=$(sha256sum <"$tmp/in" | cut -d' ' -f1)
got=$(cat "$tmp/in" | runtime sandbox exec -i "$id" -- sha256sum | cut -d' ' -f1)
is "exec -i: 5 MiB piped in reach the command whole (sha256)" "$got" "$want"
got=$(cat "$tmp/in" | runtime sandbox exec -i "$id" -- cat | sha256sum | cut -d' ' -f1)
is "… and come back out of cat byte for byte" "$got" "$want"
is "exec -i: stdin's end closes the command's stdin" "$(printf 'a\nb\n' | runtime sandbox exec -i "$id" -- wc -l)" 2
is "exec -i --json: exec's result object" \
    "$(printf 'a\nb\n' | runtime sandbox exec -i "$id" --json -- wc -l | json_get '(o["stdout"], o["exitCode"])')" "('2\\n', 0)"

# -- a terminal: a tmux pane 100x30 running a plain bash
T new-session -d -s tty -x 100 -y 30 "env PS1='OUTER> ' TERM=screen bash --norc --noprofile"
T set-option -t tty status off
wait_for "the outer shell is ready" '^OUTER>'
type_line "stty -a > $tmp/stty.before; echo saved-one"
wait_for "the host terminal's settings saved" '^saved-one$'

type_line "runtime sandbox shell $id"
wait_for "sandbox shell: a prompt appears" '[$] ?$' 90
type_line 'G=guest-7; echo "in-$((6 * 7))-$(id -un)-$PWD-$TERM"'
wait_for "typed commands run, as the sandbox's user in /workspace, TERM passed" '^in-42-runtime-/workspace-screen$'
type_line 'stty size'
wait_for "stty size is the window's (30 100)" '^30 100$'
T resize-window -t tty -x 120 -y 40
type_line 'stty size'
wait_for "stty size follows a resize of the window (40 120)" '^40 120$'

type_line 'sleep 100'
if until_true 30 runtime sandbox exec "$id" -- pgrep -x sleep >/dev/null; then
    T send-keys -t tty C-c
    type_line 'echo "rc-$?-$G"'
    wait_for "Ctrl-C interrupts sleep 100 in the guest and its shell lives on" '^rc-130-guest-7$' 20
else
    fail "sleep 100 started in the sandbox"
fi

# Ctrl-Z and Ctrl-\ are the guest's too: its shell's job control, a quit.
type_line 'clear; sleep 200'
if until_true 30 runtime sandbox exec "$id" -- pgrep -x sleep >/dev/null; then
    T send-keys -t tty C-z
    wait_for "Ctrl-Z stops the guest's job (its shell's job control)" 'Stopped +sleep 200'
    type_line 'fg'
    until_true 10 sh -c "runtime sandbox exec $id -- ps -o stat= -C sleep | grep -q '^S'"
    T send-keys -t tty -H 1c
    type_line 'echo "quit-$?-$G"'
    wait_for "fg, then Ctrl-\\ (0x1c) quits it (SIGQUIT, 131)" '^quit-131-guest-7$' 20
else
    fail "sleep 200 started in the sandbox"
fi

type_line 'seq 1 3000 > /tmp/long.txt && less /tmp/long.txt'
wait_for "less draws a screenful" '^39$'
check "… the whole screen: no prompt left on it" sh -c '! echo "$1" | grep -q "[$] *$"' sh "$(screen)"
T send-keys -t tty ' '
wait_for "… pages down on a space" '^78$'
T send-keys -t tty q
type_line 'echo "after-less-$G"'
wait_for "q quits it; the shell is back" '^after-less-guest-7$'

type_line 'exit 7'
wait_outer "exit leaves the sandbox shell"
type_line 'echo "rc=$?"'
wait_for "exit 7 comes back as exit code 7" '^rc=7$'
type_line "stty -a > $tmp/stty.after; echo saved-two"
wait_for "the host terminal's settings saved again" '^saved-two$'
is "the host terminal is as before (stty -a)" "$(diff <(settings "$tmp/stty.before") <(settings "$tmp/stty.after"))" ""

type_line "runtime sandbox exec -it $id -- bash -c 'exit 3'; echo \"rc=\$?\""
wait_for "exec -it: the command's exit code (3)" '^rc=3$' 60

type_line "clear; runtime sandbox exec -it $id -- seq 1 200000; echo \"rc=\$?\""
wait_for "exec -it: 200000 lines of output through the terminal, to the last" '^200000$' 60
wait_for "… and exit 0" '^rc=0$'
type_line "clear; runtime sandbox exec -it --timeout 2 $id -- sleep 100; echo \"rc=\$?\""
wait_for "exec -it --timeout 2: the timeout's line at the start of a line" '^runtime: timed out after 2 s' 30
wait_for "… and exit 124" '^rc=124$'

# -t alone: a terminal in the guest, but no keyboard read, so ^C is ours
# and stops the command as exec's Ctrl-C does.
type_line "clear; runtime sandbox exec -t $id -- sleep 300; echo \"rc=\$?\""
until_true 60 runtime sandbox exec "$id" -- pgrep -x sleep >/dev/null
T send-keys -t tty C-c
wait_for "exec -t alone: Ctrl-C stops the command, exit 130" '^(\^C)?rc=130$' 30

# A signal to the CLI itself: the terminal comes back all the same.
type_line "clear; runtime sandbox exec -it $id -- sleep 100; echo \"rc=\$?\""
until_true 60 runtime sandbox exec "$id" -- pgrep -x sleep >/dev/null
cli=$(pane_child)
check "the CLI runs in the pane" test -n "$cli"
[ -n "$cli" ] && kill -TERM "$cli"
wait_for "SIGTERM to the CLI: the command is stopped, exit 130" '^rc=130$' 30
type_line "stty -a > $tmp/stty.term; echo saved-three"
wait_for "the host terminal's settings saved after SIGTERM" '^saved-three$'
is "… and are as before" "$(diff <(settings "$tmp/stty.before") <(settings "$tmp/stty.term"))" ""

# A sandbox that does not answer (its VM stopped on the host: the guest
# takes neither the SIGTERM nor the SIGKILL, and never says the command
# ended): the CLI gives up 5 s after its SIGKILL, the terminal put back.
type_line "clear; runtime sandbox exec -it $id -- sleep 100; echo \"rc=\$?\""
until_true 60 runtime sandbox exec "$id" -- pgrep -x sleep >/dev/null
cli=$(pane_child)
qemu=$(cut -d' ' -f1 "$RUNTIME_STATE_DIR/$id/qemu.pid")
if [ -n "$cli" ] && [ -n "$qemu" ] && kill -STOP "$qemu"; then
    t0=$SECONDS
    kill -TERM "$cli"
    wait_for "a sandbox that does not answer: SIGTERM to the CLI, one error line" \
        '^Error \[cleanup_failed\]: sandbox [^ ]+ did not answer within 5 s' 30
    wait_for "… and exit 1" '^rc=1$' 5
    check "… within 15 s (SIGKILL after 5 s, given up 5 s later)" test $((SECONDS - t0)) -le 15
    kill -CONT "$qemu"
else
    fail "the CLI and the sandbox's QEMU to stop"
fi
type_line "stty -a > $tmp/stty.hang; echo saved-four"
wait_for "the host terminal's settings saved after giving up" '^saved-four$'
is "… and are as before" "$(diff <(settings "$tmp/stty.before") <(settings "$tmp/stty.hang"))" ""
is "the sandbox answers again once its VM goes on" "$(runtime sandbox exec "$id" -- echo back)" "back"

# -- client mode: the same library call through `runtime serve`
if start_server && rid=$(runtime sandbox create --timeout 600) && [ -n "$rid" ]; then
    head -c $((1024 * 1024 + 1)) "$tmp/in" >"$tmp/in1"
    is "client mode: exec -i, 1 MiB and a byte piped in reach it whole" \
        "$(runtime sandbox exec -i "$rid" -- sha256sum <"$tmp/in1" | cut -d' ' -f1)" "$(sha256sum <"$tmp/in1" | cut -d' ' -f1)"
    type_line "clear; RUNTIME_API_URL=$RUNTIME_API_URL RUNTIME_API_KEY=$RUNTIME_API_KEY runtime sandbox exec -it $rid -- bash -c 'stty size; read -r l; echo \"got-\$l\"; exit 4'; echo \"rc=\$?\""
    wait_for "client mode: exec -it on a terminal the window's size" '^40 120$' 60
    type_line "typed-in"
    wait_for "… what is typed reaches it" '^got-typed-in$'
    wait_for "… and its exit code comes back (4)" '^rc=4$'
else
    fail "client mode: runtime serve and a sandbox of its tenant"
fi
[ -n "$rid" ] && runtime sandbox rm "$rid" >/dev/null && rid=
stop_server

T kill-server
check "no tmux server left" sh -c '! tmux -S "$1" -f /dev/null has-session 2>/dev/null' sh "$sock"
runtime sandbox rm "$id" >/dev/null
id=
check_no_leaks "tty"
done_testing
