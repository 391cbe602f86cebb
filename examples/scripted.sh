#!/bin/sh
# scripted.sh - a long-lived sandbox driven from a script: create, exec,
# cp in and out, stop.  `create` prints only the id; --json everywhere
# else gives one JSON value to parse.
set -eu
id=$(runtime sandbox create --label example=scripted --timeout 300)
trap 'runtime sandbox rm "$id" >/dev/null' EXIT
printf 'print(sum(range(101)))\n' >/tmp/scripted-$$.py
runtime sandbox cp /tmp/scripted-$$.py "$id:/workspace/sum.py"
rm -f /tmp/scripted-$$.py
runtime sandbox exec "$id" -- sh -c 'python3 sum.py > result.txt'
runtime sandbox cp "$id:/workspace/result.txt" "${1:-.}/result.txt"
runtime sandbox exec "$id" --json -- python3 -c 'print("ok")' | python3 -c 'import json,sys; print("exit", json.load(sys.stdin)["exitCode"])'
runtime sandbox stop "$id" >/dev/null
echo "result: $(cat "${1:-.}/result.txt")"
