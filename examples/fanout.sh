#!/bin/sh
# fanout.sh N - N sandboxes at once, each computing its own square, the
# results collected in order.  Each `runtime sandbox run` is independent:
# its own VM, gone when it finishes.
set -eu
n=${1:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
i=1
while [ "$i" -le "$n" ]; do
    runtime sandbox run --vcpu 1 --memory 512 -- python3 -c "print($i * $i)" >"$dir/$i" 2>/dev/null &
    i=$((i + 1))
done
wait
i=1
while [ "$i" -le "$n" ]; do
    echo "$i: $(cat "$dir/$i")"
    i=$((i + 1))
done
