#!/bin/bash
# secrets.sh - the secrets store: values from
# stdin only, the limits, a 0600 store refused when others can read it,
# placeholders kept across sets, never a value in `ls`, and sandboxes that
# see the placeholder and never the value.  The proxy swapping placeholders
# for values is swap.sh.
. "$(dirname "$0")/libtest.sh"

export RUNTIME_DATA_DIR="$tmp/data"
mkdir -p "$RUNTIME_DATA_DIR"
if [ -d "${RUNTIME_TEST_DATA:-}/images" ]; then cp -al "$RUNTIME_TEST_DATA/images" "$RUNTIME_DATA_DIR/"; fi
store="$RUNTIME_DATA_DIR/secrets.json"
value="sk-live-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"

id=
trap 'runtime sandbox rm "$id" >/dev/null 2>&1; cleanup' EXIT

out=$(printf '%s\n' "$value" | runtime secrets set API_KEY --host api.example.com --host '*.example.org')
ph=$(echo "$out" | sed -n 's/^Stored API_KEY\. Sandboxes see API_KEY=\(rtsec_[0-9a-f]*\)\.$/\1/p')
check "set prints the placeholder" test -n "$ph"
is "the store is mode 0600" "$(stat -c %a "$store")" "600"
check "… and holds the value without its trailing newline" python3 -c '
import json, sys; s = json.load(open(sys.argv[1])); assert s["API_KEY"]["value"] == sys.argv[2]' "$store" "$value"
out=$(printf 'another-value' | runtime secrets set API_KEY --host api.example.com --header Authorization --format 'Bearer {value}')
is "a second set keeps the placeholder" "$out" "Stored API_KEY. Sandboxes see API_KEY=$ph."
printf '%s' "$value" | runtime secrets set API_KEY --host api.example.com >/dev/null
runtime secrets ls --json >"$tmp/ls.json"
check "ls --json: name, hosts, placeholder, never the value" python3 -c '
import json, sys; l = json.load(open(sys.argv[1]))
assert [e["name"] for e in l] == ["API_KEY"] and l[0]["placeholder"] == sys.argv[2] and "value" not in l[0], l
assert sys.argv[3] not in open(sys.argv[1]).read()' "$tmp/ls.json" "$ph" "$value"
check "ls: the table has no value either" sh -c '! runtime secrets ls | grep -q -- "$1"' sh "$value"

# -- at a terminal: a prompt, nothing echoed, the line is the value
python3 - >"$tmp/tty.out" <<'EOF'
import os, pty, select, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvp("runtime", ["runtime", "secrets", "set", "TTY_KEY", "--host", "tty.example.com"])
out = b""
def read_until(pred):
    global out
    while not pred(out):
        if not select.select([fd], [], [], 10)[0]:
            return
        try:
            d = os.read(fd, 1024)
        except OSError:
            return
        if not d:
            return
        out += d
read_until(lambda o: b"(not shown): " in o)
os.write(fd, b"typed-at-a-tty\n")
read_until(lambda o: b"Stored" in o and o.endswith(b"\n"))
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace").replace("\r", ""))
print("exit", os.waitstatus_to_exitcode(status))
EOF
check "at a terminal: a prompt" grep -q "^Value of TTY_KEY (not shown): " "$tmp/tty.out"
check "… the typed value is not echoed" sh -c '! grep -q typed-at-a-tty "$1"' sh "$tmp/tty.out"
check "… and is stored" python3 -c '
import json, sys; s = json.load(open(sys.argv[1])); assert s["TTY_KEY"]["value"] == "typed-at-a-tty"' "$store"
check "… saying so" grep -q "^Stored TTY_KEY\. Sandboxes see TTY_KEY=rtsec_" "$tmp/tty.out"
runtime secrets rm TTY_KEY >/dev/null

# -- where and when: --in-url and --rule are stored and shown,
# never a value; a store written before them reads as headers only, every
# request
printf 'r-value' | runtime secrets set RULED --host api.example.com --rule 'GET:/v1/*' --rule '*:/v2/models' \
    --in-url >/dev/null
is "get --json: the rules and --in-url, no value" \
    "$(runtime secrets get RULED --json | json_get '(o["rules"], o["inUrl"], "value" in o)')" \
    "(['GET:/v1/*', '*:/v2/models'], True, False)"
check "ls shows them" sh -c 'runtime secrets ls | grep "^RULED " | grep -qF "GET:/v1/*,*:/v2/models +url"'
check "… and get, with no value" sh -c '! runtime secrets get RULED | grep -q r-value && runtime secrets get RULED | grep -q "^RULED "'
expect_error "a rule without a path" invalid_request sh -c "printf x | runtime secrets set R --host a.example.com --rule GET"
expect_error "a rule with a space" invalid_request sh -c "printf x | runtime secrets set R --host a.example.com --rule 'GET:/a b'"
rules=$(for i in $(seq 17); do printf -- '--rule GET:/%d ' "$i"; done)
expect_error "more than 16 rules" usage sh -c "printf x | runtime secrets set R --host a.example.com $rules"
expect_error "get of an unknown secret" not_found runtime secrets get NOSUCH
runtime secrets rm RULED >/dev/null
python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
s["OLD"] = {"hosts": ["old.example.com"], "header": None, "format": None,
            "placeholder": "rtsec_00000000000000000000000000000000", "value": "old-value"}
json.dump(s, open(sys.argv[1], "w"))' "$store"
is "a store from before rules and --in-url: headers only, every request" \
    "$(runtime secrets get OLD --json | json_get '(o["rules"], o["inUrl"])')" "([], False)"
runtime secrets rm OLD >/dev/null

# -- refused
expect_error "a value on the command line" usage runtime secrets set API_KEY=abc --host a.example.com
printf '' >"$tmp/empty"
expect_error "an empty value" invalid_request sh -c "runtime secrets set EMPTY --host a.example.com <'$tmp/empty'"
head -c 8193 /dev/zero | tr '\0' x >"$tmp/big"
expect_error "more than 8 KiB" invalid_request sh -c "runtime secrets set BIG --host a.example.com <'$tmp/big'"
expect_error "no host" usage sh -c "printf x | runtime secrets set NOHOST"
hosts=$(for i in $(seq 17); do printf -- '--host h%d.example.com ' "$i"; done)
expect_error "more than 16 hosts" usage sh -c "printf x | runtime secrets set MANY $hosts"
expect_error "a bad name" invalid_request sh -c "printf x | runtime secrets set 1BAD --host a.example.com"
expect_error "--header without --format" usage sh -c "printf x | runtime secrets set H --host a.example.com --header X-Key"
expect_error "a format without {value}" invalid_request sh -c "printf x | runtime secrets set H --host a.example.com --header X-Key --format nope"
expect_error "an address as the host" invalid_request sh -c "printf x | runtime secrets set IP --host 203.0.113.9"
expect_error "a range as the host" invalid_request sh -c "printf x | runtime secrets set NET --host 203.0.113.0/24"
printf 'two\nlines\n' >"$tmp/twolines"
expect_error "a value with a line break inside" invalid_request sh -c "runtime secrets set NL --host a.example.com <'$tmp/twolines'"
expect_error "rm of an unknown secret" not_found runtime secrets rm NOSUCH
chmod 644 "$store"
expect_error "a store others can read is refused" invalid_request runtime secrets ls
check "… saying why" grep -q "readable by others" "$tmp/err"
chmod 600 "$store"

# -- sandboxes see the placeholder, never the value
id=$(runtime sandbox create --paid --timeout 300 2>/dev/null)
is "a new sandbox has NAME=placeholder" "$(runtime sandbox exec "$id" -- printenv API_KEY)" "$ph"
is "get --json shows its name only" "$(runtime sandbox get "$id" --json | json_get '"API_KEY" in o["envNames"]')" "True"
check "the value is nowhere in the sandbox's state or records" sh -c \
    '! grep -rqF -- "$1" "$RUNTIME_STATE_DIR" "$RUNTIME_DATA_DIR/sandboxes" 2>/dev/null' sh "$value"
is "the value is in no process environment of the guest" \
    "$(runtime sandbox exec "$id" --user root -- sh -c "cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -c -- '$value'")" "0"
runtime sandbox rm "$id" >/dev/null; id=
is "rm forgets the secret" "$(runtime secrets rm API_KEY; runtime secrets ls --json)" "$(printf 'API_KEY\n[]')"
check_no_leaks "secrets"
done_testing
